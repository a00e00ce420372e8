"""The hostile-input battery: hostile files, damaged indexes and untrusted text never crash,
hang or mislead. Every input is made in ``tmp_path`` by the test itself."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from chunkdedup import Index, ingest
from chunkdedup.cli import main
from chunkdedup.config import Config, ParseConfig
from chunkdedup.types import FileStatus

TEXT = "Refunds are paid within thirty days of the request. The customer keeps the receipt.\n"


def _cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exc_info
    return result.exit_code, result.output


def _runs(index: Path) -> list[str]:
    with sqlite3.connect(index) as c:
        return [r[0] for r in c.execute("SELECT status FROM runs ORDER BY id")]


def survey(paths: list[Path], manifest: Path | None, config: ParseConfig) -> Any:
    from chunkdedup.parse.discover import survey as survey_  # imported here: main has no survey yet

    return survey_(paths, manifest, config)


def _by_path(report: object) -> dict[str, tuple[str, str | None]]:
    return {f.path: (str(f.status), f.reason) for f in report.files}  # type: ignore[attr-defined]


# -- bug 2: a YAML alias bomb in front matter ----------------------------------------------------
def test_yaml_alias_bomb_fails_that_file_only(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    levels = ["a: &a [" + ",".join(["xxxxxxxx"] * 9) + "]"]
    for i, name in enumerate("bcdefg"):
        prev = "abcdefg"[i]
        levels.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    bomb = "---\n" + "\n".join(levels) + "\n---\n\n" + TEXT
    assert len(bomb.encode()) < 500  # 9**7 strings, over 50 MB of metadata once expanded
    (docs / "bomb.md").write_text(bomb)
    (docs / "fine.md").write_text("---\ntitle: Fine\n---\n\n" + TEXT)
    report = ingest([docs], tmp_path / "i.sqlite")
    files = _by_path(report)
    status, reason = files[str(docs / "bomb.md")]
    assert status == "failed" and reason is not None and "alias" in reason
    assert files[str(docs / "fine.md")][0] == "ingested"
    assert _runs(tmp_path / "i.sqlite") == ["done"]


def test_recursive_yaml_alias_fails_that_file_only(tmp_path: Path) -> None:
    (tmp_path / "self.md").write_text("---\na: &a [*a]\n---\n\n" + TEXT)
    report = ingest([tmp_path / "self.md"], tmp_path / "i.sqlite")
    (result,) = report.files
    assert result.status == FileStatus.FAILED and "refers to itself" in (result.reason or "")


# -- bug 3: symlink loops, file names that are not UTF-8, folders that cannot be listed ----------
def test_symlink_loop_is_a_status_not_a_crash(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text(TEXT)
    os.symlink("b.txt", docs / "c.txt")
    os.symlink("c.txt", docs / "b.txt")
    report = ingest([docs], tmp_path / "i.sqlite")
    files = _by_path(report)
    assert files[str(docs / "a.txt")][0] == "ingested"
    for name in ("b.txt", "c.txt"):
        status, reason = files[str(docs / name)]
        assert status == "skipped" and "symbolic links" in (reason or "")
    assert _runs(tmp_path / "i.sqlite") == ["done"]


def test_file_name_that_is_not_utf8_is_one_failed_file(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text(TEXT)
    with open(os.path.join(os.fsencode(docs), b"caf\xe9.txt"), "wb") as f:
        f.write(TEXT.encode())
    report = ingest([docs], tmp_path / "i.sqlite")
    files = _by_path(report)
    assert files[str(docs / "a.txt")][0] == "ingested"
    status, reason = files[f"{docs}/caf\\xe9.txt"]  # printable: the byte is shown as \xe9
    assert status == "failed" and "not valid UTF-8" in (reason or "")
    json.dumps(report.to_json())  # the report itself is valid text
    assert _runs(tmp_path / "i.sqlite") == ["done"]


def test_folder_that_cannot_be_listed_is_one_failed_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = tmp_path / "docs"
    (docs / "locked").mkdir(parents=True)
    (docs / "locked" / "x.txt").write_text(TEXT)
    (docs / "a.txt").write_text(TEXT)
    locked = str(docs / "locked")
    if os.geteuid() == 0:
        # root reads every folder whatever its mode: simulate the kernel's refusal at os.scandir
        real = os.scandir

        def scandir(path: str | os.PathLike[str]) -> object:
            if os.fspath(path) == locked:
                raise PermissionError(13, "Permission denied", locked)
            return real(path)

        monkeypatch.setattr(os, "scandir", scandir)
    else:
        os.chmod(locked, 0)
    try:
        report = ingest([docs], tmp_path / "i.sqlite")
    finally:
        os.chmod(locked, 0o755)
    files = _by_path(report)
    assert files[str(docs / "a.txt")][0] == "ingested"
    status, reason = files[locked]
    assert status == "failed" and "cannot list the folder: Permission denied" in (reason or "")
    assert _runs(tmp_path / "i.sqlite") == ["done"]


def test_a_run_that_dies_is_not_left_running(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a.txt").write_text(TEXT)
    import chunkdedup.ingestion.sequence as pipeline

    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("simulated crash in the chunk phase")

    monkeypatch.setattr(pipeline, "chunk_phase", boom)
    with pytest.raises(RuntimeError):
        ingest([tmp_path / "a.txt"], tmp_path / "i.sqlite")
    assert _runs(tmp_path / "i.sqlite") == ["failed"]


# -- bug 10: every folder entry is accounted for; following symlinked folders is a choice --------
def test_every_folder_entry_is_accounted_for(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "sub" / "x.txt").write_text(TEXT)
    (docs / "a.docx").write_bytes(b"PK\x03\x04")
    (docs / "README").write_text(TEXT)
    (docs / ".hidden.txt").write_text(TEXT)
    (docs / ".git").mkdir()
    os.symlink("gone.txt", docs / "dangling.txt")
    os.symlink("sub", docs / "linked")
    found = survey([docs], None, ParseConfig())
    assert [i.doc_id for i in found.inputs] == ["sub/x.txt"]
    reasons = {Path(u.path).name: (str(u.status), u.reason or "") for u in found.unread}
    assert reasons["a.docx"][1].startswith("unsupported format .docx")
    assert reasons["README"][1].startswith("unsupported format (no suffix)")
    assert "hidden file" in reasons[".hidden.txt"][1]
    assert "hidden folder" in reasons[".git"][1]
    assert "dangling symlink" in reasons["dangling.txt"][1]
    assert "--follow-symlinks" in reasons["linked"][1]
    assert {s for s, _ in reasons.values()} == {"skipped"}


def test_a_folder_of_unsupported_files_says_so(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.docx").write_bytes(b"PK\x03\x04")
    (docs / "b.docx").write_bytes(b"PK\x03\x04")
    _, out = _cli("ingest", str(docs), "--index", str(tmp_path / "i.sqlite"))
    assert "files: 2 skipped" in out
    assert out.count("unsupported format .docx") == 2
    (docs / "a.docx").unlink()
    (docs / "b.docx").unlink()
    _, out = _cli("ingest", str(docs), "--index", str(tmp_path / "i.sqlite"))
    assert "files: none found" in out


def test_following_symlinked_folders_is_explicit_and_cycle_safe(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    (docs / "a").mkdir(parents=True)
    (docs / "a" / "t.txt").write_text(TEXT)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "o.txt").write_text(TEXT)
    os.symlink(outside, docs / "out")
    os.symlink("..", docs / "a" / "up")  # a cycle back to docs
    os.symlink("a", docs / "z-again")  # the same folder a second time
    plain = survey([docs], None, ParseConfig())
    assert [i.doc_id for i in plain.inputs] == ["a/t.txt"]
    followed = survey([docs], None, ParseConfig(follow_symlinks=True))
    assert [i.doc_id for i in followed.inputs] == ["a/t.txt", "out/o.txt"]
    reasons = {Path(u.path).name: u.reason or "" for u in followed.unread}
    assert "read already" in reasons["up"] and "read already" in reasons["z-again"]
    cfg = Config.from_dict({"parse": {"follow_symlinks": True}})
    assert cfg.parse.follow_symlinks


# -- bugs 4 and 5: a damaged index, a full disk, an I/O error -------------------------------------
def _corpus(folder: Path, n: int = 40, name: str = "doc") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        body = " ".join(f"Clause {i}.{j}: order {i * 100 + j} is paid in {j + 3} days." for j in range(60))
        (folder / f"{name}{i:03}.md").write_text(f"---\nfamily: fam{i % 7}\n---\n\n# Policy {i}\n\n{body}\n")
    return folder


def _flip(index: Path, every: int = 3) -> None:
    """Flip 16 bytes in the middle of every ``every``-th page after the schema page."""
    data = bytearray(index.read_bytes())
    page = int.from_bytes(data[16:18], "big") or 65536
    for start in range(2 * page, len(data) - page, every * page):
        for k in range(16):
            data[start + page // 2 + k] ^= 0xFF
    index.write_bytes(bytes(data))


@pytest.fixture(scope="module")
def sound_index(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("sound")
    docs = _corpus(tmp / "docs")
    index = tmp / "i.sqlite"
    ingest([docs], index)
    with sqlite3.connect(index) as c:
        c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return docs, index


def test_damaged_index_says_so_and_how_to_recover(sound_index: tuple[Path, Path], tmp_path: Path) -> None:
    docs, sound = sound_index
    index = tmp_path / "damaged.sqlite"
    index.write_bytes(sound.read_bytes())
    _flip(index)
    outcomes = []
    for args in (["stats"], ["export"], ["boilerplate"], ["ingest", str(docs)], ["check"]):
        code, out = _cli(*args, "--index", str(index))
        outcomes.append((args[0], code, out))
        assert "Traceback" not in out and "not a chunkdedup index" not in out, (args, out)
        if code != 0:
            last = out.strip().splitlines()[-1]
            assert "is damaged" in last and "new index" in last, (args, out)
    failing = {name for name, code, _ in outcomes if code != 0}
    assert {"export", "check"} <= failing, outcomes  # export reads every row; check reads every row


def test_disk_full_is_named_and_the_next_run_is_not_told_to_change_index(
    sound_index: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, sound = sound_index
    index = tmp_path / "full.sqlite"
    index.write_bytes(sound.read_bytes())
    more = _corpus(tmp_path / "more", 60, "more")
    real = sqlite3.connect
    with real(index) as c:
        limit = c.execute("PRAGMA page_count").fetchone()[0] + 3

    def tiny_disk(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        # SQLite's own page limit gives the SQLITE_FULL a full disk gives, at this file only
        conn = real(*args, **kwargs)
        conn.execute(f"PRAGMA max_page_count = {limit}")
        return conn

    monkeypatch.setattr(sqlite3, "connect", tiny_disk)
    for _ in range(2):  # the run that fills the disk, then the next run on the still full disk
        code, out = _cli("ingest", str(more), "--index", str(index))
        assert code == 1 and "Traceback" not in out, out
        (line,) = out.strip().splitlines()[-1:]
        assert "no space left" in line and "free disk space" in line, out
        assert "not a chunkdedup index" not in out
    monkeypatch.setattr(sqlite3, "connect", real)
    assert "running" not in _runs(index)
    code, out = _cli("ingest", str(more), "--index", str(index))  # space again: the run completes
    assert code == 0, out


def test_io_error_is_named(sound_index: tuple[Path, Path], tmp_path: Path) -> None:
    """A file size limit (RLIMIT_FSIZE) makes every write past it fail in the kernel, as a failing
    disk does; the ingest runs in a subprocess so the limit applies to it only."""
    import subprocess
    import sys

    _, sound = sound_index
    index = tmp_path / "io.sqlite"
    more = _corpus(tmp_path / "more", 60)
    script = (
        "import resource, signal, sys\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        f"resource.setrlimit(resource.RLIMIT_FSIZE, ({sound.stat().st_size // 4}, resource.RLIM_INFINITY))\n"
        "from chunkdedup.cli import main\n"
        f"sys.argv = ['chunkdedup', 'ingest', {str(more)!r}, '--index', {str(index)!r}]\n"
        "main()\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    line = done.stderr.strip().splitlines()[-1]
    assert ("I/O error" in line or "no space left" in line) and str(index) in line, line
    assert "not a chunkdedup index" not in line


# -- bug 6: untrusted text never reaches the terminal raw ------------------------------------------
ESC_TEXT = "Refunds are paid \x1b]0;pwned\x07within thirty days\x1b[2J of the request. Keep the receipt.\n"


def test_control_characters_are_escaped_in_every_human_output(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "evil\x1b[31m.txt").write_text(ESC_TEXT)
    (docs / "a\ningested fake: yes.txt").write_text(TEXT)
    index = str(tmp_path / "i.sqlite")
    outputs = []
    _, out = _cli("ingest", str(docs), "--index", index)
    outputs.append(out)
    assert not any(line.startswith("ingested fake") for line in out.splitlines()), out
    _, out = _cli("query", "refunds thirty days", "--index", index)
    outputs.append(out)
    assert "\\x1b" in out
    _, out = _cli("query", "evil refunds", "--index", index, "--explain")  # its context list names files
    outputs.append(out)
    assert "evil\\x1b[31m.txt" in out, out
    with Index.open(index) as ix:
        ids = [r["id"] for r in ix.export()]
    for chunk_id in ids:
        outputs.append(_cli("show", chunk_id, "--index", index)[1])
    outputs += [_cli("boilerplate", "--index", index)[1], _cli("stats", "--index", index)[1]]
    for out in outputs:
        assert "\x1b" not in out and "\x07" not in out, out
    # JSON output stays exact
    _, raw = _cli("query", "refunds thirty days", "--index", index, "--json")
    hits = json.loads(raw)["hits"]
    assert any("\x1b]0;pwned\x07" in h["text"] for h in hits)
    _, raw = _cli("ingest", str(docs), "--index", index, "--json")
    assert any("evil\x1b[31m.txt" in f["path"] for f in json.loads(raw)["files"])


# -- bug 11: a distinct exit status when files failed -----------------------------------------------
def test_failed_files_give_exit_status_3_with_the_summary(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "good.md").write_text(TEXT)
    (docs / "bad.md").write_text("---\ntitle: [unclosed\n---\n\n" + TEXT)
    code, out = _cli("ingest", str(docs), "--index", str(tmp_path / "i.sqlite"))
    assert code == 3, out
    assert "files: 1 ingested, 1 failed" in out and "bad.md: front matter is not valid YAML" in out
    code, out = _cli("ingest", str(docs), "--index", str(tmp_path / "i.sqlite"), "--json")
    assert code == 3 and json.loads(out)["totals"]["files"]["failed"] == 1
    (docs / "bad.md").unlink()
    assert _cli("ingest", str(docs), "--index", str(tmp_path / "i.sqlite"))[0] == 0


# -- bug 7: no writable cache folder for numba ---------------------------------------------------
_NO_WRITABLE_FOLDER = """
import os, sys, tempfile
_real = tempfile.TemporaryFile
def _denied(*args, dir=None, **kwargs):
    # numba probes each candidate cache folder by creating a file in it: refuse them all, as a
    # read-only install does for a user whose HOME cannot be written
    if dir is not None:
        raise PermissionError(13, "Permission denied", dir)
    return _real(*args, **kwargs)
