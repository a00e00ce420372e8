"""``chunkdedup sync``: an index mirrored into local stores (Chroma, Qdrant local, LanceDB, FAISS, the
in-memory store's file) from the command line, through an edit and a removal (site-policy)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from chunkdedup import Index
from chunkdedup.cli import main

POLICY = Path(__file__).resolve().parents[2] / "shared" / "data" / "site-policy"
FAMILIES = (
    "github-sponsors-additional-terms",
    "github-acceptable-use-policies",
    "github-appeal-and-reinstatement",
)
EDITED = "current/github-terms/github-sponsors-additional-terms.md"
NEEDS = {"chroma": "langchain_chroma", "qdrant": "langchain_qdrant", "lancedb": "lancedb", "faiss": "faiss"}


def _corpus(root: Path) -> Path:
    """Three site-policy families (current and history versions) copied with their manifest rows."""
    if not (POLICY / "manifest.jsonl").exists():
        pytest.skip(f"needs the site-policy corpus at {POLICY}")
    rows = [json.loads(line) for line in (POLICY / "manifest.jsonl").read_text(encoding="utf-8").splitlines()]
    corpus = root / "policies"
    kept = [r for r in rows if r["family"] in FAMILIES]
    for r in kept:
        (corpus / r["path"]).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(POLICY / r["path"], corpus / r["path"])
    (corpus / "manifest.jsonl").write_text("".join(json.dumps(r) + "\n" for r in kept), encoding="utf-8")
    return corpus


def run(*args: str) -> str:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def _ingest(corpus: Path, index: Path) -> None:
    run("ingest", str(corpus), "--manifest", str(corpus / "manifest.jsonl"), "--index", str(index), "--prune")


def _held(kind: str, path: Path) -> list[str]:
    """The canonical id of every record the store holds, read with the store's own client."""
    if kind == "chroma":
        import chromadb
        from chromadb.config import Settings

        client = chromadb.PersistentClient(path=str(path), settings=Settings(anonymized_telemetry=False))
        got = client.get_collection("policies").get(include=["metadatas"])
        return [m["chunk_id"] for m in got["metadatas"]]
    if kind == "qdrant":
        from qdrant_client import QdrantClient

        client = QdrantClient(path=str(path))
        try:
            points, _ = client.scroll("policies", limit=100_000, with_payload=True)
            return [p.payload["metadata"]["chunk_id"] for p in points if p.payload]
        finally:
            client.close()
    if kind == "lancedb":
        import lancedb

        rows = lancedb.connect(str(path)).open_table("policies").to_arrow().to_pylist()
        return [r["metadata"]["chunk_id"] for r in rows]
    from langchain_core.embeddings import DeterministicFakeEmbedding

    fake = DeterministicFakeEmbedding(size=16)
    if kind == "faiss":
        from langchain_community.vectorstores import FAISS

        store = FAISS.load_local(str(path), fake, index_name="policies", allow_dangerous_deserialization=True)
        assert store.index.ntotal == len(store.index_to_docstore_id)
        return [store.docstore.search(i).metadata["chunk_id"] for i in store.index_to_docstore_id.values()]
    from langchain_core.vectorstores import InMemoryVectorStore

    return [row["metadata"]["chunk_id"] for row in InMemoryVectorStore.load(str(path), fake).store.values()]


def _ids(index: Path) -> list[str]:
    with Index.open(index) as ix:
        return sorted(r.id for r in ix.records())


