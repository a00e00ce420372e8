"""What a failed read or write of the index means, told apart by cause: each its own message and advice.

SQLite reports a damaged file, a full disk, an I/O error, a read-only file and a file that is no
database with distinct result codes; a user needs a different next step for each (rebuild the index,
free space, check the disk or the permissions, give another path), never one catch-all.
"""

from __future__ import annotations

import errno
import sqlite3
from pathlib import Path

from chunkdedup.errors import (
    IndexBusyError,
    IndexDamagedError,
    IndexError_,
    IndexFullError,
    IndexIOError,
    SchemaError,
)
from chunkdedup.store.migrations import MIGRATIONS
from chunkdedup.store.readonly import read_uri
from chunkdedup.store.schema import PAGE_GROUP_TEXT, ROWLESS_PAGE, ROWLESS_PAGE_TEXT

#: Up to this size a damaged index is also run through ``PRAGMA quick_check`` for the message
#: (about 3 ms per MB: 40 ms for a 13 MB index).
QUICK_CHECK_MAX_BYTES = 256 * 1024 * 1024

_FULL_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}


#: What the sqlite3 module raises besides ``sqlite3.Error``: an SQLite message that is not UTF-8 itself
#: (a damaged schema is quoted in it) surfaces as a ``UnicodeDecodeError`` of that message.
SQLITE_FAILURES = (sqlite3.Error, UnicodeDecodeError)


def index_error(path: str | Path, error: sqlite3.Error | OSError | UnicodeDecodeError) -> IndexError_:
    """The :class:`IndexError_` that explains ``error`` (raised while using the index at ``path``).

    Example:
        >>> e = index_error("i.sqlite", sqlite3.OperationalError("database or disk is full"))
        >>> type(e).__name__
        'IndexFullError'
    """
    p = Path(path)
    if isinstance(error, UnicodeDecodeError):
        error = sqlite3.DatabaseError(_message(error))
    # "Could not decode to UTF-8 column 'x' with text '...'": the text is the damaged value itself
    text = _one_line((str(error) or type(error).__name__).split(" with text '")[0])
    low = text.lower()
    code = str(getattr(error, "sqlite_errorname", "") or "")
    if isinstance(error, OSError):
        if error.errno in _FULL_ERRNOS:
            return _full(p, text)
        return IndexIOError(
            f"reading or writing index {p} failed ({text}): check the disk, the file's permissions "
            "and free space, then run again"
        )
    if code.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or "locked" in low:
        return IndexBusyError(
            f"index {p} is locked by another process ({text}): wait for it to finish, then run again"
        )
    if code.startswith("SQLITE_FULL") or "disk is full" in low:
        return _full(p, text)
    if code.startswith("SQLITE_CORRUPT") or "malformed" in low or "could not decode to utf-8" in low:
        return IndexDamagedError(
            f"index {p} is damaged ({text}){_quick_check(p)}: rebuild it by ingesting your files into a "
            f"new index (`chunkdedup ingest PATHS --index NEW.sqlite`); `chunkdedup check --index {p}` "
            "lists what SQLite finds"
        )
    if code.startswith("SQLITE_READONLY") or "readonly database" in low:
        return IndexIOError(
            f"index {p} cannot be written ({text}): check the permissions of the file and of its folder "
            "(SQLite writes INDEX-wal and INDEX-shm beside it)"
        )
    if _cannot_open(error):
        return IndexIOError(
            f"index {p} cannot be opened ({text}): check that its folder exists and may be written (a "
            "reader needs that too while INDEX-wal or INDEX-shm lies beside the index: a writer is at "
            "work, or one died, and the next ingest or a writable copy of the three files completes it)"
        )
    if code.startswith("SQLITE_IOERR") or "i/o error" in low:
        return IndexIOError(
            f"reading or writing index {p} failed with an I/O error ({text}): check the disk (`dmesg`), "
            f"the file's permissions and free space; if the disk is sound, `chunkdedup check --index {p}`"
        )
    if code.startswith("SQLITE_NOTADB") or "not a database" in low:
        return SchemaError(
            f"{p} is not a chunkdedup index ({text}): give another --index path (if it was an index, "
            "its first page is damaged: rebuild it by ingesting your files into a new index)"
        )
    return IndexError_(
        f"index {p}: unexpected SQLite error ({type(error).__name__}: {text}); "
        f"`chunkdedup check --index {p}` tells whether the file is damaged (please report)"
    )


