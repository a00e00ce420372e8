"""Retrieval kept to a scope (a filter that names its documents): ``Screening.among`` answers exactly
as the whole ranking kept to the scope, on both text engines, at every depth, and ``search`` gives
the same results, byte for byte, with and without it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from chunkdedup import Index, ingest
from chunkdedup.config import QueryConfig
from chunkdedup.query import eligible, retrieve, search
from chunkdedup.query.context import ContextRanked
from chunkdedup.query.eligible import Eligibility
from chunkdedup.query.retrieve import Fts5Retriever, Scored, Screen, Screening, TantivyRetriever, screened
from chunkdedup.query.run import bm25_retriever
from chunkdedup.query.where import Filter
from chunkdedup.store import fulltext
from conftest import POLICY, POLICY_MANIFEST
from test_query import QUESTIONS

FILTERS = [
    ["family=github-general-privacy-statement"],
    ["family=github-general-privacy-statement", "family=github-acceptable-use-policies"],
    ["family=github-acceptable-use-policies", "version=current"],
    ["doc=LICENSE.md"],
    ["family=none-such"],
]
#: a small pool and depth cap: the passes go 16, 128, 300 deep on this corpus
SMALL = QueryConfig(k=2, pool=2, max_candidates=300)
MORE = ["data", "github", "the account", "policy content users", "copilot", "github privacy statement data"]


@pytest.fixture(scope="module", params=["fts5", "tantivy"])
def index(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    if request.param == "tantivy":
        pytest.importorskip("tantivy", reason="needs the extra: pip install 'chunkdedup[tantivy]'")
    path = tmp_path_factory.mktemp(request.param) / "policy.sqlite"
    ingest([POLICY], path, manifest=POLICY_MANIFEST, text_engine=request.param)
    return path


def _scope(ix: Index, conditions: list[str]) -> frozenset[str]:
    named = Eligibility(ix.store, Filter.parse(conditions), "all").named()
    assert named is not None
    return named


def test_among_is_the_ranking_kept_to_the_scope(index: Path) -> None:
    with Index.open(index) as ix:
        base = bm25_retriever(ix)
        assert isinstance(base, Screening)
        assert isinstance(base, TantivyRetriever) == (ix.text_handle() is not None)
        for conditions in FILTERS:
            scope = _scope(ix, conditions)
            for q in QUESTIONS + MORE:
                depths = (1, 3, 16, 128, 300, 5000)
                for limit in depths:
                    got = base.among(q, limit, scope, depths)
                    whole = list(base.retrieve(q, limit))
                    assert got.depth == len(whole), (conditions, q, limit)
                    assert list(got.hits) == [s for s in whole if s.id in scope]
                    if got.outside is not None:
                        assert list(got.outside) == [s.score for s in whole if s.id not in scope]


def test_search_is_the_same_with_and_without_the_scope(index: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def answers() -> list[str]:
        with Index.open(index) as ix:
            return [
                repr(search(ix, q, where=conditions, versions=policy, safety_net=net, config=cfg))
                for conditions in FILTERS
                for q in QUESTIONS + MORE
                for policy in ("latest", "all")
                for net in (True, False)
                for cfg in (SMALL, None)
            ]

    boosted: list[int] = []  # the passes that ranked with a document context, within a scope
    ranked, placed = ContextRanked._ranked, ContextRanked._placed

    def spy(self: ContextRanked, text: str, limit: int, scope: frozenset[str] | None) -> list[Scored]:
        boosted.extend([limit] if scope is not None else [])
        return ranked(self, text, limit, scope)

    def spy_placed(self: ContextRanked, text: str, limit: int, *rest: Any) -> Screen | None:
        boosted.append(limit)
        return placed(self, text, limit, *rest)

    monkeypatch.setattr(ContextRanked, "_ranked", spy)
    monkeypatch.setattr(ContextRanked, "_placed", spy_placed)
    scoped = answers()
    assert len(set(boosted)) > 1  # several depths: questions naming the documents' context are in
    monkeypatch.setattr(Eligibility, "named", lambda self: None)  # every retrieved group read
    assert answers() == scoped
    monkeypatch.undo()
    monkeypatch.setattr(eligible, "MAX_NAMED_DOCUMENTS", 0)  # screened group by group
    assert answers() == scoped


def test_a_folder_or_table_not_in_step_is_read_in_full(
    index: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The scope's shortcuts count on every key the engine holds being a group's: when tantivy has
    changes to replay, or FTS5 is deferred, the whole ranking is read and kept to the scope."""
    calls: list[str] = []
    real = retrieve.screened

    def spy(r: object, text: str, limit: int, groups: frozenset[str]) -> retrieve.Screen:
        calls.append(text)
        return real(r, text, limit, groups)  # type: ignore[arg-type]

    monkeypatch.setattr(retrieve, "screened", spy)
    monkeypatch.setattr(fulltext, "folder_in_step", lambda store: False)
    with Index.open(index) as ix:
        base = bm25_retriever(ix)
        assert isinstance(base, Screening)
        scope = _scope(ix, FILTERS[0])
        if isinstance(base, Fts5Retriever):
            deferred = lambda self, key: "1" if key == "fts_deferred" else None  # noqa: E731
            monkeypatch.setattr(type(ix.store), "meta", deferred)
        got = base.among(QUESTIONS[0], 40, scope, (40, 300))
        monkeypatch.undo()
        assert calls == [QUESTIONS[0]]
        assert got == screened(base, QUESTIONS[0], 40, scope)
        assert got.outside is None


