"""evaluate() with its baseline, the report.json log, diff, audit and the CLI commands."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from chunkdedup import ingest
from chunkdedup.cli_eval import COMMANDS, audit_cmd, diff_cmd, eval_cmd, golden_group
from chunkdedup.evaluate import audit, diff_reports, ensure_baseline, evaluate
from chunkdedup.evaluate.baseline import corpus_fingerprint
from chunkdedup.index import Index

SHARED = ("All employees must follow the shared conduct rules described in this paragraph at every "
          "moment, in every office and every meeting, without exception of any kind.")
TOPICS = {
    "refunds": "Refunds are paid within 30 days of a written request to the billing team.",
    "travel": "Travel must be booked through the approved agency at least 14 days ahead.",
    "security": "Laptops must use full disk encryption and lock after 5 minutes idle.",
    "privacy": "Personal data is kept for 90 days after an account is closed, then deleted.",
    "hiring": "Candidates receive an answer within 10 business days of the final interview.",
    "expenses": "Expenses above 150 dollars need written approval from the finance team.",
}
#: SHARED stands in 3 of the 6 documents: fewer than boilerplate.min_units (5), so it is content that
#: exact dedup merges, not chrome that stripping removes
WITH_SHARED = ("refunds", "travel", "hiring")


@pytest.fixture()
def corpus(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in TOPICS.items():
        # a body of more than 100 words ends its chunk at the paragraph break, so SHARED is its own chunk
        body = " ".join([text] + [f"The {name} rule {i} applies to {name} cases." for i in range(16)])
        tail = f"\n\n{SHARED}\n" if name in WITH_SHARED else "\n"
        (docs / f"{name}.md").write_text(f"# {name.title()} policy\n\n{body}{tail}")
    return docs


@pytest.fixture()
def golden(tmp_path: Path) -> Path:
    p = tmp_path / "golden.jsonl"
    lines = [
        {"id": "r", "question": "when are refunds paid", "relevant": [{"doc": "refunds", "page": 1}],
         "answers": ["within 30 days"]},
        {"id": "t", "question": "how early must travel be booked", "relevant": [{"doc": "travel.md"}],
         "answers": ["14 days ahead"]},
        {"id": "c", "question": "shared conduct rules for employees", "relevant": [{"doc": "hiring"}]},
        {"id": "a", "question": "which rule applies to the cases", "relevant": [{"doc": "expenses"}]},
    ]
    p.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return p


def test_evaluate_builds_then_reuses_then_rebuilds_the_baseline(corpus: Path, golden: Path,
                                                                tmp_path: Path) -> None:
    index, base = tmp_path / "ix.sqlite", tmp_path / "base.sqlite"
    ingest([corpus], index)
    ev = evaluate(golden, index, baseline=base, k=3)
    assert ev.meta["baseline_status"].startswith("rebuilt (missing")
    with Index.open(base) as bx, Index.open(index) as ix:
        assert bx.stats()["raw_chunks"] == bx.stats()["canonical_chunks"]  # no dedup in the baseline
        assert ix.stats()["canonical_chunks"] < bx.stats()["canonical_chunks"]  # SHARED merged
        assert corpus_fingerprint(bx) == corpus_fingerprint(ix)
    assert ensure_baseline(index, base).rebuilt is False
    (corpus / "travel.md").write_text("# Travel policy\n\nTravel is booked 21 days ahead.\n")
    ingest([corpus], index)
    assert ensure_baseline(index, base).reason == "rebuilt (corpus fingerprint differs)"


def test_a_baseline_of_other_files_is_a_warning_in_every_output(
    corpus: Path, golden: Path, tmp_path: Path
) -> None:
    """Files edited after the ingest: the baseline is built from them, the index is not. `eval --json`
    said nothing of it (the note lived in meta.baseline_status only)."""
    from click.testing import CliRunner

    from chunkdedup.cli import main

    index = tmp_path / "ix.sqlite"
    ingest([corpus], index)
    (corpus / "travel.md").write_text("# Travel policy\n\nTravel is booked 21 days ahead.\n")
    ev = evaluate(golden, index, baseline=tmp_path / "b1.sqlite", k=2)
    assert any("see different corpora" in w for w in ev.meta["warnings"])
    out = CliRunner().invoke(main, ["eval", str(golden), "--index", str(index), "--baseline",
                                    str(tmp_path / "b2.sqlite"), "--json"])
    assert out.exit_code == 0, out.output
    assert "warning: the input files of index" in out.stderr and "see different corpora" in out.stderr
    json.loads(out.stdout)  # stdout stays the JSON summary alone


def test_evaluate_json_shape_and_per_result_log(corpus: Path, golden: Path, tmp_path: Path) -> None:
    index = tmp_path / "ix.sqlite"
    ingest([corpus], index)
    ev = evaluate(golden, index, k=2)
    summary = ev.summary_json()
    assert summary["k"] == 2 and set(summary["runs"]) == {"baseline", "ablation", "index"}
    for run in summary["runs"].values():
        for key in ("recall@2", "page_recall@2", "mrr", "ndcg@2", "distinct_sources@2", "answer_in_context@2",
                    "duplication_rate@2", "context_tokens@2", "recall@1", "recall@3", "recall@10"):
            assert key in run
    # the shared paragraph is 5 copies in the baseline: its question gets duplicates there only
    assert summary["runs"]["baseline"]["duplication_rate@2"] > summary["runs"]["index"]["duplication_rate@2"]
    data = json.loads(json.dumps(ev.to_json()))
    q = next(q for q in data["queries"] if q["id"] == "r")
    assert q["relevant"] == [{"doc": "refunds.md", "page": 1}]  # resolved from the stem
    for name in ("baseline", "ablation", "index"):
        row = q["results"][name][0]
        assert set(row) >= {"rank", "id", "doc", "page", "score"} and row["doc"] == "refunds.md"
        assert isinstance(row["score"], float)
    assert ev.figures["raw_chunks"] == 9 and ev.figures["after_exact"] == 7
    assert [s["stage"] for s in ev.figures["funnel"]][-1] == "after semantic"


def test_diff_reports_moves_entries_and_metrics(corpus: Path, golden: Path, tmp_path: Path) -> None:
    index = tmp_path / "ix.sqlite"
    ingest([corpus], index)
    a = json.loads(json.dumps(evaluate(golden, index, k=3).to_json()))
    b = json.loads(json.dumps(a))
    at = next(i for i, q in enumerate(b["queries"]) if q["id"] == "a")
    results = b["queries"][at]["results"]["index"]
    results[0], results[1] = {**results[1], "rank": 1}, {**results[0], "rank": 2, "score": 0.5}
    left = results.pop()
    results.append({"rank": 3, "id": "cnew", "doc": "new.md", "page": 1, "score": 0.1})
    b["runs"]["index"]["recall@3"] = 0.0
    d = diff_reports(a, b, "index")
    assert d["metrics"]["recall@3"]["delta"] == -a["runs"]["index"]["recall@3"]
    q = d["queries"][0]
    assert q["id"] == "a"
    assert {m["id"] for m in q["moved"]} == {results[0]["id"], results[1]["id"]}
    assert [r["id"] for r in q["entered"]] == ["cnew"] and [r["id"] for r in q["left"]] == [left["id"]]
    assert diff_reports(a, a)["queries"] == []


def test_audit_marks_duplicate_pairs(corpus: Path, tmp_path: Path) -> None:
    index = tmp_path / "ix.sqlite"
    ingest([corpus], index)
    result = audit(index, ["shared conduct rules for employees", "refunds"], k=5)
    assert result.pairs >= 1 and result.duplication_rate == 0.0  # the copies were merged
    cal = result.calibration
    assert cal["bins"] == 20 and len(cal["merged"]["histogram"]) == 20


def test_cli_eval_json_out_diff_and_audit(corpus: Path, golden: Path, tmp_path: Path) -> None:
    index, out = tmp_path / "ix.sqlite", tmp_path / "out"
    ingest([corpus], index)
    runner = CliRunner()
    args = [str(golden), "--index", str(index), "-k", "3", "--out", str(out), "--json"]
    res = runner.invoke(eval_cmd, args)
    assert res.exit_code == 0, res.output
    assert set(json.loads(res.output)) == {"k", "runs", "gains"}
    assert (out / "report.json").exists() and (out / "report.html").exists()
    res = runner.invoke(eval_cmd, [str(golden), "--index", str(index)])
    assert res.exit_code == 0 and "recall@5" in res.output
    res = runner.invoke(diff_cmd, [str(out / "report.json"), str(out / "report.json")])
    assert res.exit_code == 0 and "4 question(s) unchanged" in res.output
    res = runner.invoke(audit_cmd, ["--index", str(index), "--queries", str(golden), "-k", "4"])
    assert res.exit_code == 0 and "duplication rate" in res.output and "calibration" in res.output
    res = runner.invoke(eval_cmd, [str(tmp_path / "missing.jsonl"), "--index", str(index)])
    assert res.exit_code == 1 and "does not exist" in res.output


def test_cli_golden_convert(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "2023 Q3 NVDA.pdf").write_bytes(b"%PDF")
    csv = tmp_path / "q.csv"
    csv.write_text("Question,Source Docs,Answer\nNVDA?,*NVDA*,yes\n")
    res = CliRunner().invoke(golden_group, ["convert", str(csv), "--format", "docugami", "--docs", str(docs)])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["relevant"] == [{"doc": "2023 Q3 NVDA.pdf"}]


def _all(cmd: click.Command) -> list[tuple[str, click.Command]]:
    if isinstance(cmd, click.Group):
        return [(f"{cmd.name} {n}", c) for n, c in cmd.commands.items()] + [(str(cmd.name), cmd)]
    return [(str(cmd.name), cmd)]


@pytest.mark.parametrize("name,cmd", [x for c in COMMANDS for x in _all(c)])
def test_every_command_has_help_with_an_example(name: str, cmd: click.Command) -> None:
    res = CliRunner().invoke(cmd, ["--help"])
    assert res.exit_code == 0
    assert "Example:" in res.output and f"chunkdedup {name}" in res.output