def quick_check(path: str | Path, *, full: bool = False, limit: int = 20) -> list[str]:
    """What ``PRAGMA quick_check`` (``integrity_check`` with ``full``) finds: ``["ok"]`` when sound."""
    pragma = "integrity_check" if full else "quick_check"
    conn = sqlite3.connect(read_uri(path), uri=True)
    try:
        conn.execute("PRAGMA busy_timeout = 30000")
        found = [str(r[0]) for r in conn.execute(f"PRAGMA {pragma}({int(limit)})")]
    finally:
        conn.close()
    lines = [ln for f in found for ln in f.splitlines() if ln.strip() and not ln.startswith("*** in ")]
    return lines or ["ok"]


def check_index(path: str | Path, *, full: bool = False) -> list[str]:
    """Every problem found in an index file, ``["ok"]`` when none: ``quick_check`` (``integrity_check``
    with ``full``), then a read of every row of every table, which also finds stored text whose bytes
    are no longer UTF-8 (damage inside a value that the page checks cannot see), then the review
    decisions whose ids are not text (a row no reader can use). A sound SQLite file
    that is no chunkdedup index, or an index of a newer chunkdedup, raises ``SchemaError``."""
    try:
        found = quick_check(path, full=full)
    except SQLITE_FAILURES as e:
        if _cannot_open(e):  # not damage: a folder or permission the reader lacks (its own message)
            raise index_error(Path(path), e) from None
        return [f"PRAGMA quick_check fails: {_one_line(_message(e))}"]
    problems = [] if found == ["ok"] else found
    conn = sqlite3.connect(read_uri(path), uri=True)
    try:
        names = conn.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")
        tables = [r[0] for r in names]
        if not problems:
            _check_version(conn, Path(path), tables)
        for table in tables:
            quoted = '"' + table.replace('"', '""') + '"'
            try:
                for _ in conn.execute(f"SELECT * FROM {quoted}"):
                    pass
            except SQLITE_FAILURES as e:
                problems.append(f"table {table}: {_one_line(_message(e).split(' with text ')[0])}")
        if not problems and "page_rows" in tables:
            problems.extend(_lost_page_texts(conn))
        if "overrides" in tables:
            problems.extend(_damaged_overrides(conn))
    except SQLITE_FAILURES as e:
        problems.append(f"the schema cannot be read: {_one_line(_message(e))}")
    finally:
        conn.close()
    return problems or ["ok"]


def _lost_page_texts(conn: sqlite3.Connection) -> list[str]:
    """A page that keeps no copy of its words reads them from its group (migration 0036; a rowless page,
    0040, too); a page whose group is no longer there reads no text, which no page check sees."""
    sql = (
        "SELECT COUNT(*), MIN(doc_id) FROM ("
        " SELECT d.doc_id FROM page_rows p JOIN document_rows d ON d.dkey = p.dkey"
        f" WHERE p.raw_text IS NULL AND {PAGE_GROUP_TEXT} IS NULL"
        " UNION ALL SELECT d.doc_id FROM document_rows d"
        f" WHERE {ROWLESS_PAGE} AND {ROWLESS_PAGE_TEXT} IS NULL)"
    )
    lost, first = conn.execute(sql).fetchone()
    if not lost:
        return []
    gone = "the chunk that kept their words is gone"
    return [f"{lost} page(s) read no text (first in document {first}): {gone}"]


#: a review decision no reader can use: an id that is not text (a number, a blob, NULL), or a
#: decision other than the two the table's CHECK allows (a table rebuilt by hand has no CHECK)
_BAD_OVERRIDE = (
    "typeof(a) <> 'text' OR typeof(b) <> 'text' OR typeof(decision) <> 'text'"
    " OR decision NOT IN ('merge', 'apart')"
)


