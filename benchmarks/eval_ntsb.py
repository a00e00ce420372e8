"""Golden-set evaluation on ``../shared/data/ntsb`` (20 NTSB aviation accident reports, no manifest):
the hand-made golden set ``benchmarks/golden/ntsb.jsonl`` (questions naming the accident, each with
its evidence page and an answer copied from it; see benchmarks/README.md). Ingest, evaluate the
index against its baseline and ablation, print the tables (page recall and evidence-backed answers
for the three runs first), write the JSON summary and the HTML report.

Example:
    python benchmarks/eval_ntsb.py -k 5 --out benchmarks/results/eval_ntsb
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from chunkdedup.evaluate import load_golden
from eval_sec10q import DATA, REPO, run_eval


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, default=DATA / "ntsb" / "docs", help="the ntsb reports folder")
    parser.add_argument("--golden", type=Path, default=REPO / "benchmarks" / "golden" / "ntsb.jsonl")
    parser.add_argument("-k", type=int, default=5)
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "eval_ntsb")
    parser.add_argument("--work", type=Path, help="keep the index and baseline here (default: a temp dir)")
    args = parser.parse_args(argv)
    run_eval("ntsb", [args.data], load_golden(args.golden), args.out, k=args.k, work=args.work)


if __name__ == "__main__":
    main()
