"""Retrieval metrics, defined once and applied the same way to the baseline and the deduped index.

A hit counts for a relevant ``(doc, page)`` when any of its citations is that ``(doc, page)``; a
relevant entry without a page is matched by any citation of that document.

* ``recall@K``: 1 when a relevant document is cited in the top K, else 0 (questions without relevant
  entries are left out);
* ``page_recall@K``: the same for relevant pages (only questions that name pages);
* ``mrr``: 1 / rank of the first relevant hit in the returned list (0 when none);
* ``ndcg@K``: binary gains, each relevant entry credited once (to the first hit matching it), so a
  copy of an already-found passage adds nothing; the ideal ranks ``min(K, #relevant)`` hits first;
* ``distinct_sources@K``: distinct documents cited in the top K;
* ``answer_in_context@K``: only questions with an answer of at most 30 words: 1 when the normalised
  answer appears in the top-K text, or when every number of the answer other than a year does; an
  answer is read without the lines naming its source files (``SOURCE(S): 2022 Q3 AAPL.pdf``, see
  :func:`~chunkdedup.evaluate.golden.answer_text`), whose digits no passage need hold;
* ``evidence_answer@K``: the same questions (with relevant entries too): 1 when one top-K hit that
  cites a relevant document (or page) holds the answer itself;
* ``duplication_rate@K``: share of top-K result pairs whose 5-word-shingle Jaccard (over
  ``normalize.exact_key``) is >= 0.5; pooled over all pairs of all questions;
* ``context_tokens@K``: whitespace-separated words in the top-K texts.

Means are taken over the questions a metric applies to; the counts used are reported beside them.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from chunkdedup.dedup.minhash import MinHasher, jaccard
from chunkdedup.evaluate.golden import Question, answer_text
from chunkdedup.normalize import exact_key

DUPLICATE_JACCARD = 0.5
MAX_ANSWER_WORDS = 30
_WORD = re.compile(r"\w+")
_NUMBER = re.compile(r"\d+(?:,\d{3})*(?:\.\d+)?")


@dataclass(frozen=True, slots=True)
class Result:
    """One returned passage as the metrics see it: rank, id, score, text and cited (doc, page)s."""

    rank: int
    id: str
    score: float
    text: str
    citations: tuple[tuple[str, int], ...]


@dataclass(slots=True)
class Scores:
    """One question's metric values (``None`` where the metric does not apply) and, per K, the
    (duplicate pairs, pairs) behind ``duplication_rate@K``."""

    values: dict[str, float | None] = field(default_factory=dict)
    pairs: dict[int, tuple[int, int]] = field(default_factory=dict)


class PairSimilarity:
    """5-word-shingle Jaccard of two texts' exact keys, with the shingle sets cached per text."""

    def __init__(self, shingle_words: int = 5) -> None:
        self._hasher = MinHasher(num_perm=1, shingle_words=shingle_words)
        self._cache: dict[str, object] = {}

    def __call__(self, a: str, b: str) -> float:
        return jaccard(self._shingles(a), self._shingles(b))  # type: ignore[arg-type]

    def _shingles(self, text: str) -> object:
        if text not in self._cache:
            self._cache[text] = self._hasher.shingles(exact_key(text))
        return self._cache[text]


def _matches(result: Result, doc: str, page: int | None) -> bool:
    return any(d == doc and (page is None or p == page) for d, p in result.citations)


def is_relevant(result: Result, question: Question) -> bool:
    return any(_matches(result, r.doc, r.page) for r in question.relevant)


def recall_at(results: Sequence[Result], question: Question, k: int) -> float | None:
    docs = {r.doc for r in question.relevant}
    if not docs:
        return None
    return float(any(d in docs for res in results[:k] for d, _ in res.citations))


def page_recall_at(results: Sequence[Result], question: Question, k: int) -> float | None:
    pages = [r for r in question.relevant if r.page is not None]
    if not pages:
        return None
    return float(any(_matches(res, r.doc, r.page) for res in results[:k] for r in pages))


def reciprocal_rank(results: Sequence[Result], question: Question) -> float | None:
    if not question.relevant:
        return None
    for i, res in enumerate(results, start=1):
        if is_relevant(res, question):
            return 1.0 / i
    return 0.0


def ndcg_at(results: Sequence[Result], question: Question, k: int) -> float | None:
    if not question.relevant:
        return None
    found: set[int] = set()
    dcg = 0.0
    for i, res in enumerate(results[:k], start=1):
        new = {j for j, r in enumerate(question.relevant) if j not in found and _matches(res, r.doc, r.page)}
        if new:
            found.add(min(new))
            dcg += 1.0 / math.log2(i + 1)
    ideal = sum(1.0 / math.log2(i + 1) for i in range(1, min(k, len(question.relevant)) + 1))
    return dcg / ideal


def distinct_sources_at(results: Sequence[Result], k: int) -> float:
    return float(len({d for res in results[:k] for d, _ in res.citations}))


def context_tokens_at(results: Sequence[Result], k: int) -> float:
    return float(sum(len(res.text.split()) for res in results[:k]))


def normalise(text: str) -> str:
    """NFKC, casefold, words only, one space between them."""
    return " ".join(_WORD.findall(unicodedata.normalize("NFKC", text).casefold()))


