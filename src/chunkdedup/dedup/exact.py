"""Exact dedup: one canonical chunk per normalised key, with every source kept.

The canonical id is derived from the key, so it is stable across runs and indexes (a user's
vector store can upsert by it). The representative text is the source with the smallest
(doc_id, page, start): a rule on the data, so arrival order never changes the result.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from chunkdedup.normalize import canonical_id, exact_key
from chunkdedup.types import CanonicalChunk, Chunk
from chunkdedup.types import KeyedChunk as KeyedChunk
from chunkdedup.types import KeyedDocument as KeyedDocument

_ALNUM = re.compile(r"[^\W_]")


def key_chunk(chunk: Chunk) -> KeyedChunk | None:
    """Key one chunk; a chunk with no letter or digit (a rule ``---``, only identifier tokens) is dropped."""
    key = exact_key(chunk.text)
    if not _ALNUM.search(key):
        return None
    return KeyedChunk(chunk, key, canonical_id(key))


def dedup_exact(chunks: Iterable[Chunk]) -> list[CanonicalChunk]:
    """Group chunks by exact key, in memory.

    Returns canonicals sorted by their representative's (doc_id, page, start); each canonical's
    sources are sorted the same way and its text is the representative's text.

    Example:
        >>> a = Chunk("a.md", 1, 0, 12, "Pay in  30 days")
        >>> b = Chunk("b.md", 2, 5, 17, "pay in 30 DAYS")
        >>> [(c.text, c.copies) for c in dedup_exact([b, a])]
        [('Pay in  30 days', 2)]
    """
    groups: dict[str, list[KeyedChunk]] = {}
    for chunk in chunks:
        kc = key_chunk(chunk)
        if kc is not None:
            groups.setdefault(kc.canonical_id, []).append(kc)
    out: list[CanonicalChunk] = []
    for cid, members in groups.items():
        members.sort(key=lambda m: m.ref.order)
        out.append(CanonicalChunk(cid, members[0].chunk.text, tuple(m.ref for m in members)))
    out.sort(key=lambda c: c.sources[0].order)
    return out
