"""Which parts of a document's context help: ingest sec-10q (with and without its manifest) and
site-policy once per ``[retrieval] context`` variant, and evaluate each index with the shipped
``[query]`` defaults on its golden set (docugami's 195 questions; the hand-made site-policy set).

Each variant is an index of its own (the context is written at ingest). Metrics are the library's
(``evaluate_setting`` of ``sweep_query.py``: the same code ``chunkdedup eval`` uses).

Example:
    python benchmarks/context_parts.py --out benchmarks/results/context_parts.json
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from chunkdedup import ingest
from chunkdedup.config import CONTEXT_PARTS, Config, QueryConfig, RetrievalConfig
from chunkdedup.evaluate import DocResolver, Question, convert_docugami, load_golden
from chunkdedup.evaluate.metrics import PairSimilarity
from chunkdedup.index import Index
from sweep_query import DATA, REPO, evaluate_setting

COLUMNS = ("recall@1", "recall@5", "mrr", "ndcg@5", "evidence_answer@5")
VARIANTS: dict[str, tuple[str, ...]] = {
    "all parts (default)": CONTEXT_PARTS,
    "no running lines": ("metadata", "title", "filename"),
    "no title": ("metadata", "filename", "running"),
    "no file name": ("metadata", "title", "running"),
    "metadata only": ("metadata",),
    "no context": (),
}


Corpus = tuple[str, list[Path], Path | None, list[Question]]


def corpora(sec: Path, policy: Path, golden: Path) -> list[Corpus]:
    sec_q = convert_docugami(sec / "qna_data.csv", sec / "docs")
    return [
        ("sec10q + manifest", [sec / "docs"], sec / "manifest.jsonl", sec_q),
        ("sec10q, no manifest", [sec / "docs"], None, sec_q),
        ("site-policy", [policy], policy / "manifest.jsonl", load_golden(golden)),
    ]


def run(work: Path, sets: list[Corpus]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    similarity = PairSimilarity()
    for name, paths, manifest, questions in sets:
        for i, (variant, parts) in enumerate(VARIANTS.items()):
            index = work / f"{name.replace(' ', '_').replace(',', '')}-{i}.sqlite"
            ingest(paths, index, manifest=manifest, config=Config(retrieval=RetrievalConfig(context=parts)))
            with Index.open(index) as ix:
                resolved = DocResolver(d["doc"] for d in ix.documents()).questions(questions)
                metrics, _ = evaluate_setting(ix, resolved, QueryConfig(), 5, [1, 3, 5, 10], similarity)
            rows.append({"corpus": name, "variant": variant, "parts": list(parts), "metrics": metrics})
    return rows


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--sec", type=Path, default=DATA / "sec-10q")
    parser.add_argument("--policy", type=Path, default=DATA / "site-policy")
    golden = REPO / "benchmarks" / "golden" / "site-policy.jsonl"
    parser.add_argument("--policy-golden", type=Path, default=golden)
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "context_parts.json")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="context-parts-") as tmp:
        rows = run(Path(tmp), corpora(args.sec, args.policy, args.policy_golden))
    console = Console(highlight=False, width=150)
    table = Table("corpus", "context parts", *COLUMNS, title="document context: which parts help (k = 5)")
    for r in rows:
        m = r["metrics"]
        cells = ("-" if m.get(c) is None else f"{m[c]:.3f}" for c in COLUMNS)
        table.add_row(r["corpus"], r["variant"], *cells)
    console.print(table)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    data = {"machine": {"platform": platform.platform(), "python": platform.python_version()}, "rows": rows}
    args.out.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    console.print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
