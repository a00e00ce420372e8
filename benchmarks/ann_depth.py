"""How deep hybrid search must ask the vector side: ``search()`` hybrid's top ``k`` with the vector
retriever (ANN, through the index's vector folder) cut at each ``--depths`` against the full depth
(640 at pool 40: ``2 x 8 x pool``), on the golden questions of site-policy and sec-10q.

Each corpus is ingested once with the semantic tier on (``--embedder``, default ``static``) and its
vector folder built at any size; every question is then searched at full depth, with exact vectors
(the ANN path should give the same lists) and with the vector side cut.

Example:
    python benchmarks/ann_depth.py --work DIR
"""

from __future__ import annotations

import argparse
import csv
import json
import tempfile
from collections.abc import Callable
from pathlib import Path

from chunkdedup import Index, ingest, search
from chunkdedup.config import Config, QueryConfig, SemanticConfig
from chunkdedup.ingestion.sequence import build_vector_index
from chunkdedup.query.ann import AnnRetriever
from chunkdedup.query.retrieve import Scored
from chunkdedup.query.vectors import F32

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"


def golden_sets() -> dict[str, tuple[list[Path], Path | None, list[str]]]:
    """Each corpus's paths, manifest and questions."""
    with (REPO / "benchmarks" / "golden" / "site-policy.jsonl").open(encoding="utf-8") as fh:
        policy = [json.loads(line)["question"] for line in fh if line.strip()]
    with (DATA / "sec-10q" / "qna_data.csv").open(encoding="utf-8-sig", newline="") as fh:
        sec = [r["Question"] for r in csv.DictReader(fh) if r["Question"].strip()]
    return {
        "site-policy": ([DATA / "site-policy" / "current"], None, policy),
        "sec-10q": ([DATA / "sec-10q" / "docs"], DATA / "sec-10q" / "manifest.jsonl", sec),
    }


def cut_at(depth: int | None) -> Callable[[AnnRetriever, F32, int], list[Scored]]:
    """``AnnRetriever.nearest`` asking for at most ``depth`` (None: as asked)."""
    full = AnnRetriever.nearest

    def nearest(self: AnnRetriever, raw: F32, limit: int) -> list[Scored]:
        return full(self, raw, limit if depth is None else min(limit, depth))

    return nearest


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--embedder", default="static")
    ap.add_argument("--depths", default="20,40,80,160,320")
    ap.add_argument("-k", type=int, default=5)
    ap.add_argument("--work", type=Path, help="keep the indexes here (default: a temp dir)")
    args = ap.parse_args()
    depths = [int(d) for d in args.depths.split(",")]
    config = Config(semantic=SemanticConfig(enabled=True, embedder=args.embedder))
    full = AnnRetriever.nearest
    with tempfile.TemporaryDirectory(prefix="chunkdedup-ann-depth-") as scratch:
        work = args.work or Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        for name, (paths, manifest, questions) in golden_sets().items():
            index = work / f"{name}.sqlite"
            if not index.exists():
                ingest(paths, index, manifest=manifest, config=config)
            build_vector_index(index)
            with Index.open(index) as ix:

                def top(cfg: QueryConfig, ix: Index = ix, qs: list[str] = questions) -> list[list[str]]:
                    found = (search(ix, q, k=args.k, config=cfg, retriever="hybrid") for q in qs)
                    return [[h.id for h in r.hits] for r in found]

                exact = top(QueryConfig(vector_index="exact"))
                ann = top(QueryConfig(vector_index="ann"))
                print(f"{name}: {len(questions)} questions; ANN at full depth differs from exact in "
                      f"{sum(a != e for a, e in zip(ann, exact, strict=True))}")
                for depth in depths:
                    AnnRetriever.nearest = cut_at(depth)  # type: ignore[method-assign]
                    try:
                        cut = top(QueryConfig(vector_index="ann"))
                    finally:
                        AnnRetriever.nearest = full  # type: ignore[method-assign]
                    changed = sum(c != a for c, a in zip(cut, ann, strict=True))
                    print(f"{name}: vector side cut at {depth}: top {args.k} differs in {changed} questions")


if __name__ == "__main__":
    main()
