"""Golden-set evaluation before and after dedup on ``../shared/data/sec-10q``: ingest the 20 filings
twice, with their manifest (company, ticker, form, fiscal year and quarter) and without it (file names
and stripped running lines only), convert docugami's 195 questions (``qna_data.csv``, read in place),
evaluate each index against its baseline (no stripping, no dedup, no safety net, all versions, chunk
text alone) and its ablation (the baseline's chunks ranked as the index ranks), print the table of the
three runs with what ranking and what cleaning each gave, the lever table (each retrieval lever added
in turn, on the same index), and write the JSON summary and the HTML report.

Example:
    python benchmarks/eval_sec10q.py -k 5 --out benchmarks/results/eval_sec10q
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from chunkdedup import ingest
from chunkdedup.config import QueryConfig
from chunkdedup.evaluate import (
    DocResolver,
    Evaluation,
    Question,
    convert_docugami,
    ensure_baseline,
    evaluate,
    load_golden,
)
from chunkdedup.evaluate.metrics import PairSimilarity
from chunkdedup.index import Index
from chunkdedup.report import write_report
from chunkdedup.report.table import comparison_columns, comparison_rows, funnel_rows
from sweep_query import evaluate_setting

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"
#: the lever table's columns (a column no row has a value in is left out)
LEVER_COLUMNS = (
    "recall@5", "page_recall@5", "mrr", "ndcg@5", "evidence_answer@5", "answer_in_context@5",
    "duplication_rate@5",
)
#: the three-run summary's columns, at k
HEADLINE = ("recall", "page_recall", "ndcg", "mrr", "evidence_answer", "answer_in_context")
#: the text-only retrieval of the previous release, with its safety net (cap 2 per document, MMR 0.5)
BEFORE = QueryConfig(context_weight=0.0, word_parts=False, cap_per_doc=2, mmr_lambda=0.5)


def levers(shipped: QueryConfig) -> list[tuple[str, QueryConfig]]:
    """Each retrieval lever added in turn to the previous release's settings, then the shipped net."""
    parts = replace(BEFORE, word_parts=True)
    context = replace(parts, context_weight=shipped.context_weight, context_docs=shipped.context_docs)
    return [
        ("dedup index, text only, cap 2 + MMR 0.5 (before)", BEFORE),
        ("+ letter-digit parts (FY2018 -> 2018)", parts),
        (f"+ document context (weight {shipped.context_weight:g})", context),
        ("  net: no cap, MMR 0.5", replace(context, cap_per_doc=0, mmr_lambda=0.5)),
        ("  net: no cap, MMR 0.7", replace(context, cap_per_doc=0, mmr_lambda=0.7)),
        ("  net: no cap, MMR 0.9", replace(context, cap_per_doc=0, mmr_lambda=0.9)),
        ("  net: cap 3, MMR 0.7", replace(context, cap_per_doc=3, mmr_lambda=0.7)),
        ("  net off", replace(context, safety_net=False)),
        (f"shipped defaults (cap {shipped.cap_per_doc or 'none'}, MMR {shipped.mmr_lambda:g})", shipped),
    ]


def lever_rows(
    index: Path, questions: list[Question], baseline: dict[str, Any], k: int
) -> list[dict[str, Any]]:
    """The lever table on one index: the no-dedup baseline first (from ``evaluate``), then each lever."""
    rows = [{"lever": "baseline index: no strip, no dedup, no net, text only", "metrics": baseline}]
    similarity = PairSimilarity()
    with Index.open(index) as ix:
        resolved = DocResolver(d["doc"] for d in ix.documents()).questions(questions)
        for name, cfg in levers(QueryConfig()):
            metrics, _ = evaluate_setting(ix, resolved, cfg, k, sorted({1, 3, k, 10}), similarity)
            rows.append({"lever": name, "config": asdict(cfg), "metrics": metrics})
    return rows


def print_levers(console: Console, title: str, rows: list[dict[str, Any]]) -> None:
    columns = [c for c in LEVER_COLUMNS if any(row["metrics"].get(c) is not None for row in rows)]
    table = Table("lever", *columns, title=title)
    for row in rows:
        m = row["metrics"]
        table.add_row(row["lever"], *("-" if m.get(c) is None else f"{m[c]:.3f}" for c in columns))
    console.print(table)


