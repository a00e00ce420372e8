"""Whole ingest against the spec's naive datasketch loop, side by side on the same JSONL corpus.

**Corpus.** ``--records`` one-chunk JSONL records of ~200 words from ``benchmarks/near_dup.py``'s
generator (sentences of the real site-policy Markdown recombined; 75% originals, 15% near copies
with 1-3 words edited, 10% exact copies), every other exact copy re-cased and re-wrapped (undone by the
exact key). Written once to a temporary folder (``--corpus DIR`` keeps it there instead).

**Rows**, each in its own process, interleaved ``--rounds`` times (A B A B ...), wall seconds:

* ``datasketch loop``: what the spec calls the naive loop: read each record, lower-case and split it,
  ``MinHash.update`` per word 5-shingle (128 permutations), ``MinHashLSH.query`` then ``insert``
  when nothing is found (threshold 0.85); nothing is stored.
* ``chunkdedup ingest, 1 process``: ``chunkdedup ingest DIR --index FILE --parallelism 1`` into a fresh
  index: parse, boilerplate, chunk, exact and near dedup, FTS5, every row written to SQLite, in one
  process (as the loop runs);
* ``chunkdedup ingest, N worker processes``: the same with ``--parallelism N``, the per-document
  stages in one worker process per core (N, at most 8) while the driver writes. (Not the CLI's
  default, which leaves a core to the writer: on 2 cores that is one process, the row above.)

Printed: every row (median and every round), the ratio of the loop's median to each ingest row's, the
canonical count of each, and the index's bytes against the raw text bytes of the corpus (``text``
fields, UTF-8); the datasketch and NumPy versions with the machine. Read the ratio of one run only:
the loop's time moves with the machine more than the ingest's (50k records: 120 s in one session,
65-67 s on a faster machine, where datasketch 1.6.5 and 2.0.0 took the same time).

Example:
    python benchmarks/ingest_vs_datasketch.py --records 50000 --rounds 3
    python benchmarks/ingest_vs_datasketch.py --write-corpus /tmp/corpus50k   # only write the corpus
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DEFAULT_OUT = REPO / "benchmarks" / "results" / "ingest_vs_datasketch.json"
RECORDS_PER_SHARD = 5000
NUM_PERM, SHINGLE_WORDS, THRESHOLD = 128, 5, 0.85


def _rewrap_recase(rng: random.Random, text: str) -> str:
    words = [w.capitalize() if rng.random() < 0.3 else w for w in text.split(" ")]
    return "".join(w + ("\n" if rng.random() < 0.08 else "  " if rng.random() < 0.05 else " ") for w in words)


def compile_package() -> Path:
    """Byte-compile the ``chunkdedup`` the timed processes import, as an installed package is (pip
    compiles it on install); returns its folder. From an editable install in a shell with
    ``PYTHONDONTWRITEBYTECODE=1`` each timed process would otherwise compile every module it imports
    (0.16-0.21 s of imports against 0.10-0.12 s compiled, here)."""
    import compileall
    import importlib.util

    spec = importlib.util.find_spec("chunkdedup")
    if spec is None or spec.origin is None:
        raise SystemExit("chunkdedup is not importable: pip install -e . first")
    folder = Path(spec.origin).parent
    compileall.compile_dir(str(folder), quiet=1)
    return folder


def write_corpus(folder: Path, records: int, seed: int = 7) -> dict[str, int]:
    """``records`` one-chunk JSONL records in shards under ``folder``; returns counts and raw text bytes."""
    import numpy as np

    sys.path.insert(0, str(REPO / "benchmarks"))
    from near_dup import DEFAULT_SOURCE, EXACT, Corpus

    corpus = Corpus.from_markdown(DEFAULT_SOURCE, records, seed)
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    raw_bytes = 0
    for lo in range(0, records, RECORDS_PER_SHARD):
        items = np.arange(lo, min(records, lo + RECORDS_PER_SHARD), dtype=np.int64)
        kinds, _ = corpus.kinds_sources(items)
        lines = []
        for i, text, kind in zip(items.tolist(), corpus.keys(items), kinds.tolist(), strict=True):
            if kind == EXACT and i % 2:
                text = _rewrap_recase(rng, text)
            raw_bytes += len(text.encode("utf-8"))
            lines.append(json.dumps({"id": f"r{i:07d}", "text": text}))
        (folder / f"shard-{lo // RECORDS_PER_SHARD:04d}.jsonl").write_text("\n".join(lines) + "\n", "utf-8")
    return {"records": records, "raw_text_bytes": raw_bytes}


def datasketch_loop(folder: Path) -> int:
    """The spec's naive loop over every record; returns how many records found no near copy."""
    from datasketch import MinHash, MinHashLSH

    lsh = MinHashLSH(threshold=THRESHOLD, num_perm=NUM_PERM)
    kept = 0
    for shard in sorted(folder.glob("*.jsonl")):
        with shard.open(encoding="utf-8") as fh:
            for line in fh:
                record = json.loads(line)
                words = record["text"].lower().split()
                m = MinHash(num_perm=NUM_PERM)
                for i in range(max(1, len(words) - SHINGLE_WORDS + 1)):
                    m.update(" ".join(words[i : i + SHINGLE_WORDS]).encode("utf-8"))
                if not lsh.query(m):
                    lsh.insert(record["id"], m)
                    kept += 1
    return kept


