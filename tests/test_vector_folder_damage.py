"""A damaged vector folder (``INDEX.vectors``: a graph usearch cannot load, an empty or cut-short
array, sizes that disagree) never breaks a question: it is searched exactly, with one warning that
names the folder and the fix; ``chunkdedup vector-index`` finds the damage and rebuilds the folder,
and says so."""

from __future__ import annotations

import json
import logging
import os
import shutil
from importlib.util import find_spec
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from chunkdedup import Index, ingest, search
from chunkdedup.cli import main
from chunkdedup.config import QueryConfig
from chunkdedup.errors import ConfigError
from chunkdedup.ingestion.sequence import build_vector_index
from chunkdedup.query.ann import AnnRetriever, vector_retriever
from chunkdedup.store import vectorindex
from test_query import SENTENCES
from test_query_vectors import HASH

pytestmark = pytest.mark.skipif(find_spec("usearch") is None, reason="needs the [ann] extra (usearch)")

#: The folder answers from its first vector (a default ``auto`` query would otherwise search exactly).
FOLDER = QueryConfig(ann_min_vectors=0)
EXACT = QueryConfig(vector_index="exact")
ANN = QueryConfig(vector_index="ann")
QUESTIONS = ("refunds paid after the request", "laptops encrypted when unattended", "personal data kept")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("damage")
    corpus = root / "c"
    corpus.mkdir()
    for i, s in enumerate(SENTENCES):
        text = f"{s}\n\nDocument {i} of the set, paragraph two.\n"
        (corpus / f"d{i}.txt").write_text(text, encoding="utf-8")
    index = root / "i.sqlite"
    ingest([corpus], index, config=HASH)
    assert build_vector_index(index).count >= 5
    return index


@pytest.fixture
def index(built: Path, tmp_path: Path) -> Path:
    """A copy of the module's index with its vector folder, to damage."""
    out = tmp_path / built.name
    shutil.copyfile(built, out)
    shutil.copytree(vectorindex.folder(built), vectorindex.folder(out))
    return out


def generation(index: Path) -> Path:
    folder = vectorindex.folder(index)
    return folder / (folder / "current").read_text(encoding="utf-8")


def scramble(index: Path) -> Path:
    """The graph file overwritten with random bytes of its own size."""
    graph = generation(index) / "hnsw.usearch"
    graph.write_bytes(os.urandom(graph.stat().st_size))
    return graph


def truncate(index: Path, name: str) -> Path:
    target = generation(index) / name
    target.write_bytes(b"")
    return target


def hits(index: Path, config: QueryConfig | None) -> list[list[tuple[str, float]]]:
    with Index.open(index) as ix:
        return [
            [(h.id, round(h.score, 9)) for h in search(ix, q, config=config, retriever="vector").hits]
            for q in QUESTIONS
        ]


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage() for r in caplog.records
        if r.levelno == logging.WARNING and r.name.startswith("chunkdedup")
    ]


def assert_folder_answers(index: Path) -> None:
    """The folder loads again, holds every stored vector, and a question through it answers."""
    with Index.open(index) as ix:
        handle = ix.vector_handle()
        assert handle is not None
        assert len(handle.index) == handle.state.count == len(handle.arrays.gids)
        n = ix.store.conn.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0]
        assert handle.state.count == n
        assert vectorindex.status(ix.store)[1] is None
        assert isinstance(vector_retriever(ix.store, ix.vector_handle, ANN), AnnRetriever)


DAMAGE = {
    "random graph": lambda index: scramble(index),
    "empty graph": lambda index: truncate(index, "hnsw.usearch"),
    "empty vectors": lambda index: truncate(index, "vectors.npy"),
    "empty keys": lambda index: truncate(index, "keys.npy"),
    "empty gids": lambda index: truncate(index, "gids.npy"),
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_damaged_folder_is_searched_exactly_with_one_warning(
    index: Path, damage: str, caplog: pytest.LogCaptureFixture
) -> None:
    want = hits(index, EXACT)
    assert hits(index, FOLDER) == want  # the healthy folder answers as exact search does here
    DAMAGE[damage](index)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="chunkdedup"), Index.open(index) as ix:
        got = search(ix, QUESTIONS[0], retriever="vector").hits  # a default question
    assert [(h.id, round(h.score, 9)) for h in got] == want[0]
    (message,) = warnings_of(caplog)  # one question, one warning
    assert str(vectorindex.folder(index)) in message
    assert f"chunkdedup vector-index --index {index}" in message and "--rebuild" in message
    assert hits(index, FOLDER) == want


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_vector_index_finds_the_damage_and_rebuilds(index: Path, damage: str) -> None:
    damaged = DAMAGE[damage](index)
    out = CliRunner().invoke(main, ["vector-index", "--index", str(index)])
    assert out.exit_code == 0, out.output
    assert "vector index rebuilt: the folder was damaged (" in out.output, out.output
    assert damaged.name in out.output and "updated" not in out.output
    assert_folder_answers(index)
    out = CliRunner().invoke(main, ["vector-index", "--index", str(index)])  # healthy now: nothing to do
    assert out.exit_code == 0 and "updated (+0, -0)" in out.output, out.output


def test_the_library_reports_the_damage(index: Path) -> None:
    scramble(index)
    done = build_vector_index(index)
    assert done.built and done.rebuilt and done.damaged and "hnsw.usearch" in done.damaged
    assert done.to_json()["damaged"] == done.damaged
    again = build_vector_index(index)
    assert again.built and not again.rebuilt and again.damaged is None


