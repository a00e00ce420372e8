"""Hostile removals, questions and checks: removal that costs what the removed records hold, a question
with a bound, `check` of a file that is no index of this version, a query that imports no compiled
kernel, and notes that name a path as it was given."""

from __future__ import annotations

import json
import random
import re
import shutil
import sqlite3
import string
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from chunkdedup import Index, ingest, remove_documents
from chunkdedup.cli import main
from chunkdedup.config import Config, QueryConfig
from chunkdedup.errors import ConfigError, QuestionError
from chunkdedup.normalize import with_word_parts, word_parts


def _records(n: int) -> str:
    """``n`` JSONL records of distinct words (record ``i`` shares nothing with the others)."""
    return "".join(
        json.dumps({"id": f"r{i:05d}", "text": " ".join(f"w{i}x{j}" for j in range(12)) + "."}) + "\n"
        for i in range(n)
    )


def _sqlite_steps(monkeypatch: pytest.MonkeyPatch) -> Callable[[], int]:
    """Count the SQLite virtual-machine steps (in hundreds) of every connection opened from now on:
    a deterministic measure of the rows a command reads and writes."""
    steps = [0]
    connect = sqlite3.connect

    def counted(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        conn: sqlite3.Connection = connect(*args, **kwargs)

        def tick() -> int:
            steps[0] += 1
            return 0

        conn.set_progress_handler(tick, 100)
        return conn

    monkeypatch.setattr(sqlite3, "connect", counted)
    return lambda: steps[0]


def _remove_work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, records: int) -> tuple[int, int]:
    """The SQLite work of removing 10 and 40 records of a JSONL file of ``records`` records (each
    from a copy of the same index)."""
    folder = tmp_path / f"in-{records}"
    folder.mkdir()
    (folder / "data.jsonl").write_text(_records(records))
    index = tmp_path / f"{records}.sqlite"
    ingest([folder], index)
    work = []
    for removed in (10, 40):
        copy = tmp_path / f"{records}-{removed}.sqlite"
        shutil.copyfile(index, copy)
        gone = [f"data.jsonl#r{i:05d}" for i in range(0, removed * 7, 7)]
        with monkeypatch.context() as m:
            steps = _sqlite_steps(m)
            summary = remove_documents(copy, gone)
            work.append(steps())
        assert summary["removed"] == gone
    return work[0], work[1]