def numbers(text: str, *, drop_years: bool = False) -> set[str]:
    """Numbers in ``text``, thousands separators and trailing decimal zeros removed; with
    ``drop_years`` the four-digit integers 1900-2099 are left out."""
    out: set[str] = set()
    for m in _NUMBER.findall(unicodedata.normalize("NFKC", text)):
        n = m.replace(",", "")
        if "." in n:
            n = n.rstrip("0").rstrip(".")
        if drop_years and len(n) == 4 and n.isdigit() and 1900 <= int(n) <= 2099 and "," not in m:
            continue
        out.add(n)
    return out


def _holds_answer(text: str, answers: Sequence[str]) -> bool:
    norm = f" {normalise(text)} "
    present = numbers(text)
    for answer in answers:
        key = normalise(answer)
        if key and f" {key} " in norm:
            return True
        wanted = numbers(answer, drop_years=True)
        if wanted and wanted <= present:
            return True
    return False


def short_answers(answers: Sequence[str]) -> list[str]:
    """The answers the answer metrics score: each without its source lines, if at most
    :data:`MAX_ANSWER_WORDS` words long then."""
    return [a for a in map(answer_text, answers) if a and len(a.split()) <= MAX_ANSWER_WORDS]


def answer_in_context_at(results: Sequence[Result], answers: Sequence[str], k: int) -> float | None:
    short = short_answers(answers)
    if not short:
        return None
    return float(_holds_answer(" ".join(res.text for res in results[:k]), short))


def evidence_answer_at(results: Sequence[Result], question: Question, k: int) -> float | None:
    """1 when one top-K hit that cites a relevant document (or page) holds the answer itself.

    Stricter than ``answer_in_context``, which accepts the answer's numbers spread over the whole
    context, from any document: "$4.2 billion" found in another company's filing is not evidence.
    Only questions with a short answer and relevant entries count.
    """
    short = short_answers(question.answers)
    if not short or not question.relevant:
        return None
    return float(any(is_relevant(r, question) and _holds_answer(r.text, short) for r in results[:k]))


def duplicate_pairs(
    texts: Sequence[str], similarity: PairSimilarity, threshold: float = DUPLICATE_JACCARD
) -> tuple[int, int]:
    """(pairs at or above ``threshold``, all pairs) among ``texts``."""
    dup = total = 0
    for i in range(len(texts)):
        for j in range(i + 1, len(texts)):
            total += 1
            dup += similarity(texts[i], texts[j]) >= threshold
    return dup, total


def score_question(
    runs: Mapping[int, Sequence[Result]], question: Question, k: int, similarity: PairSimilarity
) -> Scores:
    """All metrics of one question; ``runs[K]`` is the result list retrieved with ``k=K``."""
    s = Scores()
    s.values["mrr"] = reciprocal_rank(runs[k], question)
    for kk, results in sorted(runs.items()):
        s.values[f"recall@{kk}"] = recall_at(results, question, kk)
        s.values[f"page_recall@{kk}"] = page_recall_at(results, question, kk)
        s.values[f"ndcg@{kk}"] = ndcg_at(results, question, kk)
        s.values[f"distinct_sources@{kk}"] = distinct_sources_at(results, kk)
        s.values[f"answer_in_context@{kk}"] = answer_in_context_at(results, question.answers, kk)
        s.values[f"evidence_answer@{kk}"] = evidence_answer_at(results, question, kk)
        dup, total = duplicate_pairs([r.text for r in results[:kk]], similarity)
        s.pairs[kk] = (dup, total)
        s.values[f"duplication_rate@{kk}"] = dup / total if total else None
        s.values[f"context_tokens@{kk}"] = context_tokens_at(results, kk)
    return s


def aggregate(scores: Sequence[Scores]) -> dict[str, float | int | None]:
    """Means over the questions each metric applies to (duplication pooled over pairs), plus counts."""
    out: dict[str, float | int | None] = {"questions": len(scores)}
    names = list(dict.fromkeys(name for s in scores for name in s.values))
    for name in names:
        if name.startswith("duplication_rate@"):
            kk = int(name.split("@")[1])
            dup = sum(s.pairs[kk][0] for s in scores)
            total = sum(s.pairs[kk][1] for s in scores)
            out[name] = dup / total if total else None
            continue
        vals = [v for s in scores if (v := s.values.get(name)) is not None]
        out[name] = sum(vals) / len(vals) if vals else None
        if name.startswith(("answer_in_context@", "evidence_answer@", "page_recall@")):
            out[name.split("@")[0] + "_questions"] = len(vals)
    return out


__all__ = [
    "DUPLICATE_JACCARD",
    "MAX_ANSWER_WORDS",
    "PairSimilarity",
    "Result",
    "Scores",
    "aggregate",
    "answer_in_context_at",
    "context_tokens_at",
    "distinct_sources_at",
    "duplicate_pairs",
    "evidence_answer_at",
    "is_relevant",
    "ndcg_at",
    "normalise",
    "numbers",
    "page_recall_at",
    "recall_at",
    "reciprocal_rank",
    "score_question",
    "short_answers",
]
