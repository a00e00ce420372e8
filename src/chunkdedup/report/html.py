"""report.html: one self-contained page (inline CSS and SVG, no script, no network) drawn from the
report.json data, so a report can be re-drawn from its JSON alone."""

from __future__ import annotations

from typing import Any

from chunkdedup.evaluate.run import GAINS, RUNS
from chunkdedup.report import svg
from chunkdedup.visible import html_text as escape

#: (metric, label, shown as a percentage, lower is better)
METRICS = (
    ("recall", "recall", True, False),
    ("page_recall", "page recall", True, False),
    ("ndcg", "nDCG", True, False),
    ("mrr", "MRR", False, False),
    ("answer_in_context", "answer in context", True, False),
    ("evidence_answer", "answer in a relevant hit", True, False),
    ("distinct_sources", "distinct sources", False, False),
    ("duplication_rate", "duplication rate", True, True),
    ("context_tokens", "context words", False, True),
)

#: each run's colour and legend
RUN_STYLE = {
    "baseline": (svg.BASE, "baseline: no stripping, no dedup, no safety net, all versions, chunk text alone"),
    "ablation": (svg.ABLATION, "ablation: the baseline's chunks, queried as the index is"),
    "index": (svg.INDEX, "index as configured"),
}
#: what each difference between two runs means
GAIN_NOTES = {
    "ranking": "ablation − baseline: document context, letter-digit parts, the retriever",
    "cleaning": "index − ablation: stripping (and the running lines it adds to a document's context), dedup, "
                "the safety net, the version policy",
    "total": "index − baseline",
}

CSS = """
:root { --ink:#1e293b; --muted:#64748b; --line:#e2e8f0; --bg:#f8fafc; --base:#94a3b8; --index:#2563eb;
        --win:#16a34a; --loss:#dc2626; }
* { box-sizing: border-box; }
body { margin:0; font:14px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;
       color:var(--ink); background:var(--bg); }
main { max-width:1100px; margin:0 auto; padding:28px 24px 48px; }
h1 { font-size:26px; margin:0 0 4px; } h2 { font-size:18px; margin:0 0 4px; }
.sub, .note { color:var(--muted); } .note { font-size:12.5px; margin:4px 0 10px; }
section { background:#fff; border:1px solid var(--line); border-radius:10px; padding:18px 20px;
          margin:18px 0; }
.cards { display:grid; grid-template-columns:repeat(auto-fit,minmax(150px,1fr)); gap:12px; margin:18px 0; }
.card { background:#fff; border:1px solid var(--line); border-radius:10px; padding:12px 14px; }
.card .name { color:var(--muted); font-size:12px; text-transform:uppercase; letter-spacing:.04em; }
.card .val { font-size:22px; font-weight:650; } .card .from { color:var(--muted); font-size:12px; }
.good { color:var(--win); } .bad { color:var(--loss); } .same { color:var(--muted); }
.grid { display:grid; grid-template-columns:repeat(auto-fit,minmax(240px,1fr)); gap:8px 16px; }
.legend span { display:inline-block; margin-right:14px; font-size:12.5px; color:var(--muted); }
.legend i { display:inline-block; width:11px; height:11px; border-radius:2px; margin-right:5px;
            vertical-align:-1px; }
table { width:100%; border-collapse:collapse; font-size:13px; }
th, td { text-align:left; padding:6px 8px; border-bottom:1px solid var(--line); vertical-align:top; }
th { color:var(--muted); font-weight:600; font-size:12px; }
td.num, th.num { text-align:right; font-variant-numeric:tabular-nums; white-space:nowrap; }
code { font:12px ui-monospace,SFMono-Regular,Menlo,monospace; background:#f1f5f9; padding:1px 4px;
       border-radius:4px; white-space:pre-wrap; }
.two { display:grid; grid-template-columns:1fr 1fr; gap:18px; }
@media (max-width:800px) { .two { display:block; } }
"""


def _fmt(v: Any, percent: bool) -> str:
    if v is None:
        return "n/a"
    if percent:
        return f"{v:.1%}"
    return f"{v:.3f}" if v < 10 else f"{v:,.0f}"


def _delta_class(b: Any, i: Any, lower_better: bool) -> str:
    if b is None or i is None or abs(i - b) < 1e-12:
        return "same"
    return "good" if (i < b) == lower_better else "bad"


def _signed(v: Any, percent: bool) -> str:
    if v is None:
        return "n/a"
    return f"{v * 100:+.1f} pts" if percent else (f"{v:+.3f}" if abs(v) < 10 else f"{v:+,.0f}")


