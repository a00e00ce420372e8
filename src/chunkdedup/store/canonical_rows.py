"""Where a canonical is kept (migration 0037): in the row of the group whose id it has, its leader
(``groups.ctext``, ``cn``, ``csig``, ``crun``: its text where it is not the group's, its count, change
signature and last-change run), or in ``canonical_rows`` while no group has its id (its leader went,
and its members have not been decided again yet). The ``canonicals`` view reads both
(:data:`~chunkdedup.store.migrations.CANONICALS_VIEW`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

from chunkdedup.store.batches import rows_for_ids

#: The signature a group's row is written with, to be made by the canonicals' refresh in the same
#: transaction: the row then has its size from the start (grown in place, the rows of a first ingest's
#: groups split their leaves: 100k one-record groups, 14 bytes a record more).
PENDING = bytes(8)
#: Each canonical's signature and last-change run, and 1: kept in its leader group's row.
CANONICAL_STATE = "SELECT id, csig, crun, 1 FROM groups WHERE id IN ({}) AND csig IS NOT NULL"
#: The same, and 0, of canonicals kept in ``canonical_rows``.
CANONICAL_ROW_STATE = "SELECT id, signature, updated_run, 0 FROM canonical_rows WHERE id IN ({})"


#: How many canonicals there are, from indexes alone: every group leading itself (``canon`` NULL) keeps
#: its canonical in its row, and no other group keeps one (between transactions; ``tests/
#: test_canonicals_in_groups.py`` checks it), so the groups less those another leads (the partial
#: index by cluster), and those in canonical_rows. A count of the view read every group's row.
CANONICAL_COUNT = (
    "SELECT (SELECT COUNT(*) FROM groups) - (SELECT COUNT(*) FROM groups WHERE canon IS NOT NULL)"
    " + (SELECT COUNT(*) FROM canonical_rows)"
)


def put_canonicals(
    conn: sqlite3.Connection, put: Sequence[tuple[Any, ...]], deleted: Sequence[str], where: Mapping[str, int]
) -> None:
    """Write canonicals ``(id, text or None, count, signature, last-change run)`` and delete those
    ``deleted`` ids name, each where it belongs now: in its group's row, or in ``canonical_rows`` while
    no group has its id. ``where``: where each stored one is, as read in the same transaction (1: its
    group's row, so that group exists; 0: canonical_rows); whether the others have a group is read here
    (a first ingest's canonicals are all in rows of groups just made: none is)."""
    grouped = {cid for cid, at in where.items() if at == 1}
    unknown = sorted(({r[0] for r in put} | set(deleted)) - grouped)
    grouped.update(r[0] for r in rows_for_ids(conn, "SELECT id FROM groups WHERE id IN ({})", unknown))
    conn.executemany(
        "UPDATE groups SET ctext=?2, cn=?3, csig=?4, crun=?5 WHERE id=?1", [r for r in put if r[0] in grouped]
    )
    conn.executemany(
        "UPDATE groups SET ctext=NULL, cn=NULL, csig=NULL, crun=NULL WHERE id=?",
        [(cid,) for cid in deleted if where.get(cid) == 1 and cid in grouped],
    )
    conn.executemany(
        "INSERT OR REPLACE INTO canonical_rows(id, text, n_sources, signature, updated_run)"
        " VALUES (?, ?, ?, ?, ?)",
        [r for r in put if r[0] not in grouped],
    )
    gone_from_rows = [*(r[0] for r in put if r[0] in grouped), *deleted]  # moved to its group's row, or gone
    conn.executemany(
        "DELETE FROM canonical_rows WHERE id=?", [(cid,) for cid in gone_from_rows if where.get(cid) == 0]
    )


def keep_canonicals_of(conn: sqlite3.Connection, stage: str) -> None:
    """The canonicals kept in the rows of the groups whose ids the table ``stage`` lists (groups about to
    be deleted) move to ``canonical_rows``, with their text, until they are refreshed."""
    conn.execute(
        "INSERT OR REPLACE INTO canonical_rows(id, text, n_sources, signature, updated_run)"
        f" SELECT id, COALESCE(ctext, text), cn, csig, crun FROM groups WHERE id IN (SELECT id FROM {stage})"
        " AND csig IS NOT NULL"
    )


__all__ = [
    "CANONICAL_COUNT",
    "CANONICAL_ROW_STATE",
    "CANONICAL_STATE",
    "PENDING",
    "keep_canonicals_of",
    "put_canonicals",
]
