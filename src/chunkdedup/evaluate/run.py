"""``evaluate``: run a golden set three ways, with the same metrics, and keep every result.

* ``baseline``: the baseline index (no stripping, no dedup), no safety net, every version, ranked on
  chunk text alone (every ranking lever of ``[query]`` off): retrieval as it is without chunkdedup;
* ``ablation``: the same baseline index queried as the index is (its whole ``[query]`` config:
  document context, letter-digit parts, identity, specificity, figures, its retriever, its version
  policy and safety net): ``ablation - baseline`` is what the query gave;
* ``index``: the index with its own ``[query]`` config: ``index - ablation`` is what cleaning gave
  (stripping, with the running lines it adds to a document's context, and dedup), the query settings
  the same on both.

Each question is searched once per run, at the deepest cut-off; the metrics at every smaller K are
computed on the first K hits, which are the hits a search at K returns (:func:`search_depths`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from chunkdedup.config import QueryConfig
from chunkdedup.errors import ConfigError
from chunkdedup.evaluate.baseline import (
    cache_baseline_path,
    default_baseline_path,
    ensure_baseline,
    recorded_run,
)
from chunkdedup.evaluate.coverage import gap_warning, identity_gaps
from chunkdedup.evaluate.golden import DocResolver, Question, load_golden
from chunkdedup.evaluate.metrics import PairSimilarity, Result, Scores, aggregate, score_question
from chunkdedup.index import Index
from chunkdedup.ingestion.sequence import Progress
from chunkdedup.query.run import search

#: the cut-offs reported besides the requested k
EXTRA_KS = (1, 3, 10)
#: the runs, in the order reports show them
RUNS = ("baseline", "ablation", "index")
#: the differences between runs a report shows: (name, run, minus run)
GAINS = (("ranking", "ablation", "baseline"), ("cleaning", "index", "ablation"),
         ("total", "index", "baseline"))
_CLUSTER_BINS = ((1, 1), (2, 2), (3, 3), (4, 5), (6, 10), (11, 20), (21, None))


#: the per-question metrics a lever's table compares
LEVER_METRICS = ("recall@{k}", "page_recall@{k}", "ndcg@{k}", "mrr")


@dataclass(frozen=True, slots=True)
class LeverMove:
    """One question a lever moved: a metric under the recorded query settings and under the lever's."""

    question: str
    metric: str
    recorded: float
    lever: float


@dataclass(frozen=True, slots=True)
class Lever:
    """The query settings an evaluation tried in place of the recorded ones (``changed``: each key's
    recorded and tried value), the index run's metrics under the recorded settings, and every
    question whose :data:`LEVER_METRICS` moved."""

    changed: tuple[tuple[str, Any, Any], ...]
    recorded: dict[str, Any]
    moves: tuple[LeverMove, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "changed": {key: {"recorded": was, "lever": now} for key, was, now in self.changed},
            "recorded": self.recorded,
            "moves": [{"question": m.question, "metric": m.metric, "recorded": m.recorded, "lever": m.lever}
                      for m in self.moves],
        }


@dataclass(frozen=True, slots=True)
class Evaluation:
    """Metrics of the three runs (:data:`RUNS`), what ranking and cleaning each gave, per-question
    scores and results, index figures: ``to_json`` is report.json. ``lever``: where query settings
    other than the recorded ones were tried, what they moved."""

    k: int
    runs: dict[str, dict[str, Any]]
    queries: list[dict[str, Any]]
    figures: dict[str, Any]
    meta: dict[str, Any] = field(default_factory=dict)
    lever: Lever | None = None

    @property
    def gains(self) -> dict[str, dict[str, float]]:
        """Per :data:`GAINS` name, each metric's difference between its two runs."""
        return gains(self.runs)

    def summary_json(self) -> dict[str, Any]:
        """What ``eval --json`` prints: ``{"k", "runs": {"baseline", "ablation", "index"}, "gains":
        {"ranking", "cleaning", "total"}}``, and ``"lever"`` where one was tried."""
        out = {"k": self.k, "runs": self.runs, "gains": self.gains}
        return out if self.lever is None else {**out, "lever": self.lever.to_json()}

    def to_json(self) -> dict[str, Any]:
        out = {"k": self.k, "runs": self.runs, "gains": self.gains, "figures": self.figures,
               "meta": self.meta, "queries": self.queries}
        return out if self.lever is None else {**out, "lever": self.lever.to_json()}