def test_search_groups_orders_as_scoring_every_match(index: Path) -> None:
    """Only the rows up to the limit-th score are joined for their ids: the same rows, in the same
    (bm25, id) order, as joining every match."""
    with Index.open(index) as ix:
        conn = ix.store.conn
        for q in QUESTIONS + MORE:
            match = retrieve.fts_query(q)
            assert match is not None
            for limit in (1, 2, 7, 40, 320, 100_000):
                every = conn.execute(
                    "SELECT g.id, bm25(groups_fts) AS b FROM groups_fts"
                    " JOIN groups g ON g.gid = groups_fts.rowid"
                    " WHERE groups_fts MATCH ? ORDER BY b, g.id LIMIT ?",
                    (match, limit),
                ).fetchall()
                rows = fulltext.search_groups(ix.store, match, limit)
                assert [(r.group_id, r.bm25) for r in rows] == [tuple(r) for r in every]


def test_placed_groups_stand_where_the_ranking_puts_them(index: Path) -> None:
    with Index.open(index) as ix:
        for conditions in FILTERS:
            scope = _scope(ix, conditions)
            for q in QUESTIONS + MORE:
                match = retrieve.fts_query(q)
                assert match is not None
                every = fulltext.search_groups(ix.store, match, 100_000)
                for depths in ((1, 5, 40, 100_000), (2,), (3, 7)):
                    placed = fulltext.place_groups(ix.store, match, sorted(scope), depths)
                    assert placed.found == len(every)
                    expect = [
                        (r.group_id, r.bm25, min(d for d in depths if d >= i))
                        for i, r in enumerate(every, 1)
                        if r.group_id in scope and i <= max(depths)
                    ]
                    assert [(p.group_id, p.bm25, p.reached) for p in placed.rows] == expect


def test_tied_scores_are_placed_by_id(tmp_path: Path) -> None:
    """Many groups with one BM25 score (same length, one term each): their places follow their ids."""
    corpus = tmp_path / "c"
    corpus.mkdir()
    for i in range(30):
        name = "q" + chr(97 + i // 26) + chr(97 + i % 26)  # no digits: a boilerplate key masks them
        (corpus / f"d{i:02}.txt").write_text(f"Zebra {name} crosses the road.\n", encoding="utf-8")
    index = tmp_path / "i.sqlite"
    ingest([corpus], index)
    with Index.open(index) as ix:
        every = fulltext.search_groups(ix.store, '"zebra"', 100)
        assert len(every) == 30 and len({r.bm25 for r in every}) < 30
        scope = sorted({every[i].group_id for i in (0, 4, 17, 29)})
        for depths in ((18,), (1, 5, 18), (4, 5, 29, 30)):
            placed = fulltext.place_groups(ix.store, '"zebra"', scope, depths)
            expect = [
                (r.group_id, min(d for d in depths if d >= i))
                for i, r in enumerate(every, 1)
                if r.group_id in scope and i <= max(depths)
            ]
            assert [(p.group_id, p.reached) for p in placed.rows] == expect
