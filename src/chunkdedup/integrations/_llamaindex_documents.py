"""LlamaIndex: in-memory Documents or nodes ingested into a chunkdedup index, the deduplicated,
cited nodes returned (re-exported by :mod:`chunkdedup.integrations.llamaindex`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from chunkdedup.errors import MissingExtraError

try:
    from llama_index.core.schema import BaseNode, MetadataMode, TextNode, TransformComponent
except ImportError:
    raise MissingExtraError("chunkdedup.integrations.llamaindex", "llamaindex", "llama_index.core") from None

from chunkdedup.config import Config
from chunkdedup.integrations._documents import OUT_KEYS, DedupOptions, Given, deduplicate, record_metadata


class Deduplicator(TransformComponent):
    """A transformation (``IngestionPipeline(transformations=[...])``): ingests the Documents or
    nodes a reader gave into a chunkdedup index and returns one ``TextNode`` per canonical chunk they
    hold, cross-document copies once.

    A call's nodes are the source ``source`` of the index: the next call ingests only the new and
    changed ones and removes those it no longer gives (one ``source`` per collection). A node's
    document id is its ``id_key`` metadata (default ``file_path``, as ``SimpleDirectoryReader``
    sets it), else its ``ref_doc_id``, else its id; nodes with one id are its pages (ordered by
    ``page_label`` when each has a number). ``family``, ``department`` and ``effective_date``
    metadata are read as a manifest's.

    Each returned node's id is the canonical id; its metadata holds ``sources``, ``chunk_id``,
    ``docs``, ``source``/``page`` (its first place among the given nodes) and that document's
    ``family``/``effective_date``, all kept out of what the LLM and the embedder see.

    Example:
        >>> from chunkdedup.integrations.llamaindex import Deduplicator
        >>> nodes = Deduplicator(index="policies.sqlite")(reader.load_data())  # doctest: +SKIP
    """

    index: str | Path
    source: str = "llamaindex"
    id_key: str | None = "file_path"
    config: Config | None = None

    def __call__(self, nodes: Sequence[BaseNode], **kwargs: Any) -> Sequence[BaseNode]:
        opts = DedupOptions(self.index, self.source, self.id_key, self.config or Config())
        given = [
            Given(n.ref_doc_id or n.node_id, n.get_content(metadata_mode=MetadataMode.NONE), n.metadata)
            for n in nodes
        ]
        done = deduplicate(given, opts)
        out: list[BaseNode] = []
        for r in done.records:
            meta = record_metadata(r, done.doc_ids)
            hidden = [k for k in OUT_KEYS if k in meta]
            out.append(
                TextNode(
                    id_=r.id,
                    text=r.text or "",
                    metadata=meta,
                    excluded_embed_metadata_keys=hidden,
                    excluded_llm_metadata_keys=hidden,
                )
            )
        return out
