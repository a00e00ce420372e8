"""Sweep the query safety net on one deduped index per corpus: which ``[query]`` defaults to ship.

Ingests ``../shared/data/sec-10q/docs`` (docugami's 195 questions, converted in place) and
``../shared/data/site-policy`` (with its manifest; golden set ``benchmarks/golden/site-policy.jsonl``)
once each, then evaluates a grid of :class:`QueryConfig` settings on the SAME index: safety net off;
``cap_per_doc`` in {1, 2, 3, 5, none} x ``mmr_lambda`` in {0.3, 0.5, 0.7, 0.9, 1.0}; ``dedup_chunks``
only (cap none, lambda 1.0, which is pure relevance order); plus two reference rows with
``versions = all`` (to separate the version policy from the net). Metrics are the library's own
(``chunkdedup.evaluate.metrics.score_question`` / ``aggregate``, the same code ``chunkdedup eval`` uses),
hits converted to metric results by ``chunkdedup.evaluate.run.retrieve_results``.

Each question is retrieved once at the largest cut-off and the shorter cut-offs are its prefixes: the
net is k-independent (dedup and cap do not look at k, MMR is greedy so its first K picks are the same
for any k >= K) and with the net off the hits are ``found[:k]``. The script checks this against
per-k retrieval (what ``evaluate`` does) for the shipped default and records the result.

``--levers`` instead measures the ranking levers of ``[query]`` (identity, context weighting, figures),
each turned off (or changed) against the shipped defaults, on sec-10q with its manifest, sec-10q without
it, site-policy and ntsb (``benchmarks/golden/ntsb.jsonl``): one index per corpus, every question
retrieved once at k = 10 per setting. Its extra column scores evidence_answer@5 with docugami's answers
cut before their ``SOURCE(S):`` line, whose digits (the 3 of "Q3") the metric would otherwise ask of a
hit too.

Example:
    python benchmarks/sweep_query.py --out benchmarks/results/sweep_query.json
    python benchmarks/sweep_query.py --levers --out benchmarks/results/levers.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import re
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from rich.console import Console
from rich.table import Table

from chunkdedup import ingest
from chunkdedup.config import QueryConfig
from chunkdedup.evaluate import DocResolver, Question, convert_docugami, load_golden
from chunkdedup.evaluate.baseline import recorded_run
from chunkdedup.evaluate.metrics import PairSimilarity, Scores, aggregate, score_question
from chunkdedup.evaluate.run import EXTRA_KS, retrieve_results
from chunkdedup.index import Index

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"
#: "no cap": the pool is 40 candidates, so any cap >= 40 never drops anything
NO_CAP = 1_000
CAPS: tuple[int, ...] = (1, 2, 3, 5, NO_CAP)
LAMBDAS: tuple[float, ...] = (0.3, 0.5, 0.7, 0.9, 1.0)
COLUMNS = ("recall@1", "recall@5", "ndcg@5", "mrr", "answer_in_context@5", "distinct_sources@5",
           "duplication_rate@5")


@dataclasses.dataclass(frozen=True, slots=True)
class Setting:
    """One row of the grid: a name, the QueryConfig overrides, and the versions policy."""

    name: str
    safety_net: bool
    cap_per_doc: int = 2
    mmr_lambda: float = 0.5
    versions: Literal["latest", "label", "all"] | None = None  # None: the index's recorded [query] versions

    def config(self, base: QueryConfig) -> QueryConfig:
        return dataclasses.replace(base, safety_net=self.safety_net, cap_per_doc=self.cap_per_doc,
                                   mmr_lambda=self.mmr_lambda, versions=self.versions or base.versions)

    def to_json(self, base: QueryConfig) -> dict[str, Any]:
        c = self.config(base)
        return {"safety_net": c.safety_net, "cap_per_doc": None if c.cap_per_doc >= NO_CAP else c.cap_per_doc,
                "mmr_lambda": c.mmr_lambda, "versions": c.versions, "pool": c.pool,
                "dedup_chunks": c.safety_net}


def _cap_name(cap: int) -> str:
    return "none" if cap >= NO_CAP else str(cap)


def grid() -> list[Setting]:
    rows = [Setting("net off", False)]
    rows += [Setting(f"cap {_cap_name(c)}, λ {lam}", True, c, lam) for c in CAPS for lam in LAMBDAS]
    rows.append(Setting("dedup_chunks only", True, NO_CAP, 1.0))
    rows.append(Setting("net off, versions=all", False, versions="all"))
    rows.append(Setting("cap 2, λ 0.5, versions=all", True, 2, 0.5, versions="all"))
    return rows


def evaluate_setting(
    ix: Index, questions: Sequence[Question], cfg: QueryConfig, k: int, ks: Sequence[int],
    similarity: PairSimilarity,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Aggregate metrics of ``cfg`` on ``ix`` and per-question values (retrieve at max(ks), slice)."""
    top = max(ks)
    opts = {"versions": cfg.versions, "safety_net": cfg.safety_net}
    scores: list[Scores] = []
    per_q: list[dict[str, Any]] = []
    for q in questions:
        results = retrieve_results(ix, q.question, top, cfg, opts)
        runs = {kk: results[:kk] for kk in ks}
        s = score_question(runs, q, k, similarity)
        scores.append(s)
        per_q.append({"id": q.id, **{c: s.values.get(c) for c in COLUMNS}})
    return aggregate(scores), per_q


