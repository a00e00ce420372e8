"""The approximate vector index (usearch HNSW, the ``[ann]`` extra) against exact search, on a synthetic
index of ``--chunks`` texts (default 1M) with clustered ``--dim``-d vectors.

The index is the one ``query.py`` builds (texts drawn from the sec-10q chunks' word frequencies, rows
written straight with ``executemany``, a tantivy folder beside it); each group then gets a vector
of :class:`Topics` (1,024 topics, a subtopic per 16 texts: a text's nearest neighbours sit at cosine
~0.8, its topic at ~0.5, the rest at ~0), written into ``embeddings`` and recorded as the embedder
``hash:DIM:0`` so questions embed in microseconds. The vector folder is then built by the store's
own path (:func:`chunkdedup.store.vectorindex.sync`), as an ingest builds it.

Rows: the folder's build time and size; vector-only latency (``VectorRetriever``, exact, the matrix
cached or streamed as the index's size decides, against ``AnnRetriever``); recall@10 of the ANN
retriever against exact on held-out vectors drawn from the same topics (the retrievers' own
``nearest``, the question vector given); and ``search()`` hybrid (tantivy BM25 + vectors, RRF,
versions, safety net) with exact and with ANN vectors, on the sec-10q questions. The ANN rows run
twice: keys mapped and vectors read through SQLite (as while a run is going), and through the
folder's arrays (memory-mapped beside the graph).

Example:
    python benchmarks/ann.py --chunks 1000000 --workdir DIR     # DIR keeps the index for reuse
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from chunkdedup import Index, QueryConfig, ingest, search
from chunkdedup.embed import HashEmbedder
from chunkdedup.query.ann import OVERSAMPLE, AnnRetriever, vector_retriever
from chunkdedup.store import Store, vectorindex
from query import add_tantivy, build_synthetic, percentiles, timed_queries, word_model

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"
DEFAULT_OUT = REPO / "benchmarks" / "results" / "ann.json"


class Topics:
    """Clustered unit vectors as a corpus's embeddings sit: ``topics`` unit centres, each with
    subtopics (a centre plus Gaussian spread ``sub_spread``), each text a subtopic plus ``spread``
    (both as norms), so a text has a few close neighbours (its subtopic: cosine ~0.8), more in its
    topic (~0.5) and none elsewhere (~0). Uniform random vectors would be the hardest and least
    realistic case: every neighbour at the same distance."""

    def __init__(self, dim: int, topics: int, subtopics: int, seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        self.centres = _unit(rng.standard_normal((topics, dim)))
        parent = rng.integers(0, topics, subtopics)
        self.sub = _unit(self.centres[parent] + 0.8 * _unit(rng.standard_normal((subtopics, dim))))

    def draw(self, rng: np.random.Generator, n: int, spread: float = 0.5) -> np.ndarray:
        picks = rng.integers(0, len(self.sub), n)
        noise = _unit(rng.standard_normal((n, self.sub.shape[1])))
        return _unit(self.sub[picks] + spread * noise)


def _unit(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, dtype=np.float32)
    out: np.ndarray = v / np.linalg.norm(v, axis=1, keepdims=True)
    return out


def add_clustered_vectors(index: Path, topics: Topics, seed: int = 1) -> float:
    """Store a clustered vector for every group and record the embedder ``hash:DIM:0``. Seconds."""
    start = time.perf_counter()
    rng = np.random.default_rng(seed)
    dim = topics.sub.shape[1]
    with Store.open(index) as store:
        ids = [r[0] for r in store.conn.execute("SELECT id FROM groups ORDER BY id")]
        for lo in range(0, len(ids), 20_000):
            part = ids[lo : lo + 20_000]
            v = topics.draw(rng, len(part)).astype("<f4")
            with store.transaction():
                store.embeddings.set_embeddings((gid, v[i].tobytes()) for i, gid in enumerate(part))
            print(f"  vectors: {lo + len(part):,}/{len(ids):,}", file=sys.stderr, end="\r")
        with store.transaction():
            store.set_meta("embedder_name", HashEmbedder(dim).name)
            store.set_meta("embedder_dim", str(dim))
    print(file=sys.stderr)
    return time.perf_counter() - start


def topics_for(chunks: int, dim: int) -> Topics:
    """The vectors' topics for an index of ``chunks`` texts: 1,024 topics, a subtopic per 16 texts."""
    return Topics(dim, 1024, max(1, chunks // 16))


def prepare(workdir: Path, chunks: int, dim: int) -> dict[str, Any]:
    """The synthetic index with its tantivy folder and clustered vectors (each step skipped when the
    workdir already holds it). Returns the index path and each step's seconds."""
    out: dict[str, Any] = {}
    sec = workdir / "sec.sqlite"
    if not sec.exists():
        ingest([DATA / "sec-10q" / "docs"], sec)
    path = workdir / f"synthetic-{chunks}-{dim}d.sqlite"
    if not path.exists():
        words, p = word_model(sec)
        out["text_build_seconds"] = build_synthetic(path, chunks, words, p)
    with Index.open(path) as ix:
        has_folder = ix.text_handle() is not None
        embedded = ix.store.meta("embedder_name") is not None
    if not has_folder:
        out["tantivy_build"] = add_tantivy(path)
    if not embedded:
        out["vector_write_seconds"] = add_clustered_vectors(path, topics_for(chunks, dim))
    out["path"] = str(path)
    return out


def build_folder(path: Path) -> dict[str, Any]:
    """Build (or bring up to date) the index's vector folder by the store's own sync: seconds, size."""
    start = time.perf_counter()
    with Store.open(path) as store, store.writer(30.0):
        done = vectorindex.sync(store, min_vectors=0)
    seconds = time.perf_counter() - start
    folder = vectorindex.folder(path)
    size = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
    return {"seconds": seconds, "folder_bytes": size, **done.to_json()}


def recall_rows(ix: Index, topics: Topics, n: int, k: int = 10) -> dict[str, Any]:
    """recall@k of the ANN retriever against exact on ``n`` held-out vectors of the same topics, for
    each candidate-list size of the graph, and the latencies."""
    held_out = topics.draw(np.random.default_rng(12345), n)
    exact = vector_retriever(ix.store, ix.vector_handle, QueryConfig(vector_index="exact"))
    exact.nearest(held_out[:1], k)  # loads (or starts streaming) the matrix
    times: list[float] = []
    truth = []
    for v in held_out:
        start = time.perf_counter()
        truth.append({s.id for s in exact.nearest(v.reshape(1, -1), k)})
        times.append(time.perf_counter() - start)
    out: dict[str, Any] = {"queries": n, f"exact: vector only ({k} asked)": percentiles(times)}
    handle = ix.vector_handle()
    for ef in sorted({64, 128, vectorindex.EXPANSION_SEARCH, 512}):
        ann = AnnRetriever(ix.store, exact.embedder, handle, expansion=ef)
        times, recall = [], []
        for v, want in zip(held_out, truth, strict=True):
            start = time.perf_counter()
            got = {s.id for s in ann.nearest(v.reshape(1, -1), k)}
            times.append(time.perf_counter() - start)
            recall.append(len(got & want) / k)
        out[f"ann ef {ef}: vector only ({k} asked)"] = percentiles(times)
        out[f"recall_at_{k}_ef_{ef}"] = float(np.mean(recall))
        out[f"recall_at_{k}_ef_{ef}_min"] = float(np.min(recall))
    return out


class ThroughSqlite:
    """The index as a search sees it while a run is going: the vector folder's keys mapped, and its
    candidates' vectors read, through SQLite (the path before the folder held its arrays)."""

    def __init__(self, ix: Index) -> None:
        self.ix = ix

    @property
    def store(self) -> Store:
        return self.ix.store

    def text_handle(self) -> Any:
        return self.ix.text_handle()

    def vector_handle(self) -> Any:
        held = self.ix.vector_handle()
        return None if held is None else _SqliteHandle(held.generation, held.index, held.state, held.arrays)


class _SqliteHandle(vectorindex.AnnHandle):
    __slots__ = ()

    def alone(self, store: Store) -> bool:
        return False


def latency_rows(ix: Index, questions: list[str], depth: int) -> dict[str, Any]:
    """Vector-only retrieval at the depth hybrid's first pass asks, and search() hybrid: exact, ANN
    through SQLite (as while a run is going) and ANN through the folder's arrays."""
    rows: dict[str, Any] = {}
    for mode, view in (("exact", ix), ("ann, through SQLite", ThroughSqlite(ix)), ("ann", ix)):
        cfg = QueryConfig(k=5, pool=40, vector_index="exact" if mode == "exact" else "ann")
        vr = vector_retriever(view.store, view.vector_handle, cfg)
        rows[f"{mode}: vector only ({depth} asked)"] = timed_queries(
            lambda q, r=vr: r.retrieve(q, depth), questions, 1
        )
        rows[f"{mode}: search() hybrid (tantivy + vectors) + versions + safety net"] = timed_queries(
            lambda q, c=cfg, v=view: search(v, q, config=c, retriever="hybrid"), questions, 1
        )
    return rows


def profile(ix: Index, questions: list[str]) -> None:
    """Print where search() hybrid with ANN vectors spends its time (cProfile, cumulative)."""
    import cProfile
    import pstats

    cfg = QueryConfig(k=5, pool=40, vector_index="ann")
    for q in questions[:2]:
        search(ix, q, config=cfg, retriever="hybrid")
    prof = cProfile.Profile()
    for q in questions:
        prof.enable()
        search(ix, q, config=cfg, retriever="hybrid")
        prof.disable()
    print(f"cProfile of {len(questions)} questions, search() hybrid with ANN vectors:")
    pstats.Stats(prof).sort_stats("cumulative").print_stats(40)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chunks", type=int, default=1_000_000)
    ap.add_argument("--dim", type=int, default=256)
    ap.add_argument("--recall-queries", type=int, default=100)
    ap.add_argument("--questions", type=Path, default=DATA / "sec-10q" / "qna_data.csv")
    ap.add_argument("--hybrid-questions", type=int, default=50, help="sec-10q questions timed")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--workdir", type=Path, help="keep the built index here (default: a temp dir)")
    ap.add_argument("--profile", type=int, default=0, help="then cProfile this many hybrid questions")
    args = ap.parse_args()

    with args.questions.open(encoding="utf-8-sig", newline="") as fh:
        questions = [r["Question"] for r in csv.DictReader(fh) if r["Question"].strip()]
    questions = questions[: args.hybrid_questions]
    result: dict[str, Any] = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {
            "platform": platform.platform(), "python": platform.python_version(),
            "load_average": os.getloadavg(),
        },
        "settings": {
            "chunks": args.chunks, "dim": args.dim, "topics": 1024, "texts_per_subtopic": 16,
            "connectivity": vectorindex.CONNECTIVITY, "expansion_add": vectorindex.EXPANSION_ADD,
            "expansion_search": vectorindex.EXPANSION_SEARCH, "dtype": vectorindex.DTYPE,
            "oversample": OVERSAMPLE, "pool": 40, "k": 5,
        },
    }
    with tempfile.TemporaryDirectory(prefix="chunkdedup-ann-bench-") as scratch:
        work = args.workdir or Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        prep = prepare(work, args.chunks, args.dim)
        path = Path(prep.pop("path"))
        result["prepare"] = prep
        result["vector_folder"] = build_folder(path)
        with Index.open(path) as ix:
            result["recall"] = recall_rows(ix, topics_for(args.chunks, args.dim), args.recall_queries)
            result["rows"] = latency_rows(ix, questions, 2 * 8 * 40)
            if args.profile:
                profile(ix, questions[: args.profile])
        result["load_average_after"] = os.getloadavg()

    table = Table("row", "p50 ms", "p95 ms", "max ms", title=f"vector search at {args.chunks:,} chunks")
    rec = result["recall"]
    for row, v in [*((k, v) for k, v in rec.items() if isinstance(v, dict)), *result["rows"].items()]:
        table.add_row(row, f"{v['p50_ms']:.1f}", f"{v['p95_ms']:.1f}", f"{v['max_ms']:.1f}")
    console = Console()
    console.print(table)
    vf = result["vector_folder"]
    for key, value in rec.items():
        if key.startswith("recall_at_") and not key.endswith("_min"):
            low, n = rec[key + "_min"], rec["queries"]
            console.print(f"{key}: {value:.4f} (min {low:.1f}; {n} held-out vectors)")
    how = "rebuilt" if vf["rebuilt"] else "updated"
    console.print(f"folder {how} in {vf['seconds']:.1f} s, {vf['folder_bytes'] / 2**20:.0f} MiB")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    console.print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
