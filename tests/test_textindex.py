"""The tantivy text engine: a derived folder beside the index that mirrors every group's text through
ingest, change, removal and a lost folder, ranks by BM25 like FTS5 does, and keeps filters tight."""

from __future__ import annotations

import json
import shutil
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunkdedup import Index, ingest, remove_documents
from chunkdedup.errors import MissingExtraError
from chunkdedup.query import Fts5Retriever, TantivyRetriever, search
from chunkdedup.query.run import bm25_retriever
from chunkdedup.store import textindex
from conftest import POLICY, POLICY_MANIFEST
from test_query import QUESTIONS, check_no_leak, doc_strategy, query_strategy

tantivy = pytest.importorskip("tantivy", reason="needs the extra: pip install 'chunkdedup[tantivy]'")


def _mirror(index: Path) -> tuple[int, int]:
    """(documents in the tantivy folder, groups in the index): equal when the folder is in step."""
    handle = tantivy.Index.open(str(textindex.folder(index)))
    handle.reload()
    with Index.open(index) as ix:
        groups = int(ix.store.conn.execute("SELECT COUNT(*) FROM groups").fetchone()[0])
    return int(handle.searcher().num_docs), groups


def _ids(index: Path, text: str, **options: Any) -> list[str]:
    with Index.open(index) as ix:
        return [h.id for h in search(ix, text, versions="all", **options).hits]


@pytest.fixture(scope="module")
def policy_tantivy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("tantivy") / "policy.sqlite"
    report = ingest([POLICY], path, manifest=POLICY_MANIFEST, text_engine="tantivy")
    assert report.totals["text_index"] == {"engine": "tantivy", "rebuilt": True, "groups": _mirror(path)[1]}
    return path


def test_the_folder_mirrors_the_groups(policy_tantivy: Path) -> None:
    assert textindex.folder(policy_tantivy) == policy_tantivy.with_name("policy.sqlite.tantivy")
    docs, groups = _mirror(policy_tantivy)
    assert docs == groups > 1000
    with Index.open(policy_tantivy) as ix:
        assert ix.stats()["text_engine"]["name"] == "tantivy"
        assert ix.stats()["text_engine"]["pending"] == 0
        assert isinstance(bm25_retriever(ix), TantivyRetriever)


def test_tantivy_ranks_like_fts5(policy_tantivy: Path) -> None:
    """Both are BM25 over the same texts (tokenizers and constants differ a little): their top 10
    groups overlap, and each engine's best group holds a question term."""
    overlaps = []
    with Index.open(policy_tantivy) as ix:
        fts, tan = Fts5Retriever(ix.store), bm25_retriever(ix)
        for q in QUESTIONS:
            a, b = [s.id for s in fts.retrieve(q, 10)], [s.id for s in tan.retrieve(q, 10)]
            assert len(b) == 10
            overlaps.append(len(set(a) & set(b)) / 10)
            scores = [s.score for s in tan.retrieve(q, 10)]
            assert scores == sorted(scores, reverse=True) and scores[0] > 0
    assert sum(overlaps) / len(overlaps) >= 0.6, overlaps


def test_search_results_follow_every_change(tmp_path: Path) -> None:
    corpus = tmp_path / "c"
    corpus.mkdir()
    (corpus / "a.txt").write_text("Refunds are paid within thirty days of a written request.\n")
    (corpus / "b.txt").write_text("Laptops lock after five idle minutes and use disk encryption.\n")
    index = tmp_path / "i.sqlite"
    ingest([corpus], index, text_engine="tantivy")
    assert _ids(index, "refunds") and not _ids(index, "zeppelin")
    # added text is searchable after the run, changed text is replaced, removed text is gone
    (corpus / "z.txt").write_text("The zeppelin hangar is closed on public holidays.\n")
    (corpus / "b.txt").write_text("Laptops lock after five idle minutes and use a hardware key.\n")
    report = ingest([corpus], index)  # the engine is kept without the flag
    assert report.totals["text_index"]["rebuilt"] is False
    assert len(_ids(index, "zeppelin")) == 1
    assert not _ids(index, "encryption") and len(_ids(index, "hardware")) == 1
    assert _mirror(index)[0] == _mirror(index)[1]
    remove_documents(index, ["z.txt"])
    assert not _ids(index, "zeppelin")
    assert _mirror(index)[0] == _mirror(index)[1] == 2


