"""Query latency (BM25 + safety net, N=40, k=5) on sec-10q and on a synthetic 1M-chunk index, and a
10k-query no-leak property run on the site-policy corpus.

Vector and hybrid retrieval are timed on the same indexes with vectors added straight into the
``embeddings`` table (``--embed-dim``, default 384 like all-MiniLM-L6-v2): the sec-10q groups embedded
with the deterministic ``hash:DIM`` embedder, the synthetic groups given random unit vectors (only the
latency matters there); the index records ``hash:DIM:0`` so questions embed in microseconds. The cost of
embedding a question with the real MiniLM is timed on its own row when the ``[embed]`` extra is there.

The synthetic index bypasses ingest for speed: a fresh index is created with
``Store.open(path, create=True)`` and documents, canonicals and sources rows are written directly with
``executemany`` (the FTS5 table is filled by the store's own triggers). Chunk texts are drawn from the
word frequencies of the sec-10q chunks, so the sec-10q questions hit posting lists of realistic shape.

Example:
    python benchmarks/query.py --chunks 1000000 --out benchmarks/results/query.json
"""

from __future__ import annotations

import argparse
import csv
import json
import platform
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from chunkdedup import Index, QueryConfig, ingest, search
from chunkdedup.embed import HashEmbedder, get_embedder
from chunkdedup.normalize import canonical_id, exact_key
from chunkdedup.query import Filter, Fts5Retriever, Retriever, Scored, TantivyRetriever, VectorRetriever
from chunkdedup.store import Store, textindex

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"
DEFAULT_OUT = REPO / "benchmarks" / "results" / "query.json"


def percentiles(times: Sequence[float]) -> dict[str, float]:
    ms = sorted(t * 1000 for t in times)
    return {
        "n": len(ms),
        "p50_ms": statistics.median(ms),
        "p95_ms": ms[min(len(ms) - 1, round(0.95 * (len(ms) - 1)))],
        "max_ms": ms[-1],
    }


def timed_queries(fn: Callable[[str], object], questions: Sequence[str], repeat: int) -> dict[str, float]:
    for q in questions[:2]:  # warm the page cache and the MinHash kernel
        fn(q)
    times = []
    for _ in range(repeat):
        for q in questions:
            start = time.perf_counter()
            fn(q)
            times.append(time.perf_counter() - start)
    return percentiles(times)


class AllWords(Fts5Retriever):
    """The naive formulation, for comparison: every question word OR-ed, stop words included."""

    def retrieve(self, text: str, limit: int) -> list[Scored]:
        words = [w.lower() for w in __import__("re").findall(r"[^\W_]+", text)]
        match = " OR ".join('"' + w.replace('"', '""') + '"' for w in dict.fromkeys(words))
        if not match:
            return []
        return self.search(match, limit)


def latency_rows(index: Path, questions: Sequence[str], repeat: int, naive: bool) -> dict[str, Any]:
    """FTS5 rows, and tantivy rows when the index has a tantivy folder, side by side."""
    cfg = QueryConfig(k=5, pool=40)
    rows: dict[str, Any] = {}
    with Index.open(index) as ix:
        fts = Fts5Retriever(ix.store)
        rows["FTS5: bm25 only (content words)"] = timed_queries(
            lambda q: fts.retrieve(q, 40), questions, repeat
        )
        if naive:
            every = AllWords(ix.store)
            rows["FTS5: bm25 only (all words OR-ed)"] = timed_queries(
                lambda q: every.retrieve(q, 40), questions, repeat
            )
        rows["second retrieval passes (bm25 search)"] = second_passes(ix, questions, cfg)
        engines: list[tuple[str, Retriever]] = [("FTS5", fts)]
        handle = ix.text_handle()
        if handle is not None:
            tan = TantivyRetriever(ix.store, handle)
            rows["tantivy: bm25 only (content words)"] = timed_queries(
                lambda q: tan.retrieve(q, 40), questions, repeat
            )
            engines.append(("tantivy", tan))
        for name, retriever in engines:
            rows[f"{name}: bm25 + filters/versions + safety net"] = timed_queries(
                lambda q, r=retriever: search(ix, q, config=cfg, retriever=r), questions, repeat
            )
            rows[f"{name}: bm25 + versions, safety net off"] = timed_queries(
                lambda q, r=retriever: search(ix, q, config=cfg, safety_net=False, retriever=r),
                questions,
                repeat,
            )
    return rows


