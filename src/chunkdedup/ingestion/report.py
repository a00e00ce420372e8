"""What an ingest run says when it ends: typed totals (files by status, the index's counts, the
cluster pass, the text index, the engine and its stage times), the top stripped keys and the notes a
person should read.

Every record reads as the mapping of its ``to_json()`` fields too, so ``report.totals["canonical_chunks"]``
and ``report.totals.stats.canonical_chunks`` are one value.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chunkdedup.store.rows import IndexStats, JsonRow
from chunkdedup.store.vectorindex import AnnSync
from chunkdedup.types import BoilerplateKey, FileResult, FileStatus


@dataclass(frozen=True, slots=True)
class FileCounts(JsonRow):
    """How many input files ended in each status, and how many indexed files the run removed because
    they are no longer among the inputs (``removed``, ``--prune``)."""

    ingested: int = 0
    unchanged: int = 0
    skipped: int = 0
    failed: int = 0
    removed: int = 0

    @classmethod
    def of(cls, results: Sequence[FileResult], removed: int = 0) -> FileCounts:
        by = {str(s): 0 for s in FileStatus}
        for r in results:
            by[str(r.status)] += 1
        return cls(**by, removed=removed)

    def to_json(self) -> dict[str, Any]:
        return {**{str(s): getattr(self, str(s)) for s in FileStatus}, "removed": self.removed}


@dataclass(frozen=True, slots=True)
class RemovedFile:
    """An indexed file a run removed (``--prune``: it is no longer among the inputs), with the
    documents it held."""

    path: str
    doc_ids: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ClusterPass(JsonRow):
    """What the run's cluster pass did: groups signed (in the chunk phase and the pass), groups
    re-clustered, and the merges and version pairs among them."""

    signed: int
    reclustered: int
    merged: int
    variants: int

    def to_json(self) -> dict[str, Any]:
        return {"signed": self.signed, "reclustered": self.reclustered, "merged": self.merged,
                "variants": self.variants}


@dataclass(frozen=True, slots=True)
class TextIndexTotals(JsonRow):
    """What the run did to a derived text index (tantivy): rebuilt from all texts, or updated."""

    engine: str
    rebuilt: bool
    groups: int

    def to_json(self) -> dict[str, Any]:
        return {"engine": self.engine, "rebuilt": self.rebuilt, "groups": self.groups}


@dataclass(frozen=True, slots=True)
class NearPassTotals(JsonRow):
    """An executor's own near pass (Ray): group texts shipped, candidate pairs verified."""

    groups_shipped: int
    pairs_verified: int

    def to_json(self) -> dict[str, Any]:
        return {"groups_shipped": self.groups_shipped, "pairs_verified": self.pairs_verified}


@dataclass(frozen=True, slots=True)
class EngineTotals(JsonRow):
    """The engine that ran the stages: its name and workers, its own near pass (``None``: none),
    where the near edges came from (the executor's name, ``store``, or ``None``: nothing to
    re-cluster) and the wall seconds of each stage."""

    name: str
    workers: int | None = None
    near_pass: NearPassTotals | None = None
    near_edges: str | None = None
    seconds: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "workers": self.workers,
            "near_pass": self.near_pass.to_json() if self.near_pass is not None else None,
            "near_edges": self.near_edges,
            "seconds": dict(self.seconds),
        }


@dataclass(frozen=True, slots=True)
class RunTotals(JsonRow):
    """A run's totals: files by status, documents chunked, what the index holds after it (its
    :class:`~chunkdedup.store.rows.IndexStats`, whose fields read at the top level), the cluster pass,
    the text index (``None``: FTS5, kept in step inside the file), the engine and the documents of
    the files the run removed (``--prune``)."""

    files: FileCounts
    documents_chunked: int
    stats: IndexStats
    cluster_pass: ClusterPass
    engine: EngineTotals
    text_index: TextIndexTotals | None = None
    #: what the run did to the approximate vector folder (``None``: nothing, or none wanted)
    vector_index: AnnSync | None = None
    documents_removed: int = 0

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"files": self.files.to_json(), "documents_chunked": self.documents_chunked,
                               "documents_removed": self.documents_removed}
        out.update(self.stats.to_json())
        out["cluster_pass"] = self.cluster_pass.to_json()
        if self.text_index is not None:
            out["text_index"] = self.text_index.to_json()
        out["engine"] = self.engine.to_json()
        if self.vector_index is not None:
            out["vector_index"] = self.vector_index.to_json()
        return out