def _cards(runs: dict[str, Any], k: int) -> str:
    out = []
    for key, label, pct, lower in METRICS:
        name = key if key == "mrr" else f"{key}@{k}"
        b, i = runs["baseline"].get(name), runs["index"].get(name)
        if b is None and i is None:
            continue
        cls = _delta_class(b, i, lower)
        arrow = "" if cls == "same" else ("▲" if (i or 0) > (b or 0) else "▼")
        at = "" if key == "mrr" else f" @{k}"
        split = ""
        if "ablation" in runs:
            a = runs["ablation"].get(name)
            ranking = None if a is None or b is None else a - b
            cleaning = None if a is None or i is None else i - a
            split = (f'<div class="from">ablation {_fmt(a, pct)} · ranking '
                     f'<span class="{_delta_class(b, a, lower)}">{_signed(ranking, pct)}</span> · cleaning '
                     f'<span class="{_delta_class(a, i, lower)}">{_signed(cleaning, pct)}</span></div>')
        out.append(f'<div class="card"><div class="name">{escape(label)}{at}</div>'
                   f'<div class="val {cls}">{_fmt(i, pct)} {arrow}</div>'
                   f'<div class="from">baseline {_fmt(b, pct)}</div>{split}</div>')
    return f'<div class="cards" id="cards">{"".join(out)}</div>'


def _metrics(runs: dict[str, Any], ks: list[int]) -> str:
    present = [r for r in RUNS if r in runs]
    charts = []
    for key, label, pct, lower in METRICS:
        kk = [0] if key == "mrr" else ks
        names = ["mrr"] if key == "mrr" else [f"{key}@{x}" for x in ks]
        series = [(r, RUN_STYLE[r][0], [runs[r].get(n) for n in names]) for r in present]
        if all(v is None for _, _, values in series for v in values):
            continue
        title = f"{label} ({'lower' if lower else 'higher'} is better)"
        charts.append(svg.metric_bars(title, kk, series, percent=pct))
    legend = "".join(f'<span><i style="background:{RUN_STYLE[r][0]}"></i>{escape(RUN_STYLE[r][1])}</span>'
                     for r in present)
    return f'<div class="legend">{legend}</div><div class="grid" id="metrics">{"".join(charts)}</div>'


def _gains(runs: dict[str, Any], queries: list[dict[str, Any]], k: int) -> str:
    """What ranking and what cleaning each gave: every metric at k in the three runs and the two
    differences, then per question how many each difference helped or hurt (by nDCG@k)."""
    pairs = [(g, a, b) for g, a, b in GAINS if a in runs and b in runs]
    head = "".join(f'<th class="num">{escape(r)}</th>' for r in RUNS if r in runs)
    head += "".join(f'<th class="num">{escape(g)}</th>' for g, _, _ in pairs)
    body = []
    for key, label, pct, lower in METRICS:
        name = key if key == "mrr" else f"{key}@{k}"
        values = {r: runs[r].get(name) for r in RUNS if r in runs}
        if all(v is None for v in values.values()):
            continue
        cells = "".join(f'<td class="num">{_fmt(v, pct)}</td>' for v in values.values())
        for _, a, b in pairs:
            va, vb = values[a], values[b]
            diff = None if va is None or vb is None else va - vb
            cells += f'<td class="num {_delta_class(vb, va, lower)}">{_signed(diff, pct)}</td>'
        body.append(f"<tr><td>{escape(label)}{'' if key == 'mrr' else f' @{k}'}</td>{cells}</tr>")
    metric = f"ndcg@{k}"
    counts = []
    for g, a, b in pairs:
        deltas = [q["metrics"][a].get(metric) - q["metrics"][b].get(metric) for q in queries
                  if a in q["metrics"] and b in q["metrics"]
                  and q["metrics"][a].get(metric) is not None and q["metrics"][b].get(metric) is not None]
        better = sum(1 for d in deltas if d > 0)
        worse = sum(1 for d in deltas if d < 0)
        counts.append(f"<li><b>{escape(g)}</b> ({escape(GAIN_NOTES[g])}): {better} question(s) better, "
                      f"{worse} worse, {len(deltas) - better - worse} unchanged (by {metric}).</li>")
    return (f'<table id="gains"><tr><th>metric</th>{head}</tr>{"".join(body)}</table>'
            f'<ul class="note">{"".join(counts)}</ul>')


def _wins_losses(queries: list[dict[str, Any]], k: int) -> str:
    metric = f"ndcg@{k}"
    rows = []
    for q in queries:
        b, i = q["metrics"]["baseline"].get(metric), q["metrics"]["index"].get(metric)
        if b is not None and i is not None:
            rows.append((q, b, i, i - b))
    rows.sort(key=lambda r: (-r[3], r[0]["id"]))
    chart = svg.diverging([(r[0]["id"], r[3]) for r in rows], f"Δ {metric} per question")
    wins = sum(1 for r in rows if r[3] > 0)
    losses = sum(1 for r in rows if r[3] < 0)
    summary = (f'<p class="note">{wins} question(s) better with the index, {losses} worse, '
               f"{len(rows) - wins - losses} unchanged (by {metric}).</p>")

    def table(items: list[tuple[dict[str, Any], float, float, float]], cls: str, tid: str) -> str:
        if not items:
            return f'<table id="{tid}"><tr><td class="note">none</td></tr></table>'
        body = "".join(
            f'<tr><td>{escape(str(q["id"]))}</td><td>{escape(q["question"])}</td>'
            f'<td class="num">{b:.2f} → {i:.2f}</td><td class="num {cls}">{d:+.2f}</td></tr>'
            for q, b, i, d in items)
        return (f'<table id="{tid}"><tr><th>id</th><th>question</th><th class="num">{metric}</th>'
                f'<th class="num">Δ</th></tr>{body}</table>')

    top_wins = [r for r in rows if r[3] > 0][:8]
    top_losses = sorted((r for r in rows if r[3] < 0), key=lambda r: (r[3], r[0]["id"]))[:8]
    return (f"{chart}{summary}<div class=\"two\"><div><h3>Biggest wins</h3>{table(top_wins, 'good', 'wins')}"
            f"</div><div><h3>Biggest losses</h3>{table(top_losses, 'bad', 'losses')}</div></div>")


