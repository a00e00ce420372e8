"""Does the index know what the golden questions name? Names and years a question asks about that
appear in neither the chunk text nor any document's context cannot steer retrieval: the evaluation
measures something else than the user thinks (typically: the manifest that names company and year
was not given to ``ingest``)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from chunkdedup.evaluate.golden import Question
from chunkdedup.index import EvaluationReads
from chunkdedup.query.retrieve import STOP_WORDS, quote_terms

_WORD = re.compile(r"[^\W_]+")
_YEAR_IN = re.compile(r"(?<!\d)(?:19|20)\d\d(?!\d)")
_POSSESSIVE = re.compile(r"['\u2019]s$")
_EDGES = "\"'()[]{},.;:!?\u2019\u201c\u201d"


@dataclass(frozen=True, slots=True)
class Gap:
    """A name or year the golden questions ask about that the index holds nowhere."""

    term: str
    questions: int


def identity_terms(question: str) -> list[str]:
    """The names (capitalised words past the first) and years (``2018``, also inside ``FY2018``).

    Example:
        >>> identity_terms("What is 3M's FY2018 capital expenditure for Pepsi in Europe, per its 10-Qs?")
        ['3M', '2018', 'Pepsi', 'Europe']
    """
    out: list[str] = []
    for i, raw in enumerate(question.split()):
        token = _POSSESSIVE.sub("", raw.strip(_EDGES))
        years = _YEAR_IN.findall(token)
        if years:
            out.extend(years)
        elif i == 0 or not token or "-" in token or token.lower() in STOP_WORDS:
            continue  # a compound such as "10-Qs" names a kind of document, not an entity
        elif _WORD.fullmatch(token) and len(token) > 1 and (
            token[:1].isupper() or (token[:1].isdigit() and any(c.isalpha() for c in token))
        ):
            out.append(token)  # "Pepsi", and names made of digits and letters: "3M"
    return list(dict.fromkeys(out))


def identity_gaps(reads: EvaluationReads, questions: Sequence[Question]) -> list[Gap]:
    """Names and years of the questions found in neither text nor context, most asked first."""
    tables = reads.fts_tables()
    counts: dict[str, int] = {}
    known: dict[str, bool] = {}
    for q in questions:
        for term in identity_terms(q.question):
            key = term.lower()
            if key not in known:
                match = quote_terms([key])
                known[key] = any(
                    reads.fts_matches(t, match)
                    for t in ("groups_fts", "contexts_fts")
                    if t in tables
                )
            if not known[key]:
                counts[term] = counts.get(term, 0) + 1
    return [Gap(t, n) for t, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]


def gap_warning(gaps: Sequence[Gap], total: int) -> str | None:
    """One line for a person, or None when the index knows every name and year asked about."""
    if not gaps:
        return None
    shown = ", ".join(f"{g.term!r} ({g.questions})" for g in gaps[:8])
    more = f" and {len(gaps) - 8} more" if len(gaps) > 8 else ""
    return (
        f"{len(gaps)} name(s) or year(s) the {total} golden questions ask about are in neither the text "
        f"nor any document's context: {shown}{more}. Ingest with a manifest that names them (e.g. "
        "company, fiscal_year), or the questions ask about documents the index does not hold."
    )
