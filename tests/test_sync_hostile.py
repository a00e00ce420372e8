"""``chunkdedup sync`` against hostile input: unusable paths and embeddings values are one-line errors
that write nothing; a change of embedding model is refused until ``--reembed``, which replaces the
store's vectors; the in-memory store's file and the state are written whole, the store first, and a
damaged one is a one-line error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from chunkdedup.cli import main
from test_cli_sync import EDITED, _corpus, _held, _ids, _ingest
from test_readonly_index import _read_only, needs_mount

pytest.importorskip("langchain_core", reason="needs the [langchain] extra")


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three site-policy families, ingested once (a sync only reads the index)."""
    root = tmp_path_factory.mktemp("hostile_sync")
    path = root / "p.sqlite"
    _ingest(_corpus(root), path)
    return path


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def sync(index: Path, kind: str, path: Path, embeddings: str, *extra: str) -> Result:
    return invoke("sync", "--index", str(index), "--store", kind, "--path", str(path), "--embeddings",
                  embeddings, *extra)


def one_line_error(result: Result, status: int, *names: str) -> str:
    """The error line of ``result``, checked: ``status``, no traceback, one ``Error:`` line naming
    each of ``names``."""
    assert result.exit_code == status, (result.output, result.exception)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1, result.output
    for name in names:
        assert name in errors[0], (name, errors[0])
    return errors[0]


def files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


# 3: unusable paths and values

