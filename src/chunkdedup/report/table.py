"""The before/after table as rows of strings, shared by the CLI and the benchmarks."""

from __future__ import annotations

from typing import Any

_ORDER = ("recall", "page_recall", "ndcg", "mrr", "answer_in_context", "evidence_answer",
          "distinct_sources", "duplication_rate", "context_tokens")


def _cell(v: Any, name: str) -> str:
    if v is None:
        return "n/a"
    return f"{v:,.1f}" if name.startswith("context_tokens") else f"{v:.4f}"


def comparison_rows(runs: dict[str, dict[str, Any]], ks: list[int]) -> list[tuple[str, str, str, str]]:
    """(metric, baseline, index, index - baseline) for every metric at every K, metric by metric."""
    rows = []
    for base in _ORDER:
        names = ["mrr"] if base == "mrr" else [f"{base}@{k}" for k in ks]
        for name in names:
            b, i = runs["baseline"].get(name), runs["index"].get(name)
            if b is None and i is None:
                continue
            if b is None or i is None:
                delta = "n/a"
            else:
                delta = f"{i - b:+,.1f}" if name.startswith("context_tokens") else f"{i - b:+.4f}"
            rows.append((name, _cell(b, name), _cell(i, name), delta))
    return rows


def funnel_rows(figures: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(stage, chunks, share of raw) for the funnel, then words, bytes."""
    rows = [(s["stage"], f"{s['chunks']:,}", f"{s['share_of_raw']:.1%}") for s in figures["funnel"]]
    wr, wc = figures["words_raw"], figures["words_after_boilerplate"]
    rows.append(("words after boilerplate", f"{wc:,} of {wr:,}", f"{wc / wr:.1%}" if wr else "n/a"))
    rows.append(("index bytes (baseline)", f"{figures['index_bytes']:,} ({figures['baseline_bytes']:,})", ""))
    return rows


__all__ = ["comparison_rows", "funnel_rows"]
