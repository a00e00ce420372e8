"""Evaluation reads: the last finished ingest run and the corpus fingerprint's inputs (baseline),
the index figures (funnel, cluster sizes, page words) and the near-duplicate calibration pairs
(audit). The cosine views read vectors through :mod:`chunkdedup.store.vectors`.

Texts are streamed where an index can hold many (pages); the calibration pairs are capped by the
caller's ``limit``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from chunkdedup.config import Config
from chunkdedup.store.core import Store
from chunkdedup.store.schema import CLEAN_TEXT, RAW_TEXT

_MERGED = {
    "near": "SELECT similarity FROM groups WHERE relation = 'near' ORDER BY id",
    "semantic": "SELECT similarity FROM groups WHERE relation = 'semantic' ORDER BY id",
}


@dataclass(frozen=True, slots=True)
class FinishedRun:
    """What the last finished ingest run (one with input paths) was given."""

    paths: tuple[str, ...]
    manifest: str | None
    config: Config


def last_ingest_run(store: Store) -> FinishedRun | None:
    """The last finished run that ingested paths (not a removal), None before the first one."""
    row = store.conn.execute(
        "SELECT paths, manifest, config FROM runs WHERE status='done' AND paths != '[]'"
        " ORDER BY id DESC LIMIT 1"
    ).fetchone()
    if row is None:
        return None
    config = Config.from_dict(json.loads(row[2]), source=f"{store.path} (last run)")
    return FinishedRun(tuple(json.loads(row[0])), row[1], config)


def file_hashes(store: Store) -> tuple[str, ...]:
    """The content hashes of the input files the index holds, sorted."""
    rows = store.conn.execute(
        "SELECT content_hash FROM files WHERE content_hash IS NOT NULL ORDER BY content_hash"
    )
    return tuple(r[0] for r in rows)


# -- figures ------------------------------------------------------------------------------------------
def page_texts(store: Store, *, clean: bool) -> Iterator[str]:
    """Every page's text as parsed, or (``clean``) after stripping; streamed, in storage order."""
    column = CLEAN_TEXT if clean else RAW_TEXT
    for (text,) in store.conn.execute(f"SELECT COALESCE({column}, '') FROM pages"):
        yield text


def relation_counts(store: Store) -> tuple[tuple[str, int], ...]:
    """``(relation, exact-key groups)``: how many groups lead (``exact``) or joined a cluster
    (``near``, ``semantic``)."""
    rows = store.conn.execute("SELECT relation, COUNT(*) FROM groups GROUP BY relation").fetchall()
    return tuple((r[0], r[1]) for r in rows)


def cluster_sizes(store: Store) -> tuple[tuple[int, int], ...]:
    """``(sources, canonicals)``: how many canonicals have each number of sources."""
    rows = store.conn.execute("SELECT n_sources, COUNT(*) FROM canonicals GROUP BY n_sources").fetchall()
    return tuple((r[0], r[1]) for r in rows)


# -- near-duplicate calibration --------------------------------------------------------------------
def merge_similarities(store: Store, relation: Literal["near", "semantic"]) -> tuple[float, ...]:
    """The recorded similarity to its leader of each group merged by one tier, by group id (a near
    merge's is a shingle Jaccard, a semantic merge's a cosine)."""
    return tuple(r[0] for r in store.conn.execute(_MERGED[relation]))


def variant_texts(store: Store, limit: int) -> tuple[tuple[str, str], ...]:
    """The texts of both groups of the first ``limit`` ``variants`` pairs (by pair)."""
    rows = store.conn.execute(
        "SELECT ga.text, gb.text FROM variants v JOIN groups ga ON ga.id = v.a"
        " JOIN groups gb ON gb.id = v.b ORDER BY v.a, v.b LIMIT ?",
        (limit,),
    )
    return tuple((a, b) for a, b in rows)


def band_neighbour_texts(store: Store, limit: int) -> tuple[tuple[str, str], ...]:
    """The texts of the first ``limit`` pairs of groups that share an LSH band but stayed in different
    canonicals, pairs the guard kept apart (``variants``) left out; by pair."""
    rows = store.conn.execute(
        """
        SELECT DISTINCT ga.text, gb.text FROM bands a
        JOIN bands b ON a.band_key = b.band_key AND a.gid != b.gid
        JOIN groups ga ON ga.gid = a.gid JOIN groups gb ON gb.gid = b.gid
        WHERE ga.id < gb.id AND ga.canonical_id != gb.canonical_id
          AND NOT EXISTS (SELECT 1 FROM variants v WHERE v.a = ga.id AND v.b = gb.id)
          AND NOT EXISTS (SELECT 1 FROM variants v WHERE v.a = gb.id AND v.b = ga.id)
        ORDER BY ga.id, gb.id LIMIT ?
        """,
        (limit,),
    ).fetchall()
    return tuple((a, b) for a, b in rows)


def variant_canonicals(store: Store) -> tuple[tuple[str, str], ...]:
    """``(canonical of a, canonical of b)`` of every ``variants`` pair, in storage order."""
    rows = store.conn.execute(
        "SELECT ga.canonical_id, gb.canonical_id FROM variants v JOIN groups ga ON ga.id = v.a"
        " JOIN groups gb ON gb.id = v.b"
    )
    return tuple((a, b) for a, b in rows)