def prefix_check(ix: Index, questions: Sequence[Question], cfg: QueryConfig, ks: Sequence[int]) -> bool:
    """True when per-k retrieval (what ``evaluate`` does) equals the prefixes of the deepest run."""
    opts = {"versions": cfg.versions, "safety_net": cfg.safety_net}
    top = max(ks)
    for q in questions:
        deep = [r.id for r in retrieve_results(ix, q.question, top, cfg, opts)]
        for kk in ks:
            if kk != top and [r.id for r in retrieve_results(ix, q.question, kk, cfg, opts)] != deep[:kk]:
                return False
    return True


def sweep(
    name: str, paths: Sequence[Path], questions: list[Question], work: Path, *, k: int,
    manifest: Path | None = None,
) -> dict[str, Any]:
    index = work / f"{name}.sqlite"
    t0 = time.perf_counter()
    ingest(list(paths), index, manifest=manifest)
    ingest_s = time.perf_counter() - t0
    ks = sorted({k, *EXTRA_KS})
    similarity = PairSimilarity()
    rows: list[dict[str, Any]] = []
    with Index.open(index) as ix:
        resolved = DocResolver(d["doc"] for d in ix.documents()).questions(questions)
        base = recorded_run(ix.store).config.query
        t1 = time.perf_counter()
        for s in grid():
            cfg = s.config(base)
            metrics, per_q = evaluate_setting(ix, resolved, cfg, k, ks, similarity)
            rows.append({"name": s.name, "config": s.to_json(base), "metrics": metrics, "questions": per_q})
        sweep_s = time.perf_counter() - t1
        check = prefix_check(ix, resolved, base, ks)
        stats = ix.stats()
    return {
        "corpus": name,
        "questions": len(resolved),
        "k": k,
        "ks": ks,
        "index": {key: stats.get(key) for key in ("documents", "pages", "raw_chunks", "after_exact")},
        "recorded_query_config": dataclasses.asdict(base),
        "prefix_check_default": check,
        "ingest_seconds": round(ingest_s, 2),
        "sweep_seconds": round(sweep_s, 2),
        "rows": rows,
    }


def _fmt(v: Any) -> str:
    return "-" if v is None else f"{v:.3f}"


def print_table(console: Console, result: dict[str, Any]) -> None:
    table = Table("setting", *COLUMNS, title=f"{result['corpus']}: {result['questions']} questions, "
                  f"one index, k = {result['k']}")
    for row in result["rows"]:
        table.add_row(row["name"], *(_fmt(row["metrics"].get(c)) for c in COLUMNS))
    console.print(table)
    aic = result["rows"][0]["metrics"].get("answer_in_context_questions")
    console.print(f"answer_in_context uses {aic} question(s); prefix check (per-k = prefix of k=10) for the "
                  f"recorded default: {result['prefix_check_default']}")