@dataclass(frozen=True, slots=True)
class IngestReport:
    """What one ingest run did: every input file's outcome, totals, the top stripped keys, and the
    indexed files it removed (``removed``: ``--prune``, files no longer among the inputs)."""

    run_id: int | None
    files: tuple[FileResult, ...]
    totals: RunTotals
    top_stripped: tuple[BoilerplateKey, ...] = ()
    dry_run: bool = False
    notes: tuple[str, ...] = field(default=())
    removed: tuple[RemovedFile, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "dry_run": self.dry_run,
            "files": [
                {
                    "path": f.path,
                    "doc": f.doc_ids[0] if len(f.doc_ids) == 1 else list(f.doc_ids),
                    "status": str(f.status),
                    "reason": f.reason,
                }
                for f in self.files
            ],
            "removed": [
                {"path": f.path, "doc": f.doc_ids[0] if len(f.doc_ids) == 1 else list(f.doc_ids)}
                for f in self.removed
            ],
            "totals": self.totals.to_json(),
            "boilerplate": [
                {
                    "key": b.key,
                    "example": b.example,
                    "scope": b.scope,
                    "documents": b.doc_count,
                    "pages": b.page_count,
                }
                for b in self.top_stripped
            ],
            "notes": list(self.notes),
        }


def _a_few(names: Sequence[str]) -> str:
    """The first three names, and how many more."""
    return ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")


def manifest_notes(unlisted: Sequence[str], manifest: str | Path | None) -> tuple[str, ...]:
    """What a person should know of the inputs the manifest does not list: read, with no metadata (no
    family, department or date, so they are no version of anything and no department filter finds
    them). Named, a few of them."""
    if not unlisted:
        return ()
    shown, n = _a_few(unlisted), len(unlisted)
    return (
        f"{n} input file{'s are' if n > 1 else ' is'} not in the manifest {manifest} and carr"
        f"{'y' if n > 1 else 'ies'} no metadata (no family, department or date): {shown}; add "
        f"{'them' if n > 1 else 'it'} to the manifest, or leave {'them' if n > 1 else 'it'} out of the paths",
    )


def emptied_notes(emptied: Sequence[str]) -> tuple[str, ...]:
    """What a person should know of documents boilerplate stripping emptied: nothing of them is
    indexed (a document that is only a shared notice, or a template whose lines all count as chrome)."""
    if not emptied:
        return ()
    shown, n = _a_few(emptied), len(emptied)
    return (
        f"{n} document{'s' if n > 1 else ''} lost every line to boilerplate stripping and "
        f"{'have' if n > 1 else 'has'} no chunk: {shown}; `chunkdedup boilerplate` lists what was "
        "stripped ([boilerplate] always_keep keeps a line)",
    )


@dataclass(frozen=True, slots=True)
class RemovalReport(JsonRow):
    """What one removal did: the documents removed, the canonical chunks whose sources changed, and
    the documents re-chunked because the chrome decision moved."""

    removed: tuple[str, ...]
    canonicals_touched: int
    documents_rechunked: int

    def to_json(self) -> dict[str, Any]:
        return {"removed": list(self.removed), "canonicals_touched": self.canonicals_touched,
                "documents_rechunked": self.documents_rechunked}


__all__ = [
    "ClusterPass",
    "EngineTotals",
    "FileCounts",
    "IngestReport",
    "NearPassTotals",
    "RemovalReport",
    "RemovedFile",
    "RunTotals",
    "TextIndexTotals",
    "emptied_notes",
    "manifest_notes",
]