def add_tantivy(index: Path) -> dict[str, float]:
    """Switch an index to the tantivy engine and build its folder: seconds and folder bytes."""
    start = time.perf_counter()
    with Store.open(index) as store, store.writer(30.0):
        textindex.set_engine(store, "tantivy")
        textindex.sync(store)
    folder = textindex.folder(index)
    size = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
    return {"seconds": time.perf_counter() - start, "folder_bytes": size}


def vector_rows(index: Path, questions: Sequence[str], repeat: int) -> dict[str, Any]:
    """Vector and hybrid rows on an index holding embeddings (the matrix cached after the first query)."""
    cfg = QueryConfig(k=5, pool=40)
    rows: dict[str, Any] = {}
    with Index.open(index) as ix:
        vr = VectorRetriever.for_index(ix.store)
        start = time.perf_counter()
        vr.retrieve(questions[0], 40)
        rows["first vector query (loads the matrix)"] = {"n": 1, "ms": (time.perf_counter() - start) * 1000}
        rows["vector only (exact cosine)"] = timed_queries(lambda q: vr.retrieve(q, 160), questions, repeat)
        rows["search(): vector + versions + safety net"] = timed_queries(
            lambda q: search(ix, q, config=cfg, retriever="vector"), questions, repeat
        )
        rows["search(): hybrid (RRF) + versions + safety net"] = timed_queries(
            lambda q: search(ix, q, config=cfg, retriever="hybrid"), questions, repeat
        )
    return rows


class _Counting:
    def __init__(self, inner: Fts5Retriever) -> None:
        self.inner = inner
        self.calls = 0

    def retrieve(self, text: str, limit: int) -> list[Scored]:
        self.calls += 1
        return self.inner.retrieve(text, limit)


def second_passes(ix: Index, questions: Sequence[str], cfg: QueryConfig) -> dict[str, float]:
    """How often the first (deeper) retrieval pass left the pool short, so retrieval ran again."""
    again = 0
    for q in questions:
        counting = _Counting(Fts5Retriever(ix.store))
        search(ix, q, config=cfg, retriever=counting)
        again += counting.calls > 1
    return {"n": len(questions), "queries_with_a_second_pass": again, "share": again / max(1, len(questions))}


def minilm_question_row(questions: Sequence[str]) -> dict[str, float] | None:
    try:
        model = get_embedder("minilm")
    except Exception:  # the [embed] extra is optional
        return None
    return timed_queries(lambda q: model.embed_batch([q]), questions, 1)


def add_vectors(index: Path, dim: int, *, random_vectors: bool, seed: int = 0) -> float:
    """Store a vector for every group (hash:DIM of its text, or random unit vectors) and record the
    embedder ``hash:DIM:0``. Returns seconds."""
    start = time.perf_counter()
    store = Store.open(index)
    conn = store.conn
    rng = np.random.default_rng(seed)
    embedder = HashEmbedder(dim)
    table = "groups" if conn.execute("SELECT 1 FROM sqlite_master WHERE name='groups'").fetchone() else None
    ids_sql = f"SELECT id, text FROM {table or 'canonicals'} ORDER BY id"
    rows = conn.execute(ids_sql).fetchall()
    for lo in range(0, len(rows), 20_000):
        part = rows[lo : lo + 20_000]
        if random_vectors:
            v = rng.standard_normal((len(part), dim)).astype(np.float32)
            v /= np.linalg.norm(v, axis=1, keepdims=True)
        else:
            v = embedder.embed_batch([t for _, t in part])
        vectors = np.asarray(v, dtype="<f4")
        with store.transaction():
            conn.executemany(
                "INSERT OR REPLACE INTO embeddings(group_id, vector) VALUES (?, ?)",
                [(gid, vectors[i].tobytes()) for i, (gid, _) in enumerate(part)],
            )
    with store.transaction():
        store.set_meta("embedder_name", embedder.name)
        store.set_meta("embedder_dim", str(dim))
    store.close()
    return time.perf_counter() - start