def print_headline(console: Console, title: str, ev: Evaluation) -> None:
    """The three runs and what ranking and cleaning gave, on the headline metrics at k."""
    names = [m if m == "mrr" else f"{m}@{ev.k}" for m in HEADLINE]
    names = [n for n in names if any(run.get(n) is not None for run in ev.runs.values())]
    table = Table("run", *names, title=title)
    for run, values in [*ev.runs.items(), *ev.gains.items()]:
        sign = "+" if run in ev.gains else ""
        table.add_row(run, *("-" if values.get(n) is None else f"{values[n]:{sign}.3f}" for n in names))
    console.print(table)


def run_eval(
    name: str,
    paths: Sequence[Path],
    questions: list[Question],
    out: Path,
    *,
    k: int,
    manifest: Path | None = None,
    work: Path | None = None,
) -> dict[str, Any]:
    """Ingest ``paths`` (in ``work`` or a temp dir), evaluate, print tables, write report and summary."""
    out.mkdir(parents=True, exist_ok=True)
    golden = out / "golden.jsonl"
    golden.write_text(
        "".join(json.dumps(q.to_json(), ensure_ascii=False) + "\n" for q in questions), encoding="utf-8"
    )
    with tempfile.TemporaryDirectory(prefix=f"eval-{name}-") as tmp:
        folder = work or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        index = folder / f"{name}.sqlite"
        baseline = folder / f"{name}.baseline.sqlite"
        t0 = time.perf_counter()
        ingest(list(paths), index, manifest=manifest)
        t1 = time.perf_counter()
        ensure_baseline(index, baseline)
        t2 = time.perf_counter()
        ev = evaluate(golden, index, baseline=baseline, k=k)
        t3 = time.perf_counter()
        rows = lever_rows(index, questions, ev.runs["baseline"], k)
    data = ev.to_json()
    write_report(data, out)
    summary = {
        "corpus": name,
        "machine": {"platform": platform.platform(), "python": platform.python_version()},
        "questions": len(questions),
        "ingest_seconds": round(t1 - t0, 2),
        "baseline_build_seconds": round(t2 - t1, 2),
        "eval_seconds (three runs, baseline reused)": round(t3 - t2, 2),
        **ev.summary_json(),
        "figures": {key: v for key, v in ev.figures.items() if key not in ("boilerplate", "clusters")},
        "warnings": ev.meta.get("warnings", []),
        "levers": rows,
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    console = Console(highlight=False)
    console.width = max(console.width, 150)  # the lever table's names and seven columns, uncut
    table = Table(*comparison_columns(ev.runs), title=f"{name}: {len(questions)} questions, k = {k}")
    for row in comparison_rows(ev.runs, ev.meta["ks"]):
        table.add_row(*row)
    console.print(table)
    print_headline(console, f"{name}: baseline, ablation (ranking alone), index; k = {k}", ev)
    funnel = Table("stage", "chunks", "of raw", title=f"{name}: funnel")
    for f in funnel_rows(ev.figures):
        funnel.add_row(*f)
    console.print(funnel)
    idx = ev.runs["index"]
    console.print(
        f"answer_in_context uses {idx.get('answer_in_context_questions')} question(s); "
        f"page_recall uses {idx.get('page_recall_questions')}"
    )
    print_levers(console, f"{name}: each lever in turn, one index, k = {k}", rows)
    console.print(f"eval: {summary['eval_seconds (three runs, baseline reused)']} s "
                  f"(baseline build {summary['baseline_build_seconds']} s)")
    for warning in summary["warnings"]:
        console.print(f"warning: {warning}")
    console.print(f"wrote {out / 'summary.json'}, {out / 'report.json'}, {out / 'report.html'}")
    return summary


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, default=DATA / "sec-10q", help="the sec-10q folder")
    parser.add_argument("--golden", type=Path, help="a golden JSONL instead of converting qna_data.csv")
    parser.add_argument("-k", type=int, default=5)
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "eval_sec10q")
    parser.add_argument("--work", type=Path, help="keep the index and baseline here (default: a temp dir)")
    parser.add_argument("--only", choices=["manifest", "no-manifest"], help="run one of the two ingests")
    args = parser.parse_args(argv)
    docs = args.data / "docs"
    questions = (
        load_golden(args.golden) if args.golden else convert_docugami(args.data / "qna_data.csv", docs)
    )
    if args.only != "no-manifest":
        run_eval("sec10q-manifest", [docs], questions, args.out / "manifest", k=args.k, work=args.work,
                 manifest=args.data / "manifest.jsonl")
    if args.only != "manifest":
        run_eval("sec10q", [docs], questions, args.out / "no-manifest", k=args.k, work=args.work)


if __name__ == "__main__":
    main()