def recommend(results: Sequence[dict[str, Any]], max_dup: float) -> list[dict[str, Any]]:
    """Settings with duplication_rate@5 <= ``max_dup`` on every corpus, best mean of (nDCG@5 + recall@1)/2
    across corpora first (ties: more distinct sources)."""
    names = [r["name"] for r in results[0]["rows"]]
    out = []
    for n in names:
        per = [next(r for r in res["rows"] if r["name"] == n)["metrics"] for res in results]
        if any((m.get("duplication_rate@5") or 0.0) > max_dup for m in per):
            continue
        quality = sum((m["ndcg@5"] + m["recall@1"]) / 2 for m in per) / len(per)
        distinct = sum(m["distinct_sources@5"] for m in per) / len(per)
        out.append({"name": n, "quality": quality, "distinct_sources@5": distinct,
                    "per_corpus": {res["corpus"]: {c: m.get(c) for c in COLUMNS} for res, m in zip(
                        results, per, strict=True)}})
    out.sort(key=lambda r: (-round(r["quality"], 9), -r["distinct_sources@5"]))
    return out


#: evidence_answer@5 with docugami's answers cut before their SOURCE(S) line (see without_sources)
EVIDENCE_CUT = "evidence_answer@5, answer only"
LEVER_COLUMNS = ("recall@1", "recall@5", "ndcg@5", "mrr", "page_recall@5", "evidence_answer@5",
                 EVIDENCE_CUT, "answer_in_context@5")


#: the line docugami's answers end with ("SOURCE(S): 2022 Q3 AAPL.pdf"): its digits are no part of the answer
_SOURCES_LINE = re.compile(r"\s*SOURCE\(S\):.*\Z", re.DOTALL)


def without_sources(questions: Sequence[Question]) -> list[Question]:
    """The questions with each answer cut before its ``SOURCE(S):`` line (docugami's answers name the
    filing there, and the metric would ask a hit for the 3 of "Q3" too)."""
    return [dataclasses.replace(q, answers=tuple(_SOURCES_LINE.sub("", a) for a in q.answers))
            for q in questions]


def evaluate_levers(
    ix: Index, questions: Sequence[Question], cfg: QueryConfig, k: int, ks: Sequence[int],
    similarity: PairSimilarity,
) -> dict[str, Any]:
    """:func:`evaluate_setting`'s aggregate, plus evidence_answer@k with the answers cut before their
    ``SOURCE(S):`` line, from the same results (None where no answer has such a line)."""
    top = max(ks)
    opts = {"versions": cfg.versions, "safety_net": cfg.safety_net}
    cut = without_sources(questions)
    scores: list[Scores] = []
    cut_scores: list[Scores] = []
    for q, c in zip(questions, cut, strict=True):
        results = retrieve_results(ix, q.question, top, cfg, opts)
        runs = {kk: results[:kk] for kk in ks}
        scores.append(score_question(runs, q, k, similarity))
        cut_scores.append(score_question(runs, c, k, similarity))
    metrics = aggregate(scores)
    changed = any(q.answers != c.answers for q, c in zip(questions, cut, strict=True))
    metrics[EVIDENCE_CUT] = aggregate(cut_scores).get(f"evidence_answer@{k}") if changed else None
    return metrics


def lever_grid(shipped: QueryConfig) -> list[tuple[str, QueryConfig]]:
    """The shipped ``[query]`` defaults, each ranking lever off or changed, and all of them off."""
    rep = dataclasses.replace
    return [
        ("shipped defaults", shipped),
        ("1. identity off (identity_weight 1)", rep(shipped, identity_weight=1.0)),
        ("1. identity_weight 0", rep(shipped, identity_weight=0.0)),
        ("1. identity_weight 0.25", rep(shipped, identity_weight=0.25)),
        ("2. specificity off (context_specificity 0)", rep(shipped, context_specificity=0.0)),
        ("2. context_specificity 1", rep(shipped, context_specificity=1.0)),
        ("2. length normalisation (context_b 0.75)", rep(shipped, context_b=0.75)),
        ("4. figures off (number_weight 0)", rep(shipped, number_weight=0.0)),
        ("4. number_weight 5", rep(shipped, number_weight=5.0)),
        ("4. number_weight 20", rep(shipped, number_weight=20.0)),
        ("all three off (the previous ranking)",
         rep(shipped, identity_weight=1.0, context_specificity=0.0, context_b=0.0, number_weight=0.0)),
    ]


