"""Hand-made inline SVG charts: no dependency, no script, no external resource.

Every chart is a ``<svg>`` with a ``viewBox`` (it scales to its container), an ``id`` or class the
tests look for, a ``<title>`` for screen readers, and numbers printed beside the marks.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from chunkdedup.visible import html_text as escape

BASE = "#94a3b8"
ABLATION = "#f59e0b"
INDEX = "#2563eb"
WIN = "#16a34a"
LOSS = "#dc2626"
INK = "#1e293b"
MUTED = "#64748b"
GRID = "#e2e8f0"
FUNNEL = ("#64748b", "#0ea5e9", "#2563eb", "#4f46e5", "#7c3aed")


def _svg(attrs: str, width: int, height: int, title: str, body: list[str]) -> str:
    return (f'<svg {attrs} viewBox="0 0 {width} {height}" width="100%" role="img" '
            f'xmlns="http://www.w3.org/2000/svg" preserveAspectRatio="xMinYMin meet">'
            f"<title>{escape(title)}</title>{''.join(body)}</svg>")


def _text(x: float, y: float, s: str, *, size: int = 12, anchor: str = "start", fill: str = INK,
          weight: str = "normal", cls: str = "") -> str:
    c = f' class="{cls}"' if cls else ""
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" fill="{fill}" '
            f'font-weight="{weight}"{c}>{escape(s)}</text>')


def _rect(x: float, y: float, w: float, h: float, fill: str, cls: str = "", tip: str = "") -> str:
    c = f' class="{cls}"' if cls else ""
    t = f"<title>{escape(tip)}</title>" if tip else ""
    return (f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(w, 0.0):.1f}" height="{max(h, 0.0):.1f}" '
            f'rx="2" fill="{fill}"{c}>{t}</rect>')


def funnel(stages: Sequence[dict[str, object]]) -> str:
    """Horizontal bars, one per stage, width proportional to chunks, with the share removed."""
    width, left, row = 760, 150, 44
    height = row * len(stages) + 16
    top = max((int(str(s["chunks"])) for s in stages), default=1) or 1
    body = []
    for i, s in enumerate(stages):
        n = int(str(s["chunks"]))
        y = 8 + i * row
        w = (width - left - 250) * n / top
        body.append(_text(left - 10, y + 22, str(s["stage"]), anchor="end", size=13))
        body.append(_rect(left, y + 4, w, row - 12, FUNNEL[i % len(FUNNEL)], "funnel-bar",
                          f"{s['stage']}: {n:,} chunks"))
        label = f"{n:,}  ({float(str(s['share_of_raw'])):.1%} of raw)"
        body.append(_text(left + w + 8, y + 22, label, size=12))
        removed = float(str(s.get("removed_share", 0.0)))
        if i and removed > 0:
            body.append(_text(width - 4, y + 22, f"−{removed:.1%}", anchor="end", size=12, fill=MUTED,
                              weight="bold"))
    return _svg('id="funnel" class="chart"', width, height, "Chunk funnel", body)


def metric_bars(name: str, ks: Sequence[int], series: Sequence[tuple[str, str, Sequence[float | None]]],
                *, percent: bool) -> str:
    """Each run's bar side by side for each K of one metric (its own scale); ``series`` holds
    (run, colour, one value per K), drawn in that order."""
    width, height, pad_l, pad_b, pad_t = 300, 190, 8, 28, 26
    top = max([v for _, _, values in series for v in values if v is not None] + [1e-9])
    if percent:
        top = max(top, 1.0) if top > 0.5 else top * 1.15
    else:
        top *= 1.15
    group = (width - pad_l * 2) / max(1, len(ks))
    bar = min(34.0 if len(series) < 3 else 24.0, group / (len(series) + 1))
    gap = 4 if len(series) < 3 else 2
    span = len(series) * bar + (len(series) - 1) * gap
    plot_h = height - pad_b - pad_t
    body = [_text(width / 2, 16, name, anchor="middle", size=13, weight="bold")]
    body.append(f'<line x1="{pad_l}" y1="{height - pad_b}" x2="{width - pad_l}" y2="{height - pad_b}" '
                f'stroke="{GRID}"/>')
    for i, kk in enumerate(ks):
        cx = pad_l + group * (i + 0.5)
        for j, (who, colour, values) in enumerate(series):
            v = values[i]
            x = cx - span / 2 + j * (bar + gap)
            if v is None:
                body.append(_text(x + bar / 2, height - pad_b - 4, "n/a", anchor="middle", size=10,
                                  fill=MUTED))
                continue
            h = plot_h * v / top
            label = f"{v:.0%}" if percent else (f"{v:.2f}" if v < 10 else f"{v:,.0f}")
            body.append(_rect(x, height - pad_b - h, bar, h, colour, f"bar-{who}", f"{who} @{kk}: {label}"))
            body.append(_text(x + bar / 2, height - pad_b - h - 4, label, anchor="middle",
                              size=10 if len(series) < 3 else 9, fill=MUTED))
        if len(ks) > 1:
            body.append(_text(cx, height - 10, f"@{kk}", anchor="middle", size=11, fill=MUTED))
    return _svg('class="chart metric-chart"', width, height, name, body)


def diverging(deltas: Sequence[tuple[str, float]], label: str) -> str:
    """One thin bar per question, sorted: up (green) where the index beats the baseline, down (red)
    where it loses; questions with no change sit on the axis."""
    width, height, pad = 760, 200, 30
    n = max(1, len(deltas))
    span = max([abs(d) for _, d in deltas] + [1e-9])
    step = (width - 2 * pad) / n
    mid = height / 2
    body = [f'<line x1="{pad}" y1="{mid}" x2="{width - pad}" y2="{mid}" stroke="{MUTED}" stroke-width="1"/>']
    for i, (qid, d) in enumerate(deltas):
        h = (mid - 14) * abs(d) / span
        colour = WIN if d > 0 else (LOSS if d < 0 else GRID)
        cls = "win" if d > 0 else ("loss" if d < 0 else "tie")
        y = mid - h if d > 0 else mid
        body.append(_rect(pad + i * step + step * 0.1, y, max(step * 0.8, 1.0), max(h, 1.0), colour, cls,
                          f"{qid}: {d:+.3f}"))
    body.append(_text(pad, 14, f"index better (+{span:.2f})", size=11, fill=WIN))
    body.append(_text(pad, height - 4, f"baseline better (−{span:.2f})", size=11, fill=LOSS))
    body.append(_text(width - pad, 14, label, anchor="end", size=11, fill=MUTED))
    return _svg('id="wins-losses" class="chart"', width, height, f"Per-question change in {label}", body)


def histogram(bins: Sequence[tuple[str, int]], chart_id: str, title: str, *, log: bool = True) -> str:
    """Vertical bars with their counts; ``log`` scales heights by log10(1 + n) so small bins show."""
    width, height, pad_b, pad_t = 760, 220, 34, 22

    def scale(v: int) -> float:
        return math.log10(1 + v) if log else float(v)

    top = max([scale(n) for _, n in bins] + [1e-9])
    step = (width - 20) / max(1, len(bins))
    body = []
    for i, (label, n) in enumerate(bins):
        h = (height - pad_b - pad_t) * scale(n) / top
        x = 10 + i * step + step * 0.15
        body.append(_rect(x, height - pad_b - h, step * 0.7, h, INDEX, "hist-bar", f"{label}: {n:,}"))
        body.append(_text(x + step * 0.35, height - pad_b - h - 5, f"{n:,}", anchor="middle", size=11))
        body.append(_text(x + step * 0.35, height - 12, label, anchor="middle", size=11, fill=MUTED))
    return _svg(f'id="{chart_id}" class="chart"', width, height, title, body)


__all__ = ["diverging", "funnel", "histogram", "metric_bars"]