@pytest.mark.parametrize(
    ("kind", "path", "extra", "named"),
    [
        ("memory", "afile/m.json", (), "afile"),  # a folder under a file: cannot be created
        ("memory", "m.json", ("--state", "afile/s.json"), "afile"),
        ("chroma", "afile/c", (), "afile"),
        ("faiss", "afile", (), "afile"),  # a file where the store's folder is needed
        ("qdrant", "afile", (), "afile"),
        ("memory", "adir", (), "adir"),  # a folder where the memory store's file is needed
    ],
)
def test_an_unusable_path_is_a_one_line_error_and_nothing_is_written(
    index: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str, path: str,
    extra: tuple[str, ...], named: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("afile").write_text("a regular file\n", encoding="utf-8")
    Path("adir").mkdir()
    before = files(tmp_path)
    line = one_line_error(sync(index, kind, Path(path), "fake:8", *extra), 1, named)
    assert "--path" in line or "--state" in line  # the fix names the option to change
    assert files(tmp_path) == before


@pytest.mark.parametrize("spec", ["json:dumps", "json:JSONDecoder", "langchain_core.embeddings:Embeddings"])
def test_embeddings_that_are_not_an_embeddings_class_are_a_usage_error(
    index: Path, tmp_path: Path, spec: str
) -> None:
    result = sync(index, "memory", tmp_path / "m.json", spec)
    one_line_error(result, 2, spec, "--embeddings", "Embeddings class")
    assert files(tmp_path) == []


@needs_mount
def test_a_store_in_a_read_only_folder_is_a_one_line_error(index: Path, tmp_path: Path) -> None:
    ro = tmp_path / "ro"
    ro.mkdir()
    for kind, path, extra in (
        ("memory", ro / "m.json", ()),
        ("memory", tmp_path / "m.json", ("--state", str(ro / "s.json"))),
        ("chroma", ro / "c", ()),
    ):
        args = ["sync", "--index", str(index), "--store", kind, "--path", str(path), "--embeddings", "fake:8"]
        done = _read_only(ro, *args, *extra)
        assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
        assert done.stderr.startswith("Error: cannot write") and str(ro) in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert files(tmp_path) == ["ro"]


# 4: a change of embedding model

def _memory_dims(path: Path) -> set[int]:
    return {len(row["vector"]) for row in json.loads(path.read_text(encoding="utf-8")).values()}


def _chroma_dims(path: Path) -> set[int]:
    import chromadb
    from chromadb.config import Settings

    client = chromadb.PersistentClient(path=str(path), settings=Settings(anonymized_telemetry=False))
    got = client.get_collection("chunkdedup").get(include=["embeddings"])
    return {len(v) for v in got["embeddings"]}


def _faiss_dims(path: Path) -> set[int]:
    import faiss

    return {faiss.read_index(str(path / "chunkdedup.faiss")).d}


STORES: dict[str, tuple[str, Any]] = {
    "memory": ("m.json", _memory_dims),
    "chroma": ("chroma", _chroma_dims),
    "faiss": ("faiss", _faiss_dims),
}


@pytest.mark.parametrize("kind", list(STORES))
def test_another_model_is_refused_until_reembed_replaces_every_vector(
    index: Path, tmp_path: Path, kind: str
) -> None:
    if kind != "memory":
        pytest.importorskip({"chroma": "langchain_chroma", "faiss": "faiss"}[kind])
    name, dims = STORES[kind]
    store = tmp_path / name
    assert sync(index, kind, store, "fake:64").exit_code == 0
    assert dims(store) == {64}
    state = next(tmp_path.glob("*.sync.json"))
    assert json.loads(state.read_text(encoding="utf-8"))["model"] == {
        "name": "DeterministicFakeEmbedding", "dim": 64
    }
    recorded = state.read_bytes()

    for extra in ((), ("--full",)):  # --full alone would keep the old vectors: refused too
        line = one_line_error(sync(index, kind, store, "fake:32", *extra), 1, "--reembed", "64", "32")
        assert str(state.name) in line
        assert dims(store) == {64} and state.read_bytes() == recorded

    done = sync(index, kind, store, "fake:32", "--reembed", "--json")
    assert done.exit_code == 0, done.output
    report = json.loads(done.output)
    assert report["embedded"] == report["upserts"] == len(_ids(index)) and report["kept_vectors"] == 0
    assert dims(store) == {32} and report["verified"] and report["store_records"] == len(_ids(index))
    assert json.loads(state.read_text(encoding="utf-8"))["model"]["dim"] == 32
    again = json.loads(sync(index, kind, store, "fake:32", "--json").output)
    assert again["upserts"] == 0 and again["verified"]
    if kind == "memory":  # every search works: one dimension
        from langchain_core.embeddings import DeterministicFakeEmbedding
        from langchain_core.vectorstores import InMemoryVectorStore

        loaded = InMemoryVectorStore.load(str(store), DeterministicFakeEmbedding(size=32))
        assert len(loaded.similarity_search("sponsors payouts", k=3)) == 3


def test_sync_local_reembeds_from_python(index: Path, tmp_path: Path) -> None:
    from chunkdedup.errors import ConfigError
    from chunkdedup.integrations._local_stores import LocalStore, embeddings_from, sync_local

    store = LocalStore("memory", tmp_path / "m.json")
    sync_local(index, store, embeddings_from("fake:16"))
    with pytest.raises(ConfigError, match="reembed=True"):
        sync_local(index, store, embeddings_from("fake:8"))
    report = sync_local(index, store, embeddings_from("fake:8"), reembed=True)
    assert report.embedded == len(_ids(index)) and _memory_dims(store.path) == {8}


# 5: the memory store and its state, written whole, the store first

def test_a_write_of_the_store_that_fails_midway_leaves_the_old_store_and_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = _corpus(tmp_path)
    index, store = tmp_path / "p.sqlite", tmp_path / "m.json"
    state = tmp_path / "m.json.sync.json"
    _ingest(corpus, index)
    assert sync(index, "memory", store, "fake:16").exit_code == 0
    old_store, old_state = store.read_bytes(), state.read_bytes()
    page = corpus / EDITED
    text = page.read_text(encoding="utf-8")
    page.write_text(text.replace("Stripe will issue", "Stripe shall issue"), "utf-8")
    _ingest(corpus, index)  # a new run: a sync that completes records it in the state

    real_dump = json.dump

    def interrupted(obj: Any, fh: Any, **kw: Any) -> None:  # the second Ctrl-C, halfway through the file
        text = json.dumps(obj)
        fh.write(text[: len(text) // 2])
        fh.flush()
        raise KeyboardInterrupt

    monkeypatch.setattr(json, "dump", interrupted)
    sync(index, "memory", store, "fake:16")
    monkeypatch.setattr(json, "dump", real_dump)
    assert store.read_bytes() == old_store and state.read_bytes() == old_state
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # no temporary file

    done = sync(index, "memory", store, "fake:16", "--json")  # the next sync sends the edit again
    assert done.exit_code == 0, done.output
    assert json.loads(done.output)["upserts"] >= 1 and sorted(_held("memory", store)) == _ids(index)
    texts = [row["text"] for row in json.loads(store.read_text(encoding="utf-8")).values()]
    assert any("Stripe shall issue" in t for t in texts)


@pytest.mark.parametrize(("damaged", "content"), [("store", ""), ("store", "[{"), ("state", ""),
                                                   ("state", "[1]")])
def test_a_damaged_or_empty_store_or_state_is_a_one_line_error(
    index: Path, tmp_path: Path, damaged: str, content: str
) -> None:
    store, state = tmp_path / "m.json", tmp_path / "m.json.sync.json"
    assert sync(index, "memory", store, "fake:16").exit_code == 0
    target = store if damaged == "store" else state
    target.write_text(content, encoding="utf-8")
    one_line_error(sync(index, "memory", store, "fake:16"), 1, str(target), "delete it", "--full")
    assert target.read_text(encoding="utf-8") == content  # left for the user to look at
    target.unlink()  # the fix the message names
    assert sync(index, "memory", store, "fake:16", "--full").exit_code == 0
    assert sorted(_held("memory", store)) == _ids(index)

