"""The conventions people expect of a CLI and a library: a quiet ``chunkdedup`` logger and ``-v``,
``--json`` on every command, the documented exit statuses, a prune that says what it removed, and
the packaging (the demo's PDF writer an extra, torch a range)."""

from __future__ import annotations

import json
import logging
import socket
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner, Result

from chunkdedup.cli import main

REPO = Path(__file__).resolve().parents[1]


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def ok(*args: str) -> Result:
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    return result


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """Three small text files, each its own document."""
    folder = tmp_path / "corpus"
    folder.mkdir()
    for n, topic in enumerate(("refunds", "shipping", "warranty"), start=1):
        (folder / f"f{n}.txt").write_text(
            f"Policy {n} explains how {topic} work for every customer.\n\n"
            f"Section {n}.2 says {topic} are handled within {n * 10} days of the request.",
            encoding="utf-8",
        )
    return folder


@pytest.fixture
def index(corpus: Path, tmp_path: Path) -> Path:
    path = tmp_path / "corpus.sqlite"
    ok("ingest", str(corpus), "--index", str(path), "--json")
    return path


# -- 1. the chunkdedup logger ---------------------------------------------------------------------


@pytest.fixture
def package_logger() -> Iterator[logging.Logger]:
    """The ``chunkdedup`` logger, its level and handlers restored after the test."""
    logger = logging.getLogger("chunkdedup")
    level, handlers = logger.level, list(logger.handlers)
    yield logger
    logger.setLevel(level)
    logger.handlers[:] = handlers


def test_verbose_logs_the_phases_on_stderr_and_json_stays_clean(
    corpus: Path, tmp_path: Path, package_logger: logging.Logger
) -> None:
    level = package_logger.level
    result = ok("-v", "ingest", str(corpus), "--index", str(tmp_path / "i.sqlite"), "--json")
    report = json.loads(result.stdout)  # nothing but the JSON object on stdout
    assert report["totals"]["files"]["ingested"] == 3
    err = result.stderr
    assert "INFO chunkdedup.ingestion.sequence: ingest into" in err and "starts: 3 input files" in err
    for phase in ("parse", "boilerplate", "chunk", "cluster"):
        assert f"{phase} phase done in " in err
    assert "done in" in err and "files 3 ingested" in err and "DEBUG" not in err
    # the handler -v attached is gone with the command: nothing leaks into the next one
    assert all(isinstance(h, logging.NullHandler) for h in package_logger.handlers)
    assert package_logger.level == level


def test_vv_adds_debug_and_log_level_picks_a_level(
    corpus: Path, tmp_path: Path, package_logger: logging.Logger
) -> None:
    index = str(tmp_path / "i.sqlite")
    debug = ok("-vv", "ingest", str(corpus), "--index", index, "--json")
    assert "DEBUG chunkdedup.ingestion.sequence: parse phase starts" in debug.stderr
    json.loads(debug.stdout)
    quiet = ok("--log-level", "warning", "ingest", str(corpus), "--index", index, "--json")
    assert quiet.stderr == ""  # nothing worth a warning in an unchanged run
    assert invoke("--log-level", "LOUD", "stats", "--index", index).exit_code == 2


def test_without_verbose_nothing_is_logged(corpus: Path, tmp_path: Path) -> None:
    result = ok("ingest", str(corpus), "--index", str(tmp_path / "i.sqlite"), "--json")
    assert result.stderr == ""
    json.loads(result.stdout)


def test_the_library_is_quiet_until_its_user_sets_a_level(
    corpus: Path, tmp_path: Path, package_logger: logging.Logger, caplog: pytest.LogCaptureFixture
) -> None:
    from chunkdedup import ingest

    assert any(isinstance(h, logging.NullHandler) for h in package_logger.handlers)
    caplog.set_level(logging.NOTSET)  # the capturing handler takes everything the loggers pass on
    package_logger.setLevel(logging.WARNING)
    ingest([corpus], tmp_path / "quiet.sqlite")
    assert [r for r in caplog.records if r.name.startswith("chunkdedup")] == []
    package_logger.setLevel(logging.INFO)
    ingest([corpus], tmp_path / "told.sqlite")
    said = [r for r in caplog.records if r.name.startswith("chunkdedup")]
    assert said and {r.levelno for r in said} == {logging.INFO}
    assert any("chunk phase done in" in r.getMessage() for r in said)


