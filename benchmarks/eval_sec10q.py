"""Golden-set evaluation before and after dedup on ``../shared/data/sec-10q``: ingest the 20 filings,
convert docugami's 195 questions (``qna_data.csv``, read in place), evaluate the index against its
baseline (no stripping, no dedup, no safety net, all versions), print the before/after table and write
the JSON summary and the HTML report.

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
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from chunkdedup import ingest
from chunkdedup.evaluate import Question, convert_docugami, evaluate, load_golden
from chunkdedup.report import write_report
from chunkdedup.report.table import comparison_rows, funnel_rows

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"


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
        t0 = time.perf_counter()
        ingest(list(paths), index, manifest=manifest)
        t1 = time.perf_counter()
        ev = evaluate(golden, index, baseline=folder / f"{name}.baseline.sqlite", k=k)
        t2 = time.perf_counter()
    data = ev.to_json()
    write_report(data, out)
    summary = {
        "corpus": name,
        "machine": {"platform": platform.platform(), "python": platform.python_version()},
        "questions": len(questions),
        "ingest_seconds": round(t1 - t0, 2),
        "eval_seconds (baseline build + both runs)": round(t2 - t1, 2),
        **ev.summary_json(),
        "figures": {key: v for key, v in ev.figures.items() if key not in ("boilerplate", "clusters")},
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    console = Console(highlight=False)
    table = Table(
        "metric", "baseline", "index", "change", title=f"{name}: {len(questions)} questions, k = {k}"
    )
    for row in comparison_rows(ev.runs, ev.meta["ks"]):
        table.add_row(*row)
    console.print(table)
    funnel = Table("stage", "chunks", "of raw", title=f"{name}: funnel")
    for f in funnel_rows(ev.figures):
        funnel.add_row(*f)
    console.print(funnel)
    idx = ev.runs["index"]
    console.print(
        f"answer_in_context uses {idx.get('answer_in_context_questions')} question(s); "
        f"page_recall uses {idx.get('page_recall_questions')}"
    )
    console.print(f"wrote {out / 'summary.json'}, {out / 'report.json'}, {out / 'report.html'}")
    return summary


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, default=DATA / "sec-10q", help="the sec-10q folder")
    parser.add_argument("--golden", type=Path, help="a golden JSONL instead of converting qna_data.csv")
    parser.add_argument("-k", type=int, default=5)
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "eval_sec10q")
    parser.add_argument("--work", type=Path, help="keep the index and baseline here (default: a temp dir)")
    args = parser.parse_args(argv)
    docs = args.data / "docs"
    questions = (
        load_golden(args.golden) if args.golden else convert_docugami(args.data / "qna_data.csv", docs)
    )
    run_eval("sec10q", [docs], questions, args.out, k=args.k, work=args.work)


if __name__ == "__main__":
    main()
