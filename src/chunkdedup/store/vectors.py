"""Embedding reads: whether an index holds vectors, and the stored vectors (float32 little-endian
blobs, keyed by exact-key group id) by id, all at once, or streamed in blocks, for vector retrieval,
MMR and the audit's cosine views.

Vectors come back as columns (:class:`VectorBatch`: ids and blobs side by side) so a caller builds
one matrix from a batch without a Python object per row; decoding and normalising stay with the
caller (:mod:`chunkdedup.query.vectors`, :mod:`chunkdedup.evaluate.audit`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from chunkdedup.store.core import Store
from chunkdedup.store.settings import StoredEmbedder as StoredEmbedder

_BATCH = 500
_EMBEDDED = "FROM embeddings e JOIN groups g ON g.id = e.group_id"
_GROUP_VECTORS = "SELECT g.id, e.vector FROM groups g JOIN embeddings e ON e.group_id = g.id ORDER BY g.id"


@dataclass(frozen=True, slots=True)
class VectorBatch:
    """Stored vectors as columns: ``keys[i]`` (a group id, or a canonical id where so documented) owns
    ``vectors[i]``."""

    keys: tuple[str, ...]
    vectors: tuple[bytes, ...]


def _batch(rows: list[tuple[str, bytes]]) -> VectorBatch:
    return VectorBatch(tuple(r[0] for r in rows), tuple(r[1] for r in rows))


def has_embeddings(store: Store) -> bool:
    """Whether the index holds at least one stored vector and the embedder that made it."""
    conn = store.conn
    table = conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='embeddings'").fetchone()
    if table is None:
        return False
    name = conn.execute("SELECT value FROM meta WHERE key='embedder_name'").fetchone()
    return name is not None and conn.execute("SELECT 1 FROM embeddings LIMIT 1").fetchone() is not None


def stored_embedder(store: Store) -> StoredEmbedder | None:
    """The embedder of the index's stored vectors, or ``None`` when it holds none."""
    return store.settings.embedder() if has_embeddings(store) else None


def data_version(store: Store) -> int:
    """SQLite's ``PRAGMA data_version``: it changes when another connection commits."""
    return int(store.conn.execute("PRAGMA data_version").fetchone()[0])


def vectors_of(store: Store, ids: Sequence[str]) -> Iterator[VectorBatch]:
    """The stored vectors of these group ids, one batch per ``_BATCH`` ids as given (ids without a
    vector are left out; a batch may be empty). A canonical id is its leader group's id."""
    for lo in range(0, len(ids), _BATCH):
        part = list(ids[lo : lo + _BATCH])
        rows = store.conn.execute(
            f"SELECT group_id, vector FROM embeddings WHERE group_id IN ({','.join('?' * len(part))})",
            part,
        ).fetchall()
        yield _batch(rows)


def embedded_group_count(store: Store) -> int:
    """How many groups have a stored vector."""
    sql = "SELECT COUNT(*) FROM groups g JOIN embeddings e ON e.group_id = g.id"
    return int(store.conn.execute(sql).fetchone()[0])


def group_vectors(store: Store) -> VectorBatch:
    """Every group's stored vector, by group id."""
    return _batch(store.conn.execute(_GROUP_VECTORS).fetchall())


def group_vector_blocks(store: Store, block: int) -> Iterator[VectorBatch]:
    """Every group's stored vector, by group id, ``block`` rows at a time (memory bounded by the block)."""
    cursor = store.conn.execute(_GROUP_VECTORS)
    while rows := cursor.fetchmany(block):
        yield _batch(rows)


def canonical_vector_blocks(store: Store, block: int) -> Iterator[VectorBatch]:
    """Every stored vector with its group's canonical id as key, by group id, ``block`` at a time."""
    cursor = store.conn.execute(f"SELECT g.canonical_id, e.vector {_EMBEDDED} ORDER BY e.group_id")
    while rows := cursor.fetchmany(block):
        yield _batch(rows)


def vector_blocks(store: Store, block: int) -> Iterator[tuple[bytes, ...]]:
    """Every stored vector of a group, by group id (the order of :func:`canonical_vector_blocks`),
    ``block`` at a time."""
    cursor = store.conn.execute(f"SELECT e.vector {_EMBEDDED} ORDER BY e.group_id")
    while rows := cursor.fetchmany(block):
        yield tuple(r[0] for r in rows)


def variant_vector_pairs(store: Store, block: int) -> Iterator[tuple[tuple[bytes, bytes], ...]]:
    """The stored vectors of both groups of each ``variants`` pair (pairs without both left out),
    ordered by pair, ``block`` pairs at a time."""
    cursor = store.conn.execute(
        "SELECT ea.vector, eb.vector FROM variants v JOIN embeddings ea ON ea.group_id = v.a"
        " JOIN embeddings eb ON eb.group_id = v.b ORDER BY v.a, v.b"
    )
    while rows := cursor.fetchmany(block):
        yield tuple((a, b) for a, b in rows)
