"""LlamaIndex: in-memory Documents or nodes ingested into a chunkdedup index, the deduplicated,
cited nodes returned (re-exported by :mod:`chunkdedup.integrations.llamaindex`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from chunkdedup.errors import MissingExtraError

try:
    from llama_index.core.bridge.pydantic import ConfigDict, Field
    from llama_index.core.schema import (
        BaseNode,
        MetadataMode,
        NodeRelationship,
        RelatedNodeInfo,
        TextNode,
        TransformComponent,
    )
    from llama_index.core.storage.docstore.types import BaseDocumentStore
    from llama_index.core.vector_stores.types import BasePydanticVectorStore
except ImportError:
    raise MissingExtraError("chunkdedup.integrations.llamaindex", "llamaindex", "llama_index.core") from None

from chunkdedup.config import Config
from chunkdedup.integrations._documents import (
    OUT_KEYS,
    Deduplicated,
    DedupOptions,
    Given,
    deduplicate,
    doc_key,
    index_state,
    record_metadata,
    source_documents,
)


class Deduplicator(TransformComponent):
    """A transformation (``IngestionPipeline(transformations=[...])``): ingests the Documents or
    nodes a reader gave into a chunkdedup index and returns the deduplicated ``TextNode``\\ s they
    touch, cross-document copies once.

    A call adds its Documents to the source ``source`` of the index or replaces those of their ids;
    the source's other documents stay (``full=True``: the call is the whole source, the others are
    removed). Remove documents with :meth:`delete`, or give ``docstore=`` the pipeline's docstore:
    then the documents it no longer holds (``DocstoreStrategy.UPSERTS_AND_DELETE``) are removed, and a
    document the pipeline passes only some parts of (a changed page of a PDF) is completed from it.
    Give ``vector_store=`` the pipeline's vector store: the nodes a call returns are deleted from it
    before the pipeline adds them again (a store whose ``add`` keeps an existing id, as Chroma's does,
    would keep a shared node's old owner and sources), and so are the canonicals that no longer stand.
    A node's document id is its ``id_key`` metadata (default ``file_path``, as
    ``SimpleDirectoryReader`` sets it), else its ``ref_doc_id``, else its id; nodes with one id are
    its pages (ordered by ``page_label`` when each has a number). ``family``, ``department`` and
    ``effective_date`` metadata are read as a manifest's.

    Each returned node's id is the canonical id and its ``ref_doc_id`` the Document (part) of its
    owner, the first of the source's documents that cite it, so the pipeline's delete by document
    and the vector store stay consistent: every node owned by a document the call touched comes
    back. Its metadata is flat, as LlamaIndex's vector stores take it: ``sources`` and ``docs`` as JSON
    text, ``chunk_id``, ``source``/``page`` (the owner's place) and the owner's
    ``family``/``effective_date``; the LLM sees ``source`` and ``page`` (so it can cite), the embedder
    none of them.

    Example:
        >>> from chunkdedup.integrations.llamaindex import Deduplicator
        >>> nodes = Deduplicator(index="policies.sqlite")(reader.load_data())  # doctest: +SKIP
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    index: str | Path
    source: str = "llamaindex"
    id_key: str | None = "file_path"
    config: Config | None = None
    full: bool = False
    docstore: BaseDocumentStore | None = Field(default=None, exclude=True)
    vector_store: BasePydanticVectorStore | None = Field(default=None, exclude=True)

    def _options(self) -> DedupOptions:
        return DedupOptions(self.index, self.source, self.id_key, self.config, full=self.full)

    def __call__(self, nodes: Sequence[BaseNode], **kwargs: Any) -> Sequence[BaseNode]:
        given = [_given(n) for n in nodes]
        remove: list[str] = []
        if self.docstore is not None and not self.full:
            given, remove = self._with_docstore(given)
        return self._done(deduplicate(given, self._options(), remove=remove))

    def delete(self, doc_ids: Sequence[str]) -> list[BaseNode]:
        """Remove documents (by document id) from the source; returns the nodes of the documents that
        now own what they shared (add them to the vector store; the removed ones' ``ref_doc_id``\\ s
        are theirs to delete, unless ``vector_store`` is given)."""
        return self._done(deduplicate([], self._options(), remove=doc_ids))

    def _done(self, done: Deduplicated) -> list[BaseNode]:
        if self.vector_store is not None:
            stale = [o.record.id for o in done.records] + list(done.deleted)
            if stale:
                self.vector_store.delete_nodes(stale)
        return _nodes(done)

    def to_dict(self, **kwargs: Any) -> dict[str, Any]:
        """As the pipeline's cache keys a transformation: with the index's last run, since the
        output depends on the index as well as on the nodes given."""
        data = super().to_dict(**kwargs)
        data["index_run"] = index_state(self.index)
        if self.docstore is not None:
            data["docstore"] = sorted(self.docstore.get_all_document_hashes().items())
        return data

    def _with_docstore(self, given: list[Given]) -> tuple[list[Given], list[str]]:
        """The call's Documents completed with the other parts the docstore holds of their documents
        (and of a document whose part count the docstore changed), and the source's documents the
        docstore holds no part of (removed)."""
        assert self.docstore is not None
        in_call = {g.id for g in given}
        keys = {doc_key(g, self.id_key) for g in given}
        parts: dict[str, list[Given]] = {}
        for fid, node in sorted(self.docstore.docs.items()):
            if fid not in in_call:
                g = _given(node)
                parts.setdefault(doc_key(g, self.id_key), []).append(g)
        stored = source_documents(self._options())
        extra = [
            g
            for key, found in parts.items()
            if key in keys or (key in stored and stored[key] != len(found))
            for g in found
        ]
        gone = [d for d in stored if d not in parts and d not in keys]
        return given + extra, gone


def _given(n: BaseNode) -> Given:
    return Given(n.ref_doc_id or n.node_id, n.get_content(metadata_mode=MetadataMode.NONE), n.metadata)


def _nodes(done: Deduplicated) -> list[BaseNode]:
    out: list[BaseNode] = []
    for owned in done.records:
        meta = record_metadata(owned, flat=True)
        hidden = [k for k in OUT_KEYS if k in meta]
        out.append(
            TextNode(
                id_=owned.record.id,
                text=owned.record.text or "",
                metadata=meta,
                relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=owned.part_id)},
                excluded_embed_metadata_keys=hidden,
                excluded_llm_metadata_keys=[k for k in hidden if k not in ("source", "page")],
            )
        )
    return out