# -- 2. --json on every command -------------------------------------------------------------------

#: commands without --json, and why: a group only dispatches to its subcommands (each has --json)
NO_JSON = {"golden": "a group: `golden convert` has --json"}


def _commands(group: click.Group, prefix: str = "") -> list[tuple[str, click.Command]]:
    ctx = click.Context(group)
    out: list[tuple[str, click.Command]] = []
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        assert cmd is not None
        out.append((f"{prefix}{name}", cmd))
        if isinstance(cmd, click.Group):
            out += _commands(cmd, f"{prefix}{name} ")
    return out


COMMANDS = _commands(main)


def test_the_walk_finds_the_subcommands() -> None:
    names = [name for name, _ in COMMANDS]
    assert {"export", "remove", "check", "vector-index", "golden", "golden convert", "serve"} <= set(names)


@pytest.mark.parametrize("name,cmd", COMMANDS, ids=[name for name, _ in COMMANDS])
def test_every_command_has_json_and_an_example(name: str, cmd: click.Command) -> None:
    help_text = ok(*name.split(), "--help").output
    assert "Example" in help_text and f"chunkdedup {name}" in help_text
    opts = {opt for param in cmd.params for opt in param.opts}
    if name in NO_JSON:
        assert isinstance(cmd, click.Group) and "--json" not in opts
    else:
        assert "--json" in opts and "--json" in help_text


def test_export_json_names_the_file_and_the_records(index: Path, tmp_path: Path) -> None:
    out = tmp_path / "chunks.jsonl"
    done = json.loads(ok("export", "--index", str(index), "--out", str(out), "--json").stdout)
    lines = out.read_text(encoding="utf-8").splitlines()
    assert done["path"] == str(out) and done["format"] == "jsonl"
    assert done["records"] == done["upserts"] == len(lines) > 0 and done["deletes"] == 0
    # to stdout the records are the output: --json there is a usage error, and nothing is written
    refused = invoke("export", "--index", str(index), "--json")
    assert refused.exit_code == 2 and "--json needs --out" in refused.output and refused.stdout == ""


def test_remove_json(index: Path) -> None:
    done = json.loads(ok("remove", "f2.txt", "--index", str(index), "--json").stdout)
    assert done["removed"] == ["f2.txt"] and done["canonicals_touched"] >= 1
    assert set(done) == {"removed", "canonicals_touched", "documents_rechunked"}


def test_check_json(index: Path) -> None:
    done = json.loads(ok("check", "--index", str(index), "--json").stdout)
    assert done == {"index": str(index), "ok": True, "pragma": "quick_check", "found": ["ok"]}


def test_vector_index_json(corpus: Path, tmp_path: Path) -> None:
    pytest.importorskip("usearch")
    index = tmp_path / "embedded.sqlite"
    ok("ingest", str(corpus), "--index", str(index), "--embedder", "hash", "--json")
    done = json.loads(ok("vector-index", "--index", str(index), "--json").stdout)
    assert done["built"] is True and done["count"] > 0


def test_golden_convert_json(tmp_path: Path) -> None:
    docs = tmp_path / "pdfs"
    docs.mkdir()
    (docs / "2023 Q3 NVDA.pdf").write_bytes(b"%PDF")
    csv = tmp_path / "q.csv"
    csv.write_text("Question,Source Docs,Answer\nNVDA?,*NVDA*,yes\n", encoding="utf-8")
    out = tmp_path / "golden.jsonl"
    args = ["golden", "convert", str(csv), "--docs", str(docs)]
    done = json.loads(ok(*args, "--out", str(out), "--json").stdout)
    assert done == {"path": str(out), "format": "docugami", "questions": 1}
    assert len(out.read_text(encoding="utf-8").splitlines()) == 1
    refused = invoke(*args, "--json")
    assert refused.exit_code == 2 and "--json needs --out" in refused.output


