"""The command-line layer: help with examples, JSON output, exit codes, export and sync."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from chunkdedup.cli import main
from conftest import NTSB


def run(*args: str, ok: bool = True) -> str:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    if ok:
        assert result.exit_code == 0, result.output
    else:
        assert result.exit_code != 0, result.output
    return result.output


@pytest.mark.parametrize("name", sorted(main.list_commands(click.Context(main))))
def test_every_command_has_help_with_an_example(name: str) -> None:
    out = run(name, "--help")
    assert "Example:" in out and f"chunkdedup {name}" in out


def test_group_help_lists_every_command() -> None:
    out = run("--help")
    commands = out.split("Commands:\n", 1)[1].splitlines()
    listed = [line.split()[0] for line in commands if line.startswith("  ")]
    assert listed == sorted(main.list_commands(click.Context(main)))
    assert {"ingest", "stats", "show", "boilerplate", "remove", "export", "demo", "query"} <= set(listed)


def test_ingest_json_accounts_for_every_file_and_export_round_trips(tmp_path: Path) -> None:
    index = tmp_path / "ntsb.sqlite"
    out = json.loads(run("ingest", str(NTSB), "--index", str(index), "--json"))
    assert len(out["files"]) == 20
    assert {f["status"] for f in out["files"]} == {"ingested"}
    assert all(set(f) == {"path", "doc", "status", "reason"} for f in out["files"])
    assert out["totals"]["documents"] == 20 and out["totals"]["canonical_chunks"] > 0

    stats = json.loads(run("stats", "--index", str(index), "--json"))
    assert stats["canonical_chunks"] == out["totals"]["canonical_chunks"]
    plain = run("stats", "--index", str(index))  # for a person: no Python reprs, shares as percentages
    ls = stats["lines_stripped"]
    assert f"lines_stripped: running {ls['running']}, chrome {ls['chrome']}\n" in plain
    assert f"exact_share_removed: {stats['exact_share_removed']:.1%}\n" in plain
    assert "{" not in plain and "'" not in plain

    export = tmp_path / "chunks.jsonl"
    run("export", "--index", str(index), "--out", str(export))
    records = [json.loads(line) for line in export.read_text().splitlines()]
    assert len(records) == stats["canonical_chunks"]
    first = records[0]
    assert set(first) == {"id", "text", "sources"}
    assert set(first["sources"][0]) == {"doc", "page", "start", "end", "relation", "similarity", "metadata"}
    assert [r["id"] for r in records] == sorted(r["id"] for r in records)

    shown = run("show", first["id"], "--index", str(index))
    assert first["sources"][0]["doc"] in shown and first["text"][:30] in shown

    pq = pytest.importorskip("pyarrow.parquet")
    parquet = tmp_path / "chunks.parquet"
    run("export", "--index", str(index), "--format", "parquet", "--out", str(parquet))
    table = pq.read_table(parquet)
    assert table.num_rows == len(records)
    assert table.column("id").to_pylist() == [r["id"] for r in records]

    bp = run("boilerplate", "--index", str(index))
    assert "Page" in bp


def test_changes_since_exports_upserts_and_deletes(tmp_path: Path) -> None:
    corpus = tmp_path / "c"
    corpus.mkdir()
    (corpus / "a.txt").write_text("Alpha clause stays the same.\n\nAlpha second clause.", encoding="utf-8")
    (corpus / "b.txt").write_text("Bravo clause that will be removed soon.", encoding="utf-8")
    index = tmp_path / "i.sqlite"
    first = json.loads(run("ingest", str(corpus), "--index", str(index), "--json"))
    (corpus / "b.txt").unlink()
    (corpus / "c.txt").write_text("Charlie clause, newly added.", encoding="utf-8")
    run("ingest", str(corpus), "--index", str(index), "--prune", "--json")
    delta = [
        json.loads(line)
        for line in run("export", "--index", str(index), "--changes-since", str(first["run_id"])).splitlines()
    ]
    ops = {(d["op"], d.get("text", "")[:7]) for d in delta}
    assert ("upsert", "Charlie") in ops
    assert [d["op"] for d in delta].count("delete") == 1
    assert not any(d.get("text", "").startswith("Alpha") for d in delta)  # unchanged: not re-sent


def test_changes_since_after_an_edit_sends_only_what_the_edit_changed(tmp_path: Path) -> None:
    """An edited file is re-parsed and re-chunked whole; its unchanged chunks are not re-sent."""
    corpus = tmp_path / "c"
    corpus.mkdir()
    config = tmp_path / "small.toml"
    config.write_text("[chunk]\ntarget_words = 8\nparagraph_words = 5\n", encoding="utf-8")
    keep = "Alpha clause stays the same across the edit of this file."
    (corpus / "a.txt").write_text(f"{keep}\n\nBravo clause will be edited next.", encoding="utf-8")
    index = tmp_path / "i.sqlite"
    first = json.loads(run("ingest", str(corpus), "--index", str(index), "--config", str(config), "--json"))
    (corpus / "a.txt").write_text(f"{keep}\n\nBravo clause was edited in this version.", encoding="utf-8")
    run("ingest", str(corpus), "--index", str(index), "--config", str(config), "--json")
    out = run("export", "--index", str(index), "--changes-since", str(first["run_id"]))
    delta = [json.loads(line) for line in out.splitlines()]
    assert sorted((d["op"], d.get("text", "")[:5]) for d in delta) == [("delete", ""), ("upsert", "Bravo")]
    assert len(run("export", "--index", str(index)).splitlines()) == 2  # both chunks are in the index


def test_usage_errors_exit_non_zero_with_one_line(tmp_path: Path) -> None:
    bogus = tmp_path / "x.sqlite"
    bogus.write_text("not sqlite at all" * 100)
    out = run("stats", "--index", str(bogus), ok=False)
    assert "not a chunkdedup index" in out
    out = run("show", "nope", "--index", str(tmp_path / "missing.sqlite"), ok=False)
    assert "does not exist" in out
    bad_config = tmp_path / "c.toml"
    bad_config.write_text("[chunk]\ntarget_words = 0\n")
    out = run(
        "ingest", str(NTSB), "--index", str(tmp_path / "i.sqlite"), "--config", str(bad_config), ok=False
    )
    assert "chunk.target_words must be >= 1" in out


def test_remove_command(tmp_path: Path) -> None:
    index = tmp_path / "i.sqlite"
    run("ingest", str(NTSB), "--index", str(index))
    doc = sorted(p.name for p in NTSB.glob("*.pdf"))[0]
    out = run("remove", doc, "--index", str(index))
    assert "removed 1 document" in out
    stats = json.loads(run("stats", "--index", str(index), "--json"))
    assert stats["documents"] == 19
    assert "no such document" in run("remove", "nope.pdf", "--index", str(index), ok=False)


def test_demo_runs_the_main_job(tmp_path: Path) -> None:
    out = run("demo", str(tmp_path / "demo"))
    assert "36 documents" in out and "canonical" in out
    assert "CONFIDENTIAL" in out  # the footer is the top stripped block
    again = run("demo", str(tmp_path / "demo"))  # re-running rewrites the same corpus: all unchanged
    assert "36 unchanged" in again


def test_export_refuses_bad_deltas_and_bad_out_paths(tmp_path: Path) -> None:
    from chunkdedup.store import Store

    index = tmp_path / "i.sqlite"
    run("ingest", str(NTSB), "--index", str(index))
    assert "past the last finished run" in run(
        "export", "--index", str(index), "--changes-since", "9", ok=False
    )
    out = run("export", "--index", str(index), "--out", str(tmp_path / "missing" / "x.jsonl"), ok=False)
    assert "check that --out's folder exists" in out
    with Store.open(index) as holder, holder.writer():
        busy = run("export", "--index", str(index), "--changes-since", "1", ok=False)
    assert "is running" in busy
