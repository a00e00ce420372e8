"""Hostile configs and outputs: a config value of the wrong type, a run killed mid-ingest, an
output that cannot be written (a closed pipe, a full disk, a read-only folder)."""

from __future__ import annotations

import errno
import json
import os
import random
import signal
import sqlite3
import string
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from chunkdedup import Index, ingest
from chunkdedup.cli import main
from chunkdedup.config import Config
from chunkdedup.errors import ConfigError
from chunkdedup.store import Store
from test_readonly_index import _read_only, needs_mount

CHUNKDEDUP = str(Path(sys.executable).with_name("chunkdedup"))


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ('[chunk]\ntarget_words = "300"', "[chunk]: target_words must be an integer, got '300' (a string)"),
        ("[chunk]\ntarget_words = true", "[chunk]: target_words must be an integer, got True (a boolean)"),
        ("[near]\nthreshold = true", "[near]: threshold must be a number, got True (a boolean)"),
        ('[near]\nenabled = "no"', "[near]: enabled must be true or false, got 'no' (a string)"),
        ("[dedup]\nexact = 1", "[dedup]: exact must be true or false, got 1 (an integer)"),
        ("[semantic]\nembedder = 5", "[semantic]: embedder must be a string, got 5 (an integer)"),
        ('[parse]\nsuffixes = ".md"', "[parse]: suffixes must be a list of strings, got '.md' (a string)"),
        ('[parse]\nsuffixes = [".md", 3]', "[parse]: suffixes must be a list of strings, got ['.md', 3]"),
        ('[near]\nkeep_apart = [["a", 1]]',
         "[near]: keep_apart must be a list of strings or lists of 2 strings, got [['a', 1]]"),
        ("[query]\nk = 2.5", "[query]: k must be an integer, got 2.5 (a number)"),
    ],
)
def test_a_config_value_of_the_wrong_type_is_a_config_error_naming_it(
    tmp_path: Path, toml: str, message: str
) -> None:
    path = tmp_path / "config.toml"
    path.write_text(toml + "\n")
    with pytest.raises(ConfigError) as e:
        Config.load(path)
    assert str(e.value).startswith(f"{path} {message}")


def test_a_config_takes_an_integer_for_a_number_and_lists_for_tuples(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[near]\nthreshold = 1\nkeep_apart = ["a", ["b", "c"]]\nmeaning = []\n'
                    '[parse]\nsuffixes = [".md"]\n')
    cfg = Config.load(path)
    assert cfg.near.threshold == 1.0 and isinstance(cfg.near.threshold, float)
    assert cfg.near.keep_apart == ("a", ("b", "c")) and cfg.near.meaning == ()
    assert cfg.parse.suffixes == (".md",)
    assert Config.from_dict(Config().to_dict()) == Config()  # a stored run's config reads back


_KILLED_MID_RUN = """
import os, signal, sys
from chunkdedup.store import Store
store = Store.open(sys.argv[1])
with store.writer():
    store.runs.begin_run(["x"], None, {})
    os.kill(os.getpid(), signal.SIGKILL)
"""


def _runs(index: Path) -> list[tuple[str, bool]]:
    with sqlite3.connect(index) as c:
        return [(r[0], r[1] is not None) for r in c.execute("SELECT status, finished FROM runs ORDER BY id")]