def test_removal_costs_what_the_removed_records_hold_not_the_size_of_their_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each record removed beyond the first ten costs the same SQLite work in a file of 400 records
    and in one of 4,000 (each record used to read its whole file back: tenfold work)."""
    few, many = _remove_work(tmp_path, monkeypatch, 400)
    large_few, large_many = _remove_work(tmp_path, monkeypatch, 4_000)
    per_record, large_per_record = (many - few) / 30, (large_many - large_few) / 30
    assert large_per_record < 1.5 * per_record + 5, (per_record, large_per_record)


def test_removing_some_records_of_a_file_keeps_the_rest_and_its_row(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "data.jsonl").write_text(_records(5))
    (folder / "one.md").write_text("# One\n\nA file of a single document.\n")
    index = tmp_path / "i.sqlite"
    ingest([folder], index)
    remove_documents(index, ["data.jsonl#r00001", "data.jsonl#r00003", "one.md"])
    conn = sqlite3.connect(index)
    try:
        docs = [r[0] for r in conn.execute("SELECT doc_id FROM documents ORDER BY doc_id")]
        files = dict(conn.execute("SELECT path, content_hash FROM files").fetchall())
    finally:
        conn.close()
    assert docs == ["data.jsonl#r00000", "data.jsonl#r00002", "data.jsonl#r00004"]
    assert list(files) == [str(folder / "data.jsonl")]  # the emptied file's row is gone
    assert files[str(folder / "data.jsonl")] is None  # the next ingest reads the rest again


@pytest.fixture(scope="module")
def small_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("docs")
    (folder / "logs.md").write_text("# Logs\n\nServer logs are kept for ninety days, then deleted.\n")
    (folder / "leave.md").write_text("# Leave\n\nStaff take twenty days of paid leave a year.\n")
    index = folder.parent / "small.sqlite"
    ingest([folder], index)
    return index


LONG_QUESTION = "how long are logs kept " * 200  # 4,600 characters
WORDY_QUESTION = "logs " * 300  # 1,500 characters, 300 terms


@pytest.mark.parametrize(
    ("question", "message"),
    [
        (LONG_QUESTION,
         "the question has 4,600 characters; at most 4,000 are asked ([query] max_question_chars)"),
        (WORDY_QUESTION,
         "the question has 300 terms; at most 128 are asked ([query] max_question_terms)"),
    ],
)
def test_a_question_past_the_bounds_is_a_question_error(
    small_index: Path, question: str, message: str
) -> None:
    with Index.open(small_index) as ix, pytest.raises(QuestionError) as e:
        ix.query(question)
    assert str(e.value).startswith(message)
    assert "ask a shorter question, or raise the bound in the config" in str(e.value)


def test_the_question_bounds_are_config_fields(small_index: Path, tmp_path: Path) -> None:
    with Index.open(small_index) as ix:
        assert ix.query(WORDY_QUESTION, config=QueryConfig(max_question_terms=300))
        with pytest.raises(QuestionError, match="at most 10 are asked"):
            ix.query("how long are logs kept", config=QueryConfig(max_question_chars=10))
    path = tmp_path / "config.toml"
    path.write_text("[query]\nmax_question_terms = 0\n")
    with pytest.raises(ConfigError, match=r"query\.max_question_terms must be >= 1, got 0"):
        Config.load(path)
    path.write_text('[query]\nmax_question_chars = "many"\n')
    with pytest.raises(ConfigError, match="max_question_chars must be an integer, got 'many'"):
        Config.load(path)


def test_a_question_past_the_bounds_is_a_usage_error_of_the_cli(small_index: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(main, ["query", WORDY_QUESTION, "--index", str(small_index)])
    assert result.exit_code == 2, result.output
    expected = "Error: the question has 300 terms; at most 128 are asked ([query] max_question_terms)"
    assert expected in result.output
    assert "Traceback" not in result.output
    config = tmp_path / "config.toml"
    config.write_text("[query]\nmax_question_terms = 300\n")
    args = ["query", WORDY_QUESTION, "--index", str(small_index), "--config", str(config)]
    result = runner.invoke(main, args)
    assert result.exit_code == 0, result.output


def test_serve_answers_a_question_past_the_bounds_with_400_and_the_reason(small_index: Path) -> None:
    from starlette.testclient import TestClient

    from chunkdedup.web.app import create_app

    with TestClient(base_url="http://localhost", app=create_app(small_index)) as client:
        page = client.get("/query", params={"q": LONG_QUESTION})
        assert page.status_code == 400
        assert "the question has 4,600 characters; at most 4,000 are asked" in page.text
        answer = client.get("/query", params={"q": WORDY_QUESTION, "format": "json"})
        assert answer.status_code == 400
        assert answer.json()["error"].startswith("the question has 300 terms; at most 128 are asked")
        assert client.get("/query", params={"q": "how long are logs kept"}).status_code == 200


def _check(index: Path) -> Any:
    return CliRunner().invoke(main, ["check", "--index", str(index)])


def test_check_of_an_index_written_by_a_newer_version_is_an_error(small_index: Path, tmp_path: Path) -> None:
    newer = tmp_path / "newer.sqlite"
    shutil.copyfile(small_index, newer)
    conn = sqlite3.connect(newer)
    with conn:
        conn.execute("INSERT INTO migrations(name) VALUES ('9999_from_the_future')")
    conn.close()
    assert _check(small_index).exit_code == 0
    result = _check(newer)
    assert result.exit_code == 1
    assert result.output == (
        f"Error: index {newer} was written by a newer chunkdedup (migrations ['9999_from_the_future']): "
        "upgrade chunkdedup to check it\n"
    )


@pytest.mark.parametrize("tables", [["CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT)"], []])
def test_check_of_an_sqlite_file_that_is_no_index_is_an_error(tmp_path: Path, tables: list[str]) -> None:
    other = tmp_path / "other.sqlite"
    conn = sqlite3.connect(other)
    for sql in tables:
        conn.execute(sql)
    conn.commit()
    conn.close()
    result = _check(other)
    assert result.exit_code == 1
    what = "an SQLite file" if tables else "an empty SQLite file"
    expected = f"Error: {other} is {what} but not a chunkdedup index: give the path of an index file\n"
    assert result.output == expected


_QUERY_IMPORTS = """
import sys
from chunkdedup import Index
with Index.open(sys.argv[1]) as ix:
    hits = ix.query("days", k=5)