def test_a_lost_folder_falls_back_to_fts5_and_is_rebuilt(tmp_path: Path) -> None:
    corpus = tmp_path / "c"
    corpus.mkdir()
    (corpus / "a.txt").write_text("Refunds are paid within thirty days of a written request.\n")
    index = tmp_path / "i.sqlite"
    ingest([corpus], index, text_engine="tantivy")
    shutil.rmtree(textindex.folder(index))
    with Index.open(index) as ix:
        assert isinstance(bm25_retriever(ix), Fts5Retriever)  # still answers, from the file alone
    assert len(_ids(index, "refunds")) == 1
    report = ingest([corpus], index)  # nothing changed in the inputs: only the folder is rebuilt
    assert report.totals["text_index"] == {"engine": "tantivy", "rebuilt": True, "groups": 1}
    with Index.open(index) as ix:
        assert isinstance(bm25_retriever(ix), TantivyRetriever)
    ingest([corpus], index, text_engine="fts5")
    assert not textindex.folder(index).exists()
    with Index.open(index) as ix:
        assert ix.stats()["text_engine"] == {"name": "fts5"}
        assert isinstance(bm25_retriever(ix), Fts5Retriever)


def test_an_interrupted_sync_is_replayed(tmp_path: Path) -> None:
    """The log is trimmed only after tantivy commits: a sync that died in between leaves its entries,
    and replaying them is idempotent."""
    corpus = tmp_path / "c"
    corpus.mkdir()
    (corpus / "a.txt").write_text("Refunds are paid within thirty days of a written request.\n")
    index = tmp_path / "i.sqlite"
    ingest([corpus], index, text_engine="tantivy")
    with Index.open(index) as ix:
        gid = ix.store.conn.execute("SELECT gid FROM groups").fetchone()[0]
    with sqlite3.connect(index) as conn:  # as if the last sync had committed tantivy, not SQLite
        conn.execute("INSERT INTO text_log(gid) VALUES (?)", (gid,))
    with Index.open(index) as ix:
        assert ix.stats()["text_engine"]["pending"] == 1
    ingest([corpus], index)
    assert _mirror(index) == (1, 1)
    assert len(_ids(index, "refunds")) == 1


def test_missing_extra_names_the_pip_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "tantivy", None)
    with pytest.raises(MissingExtraError, match=r"pip install 'chunkdedup\[tantivy\]'"):
        ingest([POLICY], tmp_path / "i.sqlite", manifest=POLICY_MANIFEST, text_engine="tantivy")
    assert not (tmp_path / "i.sqlite").exists()


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(doc_strategy, min_size=1, max_size=6), st.lists(query_strategy, min_size=1, max_size=6))
def test_filters_never_leak_with_tantivy(
    docs: list[tuple[list[str], dict[str, Any]]], queries: list[Any]
) -> None:
    check_no_leak(docs, queries, text_engine="tantivy")


