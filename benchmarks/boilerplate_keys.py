"""Boilerplate keying, str path vs compiled walk, side by side: ``boilerplate.document_keys`` (the parse
phase's keys) and ``boilerplate.strip`` (the chunk phase's) over the same documents, the two paths
interleaved round by round, so a shared machine's load hits both alike.

Per corpus the documents are parsed once (``parse.discover`` + ``parse.parse_file``, not timed); the
chrome of ``strip`` is the corpus chrome the documents' own candidates make (``boilerplate.is_chrome``
over distinct units), each document given the chrome keys among its strippable ones, as the ingest's
chunk jobs are. Each round times ``document_keys`` over every document, then ``strip``, then ``strip``
with no chrome (``strip_bare``: running lines only, the edge-keys walk), each with ``compiled=False``
and ``compiled=True`` (in alternating order); the kernel is loaded before the first
round. The two paths' results are compared (they must be equal) and the table prints the median CPU
seconds of each (``time.process_time``: on a shared machine steadier than wall time, which the JSON
holds too), and new / old as a ratio.

Example:
    python benchmarks/boilerplate_keys.py --rounds 5
    python benchmarks/boilerplate_keys.py --corpus /tmp/qf-corpus1m:300 --corpus ../shared/data/sec-10q/docs
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from chunkdedup.config import BoilerplateConfig, Config
from chunkdedup.parse import discover, parse_file
from chunkdedup.text import boilerplate
from chunkdedup.types import Document, FileStatus, Page

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"
#: document_keys; strip with the documents' chrome; strip with no chrome (running lines only)
STAGES = ("document_keys", "strip", "strip_bare")


def load(corpus: Path, files: int | None, seed: int) -> list[Document]:
    """The documents of ``corpus`` (a sample of ``files`` of its inputs when given)."""
    cfg = Config()
    inputs = list(discover([corpus], None, cfg.parse))
    if files is not None and files < len(inputs):
        inputs = sorted(random.Random(seed).sample(inputs, files), key=lambda i: str(i.path))
    docs: list[Document] = []
    for inp in inputs:
        parsed = parse_file(inp, cfg.parse)
        if parsed.status == FileStatus.INGESTED:
            docs.extend(parsed.documents)
    return docs


def chrome_of(
    docs: list[Document], keys: list[boilerplate.DocumentKeys], config: BoilerplateConfig
) -> set[int]:
    units: dict[int, set[str]] = {}
    for d, dk in zip(docs, keys, strict=True):
        for k in dk.candidates:
            units.setdefault(boilerplate.key_id(k), set()).add(d.unit)
    total = len({d.unit for d in docs})
    return {h for h, u in units.items() if boilerplate.is_chrome(len(u), total, config)}


def timed(fn: Callable[[], Any]) -> tuple[float, float, Any]:
    """(CPU seconds, wall seconds, result): the table shows CPU time, which another process on a shared
    machine disturbs less than wall time."""
    c, t = time.process_time(), time.perf_counter()
    out = fn()
    return time.process_time() - c, time.perf_counter() - t, out


def run(corpus: Path, files: int | None, rounds: int, seed: int) -> dict[str, Any]:
    docs = load(corpus, files, seed)
    config = Config().boilerplate
    pages: list[tuple[Page, ...]] = [d.pages for d in docs]
    keys = [boilerplate.document_keys(p, config) for p in pages]
    chrome = chrome_of(docs, keys, config)
    held = [chrome & {boilerplate.key_id(k) for k in dk.strippable} for dk in keys]
    boilerplate.document_keys([Page(1, "load the kernel 1\nx")], config, compiled=True)

    def keys_of(compiled: bool) -> Callable[[], Any]:
        return lambda: [boilerplate.document_keys(p, config, compiled=compiled) for p in pages]

    def bare_of(compiled: bool) -> Callable[[], Any]:  # no chrome: running lines only (edge keys)
        return lambda: [boilerplate.strip(p, (), config, compiled=compiled) for p in pages]

    def strip_of(compiled: bool) -> Callable[[], Any]:
        return lambda: [
            boilerplate.strip(p, h, config, compiled=compiled) for p, h in zip(pages, held, strict=True)
        ]

    times: dict[str, list[float]] = {f"{s}_{p}": [] for s in STAGES for p in ("old", "new")}
    walls: dict[str, list[float]] = {k: [] for k in times}
    equal = True
    for r in range(rounds):
        order = (False, True) if r % 2 == 0 else (True, False)
        got: dict[str, Any] = {}
        for stage, make in (("document_keys", keys_of), ("strip", strip_of), ("strip_bare", bare_of)):
            for compiled in order:
                name = f"{stage}_{'new' if compiled else 'old'}"
                cpu, wall, got[name] = timed(make(compiled))
                times[name].append(cpu)
                walls[name].append(wall)
        equal &= all(got[f"{s}_old"] == got[f"{s}_new"] for s in STAGES)
    chars = sum(len(p.text) for ps in pages for p in ps)
    med = {k: statistics.median(v) for k, v in times.items()}
    return {
        "corpus": str(corpus),
        "files": files,
        "documents": len(docs),
        "pages": sum(map(len, pages)),
        "lines": sum(p.text.count("\n") + 1 for ps in pages for p in ps),
        "chars": chars,
        "ascii_pages": sum(p.text.isascii() for ps in pages for p in ps),
        "chrome_keys": len(chrome),
        "stripped_lines": sum(len(s.stripped) for s in strip_of(True)()),
        "equal": equal,
        "rounds_cpu": times,
        "rounds_wall": walls,
        "median": med,
        "median_wall": {k: statistics.median(v) for k, v in walls.items()},
        "ratio_document_keys": med["document_keys_new"] / med["document_keys_old"],
        "ratio_strip": med["strip_new"] / med["strip_old"],
        "ratio_both": (med["document_keys_new"] + med["strip_new"])
        / (med["document_keys_old"] + med["strip_old"]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--corpus", action="append", help="a folder of inputs, PATH or PATH:N (a seeded sample of N inputs)"
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "boilerplate_keys.json")
    args = parser.parse_args()
    specs = args.corpus or ["/tmp/qf-corpus1m:300", str(DATA / "sec-10q" / "docs"), "/tmp/corpus50k:2"]
    rows = []
    for spec in specs:
        path, _, n = spec.rpartition(":") if spec.rpartition(":")[2].isdigit() else (spec, "", "")
        rows.append(run(Path(path), int(n) if n else None, args.rounds, args.seed))
    head = ("corpus", "docs", "pages", "Mchars", "stage", "old cpu", "new cpu", "new/old")
    line = "{:<24} {:>6} {:>6} {:>7}  {:<14} {:>7} {:>7} {:>7}"
    print(line.format(*head))
    for row in rows:
        m = row["median"]
        name, size = Path(row["corpus"]).name, f"{row['chars'] / 1e6:.1f}"
        for stage in STAGES:
            old, new = m[stage + "_old"], m[stage + "_new"]
            print(
                line.format(
                    name,
                    row["documents"],
                    row["pages"],
                    size,
                    stage,
                    f"{old:.3f}",
                    f"{new:.3f}",
                    f"{new / old:.2f}",
                )
            )
        both = f"{row['ratio_both']:.2f}"
        print(line.format(name, "", "", "", "both", "", "", both) + f"   equal={row['equal']}")
    commit = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True
    ).stdout.strip()
    out = {
        "benchmark": "boilerplate_keys",
        "commit": commit,
        "machine": {
            "platform": platform.platform(),
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
        },
        "rows": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
