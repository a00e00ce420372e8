"""Retrieval kept to a scope (a filter that names its documents): ``Screening.among`` is the best
``limit`` of the scope's groups, ranked as the whole index ranks them, on both text engines, with
document context, and fused; and ``search`` answers with it exactly as screening every retrieved
group does, whenever the retrieval depth does not cut the scope short (when it does, the scope's
groups the whole-index passes never reach are still found)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from chunkdedup import Index, ingest
from chunkdedup.config import QueryConfig
from chunkdedup.query import eligible, retrieve, search
from chunkdedup.query.context import ContextRanked, DocumentContexts
from chunkdedup.query.eligible import Eligibility
from chunkdedup.query.retrieve import (
    ReciprocalRankFusion,
    Retriever,
    Scored,
    Screening,
    TantivyRetriever,
    kept,
)
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
    ["department=security-policies"],
    ["department=privacy-policies", "effective_date>=2024-01-01"],
    ["family=none-such"],
]
#: a small pool and depth cap (the passes go 16, 128, 300 deep), without document context (whose
#: best documents' own pass reaches past any depth)
SMALL_PLAIN = QueryConfig(k=2, pool=2, max_candidates=300, context_weight=0)
MORE = ["data", "github", "the account", "policy content users", "copilot", "github privacy statement data"]
LIMITS = (1, 3, 16, 128, 300, 5000)
EVERY = 1_000_000  # deeper than the corpus: the whole ranking


@pytest.fixture(scope="module", params=["fts5", "tantivy"])
def index(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    if request.param == "tantivy":
        pytest.importorskip("tantivy", reason="needs the extra: pip install 'chunkdedup[tantivy]'")
    path = tmp_path_factory.mktemp(request.param) / "policy.sqlite"
    ingest([POLICY], path, manifest=POLICY_MANIFEST, text_engine=request.param)
    return path


def _eligibility(ix: Index, conditions: list[str]) -> Eligibility:
    return Eligibility(ix.store, Filter.parse(conditions), "all")


def _scope(ix: Index, conditions: list[str]) -> frozenset[str]:
    named = _eligibility(ix, conditions).named()
    assert named is not None
    return named


def _best_of(r: Retriever, q: str, limit: int, scope: frozenset[str]) -> list[Scored]:
    """The oracle: the whole index's ranking, kept to the scope, cut at ``limit`` within it."""
    return kept(r, q, EVERY, scope)[:limit]


class _ScopeOnly:
    """A retriever over the scope alone, made of the whole ranking (the oracle base of a boost)."""

    def __init__(self, base: Retriever, scope: frozenset[str]) -> None:
        self.base, self.scope = base, scope

    def retrieve(self, text: str, limit: int) -> list[Scored]:
        return _best_of(self.base, text, limit, self.scope)

    def within(self, text: str, limit: int, groups: Sequence[str]) -> Sequence[Scored]:
        return self.base.within(text, limit, [g for g in groups if g in self.scope])  # type: ignore[attr-defined]


def test_among_is_the_best_of_the_scope(index: Path) -> None:
    with Index.open(index) as ix:
        base = bm25_retriever(ix)
        assert isinstance(base, Screening)
        assert isinstance(base, TantivyRetriever) == (ix.text_handle() is not None)
        cut = 0  # cases where the whole-index top ``limit`` would have held fewer of the scope
        for conditions in FILTERS:
            scope = _scope(ix, conditions)
            for q in QUESTIONS + MORE:
                for limit in LIMITS:
                    got = list(base.among(q, limit, scope))
                    assert got == _best_of(base, q, limit, scope), (conditions, q, limit)
                    cut += len(kept(base, q, limit, scope)) < len(got)
        assert cut > 0  # the scope's depth is its own: the tests reach cases the old one cut


def test_boosted_among_is_the_boosted_ranking_of_the_scope(index: Path) -> None:
    """With document context, the scope's best is what the same boost ranks over the scope alone."""
    with Index.open(index) as ix:
        base = bm25_retriever(ix)
        boosted = 0
        for conditions in FILTERS:
            scope = _scope(ix, conditions)
            contexts = DocumentContexts(ix.store, _eligibility(ix, conditions))
            ranked = ContextRanked(base, contexts, 1.0, 2)
            oracle = ContextRanked(_ScopeOnly(base, scope), contexts, 1.0, 2)
            for q in QUESTIONS + MORE + ["GitHub Privacy Statement: what data is collected"]:
                boosted += bool(contexts.scores(q))
                for limit in LIMITS:
                    assert ranked.among(q, limit, scope) == oracle.retrieve(q, limit), (conditions, q, limit)
        assert boosted > 0


class _Listed:
    """A retriever answering from a fixed ranking (no ``among``: kept to a scope by the fallback)."""

    def __init__(self, ids: list[str]) -> None:
        self.ids = ids

    def retrieve(self, text: str, limit: int) -> list[Scored]:
        return [Scored(g, 1.0 / (i + 1)) for i, g in enumerate(self.ids[:limit])]


def test_fusion_ranks_within_the_scope(index: Path) -> None:
    """Fused among a scope, each part's ranks are its ranks within the scope (a screening part's
    own best; a part without ``among`` kept to the scope), so no outside group shifts a rank."""
    with Index.open(index) as ix:
        base = bm25_retriever(ix)
        scope = _scope(ix, FILTERS[1])
        q = QUESTIONS[0]
        every = [s.id for s in base.retrieve(q, EVERY)]
        other = _Listed(list(reversed(every)))
        fused = ReciprocalRankFusion([base, other])
        for limit in (1, 5, 40):
            mine: dict[str, float] = {}
            for part in ([s.id for s in _best_of(base, q, 2 * limit, scope)],
                         [g for g in other.ids[: 2 * limit] if g in scope]):
                for rank, g in enumerate(part, start=1):
                    mine[g] = mine.get(g, 0.0) + 1.0 / (60 + rank)
            expect = sorted(mine.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]
            assert fused.among(q, limit, scope) == [Scored(g, s) for g, s in expect]