@pytest.fixture
def no_server(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """``uvicorn.run`` replaced by a recorder: no test starts a server."""
    uvicorn = pytest.importorskip("uvicorn")
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: calls.append(kw))
    return calls


def test_serve_json_announces_the_server(index: Path, no_server: list[dict[str, Any]]) -> None:
    with socket.socket() as probe:  # a port free now
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    announced = json.loads(ok("serve", "--index", str(index), "--port", str(port), "--json").stdout)
    assert announced == {"url": f"http://127.0.0.1:{port}/", "index": str(index), "host": "127.0.0.1",
                         "port": port, "loopback": True}
    assert no_server == [{"host": "127.0.0.1", "port": port, "log_level": "warning"}]


# -- 3. exit statuses -----------------------------------------------------------------------------


def test_a_bad_embeddings_value_is_a_usage_error(index: Path, tmp_path: Path) -> None:
    pytest.importorskip("langchain_core")
    args = ["sync", "--index", str(index), "--store", "memory", "--path", str(tmp_path / "s.json")]
    for bad in ("nowhere", "fake:zero", "no_such_module_here:Embeddings"):
        result = invoke(*args, "--embeddings", bad)
        assert result.exit_code == 2, (bad, result.output)
        assert "Invalid value for '--embeddings'" in result.output and "Traceback" not in result.output


def test_serve_on_a_busy_port_is_one_line_before_any_announcement(
    index: Path, no_server: list[dict[str, Any]]
) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = invoke("serve", "--index", str(index), "--port", str(port))
    assert result.exit_code == 1, result.output
    assert result.output == f"Error: port {port} is in use: pick another with --port\n"
    assert no_server == []  # never started


# -- 4. --prune reports what it removed -----------------------------------------------------------


def test_prune_counts_the_removed_file_and_its_documents(corpus: Path, index: Path) -> None:
    (corpus / "f2.txt").unlink()
    report = json.loads(ok("ingest", str(corpus), "--index", str(index), "--prune", "--json").stdout)
    totals = report["totals"]
    assert totals["files"] == {"ingested": 0, "unchanged": 2, "skipped": 0, "failed": 0, "removed": 1}
    assert totals["documents_removed"] == 1 and totals["documents"] == 2
    assert report["removed"] == [{"path": str((corpus / "f2.txt").resolve()), "doc": "f2.txt"}]

    (corpus / "f3.txt").unlink()
    shown = ok("ingest", str(corpus), "--index", str(index), "--prune").stdout
    assert "files: 1 unchanged, 1 removed\n" in shown and "removed: 1" in shown.split("documents:")[1]
    again = json.loads(ok("ingest", str(corpus), "--index", str(index), "--prune", "--json").stdout)
    assert again["totals"]["files"]["removed"] == 0 and again["removed"] == []


# -- 5. packaging ---------------------------------------------------------------------------------


def test_demo_without_fpdf2_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "fpdf", None)  # `import fpdf` fails as if fpdf2 were not installed
    result = invoke("demo", str(tmp_path / "demo"))
    assert result.exit_code == 1, result.output
    assert "pip install 'chunkdedup[demo]'" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "demo").exists()  # refused before anything is written


def test_fpdf2_is_the_demo_extra_and_torch_a_range() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert not any(d.startswith("fpdf2") for d in project["dependencies"])
    extras = project["optional-dependencies"]
    assert any(d.startswith("fpdf2") for d in extras["demo"])
    for extra in ("embed", "static"):
        torch = [d for d in extras[extra] if d.startswith("torch")]
        assert torch == ["torch>=2.4,<3"], extra


def test_the_readme_and_ci_install_the_demo_extra_identically() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    command = next(line for line in ci.splitlines() if line.startswith("python3 -m venv"))
    assert "pip install -q -e '.[test,embed,ray,tantivy,demo]'" in command
    assert f"\n{command}\n" in readme
    assert "pip install -e '.[demo]' && chunkdedup demo /tmp/chunkdedup-demo" in readme
