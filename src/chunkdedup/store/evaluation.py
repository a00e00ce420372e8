"""Evaluation reads (``Index.evaluation``): the last finished ingest run and the corpus fingerprint's
inputs (baseline), the index figures (funnel, cluster sizes, page words), the near-duplicate
calibration pairs and vectors (audit) and the text tables' matches (coverage).

Texts are streamed where an index can hold many (pages); the calibration pairs are capped by the
caller's ``limit``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from chunkdedup.config import Config
from chunkdedup.store import fulltext, vectors
from chunkdedup.store.core import Store
from chunkdedup.store.fulltext import FtsTable
from chunkdedup.store.schema import CLEAN_TEXT, RAW_TEXT
from chunkdedup.store.vectors import VectorBatch

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


class EvaluationReads:
    """The reads an evaluation makes of an index (``Index.evaluation``)."""

    __slots__ = ("store",)

    def __init__(self, store: Store) -> None:
        self.store = store

    @property
    def path(self) -> Path:
        return self.store.path

    def last_ingest_run(self) -> FinishedRun | None:
        """The last finished run that ingested paths (not a removal), None before the first one."""
        row = self.store.conn.execute(
            "SELECT paths, manifest, config FROM runs WHERE status='done' AND paths != '[]'"
            " ORDER BY id DESC LIMIT 1"
        ).fetchone()
        if row is None:
            return None
        config = Config.from_dict(json.loads(row[2]), source=f"{self.store.path} (last run)")
        return FinishedRun(tuple(json.loads(row[0])), row[1], config)

    def file_hashes(self) -> tuple[str, ...]:
        """The content hashes of the input files the index holds, sorted."""
        rows = self.store.conn.execute(
            "SELECT content_hash FROM files WHERE content_hash IS NOT NULL ORDER BY content_hash"
        )
        return tuple(r[0] for r in rows)

    # -- figures ---------------------------------------------------------------------------------------
    def page_texts(self, *, clean: bool) -> Iterator[str]:
        """Every page's text as parsed, or (``clean``) after stripping; streamed, in storage order."""
        column = CLEAN_TEXT if clean else RAW_TEXT
        for (text,) in self.store.conn.execute(f"SELECT COALESCE({column}, '') FROM pages"):
            yield text

    def relation_counts(self) -> tuple[tuple[str, int], ...]:
        """``(relation, exact-key groups)``: how many groups lead (``exact``) or joined a cluster
        (``near``, ``semantic``)."""
        rows = self.store.conn.execute("SELECT relation, COUNT(*) FROM groups GROUP BY relation").fetchall()
        return tuple((r[0], r[1]) for r in rows)

    def cluster_sizes(self) -> tuple[tuple[int, int], ...]:
        """``(sources, canonicals)``: how many canonicals have each number of sources."""
        sql = "SELECT n_sources, COUNT(*) FROM canonicals GROUP BY n_sources"
        rows = self.store.conn.execute(sql).fetchall()
        return tuple((r[0], r[1]) for r in rows)

    # -- near-duplicate calibration --------------------------------------------------------------------
    def merge_similarities(self, relation: Literal["near", "semantic"]) -> tuple[float, ...]:
        """The recorded similarity to its leader of each group merged by one tier, by group id (a near
        merge's is a shingle Jaccard, a semantic merge's a cosine)."""
        return tuple(r[0] for r in self.store.conn.execute(_MERGED[relation]))

    def variant_texts(self, limit: int) -> tuple[tuple[str, str], ...]:
        """The texts of both groups of the first ``limit`` ``variants`` pairs (by pair)."""
        rows = self.store.conn.execute(
            "SELECT ga.text, gb.text FROM variants v JOIN groups ga ON ga.id = v.a"
            " JOIN groups gb ON gb.id = v.b ORDER BY v.a, v.b LIMIT ?",
            (limit,),
        )
        return tuple((a, b) for a, b in rows)

    def band_neighbour_texts(self, limit: int) -> tuple[tuple[str, str], ...]:
        """The texts of the first ``limit`` pairs of groups that share an LSH band but stayed in different
        canonicals, pairs the guard kept apart (``variants``) left out; by pair."""
        rows = self.store.conn.execute(
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

    def variant_canonicals(self) -> tuple[tuple[str, str], ...]:
        """``(canonical of a, canonical of b)`` of every ``variants`` pair, in storage order."""
        rows = self.store.conn.execute(
            "SELECT ga.canonical_id, gb.canonical_id FROM variants v JOIN groups ga ON ga.id = v.a"
            " JOIN groups gb ON gb.id = v.b"
        )
        return tuple((a, b) for a, b in rows)

    # -- vectors (the cosine views) and the text tables (identity coverage) ---------------------------
    def has_embeddings(self) -> bool:
        return vectors.has_embeddings(self.store)

    def stored_embedder(self) -> vectors.StoredEmbedder | None:
        return vectors.stored_embedder(self.store)

    def semantic_edges_for(self) -> float | None:
        """The cosine threshold the index's semantic edges were computed at (``None``: none recorded)."""
        recorded = self.store.meta("semantic_edges_for")
        try:
            return float(recorded) if recorded is not None else None
        except ValueError:
            return None

    def embedded_group_count(self) -> int:
        return vectors.embedded_group_count(self.store)

    def vectors_of(self, ids: Sequence[str]) -> Iterator[VectorBatch]:
        return vectors.vectors_of(self.store, ids)

    def canonical_vector_blocks(self, block: int) -> Iterator[VectorBatch]:
        return vectors.canonical_vector_blocks(self.store, block)

    def vector_blocks(self, block: int) -> Iterator[tuple[bytes, ...]]:
        return vectors.vector_blocks(self.store, block)

    def variant_vector_pairs(self, block: int) -> Iterator[tuple[tuple[bytes, bytes], ...]]:
        return vectors.variant_vector_pairs(self.store, block)

    def fts_tables(self) -> frozenset[str]:
        return fulltext.fts_tables(self.store)

    def fts_matches(self, table: FtsTable, match: str) -> bool:
        return fulltext.fts_matches(self.store, table, match)


__all__ = ["EvaluationReads", "FinishedRun"]