# -- the synthetic index ---------------------------------------------------------------------------


def word_model(index: Path) -> tuple[list[str], np.ndarray]:
    counts: Counter[str] = Counter()
    with Index.open(index) as ix:
        for text in (r.text for r in ix.records()):
            counts.update(text.split())
    words, freq = zip(*counts.most_common(), strict=True)
    p = np.array(freq, dtype=np.float64)
    return list(words), p / p.sum()


def build_synthetic(path: Path, n_chunks: int, words: list[str], p: np.ndarray, seed: int = 0) -> float:
    """Write ``n_chunks`` canonicals (one source each, 50 per document, 4 dated versions per family)."""
    start = time.perf_counter()
    rng = np.random.default_rng(seed)
    vocab = np.array(words, dtype=object)
    per_doc, batch = 50, 20_000
    store = Store.open(path, create=True)
    conn = store.conn
    conn.execute("PRAGMA synchronous = OFF")
    n_docs = -(-n_chunks // per_doc)
    dates = ["2022-01-01", "2023-01-01", "2024-01-01", "2025-01-01"]
    with store.transaction():
        conn.executemany(
            "INSERT INTO paths(path) VALUES (?)", [(f"/synthetic/d{d:07d}.txt",) for d in range(n_docs)]
        )
        conn.execute("INSERT INTO configs(hash) VALUES ('x')")  # chunked under a config: indexed
        conn.executemany(
            "INSERT INTO document_rows(doc_id, fkey, content_hash, unit, metadata, department, family,"
            " effective_date, n_pages, ckey, run_id)"
            " VALUES (?, (SELECT fkey FROM paths WHERE path=?), 'x', ?, ?, ?, ?, ?, 1,"
            " (SELECT ckey FROM configs WHERE hash = 'x'), 0)",
            [
                (
                    f"d{d:07d}",
                    f"/synthetic/d{d:07d}.txt",
                    f"family:f{d // 4}",
                    json.dumps(
                        {
                            "department": f"dept{d % 10}",
                            "family": f"f{d // 4}",
                            "effective_date": dates[d % 4],
                        }
                    ),
                    f"dept{d % 10}",
                    f"f{d // 4}",
                    dates[d % 4],
                )
                for d in range(n_docs)
            ],
        )
        # a file finds its document through the range of keys it was written in (file_docs)
        conn.execute("INSERT INTO file_docs(fkey, lo, hi) SELECT fkey, dkey, dkey FROM document_rows")
    for lo in range(0, n_chunks, batch):
        hi = min(n_chunks, lo + batch)
        lengths = rng.integers(60, 240, size=hi - lo)
        picks = rng.choice(len(vocab), size=int(lengths.sum()), p=p)
        texts, offset = [], 0
        for n in lengths:
            texts.append(" ".join(vocab[picks[offset : offset + n]]))
            offset += int(n)
        ids = [canonical_id(f"synthetic {i}") for i in range(lo, hi)]
        with store.transaction():
            src = [
                (f"d{i // per_doc:07d}", (i % per_doc) * 10_000, cid)
                for i, cid in zip(range(lo, hi), ids, strict=True)
            ]
            # each group leads its own cluster, whose canonical its row keeps (its text the group's);
            # rows name a document by its row's key
            conn.executemany(
                "INSERT INTO groups(id, text, n_sources, rep_dkey, rep_page, rep_start, cn, csig, crun)"
                " VALUES (?, ?, 1, (SELECT dkey FROM document_rows WHERE doc_id=?), 1, ?, 1, 'x', 0)",
                [(c, t, d, s) for (d, s, c), t in zip(src, texts, strict=True)],
            )
            conn.executemany(
                'INSERT INTO source_rows(dkey, page, start, "end", gid)'
                " SELECT d.dkey, 1, ?2, 0, g.gid FROM document_rows d, groups g"
                " WHERE d.doc_id=?1 AND g.id=?3",
                src,
            )
        print(f"  synthetic: {hi:,}/{n_chunks:,} chunks", file=sys.stderr, end="\r")
    conn.execute("INSERT INTO groups_fts(groups_fts) VALUES ('optimize')")
    store.close()
    print(file=sys.stderr)
    return time.perf_counter() - start


# -- the no-leak property run ----------------------------------------------------------------------


def oracle(conditions: Sequence[str], fields: dict[str, Any]) -> bool:
    """An independent reading of the rules: same key OR, different keys AND; numbers as numbers."""
    groups: dict[str, list[tuple[str, str]]] = {}
    for c in conditions:
        op = next(o for o in (">=", "<=", "=") if o in c)
        key, value = c.split(op, 1)
        groups.setdefault(key, []).append((op, value))
    for key, conds in groups.items():
        if fields.get(key) is None:
            return False
        actual = str(fields[key])
        ok = False
        for op, value in conds:
            if op == "=":
                ok |= actual == value
                continue
            try:
                a: Any = float(actual)
                b: Any = float(value)
            except ValueError:
                a, b = actual, value
            ok |= a >= b if op == ">=" else a <= b
        if not ok:
            return False
    return True


def leak_run(index: Path, n_queries: int, seed: int = 0) -> dict[str, Any]:
    rng = random.Random(seed)
    with Index.open(index) as ix:
        fields = {d["doc"]: {"doc": d["doc"], **d["metadata"]} for d in ix.documents()}
        sources = {r.id: {s.doc for s in r.sources} for r in ix.records()}
        # words of every distinct text, near-merged copies included (their words are searchable too)
        words = sorted({w for (t,) in ix.store.conn.execute("SELECT text FROM groups") for w in t.split()})
        pages = "SELECT doc_id, group_concat(COALESCE(clean_text, raw_text), ' ') FROM pages GROUP BY doc_id"
        content = {d: exact_key(t or "") for d, t in ix.store.conn.execute(pages)}
        values: dict[str, list[str]] = {}
        for f in fields.values():
            for k, v in f.items():
                if v is not None and len(str(v)) < 60:
                    values.setdefault(k, []).append(str(v))
        keys = sorted(values)
        hits = leaks = filtered_out = 0
        start = time.perf_counter()
        for _ in range(n_queries):
            conditions = []
            for _ in range(rng.randint(1, 3)):
                key = rng.choice(keys)
                conditions.append(f"{key}{rng.choice(['=', '=', '>=', '<='])}{rng.choice(values[key])}")
            text = " ".join(rng.choice(words) for _ in range(rng.randint(1, 6)))
            allowed = {d for d, f in fields.items() if oracle(conditions, f)}
            result = search(
                ix, text, where=Filter.parse(conditions), versions=rng.choice(["latest", "label", "all"])
            )  # type: ignore[arg-type]
            hits += len(result.hits)
            filtered_out += not allowed
            for h in result.hits:
                cited = {c.doc for c in h.citations}
                # the shown text must be the first cited document's own copy
                shown_elsewhere = bool(cited) and exact_key(h.text) not in content[h.citations[0].doc]
                if not cited or cited - allowed or not sources[h.id] & allowed or shown_elsewhere:
                    leaks += 1
            for d in result.dropped:
                if not sources[d.id] & allowed:
                    leaks += 1
        seconds = time.perf_counter() - start
    return {
        "queries": n_queries,
        "hits": hits,
        "leaks": leaks,
        "queries_allowing_nothing": filtered_out,
        "seconds": seconds,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sec", type=Path, default=DATA / "sec-10q" / "docs")
    ap.add_argument("--questions", type=Path, default=DATA / "sec-10q" / "qna_data.csv")
    ap.add_argument("--policy", type=Path, default=DATA / "site-policy")
    ap.add_argument("--chunks", type=int, default=1_000_000, help="synthetic index size (0: skip)")
    ap.add_argument("--leak-queries", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3, help="passes over the questions per row")
    ap.add_argument(
        "--synthetic-questions", type=int, default=25, help="questions timed on the synthetic index"
    )
    ap.add_argument("--embed-dim", type=int, default=384, help="vector size for the vector rows (0: skip)")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--workdir", type=Path, help="keep the built indexes here (default: a temp dir)")
    args = ap.parse_args()

    with args.questions.open(encoding="utf-8-sig", newline="") as fh:
        questions = [r["Question"] for r in csv.DictReader(fh) if r["Question"].strip()]
    result: dict[str, Any] = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"platform": platform.platform(), "python": platform.python_version()},
        "questions": len(questions),
        "settings": {"pool": 40, "k": 5},
    }
    with tempfile.TemporaryDirectory(prefix="chunkdedup-query-bench-") as scratch:
        tmp = args.workdir or Path(scratch)
        tmp.mkdir(parents=True, exist_ok=True)
        sec = Path(tmp) / "sec.sqlite"
        if not sec.exists():
            ingest([args.sec], sec)
        with Index.open(sec) as ix:
            n_sec = ix.stats()["canonical_chunks"]
        plain = Path(tmp) / "sec-fts5.sqlite"  # the word model and the vector rows use an FTS5-only copy
        shutil.copyfile(sec, plain)
        sec_text = add_tantivy(sec)
        result["sec10q"] = {
            "canonical_chunks": n_sec,
            "tantivy_build": sec_text,
            "rows": latency_rows(sec, questions, args.repeat, True),
        }
        if args.embed_dim:
            sec_vec = Path(tmp) / f"sec-hash{args.embed_dim}.sqlite"
            if not sec_vec.exists():
                shutil.copyfile(plain, sec_vec)
                add_vectors(sec_vec, args.embed_dim, random_vectors=False)
            result["sec10q"]["rows"].update(vector_rows(sec_vec, questions, args.repeat))
            minilm = minilm_question_row(questions)
            if minilm is not None:
                result["sec10q"]["rows"]["MiniLM: embedding the question alone"] = minilm
        if args.chunks:
            words, p = word_model(plain)
            synth = Path(tmp) / f"synthetic-{args.chunks}.sqlite"
            build = 0.0 if synth.exists() else build_synthetic(synth, args.chunks, words, p)
            with Index.open(synth) as check:
                has_folder = check.text_handle() is not None
            text_build = None if has_folder else add_tantivy(synth)
            result["synthetic"] = {
                "canonical_chunks": args.chunks,
                "build_seconds": build,
                "tantivy_build": text_build,
                "index_bytes": synth.stat().st_size,
                "questions": len(questions[: args.synthetic_questions]),
                "rows": latency_rows(synth, questions[: args.synthetic_questions], 1, True),
            }
            if args.embed_dim:
                with Index.open(synth) as check:
                    embedded = check.store.meta("embedder_name") is not None
                if not embedded:
                    result["synthetic"]["vector_build_seconds"] = add_vectors(
                        synth, args.embed_dim, random_vectors=True
                    )
                result["synthetic"]["rows"].update(
                    vector_rows(synth, questions[: args.synthetic_questions], 1)
                )
        policy = Path(tmp) / "policy.sqlite"
        if not policy.exists():
            ingest([args.policy], policy, manifest=args.policy / "manifest.jsonl")
        result["no_leak"] = leak_run(policy, args.leak_queries)
        policy_tantivy = Path(tmp) / "policy-tantivy.sqlite"
        if not policy_tantivy.exists():
            manifest = args.policy / "manifest.jsonl"
            ingest([args.policy], policy_tantivy, manifest=manifest, text_engine="tantivy")
        result["no_leak_tantivy"] = leak_run(policy_tantivy, args.leak_queries)

    table = Table("index", "chunks", "row", "p50 ms", "p95 ms", "max ms", title="query latency (N=40, k=5)")
    for name in ("sec10q", "synthetic"):
        if name in result:
            for row, v in result[name]["rows"].items():
                if "p50_ms" in v:
                    cells = [f"{v['p50_ms']:.1f}", f"{v['p95_ms']:.1f}", f"{v['max_ms']:.1f}"]
                elif "ms" in v:
                    cells = [f"{v['ms']:.1f}", "", ""]
                else:
                    cells = [f"{v['queries_with_a_second_pass']}/{v['n']}", "", ""]
                table.add_row(name, f"{result[name]['canonical_chunks']:,}", row, *cells)
    console = Console()
    console.print(table)
    for key, engine in (("no_leak", "FTS5"), ("no_leak_tantivy", "tantivy")):
        leak = result[key]
        console.print(
            f"no-leak run ({engine}): {leak['queries']:,} random filtered queries on site-policy, "
            f"{leak['hits']:,} hits, {leak['leaks']} leaks ({leak['seconds']:.1f} s)"
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    console.print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
