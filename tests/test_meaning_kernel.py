"""The meaning guard's compiled first reading settles only pairs the Python reading finds no meaning
change in, and settles most of those: verdicts equal with and without it, on hand-made pairs that
touch each of its rules, on generated edits and on every real candidate pair of the reference
corpora."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunkdedup.dedup.meaning import (
    _CONJUNCTION,
    _FUNCTION,
    _LISTED,
    _OPENS_ITEM,
    _REFERRING,
    CONTENT_WORDS,
    _counts_matter,
    _Norms,
    judge_edges,
    meaning_diff,
)
from chunkdedup.dedup.meaning_kernel import READ, SETTLED, norm_hashes, settled

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
BASE = (
    "The supplier sends an invoice at the end of each month and the customer pays it within the term "
    "agreed in the order form; questions about an invoice go to the billing team by mail."
)


def _known(pairs: list[tuple[str, str]]) -> list[int]:
    texts = [t.encode("utf-8", "surrogatepass") for pair in pairs for t in pair]
    index = np.arange(len(texts), dtype=np.int64).reshape(-1, 2)
    listed, referring, *joining = (
        norm_hashes(words) for words in (_LISTED, _REFERRING, _CONJUNCTION, _FUNCTION, _OPENS_ITEM)
    )
    return settled(texts, index, listed, referring, CONTENT_WORDS, *joining).tolist()


def _settled(pairs: list[tuple[str, str]]) -> list[bool]:
    return [k == SETTLED for k in _known(pairs)]


def _edit(old: str, new: str) -> tuple[str, str]:
    assert old in BASE
    return BASE, BASE.replace(old, new, 1)


@pytest.mark.parametrize(
    ("pair", "expected"),
    [
        (_edit("sends", "issues"), True),  # a plain word: settled
        (_edit("the term", "the term\u2019s end"), True),  # curly punctuation is no letter
        (_edit("billing team", "billing [team](https://example.com/a)"), False),  # [team vs team: moved
        (_edit("sends", "does not send"), False),  # a listed word (READ)
        (_edit("sends", "may send"), False),
        (_edit("billing", "Acme billing"), False),  # a capital
        (_edit("billing", "billing\u00a0desk"), False),  # a space beyond ASCII
        (_edit("by mail", "by mail to ops@example.com"), False),  # an address
        (_edit("the term", "the term (see section a)"), False),  # a part's name before a letter
        (_edit("order form;", "order form 4(b);"), False),  # a lettered reference
        (_edit("month and", "month, quarter and"), False),  # an item beside a joining word
        (_edit("month and", "month and the"), True),  # a function word beside it is no item
        (_edit("the billing team", "the [billing team](https://example.com/t)"), False),  # a link
        (_edit("by mail.", "by mail at www.example.com today."), False),  # an address standing in text
        (_edit("by mail.", "by mail ![logo](logo.png)."), False),  # an image's words
        (_edit("billing team", "billing [team](https://example.com/t \"The team\")"), False),  # a title
        (_edit("billing", "billing <!-- note -->"), False),  # an HTML comment
        (_edit("questions about", "questions raised by staff and partners in writing about"), False),
        (_edit("order form", "order-form"), False),  # a compound: left to the Python reading of its parts
        (_edit("order form", "version-2-or-later form"), False),
        (_edit("by mail", "by mail/post"), False),
        ((BASE, BASE.replace("customer pays", "pays customer")), False),  # only moved
        ((BASE, BASE), True),
    ],
)
def test_each_rule_of_the_kernel(pair: tuple[str, str], expected: bool) -> None:
    assert _settled([pair]) == [expected]
    if expected:
        assert meaning_diff(*pair) is None


def test_a_link_target_is_read_as_text() -> None:
    """A changed link target is no changed word (``_text`` leaves it out): the plain edit beside it
    decides."""
    a = "See the [billing guide](https://example.com/v1/guide) for every invoice rule we apply."
    b = "See the [billing guide](https://example.com/v2/guide) for every invoice rule we use."
    assert _settled([(a, b)]) == [True]
    assert meaning_diff(a, b) is None
    c = b.replace("we use", "we never use")
    assert _settled([(a, c)]) == [False]
    assert meaning_diff(a, c) is not None


_FIGURES = (
    "Notice takes 30 days and refunds take 60 days for every order of the customer.",
    "Notice takes 60 days and refunds take 30 days for every order of the customer.",
)


def test_figures_in_another_order_are_read() -> None:
    assert _settled([_FIGURES]) == [False]
    found = meaning_diff(*_FIGURES)
    assert found is not None and found.reason == "order" and found.words == ("-30", "-60", "+60", "+30")


_WORDS = (
    "the", "invoice", "customer", "pays", "within", "days", "not", "may", "must", "only", "first",
    "third", "Acme", "Jassy", "(a)", "4(b)", "section", "b", "iv", "team\u2019s", "\u201cfees\u201d",
    "[guide](http://x.io/a)", "https://x.io/b", "ops@x.io", "<!--", "-->", "caf\u00e9", "a\u00a0b",
    "\u2014", "*", "-", "1.", "user(s)", "review,", "Review.", "U.S.", "US",
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.sampled_from(_WORDS), min_size=3, max_size=40),
    st.lists(st.tuples(st.integers(0, 60), st.sampled_from(("insert", "delete", "replace")),
                       st.sampled_from(_WORDS)), min_size=1, max_size=4),
    st.sampled_from((" ", "\n", "  ")),
)
def test_a_settled_pair_is_one_the_python_reading_merges(
    words: list[str], edits: list[tuple[int, str, str]], space: str
) -> None:
    edited = list(words)
    for at, how, word in edits:
        k = at % (len(edited) + 1)
        if how == "insert":
            edited.insert(k, word)
        elif edited and k < len(edited):
            if how == "delete":
                del edited[k]
            else:
                edited[k] = word
    a, b = space.join(words), space.join(edited)
    known = _known([(a, b)])[0]
    if known == SETTLED:
        assert meaning_diff(a, b) is None
    elif known == READ:  # the Python count agrees: the pair goes to the word-by-word reading
        assert _counts_matter(a, b, _Norms())


def test_the_kernel_gives_the_same_verdicts_on_every_real_pair(real_candidate_pairs) -> None:  # type: ignore[no-untyped-def]
    """Every candidate pair of sec-10q and site-policy (merges and variants): the same verdicts and
    reasons with the kernel as without, and the kernel settles most of them."""
    _, by_corpus = real_candidate_pairs
    pairs = [p for c in ("sec-10q", "site-policy") for p in by_corpus[c]]
    texts = [t for p in pairs for t in (p["leader_text"], p["member_text"])]
    edges = np.arange(len(texts), dtype=np.int64).reshape(-1, 2)
    order = np.arange(len(texts), dtype=np.int64)
    passed = np.ones(len(pairs), dtype=np.bool_)
    plain = judge_edges(edges, order, passed, texts.__getitem__, compiled=False)
    fast = judge_edges(edges, order, passed, texts.__getitem__, compiled=True)
    assert plain[0].tolist() == fast[0].tolist()
    assert plain[1] == fast[1]
    assert len(plain[1]) > 20  # the pairs do hold meaning changes
    share = sum(_settled([(p["leader_text"], p["member_text"]) for p in pairs])) / len(pairs)
    # filings write names and figures, and policies links and enumerations: a fifth of their pairs
    # settle here (the rest is read in Python; benchmarks/guard_cost.py measures what that costs)
    assert share > 0.18


def test_the_kernel_sends_a_listed_word_straight_to_the_reading() -> None:
    pair = _edit("sends", "does not send")
    assert _known([pair]) == [READ]
    assert _counts_matter(*pair, _Norms())
    found = meaning_diff(*pair)
    assert found is not None and found.reason == "negation"