def test_search_with_the_scope_is_screening_every_group(index: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a depth cut (the default cap is deeper than the corpus) and without context (whose
    whole-index passes boost only the groups they reach), ``search`` answers the same, byte for
    byte, with the scope and with every retrieved group screened."""
    plain = QueryConfig(context_weight=0)

    def answers() -> list[str]:
        with Index.open(index) as ix:
            return [
                repr(search(ix, q, where=conditions, versions=policy, safety_net=net, config=plain))
                for conditions in FILTERS
                for q in QUESTIONS + MORE
                for policy in ("latest", "all")
                for net in (True, False)
            ]

    scoped = answers()
    monkeypatch.setattr(Eligibility, "named", lambda self: None)  # every retrieved group read
    assert answers() == scoped
    monkeypatch.undo()
    monkeypatch.setattr(eligible, "MAX_NAMED_DOCUMENTS", 0)  # screened group by group
    assert answers() == scoped


def test_a_scope_past_the_depth_cap_is_still_found(index: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With a depth cap of 300 groups, a question whose scope's matches all rank below the whole
    index's first 300 finds nothing when each retrieved group is screened; ranked within the scope,
    the filter's documents answer."""
    with Index.open(index) as ix:
        base = bm25_retriever(ix)
        found = 0
        for conditions in FILTERS[:4]:
            scope = _scope(ix, conditions)
            for q in QUESTIONS + MORE:
                hits = search(ix, q, where=conditions, versions="all", config=SMALL_PLAIN).hits
                mine = _best_of(base, q, 1, scope)
                if mine and not kept(base, q, SMALL_PLAIN.max_candidates, scope):
                    assert hits, (conditions, q)  # past the cap, still answered
                    monkeypatch.setattr(Eligibility, "named", lambda self: None)
                    assert not search(ix, q, where=conditions, versions="all", config=SMALL_PLAIN).hits
                    monkeypatch.undo()
                    found += 1
        assert found > 0


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


def test_search_gids_orders_as_joining_the_scope_by_id(index: Path) -> None:
    """Walking the matches for the scope's keys gives the rows, scores and (bm25, id) order of
    filtering the joined rows by group id."""
    with Index.open(index) as ix:
        for conditions in FILTERS:
            scope = sorted(_scope(ix, conditions))
            gids = fulltext.group_gids(ix.store, scope)
            for q in QUESTIONS + MORE:
                match = retrieve.fts_query(q)
                assert match is not None
                for limit in (1, 7, 40, 100_000):
                    assert fulltext.search_gids(ix.store, match, limit, gids) == fulltext.search_groups(
                        ix.store, match, limit, scope
                    )


@pytest.mark.parametrize("engine", ["fts5", "tantivy"])
def test_tied_scores_are_cut_by_id(tmp_path: Path, engine: str) -> None:
    """Many groups with one BM25 score (same length, one term each): the ``limit``-th place of a
    tie goes by id, on both engines (tantivy orders a tie its own way: the tie is read in full)."""
    if engine == "tantivy":
        pytest.importorskip("tantivy", reason="needs the extra: pip install 'chunkdedup[tantivy]'")
    corpus = tmp_path / "c"
    corpus.mkdir()
    for i in range(30):
        name = "q" + chr(97 + i // 26) + chr(97 + i % 26)  # no digits: a boilerplate key masks them
        (corpus / f"d{i:02}.txt").write_text(f"Zebra {name} crosses the road.\n", encoding="utf-8")
    path = tmp_path / "i.sqlite"
    ingest([corpus], path, text_engine=engine)
    with Index.open(path) as ix:
        base = bm25_retriever(ix)
        assert isinstance(base, Screening)
        every = list(base.retrieve("zebra", 100))
        assert len(every) == 30 and len({s.score for s in every}) == 1
        assert [s.id for s in every] == sorted(s.id for s in every)
        scope = frozenset(every[i].id for i in (0, 4, 17, 29))
        for limit in (1, 2, 3, 4, 30):
            assert [s.id for s in base.retrieve("zebra", limit)] == [s.id for s in every[:limit]]
            assert base.among("zebra", limit, scope) == [s for s in every if s.id in scope][:limit]


def test_a_key_naming_too_many_documents_gives_way_to_another(
    index: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When one naming key holds more than MAX_NAMED_DOCUMENTS documents, another key of the filter
    that names fewer still makes the scope; with none, groups are screened one by one."""
    conditions = ["department=acceptable-use-policies", "family=github-acceptable-use-policies"]
    with Index.open(index) as ix:
        whole = _scope(ix, conditions)
        docs = ix.store.conn.execute(
            "SELECT COUNT(*) FROM documents WHERE department = 'acceptable-use-policies'"
        ).fetchone()[0]
        family = ix.store.conn.execute(
            "SELECT COUNT(*) FROM documents WHERE family = 'github-acceptable-use-policies'"
        ).fetchone()[0]
        assert family < docs
        monkeypatch.setattr(eligible, "MAX_NAMED_DOCUMENTS", family)  # the department names too many
        assert _eligibility(ix, conditions).named() == whole
        assert _eligibility(ix, conditions[:1]).named() is None
