"""audit's cosine view: pairs marked by the cosine of stored vectors, the semantic calibration from the
index's real data, the CLI table, and the message when the index holds no embeddings."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from chunkdedup import ingest
from chunkdedup.cli_eval import audit_cmd
from chunkdedup.config import Config, SemanticConfig
from chunkdedup.embed import HashEmbedder
from chunkdedup.evaluate import audit
from chunkdedup.evaluate.audit import NO_EMBEDDINGS, nearest_unmerged, threshold_edges
from chunkdedup.evaluate.metrics import PairSimilarity
from chunkdedup.index import Index

CLAUSES = [
    "the finance team reviews each corporate card statement at the end of the month",
    "every purchase without a receipt or a business purpose is flagged for the cardholder",
    "cardholders answer flagged purchases within 30 days by attaching the missing document",
    "repeated purchases without receipts lead to a review of the card limit",
    "personal purchases are repaid through payroll after the cardholder is told the amount",
]
ORIGINAL = ". ".join(CLAUSES) + "."
#: the same sentences in reverse order: shingles differ enough for the near tier (Jaccard 0.58 < 0.85),
#: the hash vectors barely move (cosine 0.98 >= 0.9), so the semantic tier merges it
REORDERED = ". ".join(reversed(CLAUSES)) + "."
#: reordered and "30 days" -> "45 days": Jaccard 0.49 to ORIGINAL (below 0.5), cosine 0.96, and the
#: number/date guard keeps it apart, so it is retrieved next to ORIGINAL and marked by cosine only
VERSION = REORDERED.replace("30 days", "45 days")
TOPICS = {
    "refunds": "Refunds are paid within 30 days of a written request to the billing team.",
    "travel": "Travel must be booked through the approved agency at least 14 days ahead.",
    "security": "Laptops must use full disk encryption and lock after 5 minutes idle.",
    "privacy": "Personal data is kept for 90 days after an account is closed, then deleted.",
}
SEMANTIC = Config(semantic=SemanticConfig(enabled=True, embedder="hash:64", threshold=0.9))
QUERIES = ["cardholders answer flagged purchases", "refunds"]


@pytest.fixture()
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    for name, text in {"a": ORIGINAL, "r": REORDERED, "v": VERSION, **TOPICS}.items():
        (folder / f"{name}.txt").write_text(text + "\n")
    return folder


@pytest.fixture()
def embedded(docs: Path, tmp_path: Path) -> Path:
    index = tmp_path / "sem.sqlite"
    ingest([docs], index, config=SEMANTIC, embedder=HashEmbedder(64))
    return index


def _groups(index: Path) -> list[tuple[str, str, str, str, float]]:
    with sqlite3.connect(index) as conn:
        return [(r[0], r[1], r[2], r[3], float(r[4])) for r in conn.execute(
            "SELECT id, text, canonical_id, relation, similarity FROM groups ORDER BY id")]


def _cos(a: str, b: str) -> float:
    va, vb = HashEmbedder(64).embed_batch([a, b]).astype(np.float64)
    return float(va @ vb / (np.linalg.norm(va) * np.linalg.norm(vb)))


def test_pairs_are_marked_by_cosine_with_both_similarities(embedded: Path) -> None:
    result = audit(embedded, QUERIES, k=10)  # k above the 6 canonicals: every one is retrieved
    assert result.semantic is not None and result.semantic["threshold"] == 0.9
    expected_cos, expected_jac = _cos(ORIGINAL, VERSION), PairSimilarity()(ORIGINAL, VERSION)
    assert expected_jac < 0.5 <= 0.9 <= expected_cos  # the fixture's premise
    for q in result.queries:
        assert len(q["hits"]) == 6
        by_rank = {h["rank"]: h["text"] for h in q["hits"]}
        [pair] = q["pairs"]
        assert {by_rank[pair["a"]].strip(), by_rank[pair["b"]].strip()} == {ORIGINAL, VERSION}
        assert pair["by"] == ["cosine"]
        assert pair["jaccard"] == pytest.approx(expected_jac) and pair["similarity"] == pair["jaccard"]
        assert pair["cosine"] == pytest.approx(expected_cos, abs=1e-6)
    assert result.pairs == 2 * 15
    assert result.cosine_pairs == 2 and result.jaccard_pairs == 0 and result.duplicate_pairs == 2
    assert result.duplication_rate == pytest.approx(2 / 30)
    data = json.loads(json.dumps(result.to_json()))
    assert data["cosine_threshold"] == 0.9 and data["note"] is None


def test_semantic_calibration_is_computed_from_the_stored_data(embedded: Path) -> None:
    groups = _groups(embedded)
    text = {g[0]: g[1] for g in groups}
    canonical = {g[0]: g[2] for g in groups}
    merged = [g[4] for g in groups if g[3] == "semantic"]
    assert len(merged) == 1 and merged[0] == pytest.approx(_cos(ORIGINAL, REORDERED), abs=1e-6)
    with sqlite3.connect(embedded) as conn:
        variants = conn.execute("SELECT a, b FROM variants").fetchall()
    assert len(variants) == 1
    # brute force over vectors embedded afresh: each group's best cosine to another canonical, the
    # canonicals the guard kept apart excluded
    ids = sorted(text)
    vectors = HashEmbedder(64).embed_batch([text[i] for i in ids]).astype(np.float64)
    apart = {frozenset((canonical[a], canonical[b])) for a, b in variants}
    brute = []
    for i, gi in enumerate(ids):
        others = [float(vectors[i] @ vectors[j]) for j, gj in enumerate(ids)
                  if canonical[gj] != canonical[gi]
                  and frozenset((canonical[gi], canonical[gj])) not in apart]
        brute.append(max(others))
    with Index.open(embedded) as ix:
        nearest, n = nearest_unmerged(ix.evaluation)
        assert n == len(ids) == 7
        np.testing.assert_allclose(np.sort(nearest), np.sort(brute), atol=1e-5)
        few, _ = nearest_unmerged(ix.evaluation, sample=3)  # evenly spaced rows 0, 3 and 6
        np.testing.assert_allclose(few, [brute[0], brute[3], brute[6]], atol=1e-5)

    result = audit(embedded, QUERIES, k=3)
    near_view = result.calibration  # by Jaccard: the semantic merge's cosine is not in it
    assert near_view["merged"]["n"] == 0 and near_view["kept_apart_by_guard"]["n"] == 1
    guard_jaccard = PairSimilarity()(*(text[g] for g in variants[0]))
    assert near_view["kept_apart_by_guard"]["histogram"][int(guard_jaccard * 20)] == 1
    sem = result.semantic
    assert sem is not None and sem["embedder"] == "hash:64:0" and sem["dim"] == 64
    edges = sem["edges"]
    assert edges[-1] == 1.0 and edges == sorted(edges) and len(edges) == len(sem["merged"]["histogram"]) + 1
    guard_cos = _cos(*(text[g] for g in variants[0]))
    for name, values in (("merged", merged), ("kept_apart_by_guard", [guard_cos]),
                         ("unmerged_nearest", brute)):
        series = sem[name]
        assert series["n"] == len(values)
        # every value lies at or above the lowest edge, so each histogram holds all of its series
        assert sum(series["histogram"]) == series["n"] == series["at_or_above"][0]
        for k, edge in enumerate(edges[:-1]):
            inside = sum(edge - 1e-6 <= v < edges[k + 1] - 1e-6 or (k == len(edges) - 2 and v >= edge)
                         for v in values)
            assert series["histogram"][k] == inside, (name, edge)
            assert series["at_or_above"][k] == sum(series["histogram"][k:])
            assert series["share_at_or_above"][k] == pytest.approx(series["at_or_above"][k] / series["n"])
    assert sem["unmerged_nearest"]["sampled"] == sem["unmerged_nearest"]["embedded_groups"] == 7


def test_threshold_edges_are_readable() -> None:
    assert threshold_edges([0.93, 0.97, 0.9]) == (0.9, 10)  # 0.01 bins when everything is >= 0.8
    assert threshold_edges([0.31, 0.99]) == (0.3, 14)  # else 0.05 bins from the floored minimum
    assert threshold_edges([-0.2, 0.5]) == (0.0, 20)  # never below 0
    assert threshold_edges([1.0]) == (0.99, 1)


def test_cli_prints_both_similarities_and_the_calibration_table(embedded: Path, tmp_path: Path) -> None:
    queries = tmp_path / "q.txt"
    queries.write_text("\n".join(QUERIES) + "\n")
    runner = CliRunner()
    res = runner.invoke(audit_cmd, ["--index", str(embedded), "--queries", str(queries), "-k", "10"])
    assert res.exit_code == 0, res.output
    out = res.output
    cos = f"{_cos(ORIGINAL, VERSION):.3f}"
    assert f"(Jaccard 0.488, cosine {cos}; by cosine)" in out
    assert "duplication rate: 2 of 30 pairs (6.7%)" in out and "cosine >= 0.9 (2)" in out
    assert "semantic calibration (cosine of the stored hash:64:0 vectors, dim 64" in out
    rows = [line.split() for line in out.splitlines() if line.strip().endswith("<- threshold")]
    assert len(rows) == 1 and rows[0][0] == "0.90"
    # at 0.90: the merged pair and the guarded pair are above, no nearest unmerged neighbour is
    assert rows[0][1:10] == ["0", "1", "100.0%", "0", "1", "100.0%", "0", "0", "0.0%"]
    assert NO_EMBEDDINGS not in out
    res = runner.invoke(audit_cmd, ["--index", str(embedded), "--queries", str(queries), "--json",
                                    "--sample", "2"])
    data = json.loads(res.output)
    assert data["cosine_pairs"] == 2 and data["semantic_calibration"]["unmerged_nearest"]["sampled"] == 2


def test_without_embeddings_audit_says_the_cosine_view_needs_an_embedder(docs: Path, tmp_path: Path) -> None:
    index = tmp_path / "plain.sqlite"
    ingest([docs], index)
    result = audit(index, QUERIES, k=10)
    assert result.semantic is None and result.cosine_pairs is None
    for q in result.queries:
        assert all(p["by"] == ["jaccard"] and p["cosine"] is None for p in q["pairs"])
    assert result.to_json()["note"] == NO_EMBEDDINGS and "ingest --embedder" in NO_EMBEDDINGS
    queries = tmp_path / "q.txt"
    queries.write_text("\n".join(QUERIES) + "\n")
    res = CliRunner().invoke(audit_cmd, ["--index", str(index), "--queries", str(queries)])
    assert res.exit_code == 0, res.output
    assert "calibration (5-word-shingle Jaccard" in res.output
    assert "semantic calibration (cosine" not in res.output
    marked = [line for line in res.output.splitlines() if line.lstrip().startswith("≈")]
    assert marked and all("by jaccard" in line and "cosine" not in line for line in marked)
    assert "`chunkdedup ingest --embedder minilm`" in " ".join(res.output.split())