@dataclass(frozen=True, slots=True)
class RunSetting:
    """How one run searches: on the index or its baseline, with which query config and options."""

    corpus: str
    config: QueryConfig
    versions: str
    safety_net: bool

    def describe(self) -> dict[str, Any]:
        """The setting as report.json's ``meta.settings`` keeps it."""
        c = self.config
        return {"corpus": self.corpus, "versions": self.versions, "safety_net": self.safety_net,
                "retriever": c.retriever, "context_weight": c.context_weight, "word_parts": c.word_parts,
                "identity_weight": c.identity_weight, "context_specificity": c.context_specificity,
                "context_b": c.context_b, "number_weight": c.number_weight}


def run_settings(qcfg: QueryConfig) -> dict[str, RunSetting]:
    """The three runs of an index whose query config is ``qcfg``: the baseline ranks on chunk text
    alone (every ranking lever off: no document context, no letter-digit parts, identity and
    specificity off, no figures boost; every version, no safety net); the ablation queries the
    baseline's chunks exactly as the index is queried (``qcfg``, its versions and safety net), so the
    index's difference from it is cleaning alone."""
    plain = replace(qcfg, context_weight=0.0, word_parts=False, identity_weight=1.0, context_specificity=0.0,
                    context_b=0.0, number_weight=0.0)
    return {
        "baseline": RunSetting("baseline", plain, "all", False),
        "ablation": RunSetting("baseline", qcfg, qcfg.versions, qcfg.safety_net),
        "index": RunSetting("index", qcfg, qcfg.versions, qcfg.safety_net),
    }


def search_depths(ks: Sequence[int], pool: int) -> dict[int, int]:
    """For each cut-off, the ``k`` of the search whose first hits are its results.

    A search's first K hits are the hits of a search at K as long as both are within the pool: the
    pool (``max(pool, k)``), so the candidates, does not depend on k, and the safety net picks hits
    one at a time, best first. So one search at the deepest cut-off within the pool serves all of
    them; a cut-off beyond the pool widens it and is searched on its own.

    Example:
        >>> search_depths([1, 3, 5, 10], 40)
        {1: 10, 3: 10, 5: 10, 10: 10}
        >>> search_depths([1, 3, 10, 50], 40)
        {1: 10, 3: 10, 10: 10, 50: 50}
    """
    within = max((kk for kk in ks if kk <= pool), default=0)
    return {kk: within if kk <= pool else kk for kk in ks}


