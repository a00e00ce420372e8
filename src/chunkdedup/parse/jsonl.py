"""JSON Lines: one document per line, from its ``text``, ``id`` and other fields."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import replace
from functools import partial

from chunkdedup.errors import ParseError
from chunkdedup.normalize import bytes_hash
from chunkdedup.parse.base import Extracted, Extraction, Keep, parse_date, scrub_surrogates, shown
from chunkdedup.parse.text import decode_noted, line_views, plain_utf8
from chunkdedup.types import Page

#: Ids derived from a line (row) number start with this mark; an explicit id that starts with it gets it
#: doubled, so the two kinds of ids never meet: ``{"id": 7}`` is ``7``, the record on line 7 without
#: an id is ``@7``, and ``{"id": "@7"}`` is ``@@7``.
NUMBER_MARK = "@"
#: A JSON escape of a surrogate (``\ud800``): the only way a JSONL line read as text can hold one.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
#: How deep a record's fields may nest (lists and objects): every later reading of a record (its
#: surrogates scrubbed, its metadata stored as JSON, filtered, exported) recurses into them
MAX_DEPTH = 64
_TOO_DEEP = f"fields nested deeper than {MAX_DEPTH} levels: flatten the record's fields"
#: a record of a multi-record file by its line (row) number: its builder, or the id of the stored
#: record it is (see :class:`~chunkdedup.parse.base.RecordParser`)
Item = tuple[int, Callable[[], Extracted] | str]


def _too_deep(value: object) -> bool:
    """Whether ``value`` nests lists and mappings deeper than ``MAX_DEPTH`` (read without recursion)."""
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping):
            children: Iterable[object] = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        if depth >= MAX_DEPTH:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def record_id(raw_id: str | int | None, number: int) -> str:
    """A record's id: its explicit ``id`` (a leading ``@`` doubled), else ``@`` and its line number.

    Example:
        >>> record_id(7, 3), record_id(None, 7), record_id("@7", 9)
        ('7', '@7', '@@7')
    """
    if raw_id is None or raw_id == "":
        return f"{NUMBER_MARK}{number}"
    text = str(raw_id)
    return NUMBER_MARK + text if text.startswith(NUMBER_MARK) else text


def line_numbered(rid: str) -> bool:
    """Whether a record id was derived from the line number (``@7``), not given (``7``, ``@@7``)."""
    return rid.startswith(NUMBER_MARK) and not rid.startswith(NUMBER_MARK * 2)


def parse_record(line: str, number: int, content_hash: str | None = None) -> Extracted:
    """One JSONL line as a record; its id is the ``id`` field, else ``@`` and the 1-based line number.

    Raises ``ParseError`` naming what is wrong with the line. A lone surrogate escape (``\\ud800``
    without its pair), which no UTF-8 text can hold, is replaced by U+FFFD with a note: one such
    character never costs the record, let alone the file.

    Example:
        >>> parse_record('{"text": "Refunds within 30 days.", "lang": "en"}', 7).record_id
        '@7'
    """
    try:
        record = json.loads(line)
    except json.JSONDecodeError as e:
        raise ParseError(f"not valid JSON: {e.msg} at column {e.colno}") from None
    except RecursionError:  # one record's nesting costs that record, not the file
        raise ParseError(_TOO_DEEP) from None
    if not isinstance(record, dict):
        raise ParseError(f"a JSON {type(record).__name__}, not an object with a 'text' field")
    if _too_deep(record):
        raise ParseError(_TOO_DEEP)
    replaced = 0
    if _SURROGATE_ESCAPE.search(line) is not None:
        record, replaced = scrub_surrogates(record)
    found = record_from_mapping(record, number, content_hash or bytes_hash(line.encode("utf-8")))
    if not replaced:
        return found
    return replace(
        found,
        notes=(
            f"{replaced:,} lone surrogate escape(s) (\\ud800-\\udfff without its pair) "
            "replaced by U+FFFD; write the character itself or a valid pair",
        ),
    )


def record_from_mapping(record: Mapping[str, object], number: int, content_hash: str) -> Extracted:
    """A record (a JSONL object or a Parquet row) as a document: ``text``, ``id`` (else ``@number``,
    see :func:`record_id`), and every other field as metadata. Raises ``ParseError`` naming what is wrong."""
    text = record.get("text")
    if not isinstance(text, str):
        raise ParseError("no string 'text' field")
    if _too_deep(record):
        raise ParseError(_TOO_DEEP)
    if not text.strip():
        raise ParseError("'text' is empty")
    raw_id = record.get("id")
    if raw_id is not None and not (
        isinstance(raw_id, str) or (isinstance(raw_id, int) and not isinstance(raw_id, bool))
    ):
        raise ParseError(f"'id' must be a string or an integer, got {shown(raw_id)}")
    # Checked here so that one record with a bad date is skipped, not the whole file.
    parse_date(record.get("effective_date"))
    metadata = {k: v for k, v in record.items() if k not in ("id", "text")}
    return Extracted(
        pages=(Page(number=1, text=text.replace("\r\n", "\n").replace("\r", "\n")),),
        metadata=metadata,
        record_id=record_id(raw_id, number),
        content_hash=content_hash,
    )


class JsonlParser:
    """JSONL files; unusable lines are skipped with a note, duplicate ids fail the file (see
    :func:`gather_records`). Bytes that are not UTF-8 are read as a text file's are, with its note."""

    def parse(self, data: bytes) -> Extraction:
        """Parse every non-blank line into a record."""
        return _text_records(data)

    def parse_known(self, data: bytes, keep: Keep) -> Extraction:
        """``parse``, but a line whose hash and number ``keep`` names a stored record by is only listed:
        hashing a line costs a small share of decoding and building it (an edit to 1% of a sharded
        corpus's records re-reads every shard). A plain UTF-8 file's lines are hashed as the bytes
        they are (:func:`~chunkdedup.parse.text.line_views`), and only the others decoded."""
        if not plain_utf8(data):
            return _text_records(data, keep)
        found = (byte_item(line, number, keep) for number, line in enumerate(line_views(data), start=1))
        return gather_records(_made(found), noun="record", unit="line")