@pytest.mark.parametrize("kind", ["chroma", "qdrant", "lancedb", "faiss", "memory"])
def test_sync_mirrors_the_index_through_an_edit_and_a_removal(kind: str, tmp_path: Path) -> None:
    pytest.importorskip("langchain_core", reason="needs the [langchain] extra")
    if kind in NEEDS:
        pytest.importorskip(NEEDS[kind], reason=f"needs the {kind} store's package")
    corpus = _corpus(tmp_path)
    index = tmp_path / "policies.sqlite"
    store = tmp_path / ("store.json" if kind == "memory" else kind)
    sync = ["sync", "--index", str(index), "--store", kind, "--path", str(store), "--collection", "policies",
            "--embeddings", "fake:16"]
    _ingest(corpus, index)
    first = json.loads(run(*sync, "--json"))
    assert first["since"] is None and first["upserts"] == len(_ids(index)) and first["deletes"] == 0
    assert sorted(_held(kind, store)) == _ids(index)
    assert "upserted 0, deleted 0" in run(*sync)  # nothing changed: nothing sent

    page = corpus / EDITED
    text = page.read_text(encoding="utf-8")
    assert "Stripe will issue" in text
    page.write_text(text.replace("Stripe will issue", "Stripe shall issue"), "utf-8")
    _ingest(corpus, index)
    edited = json.loads(run(*sync, "--json"))
    assert edited["since"] == first["applied_run"] and 1 <= edited["upserts"] < first["upserts"]
    assert sorted(_held(kind, store)) == _ids(index)

    page.unlink()  # its edited chunk is in no other document: it goes
    _ingest(corpus, index)
    removed = json.loads(run(*sync, "--json"))
    assert removed["deletes"] >= 1
    assert sorted(_held(kind, store)) == _ids(index)

    full = json.loads(run(*sync, "--full", "--json"))
    assert full["upserts"] == len(_ids(index)) and sorted(_held(kind, store)) == _ids(index)
    assert (tmp_path / f"{store.name}{'' if kind == 'memory' else '.policies'}.sync.json").exists()


def test_sync_help_has_an_example_and_bad_input_is_a_one_line_error(tmp_path: Path) -> None:
    assert "chunkdedup sync --index policies.sqlite --store chroma" in run("sync", "--help")
    result = CliRunner().invoke(
        main, ["sync", "--index", str(tmp_path / "none.sqlite"), "--store", "memory", "--path",
               str(tmp_path / "s.json"), "--embeddings", "fake:16"]
    )
    assert result.exit_code == 1 and "no index at" in result.output
    _ingest(_corpus(tmp_path), tmp_path / "p.sqlite")
    result = CliRunner().invoke(
        main, ["sync", "--index", str(tmp_path / "p.sqlite"), "--store", "memory", "--path",
               str(tmp_path / "s.json"), "--embeddings", "nowhere"]
    )
    assert result.exit_code == 2 and "write fake:DIM or MODULE:NAME" in result.output  # a usage error
    assert "Traceback" not in result.output




def test_a_store_that_no_longer_mirrors_the_index_is_named_and_full_repairs_it(tmp_path: Path) -> None:
    pytest.importorskip("langchain_core", reason="needs the [langchain] extra")
    index, store = tmp_path / "p.sqlite", tmp_path / "store.json"
    _ingest(_corpus(tmp_path), index)
    sync = ["sync", "--index", str(index), "--store", "memory", "--path", str(store)]
    sync += ["--embeddings", "fake:16"]
    run(*sync)
    rows = json.loads(store.read_text(encoding="utf-8"))
    lost = sorted(rows)[0]
    del rows[lost]  # a record lost behind the sync's back
    store.write_text(json.dumps(rows), encoding="utf-8")
    result = CliRunner().invoke(main, sync, catch_exceptions=False)
    assert result.exit_code == 1 and "does not mirror" in result.output and "--full" in result.output
    assert "Traceback" not in result.output
    run(*sync, "--full")
    assert sorted(_held("memory", store)) == _ids(index)


def test_sync_reports_its_progress_after_each_confirmed_batch(tmp_path: Path) -> None:
    pytest.importorskip("langchain_core", reason="needs the [langchain] extra")
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.vectorstores import InMemoryVectorStore

    from chunkdedup.integrations.langchain import sync

    index = tmp_path / "p.sqlite"
    _ingest(_corpus(tmp_path), index)
    ticks: list[tuple[str, int, int]] = []
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
    report = sync(index, store, state=tmp_path / "s.json", batch_size=40, progress=lambda *t: ticks.append(t))
    done = [t[1] for t in ticks]
    assert {t[0] for t in ticks} == {"sync"} and done == sorted(done) and done[-1] == report.upserts
    assert len(ticks) == -(-report.upserts // 40)  # one tick a batch