def evaluate(
    golden: str | Path | Sequence[Question],
    index: str | Path,
    *,
    baseline: str | Path | None = None,
    k: int = 5,
    progress: Progress | None = None,
    query: QueryConfig | None = None,
) -> Evaluation:
    """Evaluate ``golden`` on ``index`` and on its baseline (built or reused at ``baseline``), the
    three runs of :data:`RUNS`; ``progress(stage, done, total)`` sees the baseline's build and the
    questions.

    ``query``: query settings to try in place of those the index recorded at ingest (a lever, made
    with :func:`chunkdedup.config.with_overrides`): the three runs use them, the index is also run
    under the recorded ones, and :attr:`Evaluation.lever` says which questions moved.

    Example:
        >>> ev = evaluate("golden.jsonl", "policies.sqlite", k=5)  # doctest: +SKIP
        >>> ev.runs["index"]["recall@5"], ev.runs["baseline"]["recall@5"]  # doctest: +SKIP
        >>> ev.gains["ranking"]["ndcg@5"], ev.gains["cleaning"]["ndcg@5"]  # doctest: +SKIP
    """
    if k < 1:
        raise ConfigError(f"k must be >= 1, got {k}")
    questions = load_golden(golden) if isinstance(golden, str | Path) else list(golden)
    if baseline is None:  # beside the index, or in the cache folder when the index's cannot be written
        base = ensure_baseline(index, default_baseline_path(index), progress=progress,
                               fallback=cache_baseline_path(index))
    else:
        base = ensure_baseline(index, baseline, progress=progress)
    tick = progress or (lambda stage, done, total: None)
    ks = sorted({k, *EXTRA_KS})
    similarity = PairSimilarity()
    with Index.open(index) as ix, Index.open(base.path) as bx:
        resolved = DocResolver(d.doc_id for d in ix.documents()).questions(questions)
        recorded_query = recorded_run(ix).config.query
        tried = query if query is not None and query != recorded_query else None
        settings = run_settings(tried or recorded_query)
        before = run_settings(recorded_query)["index"] if tried is not None else None
        recorded_scores: list[Scores] = []
        gaps = identity_gaps(ix.evaluation, resolved)
        views = {"baseline": bx, "index": ix}
        scores: dict[str, list[Scores]] = {name: [] for name in RUNS}
        queries: list[dict[str, Any]] = []
        for number, q in enumerate(resolved):
            tick("questions", number, len(resolved))
            entry: dict[str, Any] = {**q.to_json(), "metrics": {}, "results": {}}
            for name in RUNS:
                runs = question_runs(views[settings[name].corpus], q.question, ks, settings[name])
                s = score_question(runs, q, k, similarity)
                scores[name].append(s)
                entry["metrics"][name] = s.values
                entry["results"][name] = [_log_row(r) for r in runs[k]]
            if before is not None:
                was = question_runs(ix, q.question, ks, before)
                recorded_scores.append(score_question(was, q, k, similarity))
            queries.append(entry)
        tick("questions", len(resolved), len(resolved))
        figures = _figures(ix, bx)
    meta = {"golden": str(golden) if isinstance(golden, str | Path) else None, "index": str(index),
            "baseline": str(base.path), "baseline_status": base.reason,
            "corpus_fingerprint": base.fingerprint, "ks": ks,
            "settings": {name: s.describe() for name, s in settings.items()},
            "identity_gaps": [{"term": g.term, "questions": g.questions} for g in gaps],
            "warnings": [w for w in (base.warning, gap_warning(gaps, len(resolved))) if w]}
    lever = None
    if tried is not None:
        lever = _lever(recorded_query, tried, recorded_scores, scores["index"], [q.id for q in resolved], k)
    return Evaluation(k, {n: aggregate(s) for n, s in scores.items()}, queries, figures, meta, lever)


def recorded_query(index: str | Path) -> QueryConfig:
    """The query settings the index at ``index`` recorded at its last ingest (what :func:`evaluate`
    runs unless given others)."""
    with Index.open(index) as ix:
        return recorded_run(ix).config.query


def _lever(
    recorded: QueryConfig, tried: QueryConfig, before: Sequence[Scores], after: Sequence[Scores],
    ids: Sequence[str], k: int,
) -> Lever:
    """What trying ``tried`` in place of ``recorded`` moved: the settings that differ, the index run's
    metrics under the recorded ones, and each question whose :data:`LEVER_METRICS` changed."""
    changed = tuple(
        (name, getattr(recorded, name), getattr(tried, name))
        for name in recorded.__dataclass_fields__
        if getattr(recorded, name) != getattr(tried, name)
    )
    metrics = [m.format(k=k) for m in LEVER_METRICS]
    moves = []
    for qid, b, a in zip(ids, before, after, strict=True):
        for m in metrics:
            was, now = b.values.get(m), a.values.get(m)
            if was is not None and now is not None and was != now:
                moves.append(LeverMove(qid, m, float(was), float(now)))
    return Lever(changed, aggregate(list(before)), tuple(moves))


def question_runs(view: Index, text: str, ks: Sequence[int], setting: RunSetting) -> dict[int, list[Result]]:
    """One question's results at each cut-off of ``ks``: one search per depth of :func:`search_depths`."""
    depths = search_depths(ks, setting.config.pool)
    opts = {"versions": setting.versions, "safety_net": setting.safety_net}
    found = {d: retrieve_results(view, text, d, setting.config, opts) for d in sorted(set(depths.values()))}
    return {kk: found[depths[kk]][:kk] for kk in ks}