def _text_records(data: bytes, keep: Keep | None = None) -> Extraction:
    """The records of ``data`` read as text (:func:`~chunkdedup.parse.text.decode_noted`, its note the
    file's), each line as :func:`line_item` makes it."""
    text, note = decode_noted(data)
    found = (line_item(line, number, keep) for number, line in enumerate(text.split("\n"), start=1))
    return gather_records(_made(found), noun="record", unit="line", notes=(note,) if note else ())


def _made(found: Iterable[Item | None]) -> Iterator[Item]:
    """The items of lines that are not blank."""
    return (item for item in found if item is not None)


def line_item(line: str, number: int, keep: Keep | None = None) -> Item | None:
    """What a JSONL parse makes of line ``number`` of the decoded text: nothing for a blank line; the
    id of the stored record ``keep`` names by the hash of the line's UTF-8 and its number; else the
    record's builder."""
    if not line.strip():
        return None
    if keep is None:
        return number, partial(parse_record, line, number)
    h = bytes_hash(line.encode("utf-8"))
    rid = keep(h, number)
    return number, rid if rid is not None else partial(parse_record, line, number, h)


def byte_item(line: bytes | memoryview, number: int, keep: Keep) -> Item | None:
    """:func:`line_item` of a plain UTF-8 file's line (:func:`~chunkdedup.parse.text.plain_utf8`), hashed
    as the bytes it is (its UTF-8): only a line ``keep`` does not name is decoded."""
    h = bytes_hash(line)  # the line's bytes, read in place
    rid = keep(h, number)
    if rid is not None:  # a stored record's line: not blank
        return number, rid
    text = bytes(line).decode("utf-8")
    return (number, partial(parse_record, text, number, h)) if text.strip() else None


def gather_records(
    items: Iterable[Item],
    *,
    noun: str,
    unit: str,
    notes: Iterable[str] = (),
) -> Extraction:
    """Build each record (``unit`` ``number``); unusable ones become notes, a repeated id fails the file.

    An item given as a record id (not a builder) is a record the index holds as it is: only listed
    (``kept``), its id counted among the ids. Shared by every multi-record format (JSONL lines,
    Parquet rows). ``notes`` are the file's own (how its bytes were decoded), before the records'.

    A repeated id fails the whole file, naming every repeated id and its ``unit`` numbers: which of
    two records is meant (the first, or a later correction) is the writer's to say, not a guess. Ids
    are strings, so an integer ``id`` and the same digits as a string (``5`` and ``"5"``) are one id,
    as :func:`record_id` makes them, and the reason says so.
    """
    ledger = RecordLedger(noun, unit, notes)
    records, kept = ledger.take(items)
    ledger.check()
    if not kept:
        return Extraction(documents=tuple(records), notes=ledger.notes())
    return Extraction(tuple(records), ledger.notes(), kept=tuple(kept), order=ledger.order())