def test_a_run_killed_by_sigkill_is_marked_failed_by_the_next_writer(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nRefunds are paid within thirty days of the written request.\n")
    index = tmp_path / "i.sqlite"
    ingest([docs], index)
    killed = subprocess.run([sys.executable, "-c", _KILLED_MID_RUN, str(index)], capture_output=True)
    assert killed.returncode == -signal.SIGKILL
    assert _runs(index) == [("done", True), ("running", False)]  # nothing could mark it
    with Index.open(index) as ix:  # a reader writes nothing; no writer holds the lock: it was killed
        assert ix.stats()["documents"] == 1
        assert [r.status for r in ix.views.runs(limit=5)] == ["failed", "done"]
    assert _runs(index) == [("done", True), ("running", False)]
    with Store.open(index) as writer, writer.writer(), Index.open(index) as ix:  # a writer is alive
        assert [r.status for r in ix.views.runs(limit=5)] == ["running", "done"]
        assert ix.store.writer_running() and writer.writer_running()
    ingest([docs], index)  # the next writer holds the lock: the killed run is not alive
    assert _runs(index) == [("done", True), ("failed", True), ("done", True)]


@pytest.fixture(scope="module")
def wide_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An index whose export (about 300 kB) is larger than a pipe's buffer."""
    folder = tmp_path_factory.mktemp("wide")
    docs = folder / "docs"
    docs.mkdir()
    rng = random.Random(3)
    for n in range(400):  # words of random letters: digits alone would make one boilerplate key of all
        words = " ".join("".join(rng.choices(string.ascii_lowercase, k=7)) for _ in range(60))
        (docs / f"d{n}.md").write_text(f"# Document {n}\n\nThis paragraph is about {words}.\n")
    index = folder / "wide.sqlite"
    ingest([docs], index)
    return index


def test_export_into_a_closed_pipe_ends_quietly(wide_index: Path) -> None:
    """`chunkdedup export | head -1`: the reader leaving is no error to report."""
    proc = subprocess.Popen([CHUNKDEDUP, "export", "--index", str(wide_index)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    assert json.loads(proc.stdout.readline())["id"]
    proc.stdout.close()
    err = proc.stderr.read().decode()
    proc.stderr.close()
    # 1 is what every command exits with when its reader leaves (click's quiet EPIPE exit): not SIGPIPE
    assert (proc.wait(timeout=60), err) == (1, "")


def test_export_onto_a_full_disk_leaves_no_partial_file(
    wide_index: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from chunkdedup import export

    def fill_the_disk(recs: Any, fh: Any) -> None:
        fh.write("{}\n" * 1000)
        fh.flush()
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(export, "_write_jsonl", fill_the_disk)
    out = tmp_path / "chunks.jsonl"
    result = CliRunner().invoke(main, ["export", "--index", str(wide_index), "--out", str(out)])
    assert result.exit_code == 1, result.output
    assert result.output.startswith(f"Error: no space left writing the export to {out} (No space left")
    assert "the partial file was removed" in result.output
    assert list(tmp_path.iterdir()) == []


@pytest.fixture
def docugami(tmp_path: Path) -> tuple[Path, Path]:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "2023 Q3 NVDA.pdf").write_bytes(b"%PDF")
    csv = tmp_path / "q.csv"
    csv.write_text("Question,Source Docs,Answer\nNVDA?,*NVDA*,yes\n")
    return csv, docs


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full here")
def test_golden_convert_onto_a_full_disk_is_one_line(docugami: tuple[Path, Path]) -> None:
    csv, docs = docugami
    with open("/dev/full", "w") as full:
        done = subprocess.run([CHUNKDEDUP, "golden", "convert", str(csv), "--docs", str(docs)],
                              stdout=full, stderr=subprocess.PIPE, text=True, timeout=60)
    assert (done.returncode, done.stderr) == (
        1, "Error: no space left (No space left on device): free disk space and run again\n")


def test_golden_convert_out_onto_a_full_disk_leaves_no_partial_file(
    docugami: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from chunkdedup.evaluate import golden

    def fill_the_disk(q: Any) -> str:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    csv, docs = docugami
    out = tmp_path / "golden.jsonl"
    args = ["golden", "convert", str(csv), "--docs", str(docs), "--out", str(out)]
    assert CliRunner().invoke(main, args).exit_code == 0
    assert json.loads(out.read_text())["relevant"] == [{"doc": "2023 Q3 NVDA.pdf"}]
    out.unlink()
    monkeypatch.setattr(golden, "golden_line", fill_the_disk)
    result = CliRunner().invoke(main, args)
    assert (result.exit_code, result.output) == (
        1, f"Error: no space left writing the golden set to {out} (No space left on device): free disk space "
        "and run again, or give --out a path on another disk; the partial file was removed\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["docs", "q.csv"]


@needs_mount
def test_eval_of_an_index_in_a_read_only_folder_builds_its_baseline_in_the_cache(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in {"refunds": "Refunds are paid within thirty days of the written request.",
                       "travel": "Travel is booked through the approved agency two weeks ahead."}.items():
        (docs / f"{name}.md").write_text(f"# {name.title()}\n\n{text}\n")
    shipped = tmp_path / "shipped"
    shipped.mkdir()
    index = shipped / "policy.sqlite"
    ingest([docs], index)
    with sqlite3.connect(index) as c:  # the index alone in its folder, as shipped in an image
        c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    for suffix in ("-wal", "-shm"):
        Path(f"{index}{suffix}").unlink(missing_ok=True)
    golden = tmp_path / "golden.jsonl"
    golden.write_text(json.dumps({"id": "r", "question": "when are refunds paid",
                                  "relevant": [{"doc": "refunds"}]}) + "\n")
    cache = tmp_path / "cache"
    args = ("eval", str(golden), "--index", str(index), "-k", "1")
    first = _read_only(shipped, *args, env={"XDG_CACHE_HOME": str(cache)})
    assert first.returncode == 0, first.stderr
    built = list((cache / "chunkdedup" / "baselines").glob("policy-*.baseline.sqlite"))
    assert len(built) == 1
    assert f"baseline: {built[0]} (rebuilt (missing); in the cache folder, since the index's folder " \
           f"{shipped} cannot be written (Read-only file system))" in first.stdout
    again = _read_only(shipped, *args, env={"XDG_CACHE_HOME": str(cache)})
    assert again.returncode == 0 and f"baseline: {built[0]} (reused" in again.stdout
    assert sorted(p.name for p in shipped.iterdir())[0] == "policy.sqlite"  # nothing built beside it
    assert not list(shipped.glob("*baseline*"))
    # a --baseline in the read-only folder, or no cache folder to fall back to: one line, no traceback
    beside = _read_only(shipped, *args, "--baseline", str(shipped / "b.sqlite"), env={})
    assert (beside.returncode, beside.stdout) == (1, "")
    assert beside.stderr == (f"Error: cannot write the baseline {shipped / 'b.sqlite'}: its folder {shipped} "
                             "cannot be written (Read-only file system): give --baseline a path in a folder "
                             "you can write\n")
    (tmp_path / "file").write_text("")
    nowhere = _read_only(shipped, *args, env={"XDG_CACHE_HOME": str(tmp_path / "file")})
    assert nowhere.returncode == 1 and nowhere.stderr.count("\n") == 1, nowhere.stderr
    assert f"and the cache folder {tmp_path / 'file' / 'chunkdedup' / 'baselines'} cannot be made" \
        in nowhere.stderr


def test_k_out_of_range_is_a_usage_error(tmp_path: Path) -> None:
    """``-k 0`` and ``-k 99999999999999999999`` are usage errors (exit 2, the range named), not an
    exit 1 and an OverflowError traceback; the library says the same with a ConfigError."""
    from chunkdedup.config import MAX_K
    from chunkdedup.query import search

    (tmp_path / "a.txt").write_text("Refunds are paid within thirty days of the request.", encoding="utf-8")
    index = tmp_path / "i.sqlite"
    ingest([tmp_path / "a.txt"], index)
    for k in ("0", "99999999999999999999", str(MAX_K + 1)):
        out = CliRunner().invoke(main, ["query", "refunds", "--index", str(index), "-k", k])
        assert out.exit_code == 2 and f"1<=x<={MAX_K}" in out.output, out.output
    assert CliRunner().invoke(main, ["query", "refunds", "--index", str(index), "-k", "3"]).exit_code == 0
    with Index.open(index) as ix, pytest.raises(ConfigError, match=r"k must be in \[1, 10000\]"):
        search(ix, "refunds", k=10**20)