tempfile.TemporaryFile = _denied
"""


@pytest.mark.parametrize("command", ["help", "ingest"])
def test_no_writable_cache_folder_falls_back_to_no_cache(tmp_path: Path, command: str) -> None:
    import subprocess
    import sys

    home = tmp_path / "home"
    home.mkdir()
    os.chmod(home, 0o555)
    (tmp_path / "a.txt").write_text(TEXT + "Another sentence follows here for the shingles.\n")
    (tmp_path / "b.txt").write_text(TEXT + "Another sentence follows here for the shingle.\n")
    files = [str(tmp_path / "a.txt"), str(tmp_path / "b.txt")]
    argv = ["--help"] if command == "help" else ["ingest", *files, "--index", str(tmp_path / "i.sqlite")]
    script = _NO_WRITABLE_FOLDER + f"from chunkdedup.cli import main\nmain({argv!r})\n"
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["HOME"] = str(home)
    env.pop("XDG_CACHE_HOME", None)
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    if command == "ingest":
        assert "files: 2 ingested" in done.stdout


# -- bug 9: line-derived JSONL ids never meet explicit ids -----------------------------------------
def test_jsonl_line_ids_do_not_collide_with_explicit_ids(tmp_path: Path) -> None:
    lines = [json.dumps({"text": f"Record number {i} says something else each time."}) for i in range(1, 7)]
    lines.append(json.dumps({"id": 7, "text": "The record with the explicit id seven."}))
    lines.append(json.dumps({"id": "@8", "text": "An explicit id that looks like a line id."}))
    lines.append(json.dumps({"text": "The eighth line has no id, the ninth neither."}))
    (tmp_path / "recs.jsonl").write_text("\n".join(lines) + "\n")
    report = ingest([tmp_path / "recs.jsonl"], tmp_path / "i.sqlite")
    (result,) = report.files
    assert result.status == FileStatus.INGESTED, result.reason
    ids = set(result.doc_ids)
    assert len(ids) == 9
    assert {"recs.jsonl#7", "recs.jsonl#@1", "recs.jsonl#@@8", "recs.jsonl#@9"} <= ids


# -- bug 8: under `latest`, versions supersede within a family only -------------------------------
_CLAUSE = (
    "Refunds for annual plans are paid to the original payment method within {n} days of the written "
    "request, provided that the account is in good standing and the request names the order number, "
    "the date of purchase and the reason for the refund, as described in the billing terms of the service. "
    "A refund covers the unused part of the plan only; credits, coupons and promotional discounts that "
    "were applied to the order are not paid out in cash and expire with the plan itself. Taxes that were "
    "collected on the order are refunded in the same proportion as the price of the plan, and the "
    "receipt that the billing system sends for the refund is the only proof of payment we issue."
)


def _version(path: Path, family: str, date: str, days: int) -> None:
    path.write_text(f"---\nfamily: {family}\neffective_date: {date}\n---\n\n{_CLAUSE.format(n=days)}\n")


@pytest.mark.parametrize(
    ("families", "shown"),
    [
        (("alpha", "beta"), {"old.md", "new.md"}),  # two policies: each one's current text is shown
        (("alpha", "alpha"), {"new.md"}),  # two versions of one policy: the newer supersedes
    ],
)
def test_versions_supersede_within_a_family_only(
    tmp_path: Path, families: tuple[str, str], shown: set[str]
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    _version(docs / "old.md", families[0], "2024-01-01", 30)
    _version(docs / "new.md", families[1], "2025-01-01", 45)
    index = tmp_path / "i.sqlite"
    ingest([docs], index)
    with Index.open(index) as ix:
        assert ix.stats()["variant_pairs"] == 1  # the pair exists: the number/date guard kept it apart
        hits = ix.query("refunds annual plans original payment method", k=5, versions="latest")
    assert {c.doc for h in hits for c in h.citations} == shown


# -- bug 1 (parse and chunk side): one huge page is split, with a note ---------------------------
def test_a_page_over_the_limit_is_split_with_a_note(tmp_path: Path) -> None:
    paragraph = " ".join(f"Sentence {i} of the long page says a little more." for i in range(40))
    text = "\n\n".join(paragraph for _ in range(1200))  # one page of about 2.3 million characters
    (tmp_path / "book.txt").write_text(text)
    index = tmp_path / "i.sqlite"
    config = Config.from_dict({"parse": {"max_page_chars": 500_000}})
    report = ingest([tmp_path / "book.txt"], index, config=config)
    (result,) = report.files
    assert result.status == FileStatus.INGESTED
    assert "page 1 has 2,3" in (result.reason or "") and "split into pages 1-5" in (result.reason or "")
    with Index.open(index) as ix:
        pages = ix.store.documents.load_pages("book.txt")
    assert [len(p.text) <= 500_000 for p in pages] == [True] * 5
    assert "".join(p.text for p in pages) == text  # nothing lost or added at the cuts
    assert all(p.text.endswith("\n\n") for p in pages[:-1])  # cut at paragraph breaks


# -- frictions ---------------------------------------------------------------------------------------
def test_a_mistyped_where_key_is_named_with_the_known_ones(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("---\ndepartment: hr\nowner: ana\n---\n\n" + TEXT)
    index = str(tmp_path / "i.sqlite")
    ingest([tmp_path / "a.md"], index)
    code, out = _cli("query", "refunds", "--index", index, "--where", "departmnt=hr")
    assert code == 0 and "no hits" in out
    assert "departmnt are on no document" in out and "department" in out and "owner" in out
    _, out = _cli("query", "refunds", "--index", index, "--where", "department=legal")
    assert "no hits" in out and "on no document" not in out  # a known key with no match: no hint


def test_boilerplate_with_nothing_stripped_says_so(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text(TEXT)
    index = str(tmp_path / "i.sqlite")
    ingest([tmp_path / "a.md"], index)
    code, out = _cli("boilerplate", "--index", index)
    assert code == 0 and out.startswith("nothing stripped in ")


def test_help_examples_keep_their_lines() -> None:
    _, out = _cli("ingest", "--help")
    lines = [ln.strip() for ln in out.splitlines()]
    assert "--manifest ../shared/data/site-policy/manifest.jsonl" in lines  # not re-wrapped into one line


def test_a_guessed_encoding_is_noted_and_a_few_bad_bytes_keep_utf8(tmp_path: Path) -> None:
    (tmp_path / "mostly.txt").write_bytes("Naïve café résumé: déjà vu, élan. ".encode() * 20 + b"\xff end.")
    (tmp_path / "legacy.txt").write_bytes("Привет, мир. Это проверка кодировки файла.".encode("cp1251"))
    report = ingest([tmp_path / "mostly.txt", tmp_path / "legacy.txt"], tmp_path / "i.sqlite")
    files = {Path(f.path).name: f.reason or "" for f in report.files}
    assert "not valid UTF-8: replaced by U+FFFD" in files["mostly.txt"]
    assert "not UTF-8: decoded as " in files["legacy.txt"] and "(a guess" in files["legacy.txt"]
    with Index.open(tmp_path / "i.sqlite") as ix:
        assert ix.store.documents.load_pages("mostly.txt")[0].text.startswith("Naïve café résumé")


def test_an_embedder_mismatch_is_named_even_without_the_model_installed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from chunkdedup import embed

    (tmp_path / "a.md").write_text(TEXT)
    index = str(tmp_path / "i.sqlite")
    ingest(
        [tmp_path / "a.md"],
        index,
        embedder=embed.get_embedder("hash:16:0"),
        config=Config.from_dict({"semantic": {"enabled": True, "embedder": "hash:16:0"}}),
    )
    # as on a machine without the packaged model or a cached copy of it
    monkeypatch.setattr(embed, "_minilm_dir", lambda: None)
    monkeypatch.setattr(embed, "_in_hf_cache", lambda model_id: False)
    code, out = _cli("query", "refunds", "--index", index, "--retriever", "vector", "--embedder", "minilm")
    assert code == 1 and "embedded with hash:16:0" in out and "--reembed" in out, out
    assert "pip install" not in out


def test_help_of_a_command_loads_no_compiled_stack() -> None:
    import subprocess
    import sys

    script = (
        "import sys\n"
        "from chunkdedup.cli import main, EVALUATION_COMMANDS\n"
        "main(['ingest', '--help'], standalone_mode=False)\n"
        "print(sorted(m for m in ('numba', 'numpy', 'chunkdedup.ingestion.sequence') if m in sys.modules))\n"
        "from chunkdedup.cli_eval import COMMANDS\n"
        "print(sorted(c.name for c in COMMANDS) == sorted(EVALUATION_COMMANDS))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-2:] == ["[]", "True"], done.stdout


@pytest.mark.parametrize(("scores", "noted"), [((2.0, 3.0, 1.0), True), ((3.0, 2.0, 1.0), False)])
def test_ranks_out_of_score_order_are_explained(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scores: tuple[float, ...], noted: bool
) -> None:
    import chunkdedup.query as q
    from chunkdedup.query.records import Hit, QueryResult

    (tmp_path / "a.md").write_text(TEXT)
    index = str(tmp_path / "i.sqlite")
    ingest([tmp_path / "a.md"], index)
    hits = tuple(Hit(rank, score, f"c{rank}", TEXT, ()) for rank, score in enumerate(scores, start=1))
    monkeypatch.setattr(q, "search", lambda *args, **kwargs: QueryResult("refunds", hits))
    _, out = _cli("query", "refunds", "--index", index)
    assert ("ranked by MMR" in out) is noted, out


def test_audit_prints_questions_and_texts_escaped(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text(ESC_TEXT)
    index = str(tmp_path / "i.sqlite")
    ingest([tmp_path / "a.md"], index)
    asked = "refunds [/bold] thirty \x1b]0;x\x07 days"
    question = {"id": "q1", "question": asked, "relevant": [{"doc": "a.md"}]}
    (tmp_path / "q.jsonl").write_text(json.dumps(question) + "\n")
    code, out = _cli("audit", "--index", index, "--queries", str(tmp_path / "q.jsonl"), "-k", "3")
    assert code == 0, out
    assert "[/bold]" in out and "\x1b" not in out and "\x07" not in out


def test_eval_reports_progress_while_building_its_baseline(tmp_path: Path) -> None:
    from chunkdedup.evaluate import evaluate

    docs = _corpus(tmp_path / "docs", 3)
    index = tmp_path / "i.sqlite"
    ingest([docs], index)
    question = {"id": "q1", "question": "order refund days", "relevant": [{"doc": "doc001.md"}]}
    (tmp_path / "q.jsonl").write_text(json.dumps(question) + "\n")
    seen: list[tuple[str, int, int]] = []
    evaluate(tmp_path / "q.jsonl", index, k=3, progress=lambda *tick: seen.append(tick))
    stages = {stage for stage, _, _ in seen}
    assert {"baseline parse", "baseline chunk", "questions"} <= stages, stages
    assert ("questions", 1, 1) in seen


def test_a_delta_from_before_the_first_run_deletes_nothing(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text(TEXT)
    (docs / "b.md").write_text("Laptops must be encrypted and locked when they are left unattended.\n")
    index = str(tmp_path / "i.sqlite")
    ingest([docs], index)
    (docs / "b.md").unlink()
    ingest([docs], index, prune=True)  # b's chunk is made and removed after watermark 0
    _, out = _cli("export", "--index", index, "--changes-since", "0")
    ops = [json.loads(line)["op"] for line in out.splitlines()]
    assert ops == ["upsert"], out
    _, out = _cli("export", "--index", index, "--changes-since", "1")  # after run 1 the consumer has b
    assert [json.loads(line)["op"] for line in out.splitlines()] == ["delete"], out
