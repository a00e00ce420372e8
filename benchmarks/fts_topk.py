"""FTS5's exact top k (``chunkdedup.store.topk``) against the full query: same results, and latency.

Every question is asked at every limit twice in one process, interleaved: once with the full query
(``Fts5Retriever(split=None)``) and once with the default (the top-k path when it applies). The
results (ids, order, float scores) must be identical; the script counts the questions the top-k path
answered and prints p50/p95/max of each. ``--search`` also times the whole unfiltered ``search()``
(the ``chunkdedup query`` path), the path turned off by replacing ``top_groups`` with a None answer,
and compares the two results as JSON.

The index is opened read-only. Questions: ``query_filters.py``'s (2-4 words of the first groups'
texts, seeded), or one a line from ``--question-file`` (a CSV's first column with ``--csv``).

Example:
    python benchmarks/fts_topk.py --index /tmp/m3.sqlite --questions 50 --limits 5,40,320,2560,20000
    python benchmarks/fts_topk.py --index /tmp/m3.sqlite --questions 50 --search
    python benchmarks/fts_topk.py --index sec.sqlite --csv ../shared/data/sec-10q/qna_data.csv --loose 0.2
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import time
from pathlib import Path
from typing import Any

from chunkdedup import Index
from chunkdedup.query import search
from chunkdedup.query.retrieve import Fts5Retriever, content_terms
from chunkdedup.store import topk
from query_filters import questions


def _figures(xs: list[float]) -> str:
    xs = sorted(xs)
    p95 = xs[min(len(xs) - 1, int(0.95 * (len(xs) - 1) + 0.5))]
    return f"p50 {statistics.median(xs) * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms, max {xs[-1] * 1000:.0f} ms"


def _questions(args: argparse.Namespace) -> list[str]:
    if args.csv:
        with open(args.csv, encoding="utf-8-sig", newline="") as f:
            return [row[0].replace("\n", " ") for row in list(csv.reader(f))[1:]][: args.questions]
    if args.question_file:
        lines = Path(args.question_file).read_text(encoding="utf-8").splitlines()
        return [q for q in lines if q.strip()][: args.questions]
    return questions(args.index, args.questions)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--index", type=Path, required=True)
    ap.add_argument("--questions", type=int, default=50)
    ap.add_argument("--question-file", type=Path)
    ap.add_argument("--csv", type=Path, help="questions from a CSV's first column (sec-10q's qna_data.csv)")
    ap.add_argument("--limits", default="40,320,2560")
    ap.add_argument("--loose", type=float, metavar="COMMON",
                    help="thresholds off (gain 0, min_rows 0), common terms above this share of rows")
    ap.add_argument("--search", action="store_true", help="time search() instead of retrieve()")
    args = ap.parse_args()
    qs = _questions(args)
    limits = [int(x) for x in args.limits.split(",")]
    split = topk.DEFAULT_SPLIT
    if args.loose is not None:
        split = topk.Split(common=args.loose, gain=0.0, min_rows=0)
    times: dict[str, list[float]] = {"full": [], "top-k": []}
    same = answered = asked = 0
    with Index.open(args.index) as ix:
        if args.search:
            real = topk.top_groups

            def off(*_: Any, **__: Any) -> None:
                return None

            for q in qs:
                out = {}
                for name, fn in (("full", off), ("top-k", real)):
                    topk.top_groups = fn  # type: ignore[assignment]
                    t = time.perf_counter()
                    result = search(ix, q)
                    times[name].append(time.perf_counter() - t)
                    out[name] = json.dumps(result.to_json(), sort_keys=True)
                topk.top_groups = real
                asked += 1
                same += out["full"] == out["top-k"]
        else:
            full, fast = Fts5Retriever(ix.store, split=None), Fts5Retriever(ix.store, split=split)
            for q in qs:
                for limit in limits:
                    t = time.perf_counter()
                    a = full.retrieve(q, limit)
                    times["full"].append(time.perf_counter() - t)
                    t = time.perf_counter()
                    b = fast.retrieve(q, limit)
                    times["top-k"].append(time.perf_counter() - t)
                    asked += 1
                    same += a == b
                    if a != b:
                        print(f"DIFFERENT: {q!r} limit {limit}")
                    answered += topk.top_groups(ix.store, content_terms(q), limit, split) is not None
    what = "search()" if args.search else f"retrieve() at limits {limits}"
    print(f"{args.index}: {len(qs)} questions, {what}: identical {same}/{asked}", end="")
    print("" if args.search else f", top-k path answered {answered}")
    for name, xs in times.items():
        print(f"  {name}: {_figures(xs)}")


if __name__ == "__main__":
    main()