class RecordLedger:
    """What a multi-record file's records say of the file as a whole, kept as its records are built a
    part at a time (:func:`gather_records` takes them all at once; a large JSON Lines file is read a
    slice at a time, :mod:`chunkdedup.parse.slices`): the notes, every record id with its ``unit``
    number (a repeated one fails the file) and whether any record was usable. It holds an id and a
    number a record, not the records."""

    def __init__(self, noun: str, unit: str, notes: Iterable[str] = ()) -> None:
        self.noun, self.unit = noun, unit
        self._notes: list[str] = list(notes)
        self._first: dict[str, int] = {}  # each id's first number, in file order
        self._more: dict[str, list[int]] = {}  # a repeated id's later numbers
        self._usable = False

    def note(self, note: str) -> None:
        """Add a note of the file's own (how its bytes were decoded), before any record is taken: a
        file read a slice at a time knows it once its bytes were read through, after its ledger was made."""
        self._notes.append(note)

    def take(self, items: Iterable[Item]) -> tuple[list[Extracted], list[str]]:
        """Build the records of ``items`` (in file order, after those taken before): the records built
        and the ids of those given as ids (held as they are)."""
        records: list[Extracted] = []
        kept: list[str] = []
        notes, first, more, unit = self._notes, self._first, self._more, self.unit
        for number, build in items:
            if isinstance(build, str):
                rid = build
                kept.append(rid)
            else:
                try:
                    record = build()
                except ParseError as e:
                    notes.append(f"{unit} {number}: {e.reason}")
                    continue
                rid = record.record_id or ""
                records.append(record)
                notes.extend(f"{unit} {number}: {note}" for note in record.notes)
            if rid in first:
                more.setdefault(rid, []).append(number)
            else:
                first[rid] = number
        self._usable = self._usable or bool(records) or bool(kept)
        return records, kept

    def check(self) -> None:
        """Raise ``ParseError`` when the records taken fail the file: a repeated id, or none usable."""
        if self._more:
            seen = {rid: [self._first[rid], *numbers] for rid, numbers in self._more.items()}
            raise ParseError(_repeated_ids(list(self._more), seen, self.unit))
        if not self._usable:
            problems = [n for n in self._notes if n.startswith(f"{self.unit} ")]
            noun = self.noun
            raise ParseError(f"no usable {noun}; first problem: {problems[0]}" if problems else f"no {noun}s")

    def notes(self) -> tuple[str, ...]:
        """The file's notes, then its records' (with their ``unit`` numbers), in file order."""
        return tuple(self._notes)

    def order(self) -> tuple[str, ...]:
        """Every record id in file order (no id repeated: :meth:`check` passed)."""
        return tuple(self._first)


#: How many repeated ids, and lines of each, a reason names before it counts the rest.
_NAMED = 5
_DIGITS = re.compile(r"-?[0-9]+")


def _repeated_ids(repeated: list[str], seen: Mapping[str, list[int]], unit: str) -> str:
    """The reason a file with repeated ids fails: every repeated id with its line (row) numbers.

    Example:
        >>> _repeated_ids(["a", "5"], {"a": [1, 2], "5": [3, 4, 9]}, "line")  # doctest: +NORMALIZE_WHITESPACE
        "record id 'a' is used on lines 1 and 2; '5' on lines 3, 4 and 9 (an integer id and the same
        digits as a string are one id): give each record a unique 'id'"
    """
    parts: list[str] = []
    for rid in repeated[:_NAMED]:
        numbers = [f"{n:,}" for n in seen[rid]]
        if len(numbers) > _NAMED:
            numbers = [*numbers[:_NAMED], f"{len(numbers) - _NAMED:,} more"]
        said = f"{', '.join(numbers[:-1])} and {numbers[-1]}"
        parts.append(f"{shown(rid)} {'is used ' if not parts else ''}on {unit}s {said}")
    more = f"; and {len(repeated) - _NAMED:,} more repeated ids" if len(repeated) > _NAMED else ""
    digits = any(_DIGITS.fullmatch(rid) for rid in repeated)
    why = " (an integer id and the same digits as a string are one id)" if digits else ""
    return f"record id {'; '.join(parts)}{more}{why}: give each record a unique 'id'"
