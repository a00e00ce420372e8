"""The approximate vector index (the ``[ann]`` extra): the HNSW folder beside the file against exact
search on a real corpus (site-policy, hash embedder), kept in step by ingest and removal, rebuilt when
stale, never a way for a filtered-out chunk to pass, and a clear message without usearch."""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunkdedup import Config, Index, ingest, remove_documents, search
from chunkdedup.config import QueryConfig, SemanticConfig
from chunkdedup.errors import ConfigError, MissingExtraError
from chunkdedup.ingestion.sequence import build_vector_index
from chunkdedup.query import VectorRetriever
from chunkdedup.query.ann import AnnRetriever, vector_retriever
from chunkdedup.store import Store, fulltext, vectorarrays, vectorindex
from chunkdedup.store.vectorarrays import FolderArrays
from conftest import POLICY, _need
from test_query import SENTENCES, assert_no_leak, build_corpus, doc_strategy, query_strategy
from test_query_vectors import HASH

pytestmark = pytest.mark.skipif(find_spec("usearch") is None, reason="needs the [ann] extra (usearch)")

EMBEDDED = Config(semantic=SemanticConfig(enabled=True, embedder="hash:64", threshold=0.99))
ANN = QueryConfig(vector_index="ann")
EXACT = QueryConfig(vector_index="exact")


@pytest.fixture(scope="module")
def policy_ann(tmp_path_factory: pytest.TempPathFactory) -> Path:
    index = tmp_path_factory.mktemp("ann") / "policy.sqlite"
    ingest([_need(POLICY / "current")], index, config=EMBEDDED)
    assert not vectorindex.folder(index).exists()  # below ANN_MIN_VECTORS an ingest builds none
    done = build_vector_index(index)
    assert done.built and done.rebuilt and done.count > 500
    return index


def copy_index(index: Path, to: Path) -> Path:
    """A copy of an index with its folders, to change without touching the module's fixture."""
    out = to / index.name
    shutil.copyfile(index, out)
    shutil.copytree(vectorindex.folder(index), vectorindex.folder(out))
    return out