def test_cli_switches_the_engine_and_reports_it(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from chunkdedup.cli import main

    corpus = tmp_path / "c"
    corpus.mkdir()
    (corpus / "a.txt").write_text("Refunds are paid within thirty days of a written request.\n")
    index = tmp_path / "i.sqlite"
    runner = CliRunner()
    out = runner.invoke(main, ["ingest", str(corpus), "--index", str(index), "--text-index", "tantivy"])
    assert out.exit_code == 0, out.output
    assert "text index: tantivy (built from all 1 texts)" in out.output
    stats = json.loads(runner.invoke(main, ["stats", "--index", str(index), "--json"]).output)
    assert stats["text_engine"]["name"] == "tantivy" and stats["text_engine"]["pending"] == 0
    hits = json.loads(runner.invoke(main, ["query", "refunds", "--index", str(index), "--json"]).output)
    assert [h["text"] for h in hits["hits"]] == ["Refunds are paid within thirty days of a written request."]
    bad = runner.invoke(main, ["ingest", str(corpus), "--index", str(index), "--text-index", "lucene"])
    assert bad.exit_code == 2 and "fts5" in bad.output


def test_an_unchanged_text_is_not_reindexed(tmp_path: Path) -> None:
    """Adding a document that repeats a text refreshes that group (its count changes), not its text:
    neither FTS5 nor the log sees a change."""
    corpus = tmp_path / "c"
    corpus.mkdir()
    (corpus / "a.txt").write_text("Refunds are paid within thirty days of a written request.\n")
    index = tmp_path / "i.sqlite"
    ingest([corpus], index, text_engine="tantivy")
    (corpus / "b.txt").write_text("Refunds are paid within thirty days of a written request.\n")
    with sqlite3.connect(index) as conn:
        conn.execute(
            "CREATE TRIGGER watch AFTER INSERT ON text_log BEGIN"
            " INSERT INTO meta(key, value) VALUES ('logged', new.gid) ON CONFLICT(key) DO UPDATE"
            " SET value = value || ',' || new.gid; END"
        )
    report = ingest([corpus], index)
    assert report.totals["text_index"]["groups"] == 0
    with sqlite3.connect(index) as conn:
        assert conn.execute("SELECT value FROM meta WHERE key='logged'").fetchone() is None
        assert conn.execute("SELECT n_sources FROM groups").fetchall() == [(2,)]


#: questions that ask for an amount (the figures' boost applies) over the policies
AMOUNT_QUESTIONS = [
    "How much is paid for the GitHub Sponsors matching fund?",
    "What percentage of revenue is shared with developers?",
    "How many days do I have to pay an invoice?",
    "What is the total amount of fees for a failed payment?",
]


def _older_folder(index: Path) -> None:
    """Make ``index``'s folder as a build before the figures field made it: text and gid only."""
    path = textindex.folder(index)
    shutil.rmtree(path)
    path.mkdir()
    sb = tantivy.SchemaBuilder()
    sb.add_text_field("text", stored=False, tokenizer_name="en_stem", index_option="freq")
    sb.add_integer_field("gid", stored=False, indexed=True, fast=True)
    writer = tantivy.Index(sb.build(), path=str(path)).writer(64 * 1024 * 1024)
    with sqlite3.connect(index) as conn:
        for gid, text in conn.execute("SELECT gid, text FROM groups ORDER BY gid"):
            writer.add_document(tantivy.Document(text=text, gid=int(gid)))
        conn.execute("UPDATE meta SET value='1' WHERE key='text_built'")
    writer.commit()
    writer.wait_merging_threads()


def test_the_folder_keeps_each_texts_figures_and_an_older_folder_ranks_the_same(
    policy_tantivy: Path, tmp_path: Path
) -> None:
    """The folder keeps each text's share of figures, so the amount boost reads no text; a folder built
    before it (no such field) gives the same results from the texts, and the next ingest rebuilds it."""
    from chunkdedup.figures import number_density
    from chunkdedup.query.numbers import asks_amount
    from chunkdedup.store import reads

    assert all(asks_amount(q) for q in AMOUNT_QUESTIONS)

    def results(index: Path) -> list[list[tuple[str, float]]]:
        with Index.open(index) as ix:
            return [[(h.id, h.score) for h in search(ix, q, k=10).hits] for q in AMOUNT_QUESTIONS + QUESTIONS]

    index = tmp_path / "policy.sqlite"
    shutil.copy(policy_tantivy, index)
    shutil.copytree(textindex.folder(policy_tantivy), textindex.folder(index))
    with Index.open(index) as ix:
        tan = bm25_retriever(ix)
        assert isinstance(tan, TantivyRetriever)
        found = [s.id for q in AMOUNT_QUESTIONS for s in tan.retrieve(q, 50)]
        texts = {g.id: g.text for g in reads.groups(ix.store, found)}
        kept = tan.figures(found)
        assert kept.keys() == set(found)
        assert kept == {g: number_density(t) for g, t in texts.items()}
        assert max(kept.values()) > 0.05 and min(kept.values()) == 0, sorted(kept.values())[-5:]
    now = results(index)
    _older_folder(index)
    with Index.open(index) as ix:
        old = bm25_retriever(ix)
        assert isinstance(old, TantivyRetriever)
        assert old.retrieve(AMOUNT_QUESTIONS[0], 10) and old.figures(found) == {}
        assert ix.stats()["text_engine"]["pending"] > 1000  # the older folder waits for its rebuild
    assert results(index) == now
    report = ingest([POLICY], index, manifest=POLICY_MANIFEST)
    assert report.totals["text_index"]["rebuilt"] is True
    with Index.open(index) as ix:
        tan = bm25_retriever(ix)
        assert isinstance(tan, TantivyRetriever)
        assert tan.retrieve(AMOUNT_QUESTIONS[0], 10) and tan.figures(found[:10]).keys() == set(found[:10])
    assert results(index) == now
