"""The cost of ``chunkdedup remove`` per removed record, for records of one large Parquet file.

**Corpus.** One Parquet file of ``--rows`` records (default 104,000) of ~60 words each, with an exact
copy of every 50th record and a near copy (one word changed) of every 70th, so removal touches merged
groups and clusters as well as singletons. It is ingested once; each row below runs on a copy of that
index.

**Rows**: ``chunkdedup remove`` of ``--remove`` records (default 1% of the file, then 2,000), spread
evenly over the file, timed as a whole process. Printed: wall and CPU seconds (the process's user +
system), CPU milliseconds per removed record, and whether the export after the removal equals a fresh
ingest of the file without those records (``--check``; one more ingest per row).

The cost of a removal should follow what the removed records hold, not the size of the file they came
from: the per-record cost of 1% of 104k rows and of 2,000 rows should be about the same.

Example:
    python benchmarks/remove.py --rows 104000
    python benchmarks/remove.py --rows 20000 --remove 200 --remove 2000 --check --workdir /tmp/remove
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DEFAULT_OUT = REPO / "benchmarks" / "results" / "remove.json"


def write_parquet(path: Path, rows: int, seed: int = 7) -> list[str]:
    """``rows`` records (ids ``r0000000``...) with exact and near copies; returns their ids in order."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(20_000)]
    ids: list[str] = []
    texts: list[str] = []
    for i in range(rows):
        if i % 50 == 49:
            words = texts[i - 1].split()  # an exact copy of the previous record
        elif i % 70 == 69:
            words = texts[i - 3].split()
            words[len(words) // 2] = "changed"  # a near copy
        else:
            words = [rng.choice(vocab) for _ in range(60)]
        ids.append(f"r{i:07d}")
        texts.append(" ".join(words))
    pq.write_table(pa.table({"id": ids, "text": [t + "." for t in texts]}), path)
    return ids


def _timed(args: list[str]) -> tuple[float, float]:
    """Run ``args``; wall and CPU seconds of the child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(args, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args[:4])} ... failed ({done.returncode}):\n{done.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def _cli() -> list[str]:
    """The ``chunkdedup`` command of this interpreter's environment."""
    return [sys.executable, "-c", "from chunkdedup.cli import main; main()"]


def _export(index: Path) -> list[Any]:
    args = [*_cli(), "export", "--index", str(index)]
    done = subprocess.run(args, capture_output=True, text=True, check=True)
    return [json.loads(line) for line in done.stdout.splitlines()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=104_000)
    parser.add_argument("--remove", type=int, action="append", help="records to remove (repeatable)")
    parser.add_argument("--check", action="store_true", help="compare each export with a fresh ingest")
    parser.add_argument("--label", default="", help="a name for this run in the results (e.g. before/after)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument(
        "--workdir", type=Path, help="keep the corpus and its index here and reuse them (default: a temp dir)"
    )
    args = parser.parse_args(argv)
    counts = args.remove or [max(1, args.rows // 100), 2_000]
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="chunkdedup-remove-") as scratch:
        tmp = args.workdir or Path(scratch)
        folder = Path(tmp) / f"corpus-{args.rows}"
        folder.mkdir(parents=True, exist_ok=True)
        data = folder / "rows.parquet"
        base = Path(tmp) / f"base-{args.rows}.sqlite"
        if data.exists() and base.exists():
            ids = [f"r{i:07d}" for i in range(args.rows)]
        else:
            ids = write_parquet(data, args.rows)
            wall, cpu = _timed([*_cli(), "ingest", str(folder), "--index", str(base)])
            print(f"ingest of {args.rows:,} rows: {wall:.1f} s wall, {cpu:.1f} s CPU")
        for n in counts:
            step = max(1, len(ids) // n)
            gone = ids[::step][:n]
            index = Path(tmp) / f"remove-{args.rows}-{n}.sqlite"
            shutil.copyfile(base, index)
            doc_ids = [f"rows.parquet#{i}" for i in gone]
            wall, cpu = _timed([*_cli(), "remove", *doc_ids, "--index", str(index)])
            row: dict[str, Any] = {
                "removed": n,
                "wall_s": round(wall, 2),
                "cpu_s": round(cpu, 2),
                "cpu_ms_per_record": round(1000 * cpu / n, 2),
            }
            if args.check:
                import pyarrow.parquet as pq

                kept = pq.read_table(data).to_pylist()
                dropped = set(gone)
                fresh_folder = Path(tmp) / f"fresh-{args.rows}-{n}"
                fresh_folder.mkdir(exist_ok=True)
                import pyarrow as pa

                rest = [r for r in kept if r["id"] not in dropped]
                pq.write_table(pa.Table.from_pylist(rest), fresh_folder / "rows.parquet")
                fresh = Path(tmp) / f"fresh-{args.rows}-{n}.sqlite"
                fresh.unlink(missing_ok=True)
                subprocess.run([*_cli(), "ingest", str(fresh_folder), "--index", str(fresh)],
                               capture_output=True, check=True)
                row["export_equals_fresh"] = _export(index) == _export(fresh)
            results.append(row)
            print(
                f"remove {n:>6,} of {args.rows:,}: {wall:6.2f} s wall, {cpu:6.2f} s CPU, "
                f"{row['cpu_ms_per_record']:.2f} ms CPU per record"
                + (f", export equals fresh: {row['export_equals_fresh']}" if args.check else "")
            )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    previous = json.loads(args.out.read_text()) if args.out.exists() else {}
    previous[args.label or "latest"] = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "rows": args.rows,
        "results": results,
    }
    args.out.write_text(json.dumps(previous, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