def _damaged_overrides(conn: sqlite3.Connection) -> list[str]:
    """The review decisions (table ``overrides``) whose ids are not text: ingest and review skip them,
    and no page check sees them (a blob fits any column)."""
    try:
        count = conn.execute(f"SELECT COUNT(*) FROM overrides WHERE {_BAD_OVERRIDE}").fetchone()[0]
        if not count:
            return []
        first = conn.execute(
            f"SELECT a, b, decision FROM overrides WHERE {_BAD_OVERRIDE} ORDER BY a, b LIMIT 1"
        ).fetchone()
    except SQLITE_FAILURES:  # the read of every row reported the table already
        return []
    example = ", ".join(f"{k}={_value(v)}" for k, v in zip(("a", "b", "decision"), first, strict=True))
    fix = f"DELETE FROM overrides WHERE {_BAD_OVERRIDE}"
    return [
        f"table overrides: {count} review decision(s) with ids that are not text or no known decision "
        f"(first: {example}): ingest and review skip them; delete them (sqlite3 INDEX \"{fix}\") and "
        "take those decisions again in `chunkdedup serve`"
    ]


def _value(value: object) -> str:
    """A stored value as a check shows it: its SQLite type and its repr, cut short."""
    kind = {bytes: "blob", str: "text", int: "integer", float: "real"}.get(type(value), "null")
    return f"{_one_line(repr(value), 40)} ({kind})"


def _check_version(conn: sqlite3.Connection, p: Path, tables: list[str]) -> None:
    """Raise ``SchemaError`` unless ``p`` is a chunkdedup index this version can read: an SQLite file
    without the ``migrations`` table is some other database, one that records a migration this
    version does not know was written by a newer chunkdedup (an older one is read as it is)."""
    if "migrations" not in tables:
        what = "an empty SQLite file" if not tables else "an SQLite file"
        raise SchemaError(f"{p} is {what} but not a chunkdedup index: give the path of an index file")
    applied = {str(r[0]) for r in conn.execute("SELECT name FROM migrations")}
    newer = sorted(applied - {name for name, _ in MIGRATIONS})
    if newer:
        raise SchemaError(
            f"index {p} was written by a newer chunkdedup (migrations {newer}): upgrade chunkdedup "
            "to check it"
        )


def _full(p: Path, text: str) -> IndexFullError:
    return IndexFullError(
        f"no space left to write index {p} ({text}): free disk space (or give an --index on another "
        "disk) and run again; the index keeps what it last committed, and the next run completes it"
    )


def _quick_check(p: Path) -> str:
    try:
        if p.stat().st_size > QUICK_CHECK_MAX_BYTES:
            return ""
        found = quick_check(p, limit=1)
    except (OSError, *SQLITE_FAILURES) as e:
        return f"; PRAGMA quick_check fails too: {_one_line(_message(e))}"
    if found == ["ok"]:
        return "; PRAGMA quick_check finds the pages sound, so the damage is inside stored values"
    more = f" (+{len(found) - 1} more)" if found[1:] else ""
    return f"; PRAGMA quick_check: {_one_line(found[0])}{more}"


def _cannot_open(error: BaseException) -> bool:
    code = str(getattr(error, "sqlite_errorname", ""))
    return code.startswith("SQLITE_CANTOPEN") or "unable to open" in str(error).lower()


def _message(error: BaseException) -> str:
    if isinstance(error, UnicodeDecodeError):
        return bytes(error.object).decode("utf-8", "backslashreplace")
    return str(error)


def _one_line(text: str, limit: int = 160) -> str:
    """The first line of a message, control characters escaped, cut to ``limit`` characters."""
    first = text.strip().splitlines()[0] if text.strip() else text
    shown = "".join(c if c.isprintable() else f"\\x{ord(c):02x}" if ord(c) < 256 else "\ufffd" for c in first)
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"
