"""Golden-set evaluation before and after dedup on ``../shared/data/site-policy`` (with its manifest),
using the hand-made golden set ``benchmarks/golden/site-policy.jsonl`` (see benchmarks/README.md):
ingest, evaluate the index against its baseline, print the before/after table, write the JSON summary
and the HTML report.

Example:
    python benchmarks/eval_policy.py -k 5 --out benchmarks/results/eval_policy
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from chunkdedup.evaluate import load_golden
from eval_sec10q import DATA, REPO, run_eval


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, default=DATA / "site-policy", help="the site-policy folder")
    parser.add_argument("--golden", type=Path, default=REPO / "benchmarks" / "golden" / "site-policy.jsonl")
    parser.add_argument("-k", type=int, default=5)
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "eval_policy")
    parser.add_argument("--work", type=Path, help="keep the index and baseline here (default: a temp dir)")
    args = parser.parse_args(argv)
    run_eval(
        "site-policy",
        [args.data],
        load_golden(args.golden),
        args.out,
        k=args.k,
        manifest=args.data / "manifest.jsonl",
        work=args.work,
    )


if __name__ == "__main__":
    main()