def test_sizes_that_disagree_are_damage(index: Path, caplog: pytest.LogCaptureFixture) -> None:
    gen = generation(index)
    keys = np.load(gen / "keys.npy")
    np.save(gen / "keys.npy", keys[:-1])  # a row short of the graph and the arrays
    with caplog.at_level(logging.WARNING, logger="chunkdedup"), Index.open(index) as ix:
        assert ix.vector_handle() is None
    assert len(warnings_of(caplog)) == 1 and "keys.npy" in warnings_of(caplog)[0]
    done = build_vector_index(index)
    assert done.rebuilt and done.damaged and "keys.npy" in done.damaged
    assert_folder_answers(index)
    state = json.loads((generation(index) / "state.json").read_text())
    (generation(index) / "state.json").write_text(json.dumps({**state, "count": state["count"] + 1}))
    with caplog.at_level(logging.WARNING, logger="chunkdedup"), Index.open(index) as ix:
        assert ix.vector_handle() is None
    assert build_vector_index(index).damaged is not None
    assert_folder_answers(index)


def test_a_graph_failing_mid_question_is_searched_exactly(
    index: Path, caplog: pytest.LogCaptureFixture
) -> None:
    class Broken:
        expansion_search = 0

        def search(self, *args: object) -> None:
            raise RuntimeError("File is corrupted and can't fit all the nodes")

    with Index.open(index) as ix:
        ann = vector_retriever(ix.store, ix.vector_handle, ANN)
        exact = vector_retriever(ix.store, ix.vector_handle, EXACT)
        assert isinstance(ann, AnnRetriever)
        ann.handle.index = Broken()
        with caplog.at_level(logging.WARNING, logger="chunkdedup"):
            got = ann.retrieve(QUESTIONS[0], 3)
        assert got == exact.retrieve(QUESTIONS[0], 3)
    (message,) = warnings_of(caplog)
    assert "can't fit all the nodes" in message and f"--index {index} --rebuild" in message


def test_ann_mode_names_the_damage_and_the_fix(index: Path) -> None:
    truncate(index, "vectors.npy")
    with Index.open(index) as ix, pytest.raises(ConfigError) as caught:
        search(ix, QUESTIONS[0], config=ANN, retriever="vector")
    message = str(caught.value)
    assert "but None" not in message and "vectors.npy" in message
    assert f"chunkdedup vector-index --index {index}" in message
    out = CliRunner().invoke(
        main, ["query", QUESTIONS[0], "--index", str(index), "--vector-index", "ann", "--retriever", "vector"]
    )
    assert out.exit_code == 1 and "Aborted!" not in out.output, out.output
    line = out.output.strip()
    assert "\n" not in line and line.startswith("Error:") and "vectors.npy" in line
    assert f"--index {index}" in line and "but None" not in line


def test_cli_questions_on_a_damaged_folder_answer(index: Path) -> None:
    runner = CliRunner()
    want = runner.invoke(main, ["query", QUESTIONS[0], "--index", str(index), "--vector-index", "exact"])
    assert want.exit_code == 0, want.output
    for damage in ("random graph", "empty vectors"):
        DAMAGE[damage](index)
        out = runner.invoke(main, ["query", QUESTIONS[0], "--index", str(index)])
        assert out.exit_code == 0 and out.output == want.output, out.output
        shown = runner.invoke(main, ["--log-level", "WARNING", "query", QUESTIONS[0], "--index", str(index)])
        assert shown.exit_code == 0 and "--rebuild" in shown.output, shown.output


def test_missing_folder_message_names_the_index(index: Path) -> None:
    shutil.rmtree(vectorindex.folder(index))
    with Index.open(index) as ix, pytest.raises(ConfigError, match=r"but .* is not built") as caught:
        search(ix, QUESTIONS[0], config=ANN, retriever="vector")
    assert f"chunkdedup vector-index --index {index}" in str(caught.value)


def test_rebuild_flag_rebuilds_a_healthy_folder(index: Path) -> None:
    stray = generation(index) / "stray"
    stray.write_bytes(b"")
    out = CliRunner().invoke(main, ["vector-index", "--index", str(index), "--rebuild", "--json"])
    assert out.exit_code == 0, out.output
    done = json.loads(out.output)
    assert done["built"] and done["rebuilt"] and done["damaged"] is None
    assert not stray.exists()  # the folder was deleted, then built again
    assert_folder_answers(index)
    out = CliRunner().invoke(main, ["vector-index", "--index", str(index), "--rebuild"])
    assert out.exit_code == 0 and "vector index rebuilt:" in out.output and "damaged" not in out.output


def test_a_file_where_the_folder_goes(index: Path, caplog: pytest.LogCaptureFixture) -> None:
    """An empty file named INDEX.vectors: questions search exactly (with the warning), vector-index
    says in one line what it is and how to replace it, --rebuild replaces it."""
    path = vectorindex.folder(index)
    shutil.rmtree(path)
    path.write_bytes(b"")
    with caplog.at_level(logging.WARNING, logger="chunkdedup"), Index.open(index) as ix:
        assert search(ix, QUESTIONS[0], config=FOLDER, retriever="vector").hits
    (message,) = warnings_of(caplog)
    assert f"{path} is a file" in message and "--rebuild" in message
    runner = CliRunner()
    out = runner.invoke(main, ["vector-index", "--index", str(index)])
    assert out.exit_code == 1 and "Aborted!" not in out.output, out.output
    line = out.output.strip()
    assert "\n" not in line and f"{path} is a file" in line
    assert f"chunkdedup vector-index --index {index} --rebuild" in line
    out = runner.invoke(main, ["vector-index", "--index", str(index), "--rebuild"])
    assert out.exit_code == 0 and "vector index rebuilt:" in out.output, out.output
    assert_folder_answers(index)
