"""Scale-out: local ingest vs ingest on Ray (1 and 2 workers) on a synthetic corpus.

The corpus is generated deterministically (seeded) into a temporary folder: JSONL shards of
one-page documents in families of dated versions, plus multi-page text files with a running
header. It holds what the pipeline decides on: a corpus-wide confidentiality notice (chrome), a
notice too rare to be chrome, clauses copied verbatim across families (exact), one-word edits
(near duplicates), and versions that differ only in a number (variants). About one chunk per
paragraph, so ``--chunks`` sets the size.

Each engine runs in its own process on a fresh index (so its peak memory is its own); Ray worker
processes are sampled from /proc every 0.2 s for their peak resident memory (VmRSS, which includes
pages of the shared object store they read) and their peak private memory (RssAnon, their own heap);
the ``..._per_million_chunks`` fields scale the largest to a million raw chunks; a local pool's workers
(``local-N``: the per-document stages in N worker processes) report the largest one's peak resident
memory. Every engine's stages are its report's ``engine.seconds`` (parse, boilerplate, chunk, the
clustering, the text index; on Ray also the near tier's banding and verification).
The indexes are compared by a hash of their export.

Example:
    python benchmarks/scale.py --chunks 200000 --out benchmarks/results/scale.json
    python benchmarks/scale.py --full     # 200k and 1M chunks
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import random
import resource
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DEFAULT_OUT = REPO / "benchmarks" / "results" / "scale.json"
ENGINES = ("local", "local-2", "ray-1", "ray-2")

_SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "pa", "qu", "den", "tor", "mar", "lin"]
_CHROME = "Confidential: internal use only. Do not forward this document outside the company network."
_RARE = "Printed copies of this policy are uncontrolled; check the intranet for the current version."
_PARAGRAPHS_PER_DOC = 20
_VERSIONS = 4
_DOCS_PER_SHARD = 200


def _vocabulary(rng: random.Random, n: int = 3000) -> list[str]:
    words: set[str] = set()
    while len(words) < n:
        words.add("".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4))))
    return sorted(words)


def _paragraph(rng: random.Random, vocab: list[str], words: int = 110) -> str:
    """Sentences of 8-16 words, about ``words`` words; one sentence carries a number."""
    out: list[str] = []
    n = 0
    while n < words:
        k = rng.randint(8, 16)
        sentence = rng.choices(vocab, k=k)
        sentence[0] = sentence[0].capitalize()
        out.append(" ".join(sentence) + ".")
        n += k
    out[0] = out[0][:-1] + f" within {rng.randint(2, 90)} days."
    return " ".join(out)


def _edit_word(rng: random.Random, vocab: list[str], text: str) -> str:
    """A near duplicate: one word replaced (shingle Jaccard about 0.9 for 110 words)."""
    words = text.split(" ")
    i = rng.randrange(2, len(words) - 2)
    words[i] = rng.choice(vocab)
    return " ".join(words)


def write_corpus(folder: Path, chunks: int, seed: int = 0) -> dict[str, int]:
    """Write a corpus of about ``chunks`` chunks under ``folder``; returns its counts."""
    rng = random.Random(seed)
    vocab = _vocabulary(rng)
    folder.mkdir(parents=True, exist_ok=True)
    docs = max(_VERSIONS, chunks // _PARAGRAPHS_PER_DOC)
    families = max(1, docs // _VERSIONS)
    shared = [_paragraph(rng, vocab) for _ in range(max(20, families // 2))]
    records: list[str] = []
    files = 0
    n_docs = 0
    for f in range(families):
        base = [_paragraph(rng, vocab) for _ in range(_PARAGRAPHS_PER_DOC - 2)]
        base += rng.sample(shared, 2)  # verbatim in a few families each: exact copies, not chrome
        chrome = f % 5 < 2  # 40% of the families: chrome
        rare = f % 10 == 9  # 10%: repeated, but not in more than 20% of units
        multipage = f % 20 == 7
        for v in range(_VERSIONS):
            paras = list(base)
            for i in range(len(paras)):
                roll = rng.random()
                if v and roll < 0.10:
                    paras[i] = _edit_word(rng, vocab, paras[i])  # near duplicate of the older version
                elif v and roll < 0.20:
                    paras[i] = paras[i].replace(" days.", f"{v} days.", 1)  # a variant: the number moved
                elif roll < 0.25:
                    paras[i] = _paragraph(rng, vocab)  # new text
            if chrome:
                paras.append(_CHROME)
            if rare:
                paras.append(_RARE)
            doc_id = f"policy-{f:06d}-v{v}"
            date = f"{2020 + v}-0{1 + f % 9}-15"
            if multipage:
                pages = []
                for p in range(0, len(paras), 5):
                    header = f"Acme Holdings | Policy {f} | page {p // 5 + 1}"
                    pages.append("\n\n".join([header, *paras[p : p + 5]]))
                (folder / f"{doc_id}.txt").write_text("\f".join(pages) + "\n", encoding="utf-8")
                files += 1
            else:
                record = {"id": doc_id, "text": "\n\n".join(paras), "family": f"f{f}", "effective_date": date}
                records.append(json.dumps(record))
                if len(records) == _DOCS_PER_SHARD:
                    files += _flush(folder, files, records)
            n_docs += 1
    if records:
        files += _flush(folder, files, records)
    return {"files": files, "documents": n_docs, "families": families, "paragraphs": n_docs * 20}


def _flush(folder: Path, n: int, records: list[str]) -> int:
    (folder / f"shard-{n:05d}.jsonl").write_text("\n".join(records) + "\n", encoding="utf-8")
    records.clear()
    return 1


class _WorkerMemory:
    """Peak memory of this process's Ray worker processes (``ray::...`` in /proc, descendants of this
    process, so another user's Ray is not counted), sampled in a thread: ``peak`` is the resident set
    (VmRSS, which counts the shared object-store pages a worker has read), ``private`` the anonymous
    memory alone (RssAnon: the worker's own heap, what a worker needs to be given)."""

    def __init__(self) -> None:
        self.peak: dict[int, int] = {}
        self.private: dict[int, int] = {}
        self.by_task: dict[str, int] = {}  # peak private memory seen while a worker ran each task
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> _WorkerMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    @staticmethod
    def _parent(pid: int) -> int:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return int(stat[stat.rindex(")") + 2 :].split()[1])

    def _ours(self, pid: int) -> bool:
        me = os.getpid()
        for _ in range(16):
            pid = self._parent(pid)
            if pid == me:
                return True
            if pid <= 1:
                return False
        return False

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            for name in os.listdir("/proc"):
                if not name.isdigit():
                    continue
                pid = int(name)
                try:
                    task = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode(errors="replace")
                    if not task.startswith("ray::") or not self._ours(pid):
                        continue
                    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                        field, _, value = line.partition(":")
                        if field == "VmRSS":
                            self.peak[pid] = max(self.peak.get(pid, 0), int(value.split()[0]))
                        elif field == "RssAnon":
                            kb = int(value.split()[0])
                            self.private[pid] = max(self.private.get(pid, 0), kb)
                            self.by_task[task[5:]] = max(self.by_task.get(task[5:], 0), kb)
                except (OSError, ValueError):
                    continue


def _export_hash(index: Path) -> str:
    from chunkdedup import Index

    digest = hashlib.sha256()
    with Index.open(index) as ix:
        for record in ix.export():
            digest.update(json.dumps(record, sort_keys=True).encode())
        for b in sorted((b.key, b.scope, b.doc_count, b.page_count) for b in ix.boilerplate()):
            digest.update(repr(b).encode())
    return digest.hexdigest()


def run_engine(engine: str, corpus: Path, index: Path) -> dict[str, Any]:
    """Ingest ``corpus`` into a fresh ``index`` with one engine, in this process."""
    from chunkdedup import ingest

    start = time.perf_counter()
    if engine.startswith("local"):
        # "local": one process; "local-N": the per-document stages in N worker processes
        n = int(engine.split("-")[1]) if "-" in engine else 1
        report = ingest([corpus], index, workers=n)
        # the pool's workers have exited: the largest one's peak resident memory
        children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss if n > 1 else 0
        workers: dict[int, int] = {0: children} if children else {}
        private: dict[int, int] = {}
        by_task: dict[str, int] = {}
    else:
        import ray

        from chunkdedup.ingestion.distributed import ingest_ray

        n = int(engine.split("-")[1])
        ray.init(num_cpus=n, include_dashboard=False, log_to_driver=False, configure_logging=False)
        try:
            with _WorkerMemory() as mem:
                report = ingest_ray([corpus], index, parallelism=n)
            workers, private, by_task = mem.peak, mem.private, mem.by_task
        finally:
            ray.shutdown()
    seconds = report.totals["engine"]["seconds"]
    wall = time.perf_counter() - start
    chunks = int(report.totals.get("raw_chunks") or 0)
    worker_peak = max(workers.values(), default=0) / 1024
    worker_private = max(private.values(), default=0) / 1024
    return {
        "engine": engine,
        "wall_s": round(wall, 2),
        "driver_peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "worker_peak_rss_mb": round(worker_peak, 1),
        "worker_peak_private_mb": round(worker_private, 1),
        # the largest worker process's peak, per million raw chunks of the corpus (a ratio at this size:
        # a worker's fixed ~0.4 GB of Python, numba and Arrow is in it)
        "worker_peak_rss_mb_per_million_chunks": round(worker_peak / (chunks / 1e6), 1) if chunks else None,
        "worker_peak_private_mb_per_million_chunks": (
            round(worker_private / (chunks / 1e6), 1) if chunks else None
        ),
        "worker_peaks_rss_mb": sorted((round(kb / 1024, 1) for kb in workers.values()), reverse=True),
        "worker_peaks_private_mb": sorted((round(kb / 1024, 1) for kb in private.values()), reverse=True),
        # which task a worker ran when its private memory peaked (the sampled task name, e.g. a fused
        # "MapBatches(...)->..." operator; memory left from a previous task counts towards the next)
        "worker_private_mb_by_task": {k: round(v / 1024, 1) for k, v in sorted(by_task.items())},
        "workers_seen": len(workers),
        "near_edges": report.totals.get("engine", {}).get("near_edges", "local"),
        "stage_seconds": seconds,
        "stage_share": {k: round(v / wall, 3) for k, v in seconds.items()},
        "raw_chunks": report.totals.get("raw_chunks"),
        "canonical_chunks": report.totals.get("canonical_chunks"),
        "export_sha256": _export_hash(index),
    }


def main(argv: list[str] | None = None) -> int:
    fmt = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=fmt)
    parser.add_argument("--chunks", type=int, nargs="*", default=[200_000], help="corpus sizes (chunks)")
    parser.add_argument("--full", action="store_true", help="200k and 1M chunks (the issue's sizes)")
    parser.add_argument(
        "--engines", default=",".join(ENGINES), help="comma-separated: local,local-2,ray-1,ray-2"
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--one", nargs=3, metavar=("ENGINE", "CORPUS", "INDEX"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:  # a child process: one engine, JSON on stdout
        print(json.dumps(run_engine(args.one[0], Path(args.one[1]), Path(args.one[2]))))
        return 0
    from rich.console import Console
    from rich.table import Table

    sizes = [200_000, 1_000_000] if args.full else args.chunks
    runs: list[dict[str, Any]] = []
    for size in sizes:
        with tempfile.TemporaryDirectory(prefix="chunkdedup-scale-") as tmp:
            corpus = Path(tmp) / "corpus"
            t = time.perf_counter()
            counts = write_corpus(corpus, size)
            gen = round(time.perf_counter() - t, 1)
            for engine in args.engines.split(","):
                index = Path(tmp) / f"{engine}.sqlite"
                out = subprocess.run(
                    [sys.executable, __file__, "--one", engine, str(corpus), str(index)],
                    check=True,
                    capture_output=True,
                    text=True,
                )
                row = json.loads(out.stdout.strip().splitlines()[-1])
                runs.append({"target_chunks": size, "corpus": counts, "generate_s": gen, **row})
    for size in sizes:
        local = [r for r in runs if r["target_chunks"] == size and r["engine"] == "local"]
        for r in runs:
            if r["target_chunks"] == size and local:
                r["same_as_local"] = r["export_sha256"] == local[0]["export_sha256"]
    table = Table(title="local vs Ray ingest (fresh index)")
    columns = ("chunks", "engine", "wall s", "driver MB", "worker MB rss/own", "own MB/M", "same", "stage s")
    for col in columns:
        table.add_column(col)
    for r in runs:
        stages = "\n".join(f"{k} {r['stage_seconds'][k]:.1f} ({v:.0%})" for k, v in r["stage_share"].items())
        per_million = r["worker_peak_private_mb_per_million_chunks"]
        table.add_row(
            f"{r['raw_chunks']:,}",
            r["engine"],
            f"{r['wall_s']:.1f}",
            f"{r['driver_peak_rss_mb']:.0f}",
            f"{r['worker_peak_rss_mb']:.0f} / {r['worker_peak_private_mb']:.0f}",
            "" if per_million is None or not r["workers_seen"] else f"{per_million:.0f}",
            str(r.get("same_as_local", "")),
            stages,
        )
    Console(width=200).print(table)
    result = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "runs": runs,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
