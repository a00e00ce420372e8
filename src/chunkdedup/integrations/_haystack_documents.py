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

#: Haystack's converters keep only a file's base name unless told otherwise
BASE_NAMES = (
    "Haystack's converters keep only the base name in file_path unless store_full_path=True: "
    "convert with store_full_path=True (e.g. TextFileToDocument(store_full_path=True))"
)


@component
class Deduplicator:
    """A component with ``run(documents=...)``: ingests the Documents a converter gave into a
    chunkdedup index and returns the deduplicated Documents they touch, cross-document copies once.

    A run adds its Documents to the source ``source`` of the index or replaces those of their ids;
    the source's other documents stay (``full=True``: the run is the whole source, the others are
    removed); ``run(documents=[], remove=[...])`` removes documents by id. A Document's document id
    is its ``id_key`` meta (default ``file_path``, as Haystack's converters set it), else its ``id``
    (Haystack derives it from the content, so an edit makes it another document). Documents with
    one id are its pages, ordered by ``page_number``; Documents that share a ``file_path`` without
    page numbers are refused (two files with one base name: convert with ``store_full_path=True``).
    ``family``, ``department`` and ``effective_date`` meta are read as a manifest's.

    Outputs ``documents``: each Document owned by a document the run touched (its id the canonical
    id; its meta ``sources``, ``chunk_id``, ``docs``, ``source``/``page``: the place of its owner,
    the first of the source's documents that cite it, and the owner's ``family``/
    ``effective_date``); write them with ``DuplicatePolicy.OVERWRITE``. And ``deleted``: the ids of
    canonicals those documents cited that no longer stand, to delete from the document store.

    Example:
        >>> from chunkdedup.integrations.haystack import Deduplicator
        >>> out = Deduplicator("policies.sqlite").run(documents=converted)  # doctest: +SKIP
        >>> store.write_documents(out["documents"], policy=DuplicatePolicy.OVERWRITE)  # doctest: +SKIP
        >>> store.delete_documents(out["deleted"])  # doctest: +SKIP
    """

    # registered and serialized under its public name, the module pipelines are allowed to load
    __module__ = "chunkdedup.integrations.haystack"

    def __init__(
        self,
        index: str,
        source: str = "haystack",
        id_key: str | None = "file_path",
        config: Config | None = None,
        full: bool = False,
    ) -> None:
        self.index = str(index)
        self.source = source
        self.id_key = id_key
        self.full = full
        self.options = DedupOptions(
            Path(index), source, id_key, config, full=full, parts_need_pages=BASE_NAMES
        )

    def to_dict(self) -> dict[str, Any]:
        """For ``Pipeline.dumps``, under its public name (load with
        ``allowed_modules=["chunkdedup.integrations.haystack"]``); a ``config`` is not serialized."""
        return default_to_dict(self, index=self.index, source=self.source, id_key=self.id_key, full=self.full)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Deduplicator:
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document], deleted=list[str])
    def run(self, documents: list[Document], remove: list[str] | None = None) -> dict[str, Any]:
        given = [Given(d.id, d.content or "", _paged(d.meta)) for d in documents]
        done = deduplicate(given, self.options, remove=remove or ())
        return {
            "documents": [
                Document(id=o.record.id, content=o.record.text or "", meta=record_metadata(o))
                for o in done.records
            ],
            "deleted": list(done.deleted),
        }


def _paged(meta: dict[str, Any]) -> dict[str, Any]:
    """Haystack's page key (``page_number``) as the one the Deduplicators order pages by."""
    if "page_number" in meta and "page" not in meta:
        return {**{k: v for k, v in meta.items() if k != "page_number"}, "page": meta["page_number"]}
    return meta
