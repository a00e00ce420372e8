"""Every metric on small hand-computed examples."""

from __future__ import annotations

import math

import pytest

from chunkdedup.evaluate.golden import Question, Relevant
from chunkdedup.evaluate.metrics import (
    PairSimilarity,
    Result,
    Scores,
    aggregate,
    answer_in_context_at,
    context_tokens_at,
    distinct_sources_at,
    duplicate_pairs,
    evidence_answer_at,
    ndcg_at,
    numbers,
    page_recall_at,
    recall_at,
    reciprocal_rank,
    score_question,
)


def r(rank: int, *cites: tuple[str, int], text: str = "x") -> Result:
    return Result(rank, f"c{rank}", 1.0 / rank, text, tuple(cites))


Q = Question("q1", "?", (Relevant("a.pdf", 3), Relevant("b.pdf")))
#  rank 1 cites c.pdf p1 (irrelevant); rank 2 cites a.pdf p2 (right doc, wrong page);
#  rank 3 cites b.pdf p7 (relevant: b.pdf has no page); rank 4 cites a.pdf p3 (relevant page)
RESULTS = [r(1, ("c.pdf", 1)), r(2, ("a.pdf", 2)), r(3, ("x.pdf", 1), ("b.pdf", 7)), r(4, ("a.pdf", 3))]


def test_recall_is_document_level() -> None:
    assert recall_at(RESULTS, Q, 1) == 0.0
    assert recall_at(RESULTS, Q, 2) == 1.0  # a.pdf is cited at rank 2, any page
    assert recall_at(RESULTS, Question("n", "?", ()), 5) is None


def test_page_recall_needs_the_page() -> None:
    assert page_recall_at(RESULTS, Q, 3) == 0.0  # a.pdf p.2 is not a.pdf p.3
    assert page_recall_at(RESULTS, Q, 4) == 1.0
    assert page_recall_at(RESULTS, Question("n", "?", (Relevant("a.pdf"),)), 4) is None


def test_mrr_is_the_first_relevant_hit() -> None:
    # rank 2 cites a.pdf p.2, which does not match (a.pdf, 3); rank 3 matches b.pdf (any page)
    assert reciprocal_rank(RESULTS, Q) == pytest.approx(1 / 3)
    assert reciprocal_rank(RESULTS[:2], Q) == 0.0


def test_ndcg_binary_gains_each_relevant_credited_once() -> None:
    # gains at ranks 3 and 4 (b.pdf, then a.pdf p.3); ideal: 2 relevant entries at ranks 1 and 2
    dcg = 1 / math.log2(4) + 1 / math.log2(5)
    ideal = 1 / math.log2(2) + 1 / math.log2(3)
    assert ndcg_at(RESULTS, Q, 4) == pytest.approx(dcg / ideal)
    # at K=1 the ideal is one hit at rank 1; nothing relevant at rank 1
    assert ndcg_at(RESULTS, Q, 1) == 0.0
    # a second copy of b.pdf adds no gain
    dup = [r(1, ("b.pdf", 1)), r(2, ("b.pdf", 2))]
    assert ndcg_at(dup, Q, 2) == pytest.approx(1.0 / ideal)


def test_distinct_sources_counts_every_cited_document() -> None:
    assert distinct_sources_at(RESULTS, 3) == 4.0  # c, a, x, b
    assert distinct_sources_at(RESULTS, 4) == 4.0


def test_context_tokens_are_whitespace_words() -> None:
    res = [r(1, text="one two  three"), r(2, text="four\nfive"), r(3, text="six")]
    assert context_tokens_at(res, 2) == 5.0


def test_numbers_drop_separators_years_and_trailing_zeros() -> None:
    assert numbers("$82,959 million in 2023, up 1.50% from 7") == {"82959", "2023", "1.5", "7"}
    assert numbers("$82,959 million in 2023", drop_years=True) == {"82959"}


def test_answer_in_context_string_or_numbers_and_30_word_rule() -> None:
    res = [r(1, text="Total net sales were $81,797 million for the quarter."), r(2, text="Other text.")]
    assert answer_in_context_at(res, ["total NET sales were"], 1) == 1.0  # normalised string
    # numbers rule, the year left out
    assert answer_in_context_at(res, ["It was 81,797 (in millions) in 2023"], 1) == 1.0
    assert answer_in_context_at(res, ["It was 81,798"], 2) == 0.0
    assert answer_in_context_at(res, ["no numbers here"], 2) == 0.0
    long = " ".join(["word"] * 31)
    assert answer_in_context_at(res, [long], 2) is None  # left out, not counted
    assert answer_in_context_at(res, [], 2) is None


