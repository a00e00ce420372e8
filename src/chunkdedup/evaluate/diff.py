"""``diff``: compare two evaluation reports (``report.json``) of one run (``index``, ``ablation`` or
``baseline``): per question, results that moved (rank and score deltas, matched by canonical id),
entered or left, and the metric changes; overall, every metric's change."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from chunkdedup.errors import InputError
from chunkdedup.evaluate.run import RUNS


def load_report(path: str | Path) -> dict[str, Any]:
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(
            f"report {p} does not exist: `chunkdedup eval ... --out DIR` writes DIR/report.json"
        ) from None
    except json.JSONDecodeError as e:
        raise InputError(f"report {p} is not JSON ({e}): give a report.json written by `chunkdedup eval`") \
            from None
    if not isinstance(data, dict) or "queries" not in data or "runs" not in data:
        raise InputError(f"{p} is not an evaluation report: give a report.json written by `chunkdedup eval`")
    return data


def _delta(a: Any, b: Any) -> float | None:
    return b - a if isinstance(a, int | float) and isinstance(b, int | float) else None


def diff_reports(a: dict[str, Any], b: dict[str, Any], run: str = "index") -> dict[str, Any]:
    """What changed from report ``a`` to report ``b`` for ``run``.

    Example:
        >>> diff_reports(load_report("old/report.json"), load_report("new/report.json"))  # doctest: +SKIP
    """
    if run not in RUNS:
        raise InputError(f"run must be one of {', '.join(RUNS)}, got {run!r}")
    ma, mb = a["runs"].get(run, {}), b["runs"].get(run, {})
    metrics = {name: {"a": ma.get(name), "b": mb.get(name), "delta": _delta(ma.get(name), mb.get(name))}
               for name in dict.fromkeys([*ma, *mb]) if ma.get(name) != mb.get(name)}
    qa = {q["id"]: q for q in a["queries"]}
    qb = {q["id"]: q for q in b["queries"]}
    queries = []
    for qid in dict.fromkeys([*qa, *qb]):
        if qid not in qa or qid not in qb:
            queries.append({"id": qid, "only_in": "b" if qid not in qa else "a"})
            continue
        change = _query_diff(qa[qid], qb[qid], run)
        if change["moved"] or change["entered"] or change["left"] or change["metrics"]:
            queries.append({"id": qid, "question": qb[qid].get("question"), **change})
    return {"run": run, "k": (a.get("k"), b.get("k")), "metrics": metrics, "queries": queries,
            "unchanged_queries": len(set(qa) & set(qb)) - sum(1 for q in queries if "only_in" not in q)}


def _query_diff(qa: dict[str, Any], qb: dict[str, Any], run: str) -> dict[str, Any]:
    ra = {r["id"]: r for r in qa["results"].get(run, [])}
    rb = {r["id"]: r for r in qb["results"].get(run, [])}
    moved = []
    for cid in ra.keys() & rb.keys():
        x, y = ra[cid], rb[cid]
        if x["rank"] != y["rank"] or x["score"] != y["score"]:
            moved.append({"id": cid, "doc": y.get("doc"), "page": y.get("page"), "rank_a": x["rank"],
                          "rank_b": y["rank"], "rank_delta": y["rank"] - x["rank"], "score_a": x["score"],
                          "score_b": y["score"], "score_delta": y["score"] - x["score"]})
    moved.sort(key=lambda m: (m["rank_b"], m["id"]))
    entered = sorted((rb[c] for c in rb.keys() - ra.keys()), key=lambda r: r["rank"])
    left = sorted((ra[c] for c in ra.keys() - rb.keys()), key=lambda r: r["rank"])
    va, vb = qa["metrics"].get(run, {}), qb["metrics"].get(run, {})
    metrics = {n: {"a": va.get(n), "b": vb.get(n), "delta": _delta(va.get(n), vb.get(n))}
               for n in dict.fromkeys([*va, *vb]) if va.get(n) != vb.get(n)}
    return {"moved": moved, "entered": entered, "left": left, "metrics": metrics}


def format_diff(diff: dict[str, Any]) -> str:
    """The diff as plain text, one line per change."""
    lines = [f"run: {diff['run']}  (k {diff['k'][0]} -> {diff['k'][1]})"]
    for name, m in diff["metrics"].items():
        lines.append(f"  {name:<24} {_num(m['a'])} -> {_num(m['b'])}  ({_signed(m['delta'])})")
    if not diff["metrics"]:
        lines.append("  metrics unchanged")
    for q in diff["queries"]:
        if "only_in" in q:
            lines.append(f"[{q['id']}] only in report {q['only_in']}")
            continue
        lines.append(f"[{q['id']}] {q['question']}")
        for m in q["moved"]:
            lines.append(f"  moved   {m['id']} {m['doc']} p.{m['page']}: rank {m['rank_a']} -> {m['rank_b']} "
                         f"({m['rank_delta']:+d}), score {m['score_a']!r} -> {m['score_b']!r} "
                         f"({m['score_delta']:+.6g})")
        for r in q["entered"]:
            lines.append(f"  entered {r['id']} {r['doc']} p.{r['page']} at rank {r['rank']}"
                         f" score {r['score']!r}")
        for r in q["left"]:
            lines.append(f"  left    {r['id']} {r['doc']} p.{r['page']} (was rank {r['rank']})")
        for name, m in q["metrics"].items():
            lines.append(f"  {name:<24} {_num(m['a'])} -> {_num(m['b'])}")
    lines.append(f"{diff['unchanged_queries']} question(s) unchanged")
    return "\n".join(lines)


def _num(v: Any) -> str:
    return "-" if v is None else (f"{v:.4g}" if isinstance(v, float) else str(v))


def _signed(v: float | None) -> str:
    return "n/a" if v is None else f"{v:+.4g}"


__all__ = ["diff_reports", "format_diff", "load_report"]
