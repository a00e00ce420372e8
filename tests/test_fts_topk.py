"""FTS5's exact top k from the rare terms' rows (:mod:`chunkdedup.store.topk`): whenever it answers,
the same groups, order and bm25 floats as the full query, ties included; and it falls back (None)
whenever the bound does not settle the top k."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from chunkdedup import Index, ingest
from chunkdedup.query.retrieve import Fts5Retriever, content_terms, quote_terms
from chunkdedup.store import fulltext, topk

#: every size threshold off: the corpus is small
SMALL = topk.Split(common=0.2, gain=0.0, min_rows=0, max_candidates=2000)
FILLER = [f"f{i}x" for i in range(300)]


def _text(rng: random.Random, extra: list[str]) -> str:
    words = rng.choices(FILLER, k=rng.randint(12, 40)) + extra
    rng.shuffle(words)
    return " ".join(words)


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rng = random.Random(7)
    docs = tmp_path_factory.mktemp("docs")
    texts: list[str] = []
    for _ in range(300):
        extra = ["within"] * rng.choice([0, 1, 1, 2, 3]) + ["middle"] * (rng.random() < 0.3)
        extra += ["sometimes"] * (rng.random() < 0.15)
        extra += ["rareone"] * (rng.random() < 0.05) + ["raretwo"] * (rng.random() < 0.05)
        texts.append(_text(rng, extra))
    # ties: one bag of words in six orders (distinct texts, the same counts and length)
    bag = [*rng.choices(FILLER, k=15), "rareone", "within", "within", "middle"]
    for _ in range(6):
        rng.shuffle(bag)
        texts.append(" ".join(bag))
    for i, text in enumerate(texts):
        (docs / f"d{i:03}.txt").write_text(text + ".\n", encoding="utf-8")
    path = tmp_path_factory.mktemp("ix") / "topk.sqlite"
    ingest([docs], path)
    return path


QUESTIONS = [
    "rareone within",
    "within rareone",
    "rareone raretwo within",
    "within middle raretwo rareone",
    "middle rareone",
    "rareone middle within raretwo",
    "sometimes rareone within",
    "raretwo sometimes middle",
]


def test_every_answer_is_the_full_query(index: Path) -> None:
    answered = 0
    with Index.open(index) as ix:
        splits = [SMALL, *(topk.Split(common=c, gain=0.0, min_rows=0) for c in (0.5, 0.1))]
        for split in splits:
            for q in QUESTIONS:
                terms = content_terms(q)
                for limit in (1, 2, 3, 5, 8, 13, 40, 400):
                    fast = topk.top_groups(ix.store, terms, limit, split)
                    full = fulltext.search_groups(ix.store, quote_terms(terms), limit)
                    if fast is not None:
                        answered += 1
                        assert fast == full, (q, limit, split)
                    fast_hits = Fts5Retriever(ix.store, split=split).retrieve(q, limit)
                    assert fast_hits == Fts5Retriever(ix.store, split=None).retrieve(q, limit)
    assert answered >= 40  # the path is exercised, not only its fallbacks


def test_ties_are_placed_as_the_full_query(index: Path) -> None:
    with Index.open(index) as ix:
        terms = content_terms("rareone within")
        full = fulltext.search_groups(ix.store, quote_terms(terms), 400)
        levels = [r.bm25 for r in full]
        tied = max(levels.count(b) for b in set(levels))
        assert tied >= 6  # the six orders of one bag
        for limit in range(1, len(full) + 1):
            fast = topk.top_groups(ix.store, terms, limit, SMALL)
            if fast is not None:
                assert fast == full[:limit]
        assert topk.top_groups(ix.store, terms, 3, SMALL) == full[:3]


def test_it_falls_back_when_it_cannot_prove_the_top(index: Path) -> None:
    with Index.open(index) as ix:
        store = ix.store
        rare = content_terms("rareone within")
        # fewer rows hold the rare term than asked: rows holding "within" only belong to the top
        n = len(fulltext.search_groups(store, quote_terms(["rareone"]), 1000))
        assert topk.top_groups(store, rare, n + 1, SMALL) is None
        # "sometimes" is common at 0.1 but worth up to 2.2 idf: the rare rows' n-th does not beat it
        tenth = topk.Split(common=0.1, gain=0.0, min_rows=0)
        deep = content_terms("rareone sometimes")
        assert topk.top_groups(store, deep, n, tenth) is None
        assert topk.top_groups(store, deep, 1, tenth) is not None
        # no rare term, no common term, a term unicode61 might split, too many candidates
        assert topk.top_groups(store, ["within"], 5, SMALL) is None
        assert topk.top_groups(store, ["rareone"], 5, SMALL) is None
        assert topk.top_groups(store, ["rareone", "within", "café"], 5, SMALL) is None
        few = topk.Split(common=0.2, gain=0.0, min_rows=0, max_candidates=2)
        assert topk.top_groups(store, rare, 3, few) is None
        # the defaults leave a small index to the full query
        assert topk.top_groups(store, rare, 5) is None


def test_split_checks_its_values() -> None:
    with pytest.raises(ValueError, match="common must be in"):
        topk.Split(common=1.5)
    with pytest.raises(ValueError, match="max_candidates"):
        topk.Split(max_candidates=0)
