"""A lever tried without a new ingest: ``evaluate(query=...)`` and ``chunkdedup eval --config/--set``
run the index with other query settings than it recorded and say which questions moved."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from chunkdedup.cli_eval import eval_cmd
from chunkdedup.config import with_overrides
from chunkdedup.evaluate.run import evaluate, recorded_query

GOLDEN = Path(__file__).resolve().parents[1] / "benchmarks" / "golden" / "site-policy.jsonl"


def test_a_lever_moves_questions_as_a_run_with_those_settings_scores_them(
    policy_index: Path, tmp_path: Path
) -> None:
    base = tmp_path / "base.sqlite"
    recorded = recorded_query(policy_index)
    plain = evaluate(GOLDEN, policy_index, baseline=base, k=5)
    assert plain.lever is None
    same = evaluate(GOLDEN, policy_index, baseline=base, k=5, query=recorded)
    assert same.lever is None and same.runs == plain.runs  # the recorded settings are no lever
    lever = with_overrides(recorded, {"context_weight": 0.0}, "test")
    tried = evaluate(GOLDEN, policy_index, baseline=base, k=5, query=lever)
    assert tried.lever is not None
    assert tried.lever.changed == (("context_weight", recorded.context_weight, 0.0),)
    assert tried.meta["settings"]["index"]["context_weight"] == 0.0
    assert tried.lever.recorded == plain.runs["index"]  # the recorded run, scored beside the lever
    assert tried.lever.moves  # the document context ranks some questions' sources first
    before = {q["id"]: q["metrics"]["index"] for q in plain.queries}
    after = {q["id"]: q["metrics"]["index"] for q in tried.queries}
    for move in tried.lever.moves:
        assert before[move.question][move.metric] == move.recorded != move.lever
        assert move.lever == after[move.question][move.metric]
    assert tried.to_json()["lever"]["changed"] == {"context_weight": {"recorded": 2.0, "lever": 0.0}}


def test_eval_set_and_config_try_query_settings_and_refuse_others(policy_index: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    base = ["--index", str(policy_index), "--baseline", str(tmp_path / "base.sqlite")]
    out = runner.invoke(eval_cmd, [str(GOLDEN), *base, "--set", "query.context_weight=0.0"])
    assert out.exit_code == 0, out.output
    assert "lever: context_weight 2.0 -> 0.0" in out.output and "moves" in out.output
    cfg = tmp_path / "lever.toml"
    cfg.write_text('[query]\nversions = "all"\n', encoding="utf-8")
    out = runner.invoke(eval_cmd, [str(GOLDEN), *base, "--config", str(cfg), "--json"])
    assert out.exit_code == 0, out.output
    assert '"versions"' in out.output and '"lever"' in out.output
    cfg.write_text("[near]\nthreshold = 0.9\n", encoding="utf-8")
    refused = runner.invoke(eval_cmd, [str(GOLDEN), *base, "--config", str(cfg)])
    assert refused.exit_code == 2 and "[near]" in refused.output and "ingest" in refused.output
    unknown = runner.invoke(eval_cmd, [str(GOLDEN), *base, "--set", "query.kk=1"])
    assert unknown.exit_code == 2 and "unknown key(s) ['kk']" in unknown.output
    bad = runner.invoke(eval_cmd, [str(GOLDEN), *base, "--set", "near.threshold=0.9"])
    assert bad.exit_code == 2 and "query.KEY=VALUE" in bad.output