def questions(ix: Index, n: int) -> list[str]:
    """Questions of the corpus's own words: the first 25 words of every k-th text."""
    texts = [r[0] for r in ix.store.conn.execute("SELECT text FROM groups ORDER BY gid")]
    step = max(1, len(texts) // n)
    return [" ".join(t.split()[:25]) for t in texts[::step][:n]]


def test_ann_top_10_equals_exact_for_most_questions(policy_ann: Path) -> None:
    with Index.open(policy_ann) as ix:
        ann = vector_retriever(ix.store, ix.vector_handle, ANN)
        exact = vector_retriever(ix.store, ix.vector_handle, EXACT)
        assert isinstance(ann, AnnRetriever) and not isinstance(exact, AnnRetriever)
        recall = []
        for q in questions(ix, 60):
            a, e = ann.retrieve(q, 10), exact.retrieve(q, 10)
            recall.append(len({s.id for s in a} & {s.id for s in e}) / len(e))
            by_id = {s.id: s.score for s in e}
            # a hit's score is its exact cosine, whichever search found it
            assert all(abs(s.score - by_id[s.id]) < 1e-12 for s in a if s.id in by_id)
        assert sum(recall) / len(recall) >= 0.95


def test_auto_uses_the_folder_from_its_threshold(policy_ann: Path) -> None:
    with Index.open(policy_ann) as ix:
        small = vector_retriever(ix.store, ix.vector_handle, QueryConfig())  # 100k: exact here
        big = vector_retriever(ix.store, ix.vector_handle, QueryConfig(ann_min_vectors=10))
        assert type(small) is VectorRetriever and isinstance(big, AnnRetriever)
        q = questions(ix, 1)[0]
        hits = {c: [h.id for h in search(ix, q, config=c, retriever="hybrid").hits] for c in (ANN, EXACT)}
        assert hits[ANN] == hits[EXACT]


def test_deep_passes_are_exact(policy_ann: Path) -> None:
    with Index.open(policy_ann) as ix:
        handle = ix.vector_handle()
        ann = AnnRetriever(ix.store, vector_retriever(ix.store, ix.vector_handle, EXACT).embedder, handle,
                           exact_above=20)
        exact = vector_retriever(ix.store, ix.vector_handle, EXACT)
        q = questions(ix, 1)[0]
        assert ann.retrieve(q, 300) == exact.retrieve(q, 300)


def test_removed_chunks_are_gone_after_an_update(policy_ann: Path, tmp_path: Path) -> None:
    index = copy_index(policy_ann, tmp_path)
    with Index.open(index) as ix:
        doc = ix.store.conn.execute("SELECT doc_id FROM documents ORDER BY doc_id LIMIT 1").fetchone()[0]
        own = {  # groups only this document holds
            r[0] for r in ix.store.conn.execute(
                "SELECT group_id FROM sources GROUP BY group_id HAVING COUNT(DISTINCT doc_id) = 1"
                " AND MIN(doc_id) = ?", (doc,)
            )
        }
        marks = ",".join("?" * len(own))
        text = ix.store.conn.execute(
            f"SELECT text FROM groups WHERE id IN ({marks}) ORDER BY gid LIMIT 1", sorted(own)
        ).fetchone()[0]
        text = " ".join(text.split()[:30])
        before = [s.id for s in vector_retriever(ix.store, ix.vector_handle, ANN).retrieve(text, 10)]
        assert before and before[0] in own
        gen = ix.vector_handle().generation
    remove_documents(index, [doc])
    with Index.open(index) as ix:
        handle = ix.vector_handle()
        assert handle is not None and handle.generation != gen  # updated for the removal's run
        assert handle.state.count == handle.index.size
        after = vector_retriever(ix.store, ix.vector_handle, ANN).retrieve(text, 50)
        assert after and not {s.id for s in after} & own
        hits = search(ix, text, config=ANN, retriever="vector", versions="all")
        assert all(c.doc != doc for h in hits.hits for c in h.citations)
    state = json.loads((vectorindex.folder(index) / handle.generation / "state.json").read_text())
    assert state["count"] == handle.state.count
    assert_arrays_match(index)  # kept rows copied from the old generation, as SQLite holds them


def test_an_ingest_updates_the_folder_in_place(tmp_path: Path) -> None:
    corpus = tmp_path / "c"
    build_corpus(corpus, [([s], {}) for s in SENTENCES[:6]])  # an update changes under half the keys
    index = tmp_path / "i.sqlite"
    ingest([corpus], index, config=HASH)
    first = build_vector_index(index)
    assert first.count >= 1
    gen = (vectorindex.folder(index) / "current").read_text()
    ingest([corpus], index, config=HASH)  # nothing changed: the same generation, for the new run
    assert (vectorindex.folder(index) / "current").read_text() == gen
    with Index.open(index) as ix:
        assert ix.vector_handle() is not None
    (corpus / "more.txt").write_text("Personal data is deleted after ninety days.\n", encoding="utf-8")
    report = ingest([corpus], index, config=HASH)
    done = report.totals["vector_index"]
    assert done["built"] and not done["rebuilt"] and done["added"] >= 1 and done["removed"] == 0
    assert_arrays_match(index)
    with Index.open(index) as ix:
        ann = vector_retriever(ix.store, ix.vector_handle, ANN)
        top = ann.retrieve("Personal data is deleted after ninety days.", 1)
        assert ix.store.conn.execute("SELECT text FROM groups WHERE id=?", (top[0].id,)).fetchone()[0] == (
            "Personal data is deleted after ninety days."
        )


def test_a_stale_folder_is_not_trusted_and_is_rebuilt(policy_ann: Path, tmp_path: Path) -> None:
    index = copy_index(policy_ann, tmp_path)
    folder = vectorindex.folder(index)
    gen = (folder / "current").read_text()
    state = json.loads((folder / gen / "state.json").read_text())
    for stale in ({"embedder": "hash:32:0", "dim": 32}, {"run": state["run"] - 1}, {"format": 0}):
        (folder / gen / "state.json").write_text(json.dumps({**state, **stale}))
        with Index.open(index) as ix:
            assert ix.vector_handle() is None
            assert type(vector_retriever(ix.store, ix.vector_handle, QueryConfig(ann_min_vectors=0))) is (
                VectorRetriever
            )
            with pytest.raises(ConfigError, match=r"vector_index 'ann'.*chunkdedup vector-index"):
                search(ix, "data retention", config=ANN, retriever="vector")
        done = build_vector_index(index)
        assert done.rebuilt == ("embedder" in stale or "format" in stale)
        with Index.open(index) as ix:
            assert isinstance(vector_retriever(ix.store, ix.vector_handle, ANN), AnnRetriever)
        gen = (folder / "current").read_text()
        state = json.loads((folder / gen / "state.json").read_text())
    shutil.rmtree(folder)  # derived: deleting it costs only speed
    with Index.open(index) as ix:
        assert ix.vector_handle() is None and search(ix, "data retention", retriever="vector").hits


def test_missing_extra_gives_the_pip_install(
    policy_ann: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "usearch", None)
    monkeypatch.setitem(sys.modules, "usearch.index", None)
    with pytest.raises(MissingExtraError, match=r"pip install 'chunkdedup\[ann\]'"):
        build_vector_index(policy_ann)
    with Index.open(policy_ann) as ix:
        with pytest.raises(MissingExtraError, match=r"pip install 'chunkdedup\[ann\]'"):
            search(ix, "data retention", config=ANN, retriever="vector")
        # auto (and exact) search every vector instead
        assert search(ix, "data retention", config=QueryConfig(ann_min_vectors=0), retriever="vector").hits


# -- no leak through the approximate index ------------------------------------------------------------


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(doc_strategy, min_size=1, max_size=6),
    st.lists(query_strategy, min_size=1, max_size=4),
    st.sampled_from(["vector", "hybrid"]),
    st.booleans(),
    st.sampled_from(["fts5", "tantivy"]),
)
def test_ann_retrieval_never_leaks(
    docs: list[tuple[list[str], dict[str, Any]]],
    queries: list[Any],
    retriever: str,
    running: bool,
    engine: str,
) -> None:
    """Through the folder's arrays, and through SQLite (a run begun since the sync); hybrid on
    tantivy maps its keys through the folder's arrays too."""
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "c"
        fields = build_corpus(corpus, docs)
        index = Path(tmp) / "i.sqlite"
        ingest([corpus], index, manifest=corpus / "manifest.jsonl", config=HASH, text_engine=engine)
        build_vector_index(index)
        if running:
            begin_run(index)
        with Index.open(index) as ix:
            handle = ix.vector_handle()
            assert handle is not None and handle.alone(ix.store) is not running
            for text, conditions, policy, net in queries:
                assert_no_leak(ix, text, conditions, policy, net, fields, retriever=retriever, config=ANN)


