"""Golden-set evaluation on a documentation site: the Node.js API docs a Debian ``nodejs`` install
puts in ``/usr/share/doc/nodejs/api`` (one HTML page per module; ``all.html``, every page
concatenated, is left out), with the hand-made golden set ``benchmarks/golden/nodejs.jsonl``
(short code-intent questions, each with the API page(s) a developer needs and an answer copied from
them; see benchmarks/README.md). Copy the pages into a work folder, ingest, evaluate the index
against its baseline and ablation, print the tables (the three runs, then each retrieval lever in
turn), write the JSON summary and the HTML report. ``--levers`` also measures each ``[query]``
ranking lever against the shipped defaults on the same index (``sweep_query.py --levers``'s grid,
with document context off and the net off) and writes them to ``levers.json``.

Example:
    python benchmarks/eval_nodejs.py -k 5 --levers --out benchmarks/results/eval_nodejs
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.table import Table

from chunkdedup.config import QueryConfig
from chunkdedup.evaluate import DocResolver, Question, load_golden
from chunkdedup.evaluate.metrics import PairSimilarity
from chunkdedup.index import Index
from eval_sec10q import REPO, run_eval
from sweep_query import LEVER_COLUMNS, evaluate_levers, lever_grid

#: where Debian's nodejs package installs the HTML API docs
NODE_DOCS = Path("/usr/share/doc/nodejs/api")
#: every page in one: the same text as all the others, not a page of the site
CONCATENATED = "all.html"


def copy_pages(source: Path, folder: Path) -> int:
    """Copy the site's HTML pages (without ``all.html``) into ``folder``; return how many."""
    folder.mkdir(parents=True, exist_ok=True)
    pages = sorted(p for p in source.glob("*.html") if p.name != CONCATENATED)
    if not pages:
        raise SystemExit(f"no HTML pages in {source}: install the Debian nodejs docs or pass --data")
    for page in pages:
        shutil.copyfile(page, folder / page.name)
    return len(pages)


def lever_table(index: Path, questions: list[Question], k: int, out: Path) -> None:
    """Each ranking lever against the shipped ``[query]`` defaults on ``index``; print and write them."""
    shipped = QueryConfig()
    grid = [
        *lever_grid(shipped),
        ("document context off (context_weight 0)", dataclasses.replace(shipped, context_weight=0.0)),
        ("net off", dataclasses.replace(shipped, safety_net=False)),
    ]
    rows = []
    similarity = PairSimilarity()
    with Index.open(index) as ix:
        resolved = DocResolver(d["doc"] for d in ix.documents()).questions(questions)
        for name, cfg in grid:
            metrics = evaluate_levers(ix, resolved, cfg, k, sorted({1, 3, k, 10}), similarity)
            rows.append({"setting": name, "config": dataclasses.asdict(cfg), "metrics": metrics})
    columns = [c for c in LEVER_COLUMNS if any(r["metrics"].get(c) is not None for r in rows)]
    table = Table("setting", *columns, title=f"nodejs: ranking levers, k = {k}")
    for r in rows:
        table.add_row(r["setting"], *("-" if r["metrics"].get(c) is None else f"{r['metrics'][c]:.3f}"
                                      for c in columns))
    console = Console(highlight=False)
    console.width = max(console.width, 150)
    console.print(table)
    (out / "levers.json").write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    console.print(f"wrote {out / 'levers.json'}")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, default=NODE_DOCS, help="the folder of the API's HTML pages")
    parser.add_argument("--golden", type=Path, default=REPO / "benchmarks" / "golden" / "nodejs.jsonl")
    parser.add_argument("-k", type=int, default=5)
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "eval_nodejs")
    parser.add_argument("--work", type=Path, help="keep the pages, index and baseline here (default: temp)")
    parser.add_argument("--levers", action="store_true", help="also measure each [query] ranking lever")
    args = parser.parse_args(argv)
    questions = load_golden(args.golden)
    with tempfile.TemporaryDirectory(prefix="eval-nodejs-") as tmp:
        work = args.work or Path(tmp)
        pages = work / "api"
        print(f"copied {copy_pages(args.data, pages)} pages from {args.data} to {pages}")
        run_eval("nodejs", [pages], questions, args.out, k=args.k, work=work)
        if args.levers:
            lever_table(work / "nodejs.sqlite", questions, args.k, args.out)


if __name__ == "__main__":
    main()
