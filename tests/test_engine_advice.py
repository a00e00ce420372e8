"""An index on FTS5 with many texts says that tantivy answers it in milliseconds, and how to switch:
on the overview page (``chunkdedup serve``) and after ``chunkdedup query``'s hits; escaped."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

from chunkdedup import ingest
from chunkdedup.cli import main
from chunkdedup.store import textindex
from chunkdedup.web import create_app

#: a folder and file name a page must escape and a shell must quote
ODD = "<b>&'x"


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    docs = tmp_path_factory.mktemp("docs")
    for i in range(3):
        (docs / f"d{i}.txt").write_text(f"Refund policy number {i}: refunds within {i + 30} days.\n")
    folder = tmp_path_factory.mktemp("ix") / ODD
    folder.mkdir()
    path = folder / f"{ODD}.sqlite"
    ingest([docs], path)
    return path


@pytest.fixture()
def client(index: Path) -> Iterator[TestClient]:
    with TestClient(base_url="http://localhost", app=create_app(index)) as c:
        yield c


def test_a_small_index_gets_no_advice(index: Path, client: TestClient) -> None:
    assert textindex.SLOW_FTS5_GROUPS >= 10_000
    assert 'id="engine-advice"' not in client.get("/").text
    assert client.get("/?format=json").json()["text_engine"]["tantivy_command"] is None
    out = CliRunner().invoke(main, ["query", "refund policy", "--index", str(index)], catch_exceptions=False)
    assert out.exit_code == 0 and "1" in out.output and "tantivy" not in out.output


def test_a_large_fts5_index_is_told_to_switch_to_tantivy(
    index: Path, client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(textindex, "SLOW_FTS5_GROUPS", 2)
    html = client.get("/").text
    assert 'id="engine-advice"' in html and "milliseconds" in html
    assert "pip install 'chunkdedup[tantivy]'" in html
    assert "--text-index tantivy" in html
    assert "&lt;b&gt;&amp;" in html and "<b>&" not in html  # the path, escaped
    command = client.get("/?format=json").json()["text_engine"]["tantivy_command"]
    assert command.startswith("chunkdedup ingest PATHS --index '")
    assert command.endswith(" --text-index tantivy")
    assert ODD.replace("'", "'\"'\"'") in command  # shell-quoted
    out = CliRunner().invoke(main, ["query", "refund policy", "--index", str(index)], catch_exceptions=False)
    assert out.exit_code == 0
    assert "tantivy engine answers such indexes in milliseconds" in out.output
    assert "pip install 'chunkdedup[tantivy]'" in out.output and "--text-index tantivy" in out.output


def test_a_tantivy_index_gets_no_advice(index: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(textindex, "SLOW_FTS5_GROUPS", 2)
    assert textindex.slow_fts5("fts5", 2) and not textindex.slow_fts5("tantivy", 10**9)
    assert not textindex.slow_fts5("fts5", 1)