assert hits, "no hits"
print(sorted(m for m in ("numba", "scipy", "llvmlite") if m in sys.modules))
"""


def test_a_query_imports_no_compiled_kernel_stack(tmp_path: Path) -> None:
    """MMR shingles a query's candidates with the NumPy twins of the near tier's kernels: numba (and
    scipy, which it loads) cost about half a second of a query's process and are not imported."""
    folder = tmp_path / "docs"
    folder.mkdir()
    rng = random.Random(4)
    for i in range(30):
        text = " ".join("".join(rng.choices(string.ascii_lowercase, k=6)) for _ in range(25))
        (folder / f"d{i:02d}.md").write_text(f"{text} and days.\n")
    index = tmp_path / "i.sqlite"
    ingest([folder], index)
    done = subprocess.run([sys.executable, "-c", _QUERY_IMPORTS, str(index)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_ingest_names_each_file_as_its_input_was_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "docs"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "records.jsonl").write_text('{"id": "a", "text": "hello there"}\nnot json\n')
    (folder / "empty.md").write_text("")
    result = CliRunner().invoke(main, ["ingest", "docs", "--index", "i.sqlite"])
    assert result.exit_code == 0, result.output
    assert "note docs/sub/records.jsonl: line 2: not valid JSON" in result.output
    assert "skipped docs/empty.md: empty file" in result.output
    assert str(tmp_path) not in result.output
    result = CliRunner().invoke(main, ["ingest", str(folder), "--index", "j.sqlite"])
    assert f"note {folder / 'sub' / 'records.jsonl'}: line 2" in result.output  # absolute as given


@given(st.text(st.sampled_from("ab1_2 -é٣²ⅫxY\u202e\n9"), max_size=30))
def test_word_parts_of_a_text_are_those_of_its_letter_digit_runs(text: str) -> None:
    runs = re.findall(r"[^\W_]+", text)
    extra = [part for run in runs for part in word_parts(run)]
    assert with_word_parts(text) == (" ".join([text, *extra]) if extra else text)


def test_a_huge_word_is_indexed_in_one_scan() -> None:
    """A 200,000-letter word (a base64 blob, a run of one key) took time quadratic in its length:
    the letter-digit search was tried at each of its characters (70,000 letters: 35 s)."""
    code = "from chunkdedup.normalize import with_word_parts; with_word_parts('x' * 200_000 + ' fy2018')"
    done = subprocess.run([sys.executable, "-c", code], timeout=60, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    ("depth", "text"),
    [(65, "nested"), (900, "a lone \\udb89 surrogate"), (50_000, "nested")],
)
def test_a_record_nested_too_deeply_is_a_note_on_its_line(tmp_path: Path, depth: int, text: str) -> None:
    """Past 64 levels a record is refused on its line: deeper than json reads (50,000), or deep
    enough that a later reading of it recursed past Python's limit (900, with a surrogate to scrub)."""
    folder = tmp_path / "in"
    folder.mkdir()
    deep = '{"a": ' * depth + "1" + "}" * depth
    (folder / "data.jsonl").write_text(
        '{"id": "ok", "text": "Server logs are kept for ninety days."}\n'
        f'{{"id": "deep", "text": "{text}", "meta": {deep}}}\n'
    )
    report = ingest([folder], tmp_path / "i.sqlite")
    (f,) = report.files
    assert (f.status, f.doc_ids) == ("ingested", ("data.jsonl#ok",))
    assert f.reason == "line 2: fields nested deeper than 64 levels: flatten the record's fields"
