"""Store-native records: an export record as a vector store takes it.

A store record has top-level ``source`` and ``page`` (those of the first source, the words shown),
``docs`` (every cited document, once each, in source order), the first source's manifest keys (the
fixed keys win a clash; every source's own metadata stays in ``sources``), the canonical id as
``chunk_id``, and ``sources`` (every source as export writes it). How lists and ``sources`` are written
depends on what the store takes (:data:`Shape`):

========== ============================== ==========================================
shape      ``docs``                       ``sources``
========== ============================== ==========================================
nested     a list of strings              a list of mappings (export's ``sources``)
lists      a list of strings              JSON text
scalars    JSON text                      JSON text
========== ============================== ==========================================

The id is the canonical id, or for a store that takes UUIDs only (Qdrant) the UUID5 of it in
:data:`ID_NAMESPACE`: the same canonical gets the same id in every run and on every machine.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from chunkdedup.errors import SyncError
from chunkdedup.query.records import Citation, ExportRecord
from chunkdedup.types import MetaValue

Shape = Literal["nested", "lists", "scalars"]
IdForm = Literal["canonical", "uuid"]
#: The namespace of the UUID5 ids (a fixed value: changing it would re-key every synced store).
ID_NAMESPACE = uuid.UUID("6f1c2b7e-3d0a-5c4e-9b8f-2a6d4e0c1b93")
#: The keys every store record carries; a manifest key of the same name stays in ``sources`` only.
FIXED_KEYS = ("chunk_id", "source", "page", "docs", "sources")


@dataclass(frozen=True, slots=True)
class StoreForm:
    """How one store takes records: its name (for messages), metadata shape and id form."""

    name: str
    shape: Shape = "nested"
    ids: IdForm = "canonical"

    def store_id(self, chunk_id: str) -> str:
        """The id the store keeps for canonical ``chunk_id``."""
        return str(uuid.uuid5(ID_NAMESPACE, chunk_id)) if self.ids == "uuid" else chunk_id


@dataclass(frozen=True, slots=True)
class StoreRecord:
    """One canonical as a store holds it; :meth:`metadata` builds the store's metadata mapping."""

    id: str
    chunk_id: str
    text: str
    source: str
    page: int
    docs: tuple[str, ...]
    sources: tuple[Citation, ...]
    manifest: tuple[tuple[str, MetaValue], ...] = ()

    @classmethod
    def of(cls, rec: ExportRecord, form: StoreForm) -> StoreRecord:
        """The store record of an upsert; raises :class:`SyncError` for a record without sources
        (an export never has one: a canonical exists while a source holds it)."""
        if not rec.sources:
            raise SyncError(
                f"canonical {rec.id} has no sources: the index is inconsistent, run chunkdedup check"
            )
        first = rec.sources[0]
        docs = tuple(dict.fromkeys(s.doc for s in rec.sources))
        manifest = tuple((k, v) for k, v in first.metadata.items() if k not in FIXED_KEYS)
        return cls(
            form.store_id(rec.id), rec.id, rec.text or "", first.doc, first.page, docs, rec.sources, manifest
        )

    def metadata(self, shape: Shape) -> dict[str, Any]:
        """The metadata mapping a framework document carries, in the store's ``shape``."""
        sources = [s.to_json() for s in self.sources]
        out: dict[str, Any] = dict(self.manifest)
        out.update(
            chunk_id=self.chunk_id,
            source=self.source,
            page=self.page,
            docs=list(self.docs) if shape != "scalars" else json.dumps(list(self.docs)),
            sources=sources if shape == "nested" else json.dumps(sources, sort_keys=True),
        )
        return out


def stored_sources(meta: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The ``sources`` of a store record's metadata as export writes them, whatever the shape."""
    raw = meta.get("sources")
    if isinstance(raw, str):
        raw = json.loads(raw)
    return [dict(s) for s in raw] if isinstance(raw, list) else []


def stored_docs(meta: Mapping[str, Any]) -> tuple[str, ...]:
    """The ``docs`` of a store record's metadata (a list, or JSON text in a scalar-only store)."""
    raw = meta.get("docs")
    if isinstance(raw, str):
        try:
            decoded = json.loads(raw)
        except ValueError:
            decoded = None
        raw = decoded if isinstance(decoded, list) else [raw]
    return tuple(str(d) for d in raw) if isinstance(raw, list | tuple) else ()
