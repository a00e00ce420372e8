"""The public records a query and an export return: hits with citations, for ``--explain`` the dropped
candidates, and export records (a canonical with its sources, or an id to delete).

Each has ``to_json()``: the CLI prints exactly that, and adapters read the typed fields instead of keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from chunkdedup.types import MetaValue, Relation

#: The step that dropped a candidate, in pipeline order (filters drop silently: see ``Dropped``);
#: ``rank`` is "below the top k" when the safety net is off.
Step = Literal["versions", "dedup_chunks", "cap", "mmr", "rank"]
VersionPolicy = Literal["latest", "label", "all"]
#: Whose words a hit shows: ``source``, those of its first citation (the copy that placed it: the
#: words the caller's question and filter picked); ``canonical``, the canonical text whenever its
#: source is cited (else the placing copy's). Either way every cited source whose words differ
#: carries its own (:attr:`Citation.text`).
Words = Literal["source", "canonical"]
ExportOp = Literal["upsert", "delete"]


@dataclass(frozen=True, slots=True)
class Citation:
    """One source of a hit that passed the filter: the same fields as export's ``sources``.

    ``effective_date`` and ``superseded_by`` come from the document's family (``None`` when it has
    none, or when no newer version within the filter exists).

    ``text`` is this source's own words when they are not the words shown with it (a near or
    semantic copy of the shown text, or the canonical a near copy joined): a citation never vouches
    for words its source does not hold. ``differs`` names the words that differ from the shown text
    (``+word`` only in this source, ``-word`` only in the shown text; casefolded, at most 20).
    Both are empty for a source whose words are the shown ones.
    """

    doc: str
    page: int
    start: int
    end: int
    relation: Relation
    similarity: float
    metadata: Mapping[str, MetaValue] = field(default_factory=dict)
    effective_date: str | None = None
    superseded_by: str | None = None
    text: str | None = None
    differs: tuple[str, ...] = ()

    @property
    def own_words(self) -> bool:
        """True when this source holds other words than the ones shown with it."""
        return self.text is not None

    def to_json(self) -> dict[str, Any]:
        """Exactly the fields of an export source; ``text`` and ``differs`` only for a source whose
        words are not the shown ones."""
        out: dict[str, Any] = {
            "doc": self.doc,
            "page": self.page,
            "start": self.start,
            "end": self.end,
            "relation": self.relation,
            "similarity": self.similarity,
            "metadata": dict(self.metadata),
        }
        if self.text is not None:
            out["text"] = self.text
            out["differs"] = list(self.differs)
        return out

    def note(self, shown: Citation) -> str:
        """How this source's words relate to the words shown (those of ``shown``), for a person:
        ``""`` when they are its own, else e.g. "near copy (0.878) of the text shown, from
        docs/aapl.pdf p.32; differs in: -apple +amazon.com,"."""
        if self.text is None:
            return ""
        words = " ".join(self.differs) if self.differs else "case, spacing or generated ids only"
        if self.relation != "exact" and shown.relation == "exact":
            how = f"{self.relation} copy ({self.similarity:.3f}) of the text shown, from"
        elif self.relation != "exact":  # both joined one canonical: the similarities are to it
            how = (
                f"{self.relation} copy ({self.similarity:.3f}) of the canonical the text shown"
                f" ({shown.similarity:.3f}) also joined, from"
            )
        else:
            how = f"the text shown is its {shown.relation} copy ({shown.similarity:.3f}), from"
        return f"{how} {shown.doc} p.{shown.page}; differs in: {words}"


@dataclass(frozen=True, slots=True)
class Hit:
    """One returned passage: ``score`` is the retriever's, at full precision (higher is better).

    ``effective_date``/``superseded_by`` describe the newest cited version holding the text; they are
    filled whenever the cited documents carry dates (the ``label`` policy prints them next to the text).
    """

    rank: int
    score: float
    id: str
    text: str
    citations: tuple[Citation, ...]
    effective_date: str | None = None
    superseded_by: str | None = None

    def to_json(self, *, label: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {
            "rank": self.rank,
            "score": self.score,
            "id": self.id,
            "text": self.text,
            "citations": [c.to_json() for c in self.citations],
        }
        if label:
            out["effective_date"] = self.effective_date
            out["superseded_by"] = self.superseded_by
        return out


@dataclass(frozen=True, slots=True)
class Dropped:
    """A candidate the version policy or the safety net removed, with the step and why.

    Candidates the filter removed are never reported: they lie outside what the caller may see.
    """

    id: str
    score: float
    text: str
    step: Step
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "score": self.score,
            "text": self.text,
            "step": self.step,
            "reason": self.reason,
        }


@dataclass(frozen=True, slots=True)
class ContextMatch:
    """A passing document whose context matched the question, with its context score."""

    doc: str
    score: float

    def to_json(self) -> dict[str, Any]:
        return {"doc": self.doc, "score": self.score}


@dataclass(frozen=True, slots=True)
class QueryResult:
    """Hits best first, plus every eligible candidate that was dropped (in pool order)."""

    query: str
    hits: tuple[Hit, ...]
    dropped: tuple[Dropped, ...] = ()
    versions: VersionPolicy = "latest"
    #: the passing documents whose context matched the question best (they ranked their chunks up)
    context: tuple[ContextMatch, ...] = ()

    def to_json(self, *, explain: bool = False) -> dict[str, Any]:
        label = self.versions == "label"
        out: dict[str, Any] = {"query": self.query, "hits": [h.to_json(label=label) for h in self.hits]}
        if explain:
            out["dropped"] = [d.to_json() for d in self.dropped]
            out["context"] = [m.to_json() for m in self.context]
        return out


@dataclass(frozen=True, slots=True)
class Candidate:
    """A retrieved chunk after filters and versions: only its passing citations are kept."""

    id: str
    score: float
    text: str
    citations: tuple[Citation, ...]
    effective_date: str | None = None
    superseded_by: str | None = None

    def hit(self, rank: int) -> Hit:
        return Hit(
            rank, self.score, self.id, self.text, self.citations, self.effective_date, self.superseded_by
        )


@dataclass(frozen=True, slots=True)
class ExportRecord:
    """One line of ``export``: a canonical chunk with every source (``Citation`` without the version
    fields), or, in a ``--changes-since`` delta, an id to delete.

    ``op`` is ``None`` in a full export (the JSON then has no ``op`` key), ``upsert`` or ``delete``
    in a delta; a delete carries only its ``id``.
    """

    id: str
    text: str | None
    sources: tuple[Citation, ...] = ()
    op: ExportOp | None = None

    @classmethod
    def delete(cls, chunk_id: str) -> ExportRecord:
        return cls(chunk_id, None, (), "delete")

    def to_json(self) -> dict[str, Any]:
        """The JSONL line of this record (written with sorted keys)."""
        if self.op == "delete":
            return {"op": "delete", "id": self.id}
        sources = [s.to_json() for s in self.sources]
        out: dict[str, Any] = {"id": self.id, "text": self.text, "sources": sources}
        if self.op is not None:
            out["op"] = self.op
        return out