def test_evidence_answer_needs_the_answer_in_one_hit_citing_a_relevant_source() -> None:
    q = Question("q", "?", (Relevant("a.pdf"),), ("81,797",))
    other = r(1, ("b.pdf", 1), text="Net sales were $81,797 million.")  # the number, wrong filing
    split = [r(1, ("a.pdf", 1), text="Net sales were $81,"), r(2, ("a.pdf", 2), text="797 million.")]
    right = r(2, ("a.pdf", 4), text="Total net sales: 81,797.")
    assert answer_in_context_at([other], q.answers, 1) == 1.0  # the loose metric is fooled
    assert evidence_answer_at([other], q, 1) == 0.0
    assert evidence_answer_at([other, right], q, 1) == 0.0
    assert evidence_answer_at([other, right], q, 2) == 1.0
    assert evidence_answer_at(split, q, 2) == 0.0  # one hit must hold it
    paged = Question("p", "?", (Relevant("a.pdf", 3),), ("81,797",))
    assert evidence_answer_at([right], paged, 1) == 0.0  # right document, not the relevant page
    assert evidence_answer_at([right], Question("n", "?", (), ("81,797",)), 1) is None
    wordy = Question("l", "?", (Relevant("a.pdf"),), (" ".join(["w"] * 31),))
    assert evidence_answer_at([right], wordy, 1) is None


def test_duplication_pairs_by_shingle_jaccard() -> None:
    sim = PairSimilarity()
    a = "the quick brown fox jumps over the lazy dog today"
    b = "The quick brown fox jumps over the lazy dog TODAY"  # same exact key: Jaccard 1
    c = "the quick brown fox jumps over the lazy cat now"  # 4 of 6 shingles shared with a's 6: 4/8 = 0.5
    d = "completely different words that share nothing with others"
    assert sim(a, b) == 1.0
    assert sim(a, c) == pytest.approx(0.5)
    assert duplicate_pairs([a, b, c, d], sim) == (3, 6)  # a-b, a-c, b-c
    assert duplicate_pairs([a], sim) == (0, 0)


def test_score_question_and_aggregate() -> None:
    sim = PairSimilarity()
    q = Question("q", "?", (Relevant("a.pdf"),), ("42",))
    hit = [r(1, ("a.pdf", 1), text="answer is 42 here"), r(2, ("a.pdf", 1), text="answer is 42 here")]
    miss = [r(1, ("z.pdf", 1), text="nothing"), r(2, ("y.pdf", 1), text="else entirely")]
    s1 = score_question({1: hit[:1], 2: hit}, q, 2, sim)
    s2 = score_question({1: miss[:1], 2: miss}, q, 2, sim)
    assert s1.values["recall@2"] == 1.0 and s2.values["recall@2"] == 0.0
    assert s1.values["duplication_rate@2"] == 1.0 and s1.values["duplication_rate@1"] is None
    agg = aggregate([s1, s2])
    assert agg["recall@2"] == 0.5 and agg["mrr"] == 0.5
    assert agg["duplication_rate@2"] == 0.5  # pooled: 1 duplicate pair of 2 pairs
    assert agg["answer_in_context@2"] == 0.5 and agg["answer_in_context_questions"] == 2
    assert agg["page_recall@2"] is None and agg["page_recall_questions"] == 0
    assert agg["context_tokens@2"] == (8 + 3) / 2
    assert aggregate([Scores()])["questions"] == 1


def test_an_answer_is_scored_without_its_source_lines() -> None:
    """A golden answer written with docugami's source line: the hit holding the amount holds the answer,
    though it holds no "3" of "Q3" (the running footer that names the quarter is stripped)."""
    answer = "Operating cash flow was $98,024 million.\n\nSOURCE(S): 2022 Q3 AAPL.pdf"
    q = Question("q", "?", (Relevant("a.pdf"),), (answer,))
    hit = r(1, ("a.pdf", 5), text="Cash generated by operating activities 98,024 75,373")
    assert evidence_answer_at([hit], q, 1) == 1.0
    assert answer_in_context_at([hit], q.answers, 1) == 1.0
    # 30 words once its source line is cut: counted
    near_long = " ".join(["w"] * 29) + " 98,024\nSOURCE(S): 2022 Q3 AAPL.pdf, 2023 Q1 AAPL.pdf"
    assert evidence_answer_at([hit], Question("l", "?", (Relevant("a.pdf"),), (near_long,)), 1) == 1.0
    only_source = Question("s", "?", (Relevant("a.pdf"),), ("SOURCE(S): a.pdf",))
    assert evidence_answer_at([hit], only_source, 1) is None
