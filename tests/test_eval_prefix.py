"""eval searches once per question and run: the metrics at every K equal a search at each K; the
ablation run ranks the baseline's chunks as the index ranks them; reports show ranking and cleaning."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from pathlib import Path

import pytest

from chunkdedup import ingest
from chunkdedup.config import Config, QueryConfig
from chunkdedup.evaluate import evaluate
from chunkdedup.evaluate.golden import DocResolver, load_golden
from chunkdedup.evaluate.metrics import PairSimilarity, score_question
from chunkdedup.evaluate.run import (
    RUNS,
    Evaluation,
    gains,
    recorded_run,
    retrieve_results,
    run_settings,
    search_depths,
)
from chunkdedup.index import Index
from chunkdedup.report import render_html
from chunkdedup.report.table import comparison_columns, comparison_rows

REPO = Path(__file__).resolve().parents[1]
POLICY_GOLDEN = REPO / "benchmarks" / "golden" / "site-policy.jsonl"
#: the index, its baseline and their evaluation
Run = tuple[Path, Path, Evaluation]


def test_search_depths_one_search_within_the_pool_one_per_cutoff_beyond() -> None:
    assert search_depths([1, 3, 5, 10], 40) == {1: 10, 3: 10, 5: 10, 10: 10}
    assert search_depths([1, 3, 10, 60], 40) == {1: 10, 3: 10, 10: 10, 60: 60}
    assert search_depths([40], 40) == {40: 40}
    assert search_depths([50, 60], 40) == {50: 50, 60: 60}


def test_the_baseline_turns_every_ranking_lever_off_the_ablation_keeps_them() -> None:
    qcfg = QueryConfig(context_weight=3.0, word_parts=True, identity_weight=0.25, context_specificity=1.0,
                       context_b=0.75, number_weight=20.0, mmr_lambda=0.7, versions="label")
    settings = run_settings(qcfg)
    base = settings["baseline"].config
    levers = ("context_weight", "word_parts", "identity_weight", "context_specificity", "context_b",
              "number_weight")
    assert [getattr(base, name) for name in levers] == [0.0, False, 1.0, 0.0, 0.0, 0.0]
    assert replace(base, **{name: getattr(qcfg, name) for name in levers}) == qcfg  # nothing else moved
    assert settings["ablation"].config == qcfg and settings["index"].config == qcfg
    assert settings["baseline"].describe()["number_weight"] == 0.0
    assert settings["ablation"].describe()["number_weight"] == 20.0
    assert (settings["baseline"].versions, settings["ablation"].versions, settings["index"].versions) == \
        ("all", "label", "label")
    assert (settings["baseline"].safety_net, settings["ablation"].safety_net) == (False, qcfg.safety_net)


@pytest.fixture(scope="module")
def policy_eval(policy_index: Path, tmp_path_factory: pytest.TempPathFactory) -> Run:
    base = tmp_path_factory.mktemp("policy-eval") / "policy.baseline.sqlite"
    return policy_index, base, evaluate(POLICY_GOLDEN, policy_index, baseline=base, k=5)


def test_metrics_at_every_k_equal_a_search_at_each_k(policy_eval: Run) -> None:
    """The prefix of one deep search is what a search at each K returns: every question's metrics
    and its logged results, in all three runs, on a real index (site-policy with its manifest)."""
    index, base, ev = policy_eval
    ks = ev.meta["ks"]
    assert ks == [1, 3, 5, 10]
    similarity = PairSimilarity()
    with Index.open(index) as ix, Index.open(base) as bx:
        settings = run_settings(recorded_run(ix).config.query)
        questions = DocResolver(d["doc"] for d in ix.documents()).questions(load_golden(POLICY_GOLDEN))
        views = {"index": ix, "baseline": bx}
        for q, entry in zip(questions, ev.queries, strict=True):
            for name in RUNS:
                s = settings[name]
                opts = {"versions": s.versions, "safety_net": s.safety_net}
                each = {kk: retrieve_results(views[s.corpus], q.question, kk, s.config, opts) for kk in ks}
                want = score_question(each, q, ev.k, similarity).values
                assert entry["metrics"][name] == want, (name, q.id)
                assert [r["id"] for r in entry["results"][name]] == [r.id for r in each[ev.k]], (name, q.id)
                assert [r["score"] for r in entry["results"][name]] == [r.score for r in each[ev.k]]


def test_the_ablation_ranks_the_baseline_as_the_index_does(policy_eval: Run) -> None:
    _, base, ev = policy_eval
    settings = ev.meta["settings"]
    assert settings["ablation"]["corpus"] == "baseline" and settings["baseline"]["corpus"] == "baseline"
    # queried as the index is: its version policy and safety net too, so the difference is cleaning alone
    assert settings["ablation"]["versions"] == settings["index"]["versions"]
    assert settings["ablation"]["safety_net"] == settings["index"]["safety_net"] is True
    assert settings["ablation"]["context_weight"] == settings["index"]["context_weight"] > 0
    assert settings["baseline"]["context_weight"] == 0.0
    assert settings["baseline"]["number_weight"] == 0.0
    assert settings["ablation"]["number_weight"] == settings["index"]["number_weight"] > 0
    with Index.open(base) as bx:
        ids = {r["id"] for q in ev.queries for r in q["results"]["ablation"]}
        canonical = {row["id"] for row in bx.export()}
    assert ids <= canonical  # the ablation's hits are the baseline index's chunks
    # context ranks other chunks first for some questions: the two runs are not the same run
    moved = [q["id"] for q in ev.queries
             if [r["id"] for r in q["results"]["ablation"]] != [r["id"] for r in q["results"]["baseline"]]]
    assert moved


def test_gains_are_the_differences_between_runs(policy_eval: Run) -> None:
    _, _, ev = policy_eval
    g = ev.summary_json()["gains"]
    assert set(g) == {"ranking", "cleaning", "total"}
    runs = ev.runs
    for metric in ("recall@5", "ndcg@5", "mrr", "duplication_rate@5", "context_tokens@5"):
        assert g["ranking"][metric] == pytest.approx(runs["ablation"][metric] - runs["baseline"][metric])
        assert g["cleaning"][metric] == pytest.approx(runs["index"][metric] - runs["ablation"][metric])
        assert g["total"][metric] == pytest.approx(g["ranking"][metric] + g["cleaning"][metric])
    assert "questions" not in g["total"]
    assert gains({"baseline": runs["baseline"], "index": runs["index"]}).keys() == {"total"}


def test_table_and_html_show_ranking_and_cleaning(policy_eval: Run) -> None:
    _, _, ev = policy_eval
    data = json.loads(json.dumps(ev.to_json()))
    assert comparison_columns(data["runs"]) == (
        "metric", "baseline", "ablation", "index", "ranking", "cleaning", "total")
    rows = {r[0]: r for r in comparison_rows(data["runs"], data["meta"]["ks"])}
    b, a, i = (data["runs"][r]["ndcg@5"] for r in ("baseline", "ablation", "index"))
    assert rows["ndcg@5"] == ("ndcg@5", f"{b:.4f}", f"{a:.4f}", f"{i:.4f}", f"{a - b:+.4f}", f"{i - a:+.4f}",
                              f"{i - b:+.4f}")
    html = render_html(data)
    assert 'id="gains"' in html and "bar-ablation" in html and "What ranking and what cleaning gave" in html
    # a report written before the ablation run still draws, with the total alone
    old = {**data, "runs": {r: data["runs"][r] for r in ("baseline", "index")}}
    assert comparison_columns(old["runs"]) == ("metric", "baseline", "index", "total")
    assert 'id="gains"' not in render_html(old) and "bar-ablation" not in render_html(old)


def test_a_cutoff_beyond_the_pool_is_searched_on_its_own(tmp_path: Path) -> None:
    """With ``[query] pool = 6`` a search at k = 10 widens the pool, and the safety net then picks
    other hits first: eval searches 10 on its own, and every cut-off still equals a search at it."""
    rng = random.Random(7)

    def word() -> str:
        return "".join(rng.choice("bcdfghjklmnpqrstvwz") + rng.choice("aeiou") for _ in range(3))

    docs = tmp_path / "docs"
    docs.mkdir()
    base = [word() for _ in range(60)]
    for n in range(8):  # alike (every eighth word differs), so MMR prefers the others once they are in
        words = [word() if j % 8 == n % 5 else w for j, w in enumerate(base)]
        (docs / f"alike{n}.md").write_text("Refunds are paid after travel, refunds paid. " + " ".join(words))
    for n in range(4):  # each its own words, the question's words once: below the alike texts
        own = " ".join(word() for _ in range(60))
        (docs / f"other{n}.md").write_text(f"Refunds paid after travel. {own}")
    golden = tmp_path / "golden.jsonl"
    ask = "refunds paid travel"
    lines = [{"id": d, "question": ask, "relevant": [{"doc": d}]} for d in ("alike0", "other0")]
    golden.write_text("".join(json.dumps(line) + "\n" for line in lines))
    index, base_path = tmp_path / "ix.sqlite", tmp_path / "b.sqlite"
    ingest([docs], index, config=Config(query=QueryConfig(pool=6)))
    ev = evaluate(golden, index, baseline=base_path, k=5)
    similarity = PairSimilarity()
    with Index.open(index) as ix, Index.open(base_path) as bx:
        settings = run_settings(recorded_run(ix).config.query)
        s = settings["index"]
        opts = {"versions": s.versions, "safety_net": s.safety_net}
        five = [r.id for r in retrieve_results(ix, "refunds paid travel", 5, s.config, opts)]
        ten = [r.id for r in retrieve_results(ix, "refunds paid travel", 10, s.config, opts)]
        assert ten[:5] != five  # the premise: beyond the pool, a deeper search is no prefix
        questions = DocResolver(d["doc"] for d in ix.documents()).questions(load_golden(golden))
        views = {"index": ix, "baseline": bx}
        for q, entry in zip(questions, ev.queries, strict=True):
            for name in RUNS:
                s = settings[name]
                opts = {"versions": s.versions, "safety_net": s.safety_net}
                each = {kk: retrieve_results(views[s.corpus], q.question, kk, s.config, opts)
                        for kk in ev.meta["ks"]}
                want = score_question(each, q, ev.k, similarity).values
                assert entry["metrics"][name] == want, (name, q.id)
                assert [r["id"] for r in entry["results"][name]] == [r.id for r in each[ev.k]], (name, q.id)
