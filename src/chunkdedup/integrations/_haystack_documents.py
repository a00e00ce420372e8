"""Haystack: in-memory ``Document``\\ s ingested into a chunkdedup index, the deduplicated, cited
ones returned (re-exported by :mod:`chunkdedup.integrations.haystack`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from chunkdedup.errors import MissingExtraError

try:
    from haystack import Document, component, default_from_dict, default_to_dict
except ImportError:
    raise MissingExtraError("chunkdedup.integrations.haystack", "haystack", "haystack") from None

from chunkdedup.config import Config
from chunkdedup.integrations._documents import DedupOptions, Given, deduplicate, record_metadata


@component
class Deduplicator:
    """A component with ``run(documents=...)``: ingests the Documents a converter gave into a
    chunkdedup index and returns one Document per canonical chunk they hold, cross-document copies
    once.

    A run's Documents are the source ``source`` of the index: the next run ingests only the new and
    changed ones and removes those it no longer gives (one ``source`` per collection). A Document's
    document id is its ``id_key`` meta (default ``file_path``, as Haystack's converters set it),
    else its ``id`` (Haystack derives it from the content, so an edit makes it another document);
    Documents with one id are its pages (ordered by ``page_number`` when each has one). ``family``,
    ``department`` and ``effective_date`` meta are read as a manifest's.

    Each returned Document's id is the canonical id; its meta holds ``sources``, ``chunk_id``,
    ``docs``, ``source``/``page`` (its first place among the given Documents) and that document's
    ``family``/``effective_date``.

    Example:
        >>> from chunkdedup.integrations.haystack import Deduplicator
        >>> out = Deduplicator("policies.sqlite").run(documents=converted)  # doctest: +SKIP
        >>> out["documents"][0].meta["sources"]  # doctest: +SKIP
    """

    # registered and serialized under its public name, the module pipelines are allowed to load
    __module__ = "chunkdedup.integrations.haystack"

    def __init__(
        self,
        index: str,
        source: str = "haystack",
        id_key: str | None = "file_path",
        config: Config | None = None,
    ) -> None:
        self.index = str(index)
        self.source = source
        self.id_key = id_key
        self.options = DedupOptions(Path(index), source, id_key, config or Config())

    def to_dict(self) -> dict[str, Any]:
        """For ``Pipeline.dumps``, under its public name (load with
        ``allowed_modules=["chunkdedup.integrations.haystack"]``); a ``config`` is not serialized."""
        return default_to_dict(self, index=self.index, source=self.source, id_key=self.id_key)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Deduplicator:
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict[str, list[Document]]:
        given = [Given(d.id, d.content or "", _paged(d.meta)) for d in documents]
        done = deduplicate(given, self.options)
        return {
            "documents": [
                Document(id=r.id, content=r.text or "", meta=record_metadata(r, done.doc_ids))
                for r in done.records
            ]
        }


def _paged(meta: dict[str, Any]) -> dict[str, Any]:
    """Haystack's page key (``page_number``) as the one the Deduplicators order pages by."""
    if "page_number" in meta and "page" not in meta:
        return {**{k: v for k, v in meta.items() if k != "page_number"}, "page": meta["page_number"]}
    return meta