def test_a_selective_filter_finds_what_exact_finds(policy_ann: Path) -> None:
    """Filters act on the candidates the graph returns; when they pass few, deeper passes are exact,
    so a filter passing one document finds its chunks as exact search does."""
    with Index.open(policy_ann) as ix:
        doc = ix.store.conn.execute("SELECT doc_id FROM documents ORDER BY doc_id DESC LIMIT 1").fetchone()[0]
        q = questions(ix, 3)[1]
        for where in ([f"doc={doc}"], [f"file_path={doc}"]):
            got = {c: search(ix, q, where=where, config=c, retriever="vector") for c in (ANN, EXACT)}
            assert [h.id for h in got[ANN].hits] == [h.id for h in got[EXACT].hits]
            assert all(c.doc == doc for h in got[ANN].hits for c in h.citations)


def test_cli_vector_index_option_and_command(policy_ann: Path, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from chunkdedup.cli import main

    index = copy_index(policy_ann, tmp_path)
    shutil.rmtree(vectorindex.folder(index))
    runner = CliRunner()
    out = runner.invoke(main, ["query", "data retention", "--index", str(index), "--vector-index", "ann"])
    assert out.exit_code != 0 and "chunkdedup vector-index" in out.output
    out = runner.invoke(main, ["vector-index", "--index", str(index)])
    assert out.exit_code == 0 and "vector index rebuilt" in out.output, out.output
    for mode in ("ann", "exact", "auto"):
        out = runner.invoke(main, ["query", "data retention", "--index", str(index), "--vector-index", mode])
        assert out.exit_code == 0 and "1  " in out.output, out.output


# -- the arrays beside the graph ------------------------------------------------------------------------


def assert_arrays_match(index: Path) -> None:
    """The current generation's arrays hold, row for row, every graph key's group id and its vector as
    SQLite stores it, byte for byte, and nothing else."""
    with Index.open(index) as ix:
        handle = ix.vector_handle()
        assert handle is not None
        arrays = handle.arrays
        rows = ix.store.conn.execute(
            "SELECT g.gid, g.id, e.vector FROM groups g JOIN embeddings e ON e.group_id = g.id ORDER BY g.gid"
        ).fetchall()
        assert arrays.gids.tolist() == [r[0] for r in rows]
        assert sorted(int(k) for k in handle.index.keys) == [r[0] for r in rows]  # the graph's keys
        assert [i.decode() for i in arrays.ids] == [r[1] for r in rows]
        assert [arrays.vectors[n].tobytes() for n in range(len(rows))] == [r[2] for r in rows]
        by_id = [arrays.ids[n].decode() for n in arrays.by_id]
        assert by_id == sorted(r[1] for r in rows) == [i.decode() for i in arrays.sorted_ids]
        assert handle.state.count == len(rows) == len(handle.index)
        gids = np.array([*(r[0] for r in reversed(rows)), 10**12], dtype=np.int64)  # an unknown key left out
        assert arrays.keyed(gids)[0] == [r[1] for r in rows][::-1]


def test_the_arrays_match_the_graph_and_sqlite(policy_ann: Path) -> None:
    assert_arrays_match(policy_ann)


def test_the_arrays_answer_as_sqlite_does(tmp_path: Path) -> None:
    """Candidates, their scores, MMR's vectors, the tantivy keys' groups and search()'s hits and drops
    are the same whether the folder's arrays or SQLite answer."""
    index = tmp_path / "policy.sqlite"
    ingest([_need(POLICY / "current")], index, config=EMBEDDED, text_engine="tantivy")
    build_vector_index(index)
    with Index.open(index) as ix:
        assert ix.text_handle() is not None
        folder = vector_retriever(ix.store, ix.vector_handle, ANN)
        assert isinstance(folder, AnnRetriever) and folder.handle.alone(ix.store)
        exact = vector_retriever(ix.store, ix.vector_handle, EXACT)
        qs = questions(ix, 12)
        ids = [s.id for q in qs for s in exact.retrieve(q, 30)] + ["no-such-group"]
        got, want = folder.vectors(ids), exact.vectors(ids)
        assert got.keys() == want.keys() and all((got[i] == want[i]).all() for i in want)
        gids = [r[0] for r in ix.store.conn.execute("SELECT gid FROM groups ORDER BY gid")] + [10**12]
        assert dict(folder.key_groups(gids)) == dict(fulltext.gid_group_ids(ix.store, gids))
        held = folder.handle.arrays  # a group the arrays lack (no vector) is mapped through SQLite
        ids = held.ids[1:]
        by_id = np.argsort(ids)
        folder.handle.arrays = FolderArrays(held.gids[1:], ids, by_id, ids[by_id], held.vectors[1:])
        assert dict(folder.key_groups(gids)) == dict(fulltext.gid_group_ids(ix.store, gids))
        folder.handle.arrays = held
        results = {}
        for alone in (True, False):
            if not alone:  # a run begun since the sync: keys and vectors through SQLite
                begin_run(index)
                assert not folder.handle.alone(ix.store)
            ann = vector_retriever(ix.store, ix.vector_handle, ANN)
            assert isinstance(ann, AnnRetriever)
            results[alone] = [
                (
                    [(s.id, s.score) for s in ann.retrieve(q, 40)],
                    search(ix, q, config=ANN, retriever="hybrid"),
                    search(ix, q, config=ANN, retriever="vector", versions="all"),
                )
                for q in qs
            ]
        assert results[True] == results[False]


def begin_run(index: Path) -> None:
    """A run begun (and left going) on the index, as an ingest's is while it commits its batches."""
    with Store.open(index) as store:
        store.runs.begin_run([], None, {})


def test_a_run_begun_since_the_sync_maps_keys_through_sqlite(policy_ann: Path, tmp_path: Path) -> None:
    """While a run is going (its batches committed as it goes), a group it removed is never returned,
    though the folder still holds it."""
    index = copy_index(policy_ann, tmp_path)
    with Index.open(index) as ix:
        ann = vector_retriever(ix.store, ix.vector_handle, ANN)
        q = questions(ix, 5)[2]
        top = ann.retrieve(q, 5)
        gone = top[0].id
        canonical = ix.store.conn.execute("SELECT canonical_id FROM groups WHERE id=?", (gone,)).fetchone()[0]
    begin_run(index)
    with Store.open(index) as store, store.transaction():
        store.groups._drop_groups([(gone, canonical)])
    with Index.open(index) as ix:
        assert ix.vector_handle() is not None  # the last finished run is still the folder's
        after = vector_retriever(ix.store, ix.vector_handle, ANN).retrieve(q, 5)
        assert gone not in {s.id for s in after} and [s.id for s in after[:4]] == [s.id for s in top[1:]]


def test_a_folder_without_its_arrays_is_not_used_and_a_sync_adds_them(
    policy_ann: Path, tmp_path: Path
) -> None:
    """A layout-1 generation (the graph alone) or one whose arrays are missing or cut short is not
    trusted; a sync writes the arrays and keeps the graph as it is."""
    index = copy_index(policy_ann, tmp_path)
    folder = vectorindex.folder(index)
    gen = folder / (folder / "current").read_text()
    graph = (gen / "hnsw.usearch").read_bytes()
    np.save(gen / "gids.npy", np.load(gen / "gids.npy")[:-1])  # one row short
    with Index.open(index) as ix:
        assert ix.vector_handle() is None
    done = build_vector_index(index)  # the same keys: the arrays are written again, the graph kept
    assert done.built and not done.rebuilt and done.added == done.removed == 0
    assert_arrays_match(index)
    gen = folder / (folder / "current").read_text()
    for name in vectorarrays.FILES:
        (gen / name).unlink()
    state = json.loads((gen / "state.json").read_text())
    (gen / "state.json").write_text(json.dumps({**state, "format": 1}))
    with Index.open(index) as ix:
        assert ix.vector_handle() is None
        assert "layout 1" in (vectorindex.status(ix.store)[1] or "")
    done = build_vector_index(index)
    assert done.built and not done.rebuilt and done.added == done.removed == 0
    gen = folder / (folder / "current").read_text()
    assert (gen / "hnsw.usearch").read_bytes() == graph
    assert_arrays_match(index)