def _boilerplate(blocks: list[dict[str, Any]]) -> str:
    if not blocks:
        return '<table id="boilerplate"><tr><td class="note">nothing was stripped</td></tr></table>'
    top = max(b["pages"] for b in blocks) or 1
    body = "".join(
        f'<tr><td><code>{escape(b["example"][:300])}</code></td><td>{escape(b["scope"])}</td>'
        f'<td class="num">{b["documents"]:,}</td><td class="num">{b["pages"]:,}</td>'
        f'<td style="width:160px"><svg class="spark" viewBox="0 0 100 10" width="100%" height="10">'
        f'<rect width="{100 * b["pages"] / top:.1f}" height="10" rx="2" fill="#0ea5e9"/></svg></td></tr>'
        for b in blocks)
    return (f'<table id="boilerplate"><tr><th>stripped block (first copy)</th><th>kind</th>'
            f'<th class="num">documents</th><th class="num">pages</th><th></th></tr>{body}</table>')


def render_html(data: dict[str, Any]) -> str:
    """The whole report page from report.json's data."""
    k, runs, fig, meta = data["k"], data["runs"], data["figures"], data.get("meta", {})
    ks = list(meta.get("ks") or [k])
    n = runs["index"].get("questions", len(data["queries"]))
    words_raw, words_clean = fig["words_raw"], fig["words_after_boilerplate"]
    stripped = (words_raw - words_clean) / words_raw if words_raw else 0.0
    semantic = "" if fig.get("semantic_tier") else (
        " No semantic tier ran, so “after semantic” equals “after near”.")
    used = runs["index"]
    counts = (f'answer in context uses {used.get("answer_in_context_questions", 0)} of {n} questions '
              f'(answers of at most 30 words); page recall uses {used.get("page_recall_questions", 0)}.')
    clusters = [(c["sources"], c["canonicals"]) for c in fig["clusters"]]
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>chunkdedup evaluation</title>",
        f"<style>{CSS}</style></head><body><main>",
        "<h1>Did dedup help retrieval?</h1>",
        f'<p class="sub">{n} golden questions · k = {k} · index <code>{escape(str(meta.get("index", "")))}'
        f'</code> vs baseline <code>{escape(str(meta.get("baseline", "")))}</code> '
        f'({escape(str(meta.get("baseline_status", "")))})</p>',
        _cards(runs, k),
        '<section><h2>Chunk funnel</h2><p class="note">Raw chunks are the baseline’s (no stripping); each '
        f"later bar is what is left after that stage. Stripping removed {stripped:.1%} of the words "
        f"({words_raw - words_clean:,} of {words_raw:,}).{semantic} Index {fig['index_bytes']:,} bytes, "
        f"baseline {fig['baseline_bytes']:,} bytes; {fig['documents']:,} documents, {fig['pages']:,} pages."
        f"</p>{svg.funnel(fig['funnel'])}</section>",
        *([f'<section><h2>What ranking and what cleaning gave</h2><p class="note">The ablation run '
           "searches the baseline’s chunks (nothing stripped or merged) with the index’s query settings "
           "(its ranking, version policy and safety net), so what the query and what cleaning gave each have "
           f"their own column (k = {k}).</p>"
           f"{_gains(runs, data['queries'], k)}</section>"] if "ablation" in runs else []),
        f'<section><h2>Before and after, per metric</h2><p class="note">{counts}</p>{_metrics(runs, ks)}'
        "</section>",
        f"<section><h2>Per-question wins and losses</h2>{_wins_losses(data['queries'], k)}</section>",
        '<section><h2>Top stripped boilerplate</h2><p class="note">Running headers/footers (per document) '
        f"and corpus chrome, most widespread first.</p>{_boilerplate(fig['boilerplate'])}</section>",
        '<section><h2>Cluster sizes</h2><p class="note">Canonical chunks by how many source chunks they '
        "hold (heights on a log scale; counts printed).</p>"
        f"{svg.histogram(clusters, 'clusters', 'Cluster-size distribution')}</section>",
        "</main></body></html>",
    ]
    return "\n".join(parts)


__all__ = ["METRICS", "render_html"]
