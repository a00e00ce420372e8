"""Every ``--out`` (export, golden convert, eval): a regular file or a new path is replaced whole, a
symlink's target is replaced and the link kept, a FIFO, a device or ``/proc/self/fd/N`` is written
through; an output that cannot be written is a one-line error (exit status 1) naming the file, and
leaves no half-written file and no temporary file behind."""

from __future__ import annotations

import errno
import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from chunkdedup import ingest
from chunkdedup.cli import main
from chunkdedup.errors import InputError
from chunkdedup.evaluate.golden import Question, write_golden
from test_readonly_index import _read_only, needs_mount

CHUNKDEDUP = str(Path(sys.executable).with_name("chunkdedup"))
TOPICS = {
    "refunds": "Refunds are paid within thirty days of the written request.",
    "travel": "Travel is booked through the approved agency two weeks ahead.",
}


@pytest.fixture
def index(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in TOPICS.items():
        (docs / f"{name}.md").write_text(f"# {name.title()}\n\n{text}\n")
    path = tmp_path / "ix.sqlite"
    ingest([docs], path)
    return path


@pytest.fixture
def golden(tmp_path: Path) -> Path:
    path = tmp_path / "golden.jsonl"
    question = {"id": "r", "question": "when are refunds paid", "relevant": [{"doc": "refunds"}]}
    path.write_text(json.dumps(question) + "\n")
    return path


@pytest.fixture
def docugami(tmp_path: Path) -> list[str]:
    """``golden convert``'s arguments but ``--out``: a one-question CSV and its documents' folder."""
    docs = tmp_path / "pdfs"
    docs.mkdir()
    (docs / "2023 Q3 NVDA.pdf").write_bytes(b"%PDF")
    csv = tmp_path / "q.csv"
    csv.write_text("Question,Source Docs,Answer\nNVDA?,*NVDA*,yes\n")
    return ["golden", "convert", str(csv), "--docs", str(docs)]


def _cli(*args: str) -> Result:
    """The command through click's runner; an exception other than click's exit fails the test."""
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def _one_line_error(result: Result, starts: str) -> None:
    assert result.exit_code == 1, result.output
    assert result.output.startswith(f"Error: {starts}") and result.output.count("\n") == 1, result.output


def _beside(folder: Path) -> list[str]:
    """The names in ``folder`` but the index's (a temporary file left there would be one of them)."""
    return sorted(p.name for p in folder.iterdir() if not p.name.startswith("ix.sqlite"))


def _plain_export(index: Path) -> str:
    result = _cli("export", "--index", str(index))
    assert result.exit_code == 0, result.output
    return result.stdout


def test_export_to_a_symlink_replaces_its_target_and_keeps_the_link(index: Path, tmp_path: Path) -> None:
    target, link = tmp_path / "chunks.jsonl", tmp_path / "link.jsonl"
    target.write_text("old\n")
    target.chmod(0o640)
    link.symlink_to(target.name)
    assert _cli("export", "--index", str(index), "--out", str(link)).exit_code == 0
    assert link.is_symlink() and os.readlink(link) == target.name
    assert target.read_text() == _plain_export(index) and len(target.read_text().splitlines()) == 2
    assert stat.S_IMODE(target.stat().st_mode) == 0o640  # the file replaced keeps its permissions
    assert _beside(tmp_path) == ["chunks.jsonl", "docs", "link.jsonl"]


def test_export_into_a_fifo_is_written_through(index: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "chunks.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []

    def read() -> None:
        with open(fifo, "rb") as fh:
            got.append(fh.read())

    reader = threading.Thread(target=read, daemon=True)  # a FIFO replaced by a file would leave it waiting
    reader.start()
    assert _cli("export", "--index", str(index), "--out", str(fifo)).exit_code == 0
    reader.join(timeout=30)
    assert not reader.is_alive(), "the export never opened the FIFO"
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert got == [_plain_export(index).encode()]


def test_export_to_proc_self_fd_1_writes_standard_output(index: Path) -> None:
    done = subprocess.run([CHUNKDEDUP, "export", "--index", str(index), "--out", "/proc/self/fd/1"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == _plain_export(index) and done.stdout.count("\n") == 2


def _full_device(tmp_path: Path) -> Path:
    """A character device like /dev/full (every write: ENOSPC) in ``tmp_path``, not the system's own, so a
    regression replaces a copy; skipped where one cannot be made (not root) or opened (a nodev mount)."""
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full here")
    full = tmp_path / "full"
    try:
        os.mknod(full, stat.S_IFCHR | 0o666, os.stat("/dev/full").st_rdev)
        os.close(os.open(full, os.O_WRONLY))
    except OSError as e:
        pytest.skip(f"cannot make or open a device node in {tmp_path}: {e.strerror}")
    return full


def test_export_to_a_full_device_is_an_error_and_the_device_stays(index: Path, tmp_path: Path) -> None:
    full = _full_device(tmp_path)
    result = _cli("export", "--index", str(index), "--out", str(full))
    _one_line_error(result, f"no space left writing the export to {full} (No space left on device)")
    assert stat.S_ISCHR(full.lstat().st_mode)
    assert _beside(tmp_path) == ["docs", "full"]


def test_export_over_a_full_disk_leaves_the_old_file_whole(
    index: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "chunks.jsonl"
    out.write_text("the complete export of yesterday\n")

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    result = _cli("export", "--index", str(index), "--out", str(out))
    _one_line_error(result, f"no space left writing the export to {out} (No space left on device)")
    assert "the partial file was removed" in result.output
    assert out.read_text() == "the complete export of yesterday\n"
    assert _beside(tmp_path) == ["chunks.jsonl", "docs"]


def test_an_out_under_a_regular_file_is_one_line(index: Path, golden: Path, docugami: list[str],
                                                 tmp_path: Path) -> None:
    """A path no one can create, not even root: its folder is a file."""
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    result = _cli("export", "--index", str(index), "--out", str(blocker / "x.jsonl"))
    _one_line_error(result, f"cannot write the export to {blocker / 'x.jsonl'}: Not a directory; check")
    result = _cli(*docugami, "--out", str(blocker / "g.jsonl"))
    _one_line_error(result, f"cannot write the golden set to {blocker / 'g.jsonl'}: Not a directory; check")
    result = _cli("eval", str(golden), "--index", str(index), "--out", str(blocker / "rep"))
    _one_line_error(result, f"cannot write the report into {blocker / 'rep'}: Not a directory; give --out")
    assert not index.with_name("ix.baseline.sqlite").exists()  # refused before the evaluation ran


def test_golden_convert_to_a_symlink_replaces_its_target(docugami: list[str], tmp_path: Path) -> None:
    target, link = tmp_path / "golden.jsonl", tmp_path / "link.jsonl"
    target.write_text("old\n")
    link.symlink_to(target)
    assert _cli(*docugami, "--out", str(link)).exit_code == 0
    assert link.is_symlink() and link.resolve() == target.resolve()
    assert json.loads(target.read_text())["relevant"] == [{"doc": "2023 Q3 NVDA.pdf"}]


def test_golden_written_to_a_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="it is a folder; give --out the path of a file"):
        write_golden([Question(id="q", question="?", relevant=())], tmp_path)


def test_eval_over_a_full_disk_leaves_the_old_report_whole(
    index: Path, golden: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "rep"
    assert _cli("eval", str(golden), "--index", str(index), "--out", str(out), "--json").exit_code == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    assert set(before) == {"report.json", "report.html"} and json.loads(before["report.json"])["runs"]

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    result = _cli("eval", str(golden), "--index", str(index), "--out", str(out), "--json")
    _one_line_error(result, f"no space left writing the report to {out / 'report.json'} (No space left")
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


@needs_mount
def test_outs_in_a_read_only_folder_are_one_line(index: Path, golden: Path, docugami: list[str],
                                                 tmp_path: Path) -> None:
    """A read-only mount (a file mode is no test: root writes into a folder of mode 0555)."""
    ro = tmp_path / "ro"
    ro.mkdir()
    (ro / "chunks.jsonl").write_text("old\n")
    cases = {
        f"cannot write the export to {ro / 'chunks.jsonl'}: Read-only file system; check":
            ["export", "--index", str(index), "--out", str(ro / "chunks.jsonl")],
        f"cannot write the golden set to {ro / 'g.jsonl'}: Read-only file system; check":
            [*docugami, "--out", str(ro / "g.jsonl")],
        f"cannot write the report into {ro / 'rep'}: Read-only file system; give --out":
            ["eval", str(golden), "--index", str(index), "--out", str(ro / "rep")],
    }
    for message, args in cases.items():
        done = _read_only(ro, *args)
        assert (done.returncode, done.stderr.count("\n")) == (1, 1), done.stderr
        assert done.stderr.startswith(f"Error: {message}"), done.stderr
    assert sorted(p.name for p in ro.iterdir()) == ["chunks.jsonl"]
    assert (ro / "chunks.jsonl").read_text() == "old\n"
