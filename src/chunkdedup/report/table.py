"""The comparison table (baseline, ablation, index; what ranking and what cleaning gave) as rows of
strings, shared by the CLI and the benchmarks."""

from __future__ import annotations

from typing import Any

from chunkdedup.evaluate.run import GAINS, RUNS

_ORDER = ("recall", "page_recall", "ndcg", "mrr", "answer_in_context", "evidence_answer",
          "distinct_sources", "duplication_rate", "context_tokens")


def _cell(v: Any, name: str) -> str:
    if v is None:
        return "n/a"
    return f"{v:,.1f}" if name.startswith("context_tokens") else f"{v:.4f}"


def _delta(a: Any, b: Any, name: str) -> str:
    if a is None or b is None:
        return "n/a"
    return f"{a - b:+,.1f}" if name.startswith("context_tokens") else f"{a - b:+.4f}"


def comparison_columns(runs: dict[str, dict[str, Any]]) -> tuple[str, ...]:
    """The header of :func:`comparison_rows`: metric, each run present, then the differences
    between them: ``ranking`` (ablation - baseline), ``cleaning`` (index - ablation) and ``total``
    (index - baseline); a report without an ablation run (an older report.json) shows the total."""
    present = [r for r in RUNS if r in runs]
    return ("metric", *present, *(g for g, a, b in GAINS if a in runs and b in runs))


def comparison_rows(runs: dict[str, dict[str, Any]], ks: list[int]) -> list[tuple[str, ...]]:
    """One row per metric at every K, metric by metric, under :func:`comparison_columns`."""
    present = [r for r in RUNS if r in runs]
    pairs = [(a, b) for _, a, b in GAINS if a in runs and b in runs]
    rows = []
    for base in _ORDER:
        names = ["mrr"] if base == "mrr" else [f"{base}@{k}" for k in ks]
        for name in names:
            values = {r: runs[r].get(name) for r in present}
            if all(v is None for v in values.values()):
                continue
            rows.append((name, *(_cell(values[r], name) for r in present),
                         *(_delta(values[a], values[b], name) for a, b in pairs)))
    return rows


def funnel_rows(figures: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(stage, chunks, share of raw) for the funnel, then words, bytes."""
    rows = [(s["stage"], f"{s['chunks']:,}", f"{s['share_of_raw']:.1%}") for s in figures["funnel"]]
    wr, wc = figures["words_raw"], figures["words_after_boilerplate"]
    rows.append(("words after boilerplate", f"{wc:,} of {wr:,}", f"{wc / wr:.1%}" if wr else "n/a"))
    rows.append(("index bytes (baseline)", f"{figures['index_bytes']:,} ({figures['baseline_bytes']:,})", ""))
    return rows


__all__ = ["comparison_columns", "comparison_rows", "funnel_rows"]
