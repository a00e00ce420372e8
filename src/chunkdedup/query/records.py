"""The records of a query: the result, for ``--explain`` the dropped candidates and the matched
contexts, and the candidates between the steps. Hits, citations and export records are ground-floor
records (:mod:`chunkdedup.types`), named here too.

Each public one has ``to_json()``: the CLI prints exactly that, and adapters read the typed fields.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from chunkdedup.types import Citation as Citation
from chunkdedup.types import ExportRecord as ExportRecord
from chunkdedup.types import Hit as Hit
from chunkdedup.types import VersionPolicy as VersionPolicy
from chunkdedup.types import Words as Words

#: The step that dropped a candidate, in pipeline order (filters drop silently: see ``Dropped``);
#: ``rank`` is "below the top k" when the safety net is off.
Step = Literal["versions", "dedup_chunks", "cap", "mmr", "rank"]


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
