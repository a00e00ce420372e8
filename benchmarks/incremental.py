"""Incremental ingest against a fresh one, side by side on the same corpus.

**Corpus.** ``--records`` one-chunk JSONL records of ~200 words in shards of 5,000, written by
``benchmarks/ingest_vs_datasketch.py``'s generator (near copies, exact copies, re-wrapped copies).

**Rows**, each timed as a whole ``chunkdedup ingest`` process (``--parallelism`` as given, default the
CLI's), on a copy of the index the fresh row wrote:

* ``fresh``: a fresh index of the corpus;
* ``no change``: the same corpus again (every file hashed, nothing parsed);
* ``1% edited, every shard``: 1% of the records edited (one word each), spread over every shard, so
  every file changed and is parsed again (the worst case for a sharded corpus);
* ``1% new, one shard``: 1% new records in a new shard;
* ``1% edited + 1% new``: both.

Printed: wall seconds and CPU seconds (the process's user + system) with their shares of the fresh
row's, documents chunked, and whether the export equals a fresh ingest of the same final corpus
(checked for every row but the fresh one). Before each timed run the copied index is synced to disk,
so the run's checkpoint does not wait for the copy's write-back. The package is byte-compiled first
(``compile_package``), so no run compiles modules an installed package holds compiled.

Example:
    python benchmarks/incremental.py --records 50000
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DEFAULT_OUT = REPO / "benchmarks" / "results" / "incremental.json"


def _edit(corpus: Path, share: float, seed: int) -> int:
    """Edit ``share`` of the records of every shard (the middle word of each becomes "edited")."""
    rng = random.Random(seed)
    edited = 0
    for shard in sorted(corpus.glob("*.jsonl")):
        lines = shard.read_text(encoding="utf-8").splitlines()
        for i in rng.sample(range(len(lines)), max(1, round(len(lines) * share))):
            record = json.loads(lines[i])
            words = record["text"].split()
            words[len(words) // 2] = "edited"
            record["text"] = " ".join(words)
            lines[i] = json.dumps(record)
            edited += 1
        shard.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return edited


def _add(corpus: Path, share: float, seed: int) -> int:
    """A new shard of ``share`` of the corpus's record count: copies of records with new ids and one
    word changed, so they are new documents that near-duplicate old ones."""
    rng = random.Random(seed)
    shards = sorted(corpus.glob("*.jsonl"))
    lines = [ln for shard in shards for ln in shard.read_text(encoding="utf-8").splitlines()]
    picked = rng.sample(lines, max(1, round(len(lines) * share)))
    out = []
    for n, line in enumerate(picked):
        record = json.loads(line)
        record["id"] = f"new-{seed}-{n}"
        words = record["text"].split()
        words[0] = "added"
        record["text"] = " ".join(words)
        out.append(json.dumps(record))
    (corpus / f"zz-new-{seed}.jsonl").write_text("\n".join(out) + "\n", encoding="utf-8")
    return len(out)


def _ingest(corpus: Path, index: Path, extra: list[str]) -> tuple[float, float, dict[str, Any]]:
    """One ``chunkdedup ingest`` process: its wall seconds, its CPU seconds (user + system), its totals."""
    chunkdedup = str(Path(sys.executable).with_name("chunkdedup"))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [chunkdedup, "ingest", str(corpus), "--index", str(index), "--json", *extra],
        check=True, capture_output=True, text=True,
    )
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return seconds, cpu, json.loads(done.stdout)["totals"]


def _export(index: Path) -> list[Any]:
    from chunkdedup import Index

    with Index.open(index) as ix:
        return list(ix.export())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--records", type=int, default=50_000)
    ap.add_argument("--parallelism", type=int, help="passed to chunkdedup ingest (default: the CLI's)")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args(argv)
    sys.path.insert(0, str(REPO / "benchmarks"))
    from rich.console import Console
    from rich.table import Table

    from ingest_vs_datasketch import compile_package, write_corpus

    compile_package()  # the timed processes import it compiled, as from an installed package
    extra = ["--parallelism", str(args.parallelism)] if args.parallelism else []
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="chunkdedup-incremental-") as tmp:
        pristine, corpus = Path(tmp) / "pristine", Path(tmp) / "corpus"
        counts = write_corpus(pristine, args.records)
        shutil.copytree(pristine, corpus)
        fresh_index = Path(tmp) / "fresh.sqlite"
        fresh_s, fresh_cpu, totals = _ingest(corpus, fresh_index, extra)
        chunked = totals["documents_chunked"]
        rows.append({"row": "fresh", "seconds": fresh_s, "cpu": fresh_cpu, "chunked": chunked, "same": None})
        changes: list[tuple[str, Callable[[Path], int]]] = [
            ("no change", lambda c: 0),
            ("1% edited, every shard", lambda c: _edit(c, 0.01, 1)),
            ("1% new, one shard", lambda c: _add(c, 0.01, 2)),
            ("1% edited + 1% new", lambda c: _edit(c, 0.01, 3) + _add(c, 0.01, 4)),
        ]
        for name, change in changes:
            # the corpus as the fresh index saw it (same path: files are known by content), then changed
            shutil.rmtree(corpus)
            shutil.copytree(pristine, corpus)
            index, reference = Path(tmp) / "incremental.sqlite", Path(tmp) / "reference.sqlite"
            for path in (index, reference):
                for suffix in ("", "-wal", "-shm"):
                    Path(f"{path}{suffix}").unlink(missing_ok=True)
            shutil.copy(fresh_index, index)
            changed = change(corpus)
            # the copy's and the corpus's dirty pages are written back now, not during the timed run
            # (whose checkpoint's fsync would wait for the whole copied index: about a second)
            os.sync()
            seconds, cpu, totals = _ingest(corpus, index, extra)
            _ingest(corpus, reference, extra)
            rows.append({
                "row": name, "records_changed": changed, "seconds": seconds, "cpu": cpu,
                "chunked": totals["documents_chunked"], "same": _export(index) == _export(reference),
            })
    table = Table(title=f"{counts['records']:,} one-chunk JSONL records; chunkdedup ingest {' '.join(extra)}")
    columns = (
        "row", "seconds", "share of fresh", "CPU s", "CPU share", "documents chunked", "export = fresh ingest"
    )
    for col in columns:
        table.add_column(col, justify="left" if col == "row" else "right")
    for r in rows:
        table.add_row(
            r["row"], f"{r['seconds']:.2f}", f"{r['seconds'] / fresh_s:.1%}", f"{r['cpu']:.2f}",
            f"{r['cpu'] / fresh_cpu:.1%}", f"{r['chunked']:,}", "" if r["same"] is None else str(r["same"]),
        )
    Console(width=130).print(table)
    result = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {
            "platform": platform.platform(), "python": platform.python_version(), "cpus": os.cpu_count()
        },
        "corpus": counts, "parallelism": args.parallelism, "rows": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"written to {args.out}")
    return 0 if all(r["same"] in (None, True) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
