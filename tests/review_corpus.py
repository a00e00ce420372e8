"""What the review tests share: a corpus of one clause, its near copy and a version, and the group id
of each document."""

from __future__ import annotations

import sqlite3
from pathlib import Path

CLAUSE = (
    "The customer may terminate this agreement by written notice to the supplier at any time during "
    "the {which} quarter of the term, and the supplier refunds the fees paid for the rest of the term. "
    "Notices are sent by registered mail to the address on the order form, and each party {keeps} a copy "
    "of every notice it sends or receives for the whole time the agreement is in force."
)


def review_corpus(folder: Path) -> Path:
    """``a.txt``, ``b.txt`` (an ordinal: kept apart) and ``c.txt`` (a near copy of a.txt) in ``folder``."""
    folder.mkdir()
    texts = {
        "a.txt": CLAUSE.format(which="first", keeps="keeps"),
        "b.txt": CLAUSE.format(which="third", keeps="keeps"),
        "c.txt": CLAUSE.format(which="first", keeps="retains"),
    }
    for name, text in texts.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def groups(index: Path) -> dict[str, str]:
    """doc -> its exact-key group id."""
    conn = sqlite3.connect(index)
    try:
        firsts = "SELECT d.doc_id, g.id FROM groups g JOIN document_rows d ON d.dkey = g.rep_dkey"
        return dict(conn.execute(firsts))
    finally:
        conn.close()