def gains(runs: dict[str, dict[str, Any]]) -> dict[str, dict[str, float]]:
    """For each of :data:`GAINS` whose two runs ``runs`` holds, every numeric metric's difference
    (the counts of questions left out)."""
    out: dict[str, dict[str, float]] = {}
    for name, a, b in GAINS:
        if a not in runs or b not in runs:
            continue
        out[name] = {m: va - vb for m, va in runs[a].items()
                     if m != "questions" and not m.endswith("_questions")
                     and isinstance(va, int | float) and isinstance(vb := runs[b].get(m), int | float)}
    return out


def retrieve_results(view: Index, text: str, k: int, cfg: QueryConfig, opts: dict[str, Any]) -> list[Result]:
    """One question's hits as metric results; ``opts`` holds ``versions`` and ``safety_net``."""
    hits = search(view, text, k=k, config=cfg, versions=opts["versions"], safety_net=opts["safety_net"]).hits
    return [Result(h.rank, h.id, h.score, h.text, tuple((c.doc, c.page) for c in h.citations)) for h in hits]


def _log_row(r: Result) -> dict[str, Any]:
    """One line of the per-result log; ``score`` is the float itself (JSON writes its repr)."""
    doc, page = r.citations[0] if r.citations else (None, None)
    return {"rank": r.rank, "id": r.id, "doc": doc, "page": page, "score": r.score,
            "citations": [list(c) for c in r.citations]}


def _words(view: Index, *, clean: bool) -> int:
    return sum(len(text.split()) for text in view.evaluation.page_texts(clean=clean))


def _figures(ix: Index, bx: Index) -> dict[str, Any]:
    """Index figures and the funnel: raw chunks (the baseline's), after boilerplate, exact, near,
    semantic; plus words before and after stripping, the top stripped blocks and cluster sizes."""
    st, bs = ix.stats(), bx.stats()
    merged = dict(ix.evaluation.relation_counts())
    after_near = st.after_exact - int(merged.get("near", 0))
    funnel: list[dict[str, Any]] = [
        {"stage": "raw chunks", "chunks": bs.raw_chunks},
        {"stage": "after boilerplate", "chunks": st.raw_chunks},
        {"stage": "after exact", "chunks": st.after_exact},
        {"stage": "after near", "chunks": after_near},
        {"stage": "after semantic", "chunks": after_near - int(merged.get("semantic", 0))},
    ]
    raw = max(1, funnel[0]["chunks"])
    for i, step in enumerate(funnel):
        step["share_of_raw"] = step["chunks"] / raw
        step["removed_share"] = (funnel[i - 1]["chunks"] - step["chunks"]) / raw if i else 0.0
    sizes = dict(ix.evaluation.cluster_sizes())
    clusters = []
    for lo, hi in _CLUSTER_BINS:
        n = sum(c for s, c in sizes.items() if s >= lo and (hi is None or s <= hi))
        label = str(lo) if lo == hi else (f"{lo}+" if hi is None else f"{lo}-{hi}")
        clusters.append({"sources": label, "canonicals": n})
    return {
        "documents": st.documents,
        "pages": st.pages,
        "raw_chunks": bs.raw_chunks,
        "after_boilerplate": st.raw_chunks,
        "after_exact": st.after_exact,
        "after_near": funnel[3]["chunks"],
        "after_semantic": funnel[4]["chunks"],
        "semantic_tier": bool(merged.get("semantic", 0)),
        "index_bytes": st.index_bytes,
        "baseline_bytes": bs.index_bytes,
        "words_raw": _words(ix, clean=False),
        "words_after_boilerplate": _words(ix, clean=True),
        "lines_stripped": {"running": st.lines_running, "chrome": st.lines_chrome},
        "variant_pairs": st.variant_pairs,
        "funnel": funnel,
        "boilerplate": [{"key": b.key, "example": b.example, "scope": b.scope, "documents": b.doc_count,
                         "pages": b.page_count} for b in ix.boilerplate(limit=10)],
        "clusters": clusters,
    }


__all__ = ["EXTRA_KS", "GAINS", "LEVER_METRICS", "RUNS", "Evaluation", "Lever", "LeverMove", "RunSetting",
           "evaluate", "gains", "question_runs", "recorded_query", "retrieve_results", "run_settings",
           "search_depths"]
