"""Page text as the chunk tables read and keep it: spans sliced from clean pages, and pages that keep no
copy of their words because their one chunk's group holds them (migration 0036).

A page that is all one chunk (a short record, a one-paragraph page), stripping having left it as it was,
whose group's text is the page's own words, is stored with ``raw_text`` NULL; the ``pages`` view reads it
as the text of the group its source at offset 0 belongs to (:data:`~chunkdedup.store.schema.PAGE_GROUP_TEXT`).
Two writes could change what such a page reads, and each gives the page its text back first: its
sources going (:func:`texts_back_for_documents`) and its group's text changing (:func:`texts_back_for_groups`,
when another source comes first in the group and its words become the group's).

Such a page of a one-page document, with no OCR confidence or links, keeps no row at all (migration
0040: all a row would hold is its document's key); the ``pages`` view gives it from the document row
(:data:`~chunkdedup.store.schema.ROWLESS_PAGE`). Giving its text back makes its row again, with the
text, so a write of any page column first gives the text back to the pages it writes
(:func:`texts_back_for_documents`: ``DocumentTables.replace_chunks`` before it sets clean texts).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence

from chunkdedup.store.batches import execute_for_ids
from chunkdedup.store.schema import CLEAN_TEXT, PAGE_GROUP_TEXT, ROWLESS_PAGE, ROWLESS_PAGE_TEXT
from chunkdedup.types import Chunk

#: Clean page texts at hand, by (doc_id, page): a batch's own pages, so its spans are sliced in memory.
Pages = Mapping[tuple[str, int], str]

#: ``?1`` a document's key, ``?2`` a page number, ``?3`` the page's clean text. The row is written
#: again, not shrunk where it is: under a new rowid, at the table's end, so that the leaves the parse
#: phase filled with such pages' text empty and are freed (shrunk in place, 100k one-record pages kept
#: their 6.3 MB of leaves for 2.0 MB of rows).
_SHARE = (
    "INSERT OR REPLACE INTO page_rows(dkey, page, has_text, raw_text, clean_text, ocr_confidence, links)"
    " SELECT p.dkey, p.page, p.has_text, NULL, NULL, p.ocr_confidence, p.links FROM page_rows p"
    " WHERE p.dkey = ?1 AND p.page = ?2 AND p.raw_text IS NOT NULL AND p.clean_text IS NULL"
    f" AND {PAGE_GROUP_TEXT} = ?3"
)
#: The same page, when it is its document's one page and would keep nothing else: its row goes (first,
#: so that :data:`_SHARE` finds none to write again).
_DROP = (
    "DELETE FROM page_rows AS p WHERE p.dkey = ?1 AND p.page = ?2 AND ?2 = 1 AND p.has_text = 1"
    " AND p.raw_text IS NOT NULL AND p.clean_text IS NULL AND p.ocr_confidence IS NULL AND p.links IS NULL"
    " AND (SELECT d.n_pages FROM document_rows d WHERE d.dkey = p.dkey) = 1"
    f" AND {PAGE_GROUP_TEXT} = ?3"
)
_BACK_FOR_DOCUMENTS = (
    f"UPDATE page_rows AS p SET raw_text = {PAGE_GROUP_TEXT} WHERE p.dkey IN ({{}}) AND p.raw_text IS NULL"
)
_ROWS_BACK_FOR_DOCUMENTS = (
    "INSERT INTO page_rows(dkey, page, has_text, raw_text, clean_text, ocr_confidence, links)"
    f" SELECT d.dkey, 1, 1, {ROWLESS_PAGE_TEXT}, NULL, NULL, NULL FROM document_rows d"
    f" WHERE d.dkey IN ({{}}) AND {ROWLESS_PAGE}"
)
_BACK_FOR_GROUPS = (
    f"UPDATE page_rows AS p SET raw_text = {PAGE_GROUP_TEXT} WHERE p.raw_text IS NULL AND (p.dkey, p.page) IN"
    " (SELECT s.dkey, s.page FROM groups g JOIN source_rows s ON s.gid = g.gid"
    " WHERE g.id IN ({}) AND s.start = 0)"
)
_ROWS_BACK_FOR_GROUPS = (
    "INSERT INTO page_rows(dkey, page, has_text, raw_text, clean_text, ocr_confidence, links)"
    " SELECT d.dkey, 1, 1, g.text, NULL, NULL, NULL FROM groups g JOIN source_rows s ON s.gid = g.gid"
    " JOIN document_rows d ON d.dkey = s.dkey"
    f" WHERE g.id IN ({{}}) AND s.page = 1 AND s.start = 0 AND {ROWLESS_PAGE}"
)


def share_whole_pages(
    conn: sqlite3.Connection, chunks: Sequence[Chunk], pages: Pages, keys: Mapping[str, int]
) -> None:
    """Of the pages at hand, those that are all one of ``chunks`` and whose group's text is their words
    keep no copy of them. ``keys``: the documents' row keys. Call it once the chunks' sources and groups
    are written: the page's words are compared with its group's, in SQL."""
    whole = [
        (keys[ch.doc_id], ch.page, text)
        for ch in chunks
        if ch.start == 0 and (text := pages.get((ch.doc_id, ch.page))) is not None and ch.end == len(text)
    ]
    conn.executemany(_DROP, whole)
    conn.executemany(_SHARE, whole)


def texts_back_for_documents(conn: sqlite3.Connection, dkeys: Sequence[int]) -> None:
    """The pages of these documents (by row key) that read their words from a group hold them again,
    a rowless page in a row made again."""
    execute_for_ids(conn, _BACK_FOR_DOCUMENTS, sorted(dkeys))
    execute_for_ids(conn, _ROWS_BACK_FOR_DOCUMENTS, sorted(dkeys))


def texts_back_for_groups(conn: sqlite3.Connection, group_ids: Sequence[str]) -> None:
    """The pages that read their words from these groups hold them again, a rowless page in a row made
    again."""
    execute_for_ids(conn, _BACK_FOR_GROUPS, sorted(group_ids))
    execute_for_ids(conn, _ROWS_BACK_FOR_GROUPS, sorted(group_ids))


def span_texts(
    conn: sqlite3.Connection, spans: Sequence[tuple[str, int, int, int]], pages: Pages
) -> list[str]:
    """The text of each span ``(doc_id, page, start, end)`` of a clean page: sliced from ``pages``
    when the page is there, else from the stored page, read once for all its spans (a canonical's
    ``substr`` over its page read the page once per span: quadratic in a large page)."""
    out = [""] * len(spans)
    order = sorted(range(len(spans)), key=lambda i: spans[i][:2])
    page_key: tuple[str, int] | None = None
    text = ""
    for i in order:
        doc_id, page, start, end = spans[i]
        if (doc_id, page) != page_key:
            page_key = (doc_id, page)
            held = pages.get(page_key)
            if held is None:
                sql = f"SELECT {CLEAN_TEXT} FROM pages WHERE doc_id=? AND page=?"
                row = conn.execute(sql, page_key).fetchone()
                held = (row[0] if row is not None else None) or ""
            text = held
        out[i] = text[start:end]
    return out


__all__ = ["Pages", "share_whole_pages", "span_texts", "texts_back_for_documents", "texts_back_for_groups"]
