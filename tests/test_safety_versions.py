"""The safety net over another retriever's results keeps a family's newest version when it drops
copies (site-policy's GitHub Sponsors terms: the 2025 history version and the current one)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from chunkdedup.integrations._core import item_version
from chunkdedup.query.records import Candidate, Citation
from chunkdedup.query.safety import ShingleJaccard, version_step

POLICY = Path(__file__).resolve().parents[2] / "shared" / "data" / "site-policy"
CURRENT = "current/github-terms/github-sponsors-additional-terms.md"
OLD = "history/github-sponsors-additional-terms/2025-05-28_1afc5124.md"


def _paragraphs(path: str, phrase: str) -> list[tuple[str, dict[str, Any]]]:
    """The blank-line paragraphs of a site-policy file holding ``phrase``, with the manifest's
    family and date (as another pipeline's loader and splitter would give them)."""
    if not (POLICY / path).exists():
        pytest.skip(f"needs the site-policy corpus at {POLICY}")
    rows = [json.loads(line) for line in (POLICY / "manifest.jsonl").read_text(encoding="utf-8").splitlines()]
    row = next(r for r in rows if r["path"] == path)
    meta = {"source": path, "family": row["family"], "effective_date": row["effective_date"]}
    text = (POLICY / path).read_text(encoding="utf-8")
    return [(p.strip(), meta) for p in text.split("\n\n") if phrase in p]


def _results() -> list[tuple[str, dict[str, Any]]]:
    """Another retriever's results, best first: the 2025 wording of the payout rule ranked above
    the current one ("GitHub will issue a payout" became "Stripe will ..."), then two other passages."""
    old = _paragraphs(OLD, "issue a payout to you")
    new = _paragraphs(CURRENT, "issue a payout to you")
    assert len(old) == len(new) == 1 and "GitHub will issue" in old[0][0] and "Stripe will issue" in new[0][0]
    others = _paragraphs(CURRENT, "22nd of the month") + _paragraphs(OLD, "remit Sponsored Developer")
    return old + new + others[:2]


def _unversioned(results: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
    return [(text, {"source": meta["source"]}) for text, meta in results]


def _langchain(results: list[tuple[str, dict[str, Any]]], k: int) -> list[tuple[str, str]]:
    pytest.importorskip("langchain_core")
    from langchain_core.documents import Document

    from chunkdedup.integrations.langchain import SafetyNet

    docs = [Document(page_content=t, metadata=m) for t, m in results]
    return [(d.metadata["source"], d.page_content) for d in SafetyNet(k=k).compress_documents(docs, "payout")]


def _llamaindex(results: list[tuple[str, dict[str, Any]]], k: int) -> list[tuple[str, str]]:
    pytest.importorskip("llama_index.core")
    from llama_index.core.schema import NodeWithScore, TextNode

    from chunkdedup.integrations.llamaindex import SafetyNet

    nodes = [
        NodeWithScore(node=TextNode(text=t, metadata=m), score=1.0 - i / 10)
        for i, (t, m) in enumerate(results)
    ]
    kept = SafetyNet(top_n=k).postprocess_nodes(nodes)
    return [(n.node.metadata["source"], n.node.get_content()) for n in kept]


def _haystack(results: list[tuple[str, dict[str, Any]]], k: int) -> list[tuple[str, str]]:
    pytest.importorskip("haystack")
    os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
    from haystack import Document

    from chunkdedup.integrations.haystack import SafetyNet

    docs = [
        Document(content=t, meta={**m, "file_path": m["source"]}, score=1.0 - i / 10)
        for i, (t, m) in enumerate(results)
    ]
    return [(d.meta["source"], d.content or "") for d in SafetyNet(top_k=k).run(documents=docs)["documents"]]


NETS = {"langchain": _langchain, "llamaindex": _llamaindex, "haystack": _haystack}


@pytest.mark.parametrize("framework", sorted(NETS))
def test_the_newest_version_wins_when_the_net_drops_a_copy(framework: str) -> None:
    results = _results()
    kept = NETS[framework](results, 2)
    assert kept[0] == (CURRENT, results[1][0])  # the current wording, in the place of the 2025 one
    assert all(source != OLD or "issue a payout" not in text for source, text in kept)
    # without family and date the net cannot tell versions: the 2025 wording keeps rank 1
    blind = NETS[framework](_unversioned(results), 2)
    assert blind[0] == (OLD, results[0][0]) and (CURRENT, results[1][0]) not in blind


def _cand(cid: str, text: str, score: float, family: str | None, when: str | None) -> Candidate:
    meta = {"family": family} if family else {}
    return Candidate(cid, score, text, (Citation(cid, 0, 0, 0, "exact", 1.0, meta, effective_date=when),))


def test_version_step_keeps_the_newest_in_the_better_place_and_says_why() -> None:
    words = "payouts are issued monthly once the balance reaches one hundred dollars by wire"
    old = _cand("old", f"GitHub {words}", 3.0, "sponsors", "2025-05-28")
    other = _cand("other", "Developers must be at least thirteen years old", 2.5, "sponsors", "2026-03-17")
    new = _cand("new", f"Stripe {words}", 2.0, "sponsors", "2026-03-17")
    same_day = _cand("twin", f"Stripe {words}", 1.5, "sponsors", "2026-03-17")
    elsewhere = _cand("else", f"GitHub {words}", 1.0, "marketplace", "2020-01-01")
    kept, dropped = version_step([old, other, new, same_day, elsewhere], ShingleJaccard(5))
    assert [c.id for c in kept] == ["new", "other", "twin", "else"]
    assert kept[0].score == 3.0 and kept[0].superseded_by is None
    assert [(d.id, d.step) for d in dropped] == [("old", "versions")]
    assert "older version (sponsors, effective 2025-05-28) of new (effective 2026-03-17)" in dropped[0].reason
    # one version left per family: nothing is labelled superseded
    assert all(c.superseded_by is None for c in kept)
    # an old passage without a newer copy stays, labelled, so MMR never drops the current one for it
    unrelated = _cand("a", "unrelated old words here and there", 1.0, "sponsors", "2024-01-01")
    alone, _ = version_step([unrelated, new], ShingleJaccard(5))
    assert [(c.id, c.superseded_by) for c in alone] == [("a", "2026-03-17"), ("new", None)]


def test_item_version_reads_top_level_fields_or_chunkdedup_sources() -> None:
    assert item_version({"family": "f", "effective_date": "2026-01-01"}) == ("f", "2026-01-01")
    sources = [
        {"doc": "a", "metadata": {"family": "f", "effective_date": "2024-01-01"}},
        {"doc": "b", "metadata": {"family": "f", "effective_date": "2026-01-01"}},
    ]
    assert item_version({"sources": sources}) == ("f", "2026-01-01")
    assert item_version({"family": "f"}) is None and item_version({}) is None