def levers(args: argparse.Namespace, console: Console) -> None:
    """Each ranking lever on and off, on every dev corpus (one index each)."""
    sec_docs = args.sec / "docs"
    sec_questions = convert_docugami(args.sec / "qna_data.csv", sec_docs)
    sets = [
        ("sec10q + manifest", [sec_docs], args.sec / "manifest.jsonl", sec_questions),
        ("sec10q, no manifest", [sec_docs], None, sec_questions),
        ("site-policy", [args.policy], args.policy / "manifest.jsonl", load_golden(args.policy_golden)),
        ("ntsb", [args.ntsb / "docs"], None, load_golden(args.ntsb_golden)),
    ]
    ks = sorted({args.k, *EXTRA_KS})
    similarity = PairSimilarity()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="sweep-levers-") as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        for i, (corpus, paths, manifest, questions) in enumerate(sets):
            index = work / f"levers-{i}.sqlite"
            if not index.exists():
                ingest(paths, index, manifest=manifest)
            with Index.open(index) as ix:
                resolved = DocResolver(d["doc"] for d in ix.documents()).questions(questions)
                for name, cfg in lever_grid(QueryConfig()):
                    t0 = time.perf_counter()
                    metrics = evaluate_levers(ix, resolved, cfg, args.k, ks, similarity)
                    rows.append({"corpus": corpus, "setting": name, "config": dataclasses.asdict(cfg),
                                 "metrics": metrics, "seconds": round(time.perf_counter() - t0, 2)})
    table = Table("corpus", "setting", *LEVER_COLUMNS, title=f"ranking levers, k = {args.k}")
    for r in rows:
        m = r["metrics"]
        table.add_row(r["corpus"], r["setting"], *(_fmt(m.get(c)) for c in LEVER_COLUMNS))
    console.print(table)
    data = {"machine": {"platform": platform.platform(), "python": platform.python_version()}, "rows": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    console.print(f"wrote {args.out}")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--sec", type=Path, default=DATA / "sec-10q", help="the sec-10q folder")
    parser.add_argument("--policy", type=Path, default=DATA / "site-policy", help="the site-policy folder")
    parser.add_argument("--policy-golden", type=Path,
                        default=REPO / "benchmarks" / "golden" / "site-policy.jsonl")
    parser.add_argument("--ntsb", type=Path, default=DATA / "ntsb", help="the ntsb folder (--levers)")
    parser.add_argument("--ntsb-golden", type=Path, default=REPO / "benchmarks" / "golden" / "ntsb.jsonl")
    parser.add_argument("-k", type=int, default=5)
    parser.add_argument("--max-dup", type=float, default=0.01,
                        help="duplication_rate@5 allowed for a recommended setting (default 0.01)")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "sweep_query.json")
    parser.add_argument("--work", type=Path, help="keep the indexes here (default: a temp dir)")
    parser.add_argument("--levers", action="store_true",
                        help="measure the ranking levers (identity, context weighting, figures) instead")
    args = parser.parse_args(argv)
    console = Console(highlight=False, width=150)
    if args.levers:
        levers(args, console)
        return
    sec_docs = args.sec / "docs"
    sec_questions = convert_docugami(args.sec / "qna_data.csv", sec_docs)
    with tempfile.TemporaryDirectory(prefix="sweep-query-") as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        results = [
            sweep("sec10q", [sec_docs], sec_questions, work, k=args.k),
            sweep("site-policy", [args.policy], load_golden(args.policy_golden), work, k=args.k,
                  manifest=args.policy / "manifest.jsonl"),
        ]
    for res in results:
        print_table(console, res)
    ranked = recommend(results, args.max_dup)
    table = Table("setting", "mean (nDCG@5 + recall@1)/2", "mean distinct_sources@5",
                  title=f"settings with duplication_rate@5 <= {args.max_dup} on both corpora, best first")
    for r in ranked[:10]:
        table.add_row(r["name"], f"{r['quality']:.4f}", f"{r['distinct_sources@5']:.2f}")
    console.print(table)
    data = {
        "machine": {"platform": platform.platform(), "python": platform.python_version()},
        "grid": {"cap_per_doc": [None if c >= NO_CAP else c for c in CAPS], "mmr_lambda": list(LAMBDAS),
                 "no_cap_value": NO_CAP},
        "corpora": results,
        "recommend": {"max_duplication_rate@5": args.max_dup, "ranked": ranked},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    console.print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