def _version(package: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return "(not installed)"


def _timed(cmd: Sequence[str]) -> tuple[float, str]:
    t = time.perf_counter()
    done = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return time.perf_counter() - t, done.stdout


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--records", type=int, default=50_000)
    ap.add_argument("--rounds", type=int, default=1, help="interleaved rounds of both rows; medians")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--corpus", type=Path, help="write (or reuse) the corpus here instead of a temp folder")
    ap.add_argument("--write-corpus", type=Path, metavar="DIR", help="only write the corpus to DIR")
    ap.add_argument("--datasketch-only", type=Path, metavar="DIR", help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args(argv)
    if args.datasketch_only is not None:  # the datasketch row's own process
        print(datasketch_loop(args.datasketch_only))
        return 0
    if args.write_corpus is not None:
        print(json.dumps(write_corpus(args.write_corpus, args.records, args.seed)))
        return 0
    compile_package()
    with tempfile.TemporaryDirectory(prefix="chunkdedup-vs-ds-") as tmp:
        corpus = args.corpus or Path(tmp) / "corpus"
        counts = write_corpus(corpus, args.records, args.seed)
        return _compare(args, corpus, counts, Path(tmp))


def _compare(args: argparse.Namespace, corpus: Path, counts: dict[str, int], tmp: Path) -> int:
    from rich.console import Console
    from rich.table import Table

    from chunkdedup import Index

    workers = max(1, min(8, os.cpu_count() or 1))
    variants = {1: ["--parallelism", "1"], workers: ["--parallelism", str(workers)]}
    ours: dict[int, list[float]] = {n: [] for n in variants}
    theirs: list[float] = []
    kept = 0
    index = tmp / "index.sqlite"
    chunkdedup = str(Path(sys.executable).with_name("chunkdedup"))
    for _ in range(args.rounds):
        for n, extra in variants.items():
            for suffix in ("", "-wal", "-shm"):
                Path(f"{index}{suffix}").unlink(missing_ok=True)
            seconds, _out = _timed([chunkdedup, "ingest", str(corpus), "--index", str(index), *extra])
            ours[n].append(seconds)
        seconds, out = _timed([sys.executable, __file__, "--datasketch-only", str(corpus)])
        theirs.append(seconds)
        kept = int(out.strip())
    with Index.open(index) as ix:
        stats = ix.stats()
    index_bytes = int(stats["index_bytes"])
    ratios = {n: statistics.median(theirs) / statistics.median(t) for n, t in ours.items()}
    table = Table(title=f"{counts['records']:,} one-chunk JSONL records, {args.rounds} interleaved round(s)")
    for col in ("row", "wall s (median)", "rounds", "canonicals", "loop / row"):
        table.add_column(col, justify="left" if col == "row" else "right")
    table.add_row(
        f"datasketch {_version('datasketch')} loop (update per shingle, LSH query + insert, nothing stored;"
        " 1 process)",
        f"{statistics.median(theirs):.1f}",
        " / ".join(f"{s:.1f}" for s in theirs),
        f"{kept:,}",
        "1.00x",
    )
    for n, times in ours.items():
        how = "1 process" if n == 1 else f"{n} worker processes"
        table.add_row(
            f"chunkdedup ingest (fresh index, FTS5 included; {how})",
            f"{statistics.median(times):.1f}",
            " / ".join(f"{s:.1f}" for s in times),
            f"{stats['canonical_chunks']:,}",
            f"{ratios[n]:.2f}x",
        )
    console = Console(width=150)
    console.print(table)
    for n, ratio in ratios.items():
        how = "1 process" if n == 1 else f"{n} worker processes"
        console.print(f"chunkdedup ingest ({how}) is {ratio:.2f}x the datasketch loop (median / median)")
    console.print(
        f"index {index_bytes / 1e6:,.1f} MB for {counts['raw_text_bytes'] / 1e6:,.1f} MB of raw text: "
        f"{index_bytes / counts['raw_text_bytes']:.2f}x"
    )
    result: dict[str, Any] = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {
            "platform": platform.platform(),
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "datasketch": _version("datasketch"),
            "numpy": _version("numpy"),
        },
        "corpus": counts,
        "rounds": args.rounds,
        "datasketch_loop_seconds": theirs,
        "chunkdedup_ingest_seconds": {f"{n}_process": t for n, t in ours.items()},
        "ratio_datasketch_over_ingest": {f"{n}_process": r for n, r in ratios.items()},
        "canonicals": {"datasketch_loop": kept, "chunkdedup": stats["canonical_chunks"]},
        "index_bytes": index_bytes,
        "index_over_raw_text": index_bytes / counts["raw_text_bytes"],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    console.print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
