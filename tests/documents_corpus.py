"""What the Deduplicator tests share: site-policy's files as in-memory documents (read in place,
with the manifest's metadata), and the checks that a call's output is deduplicated and cited and
that a re-run with one document edited changes that document alone."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from chunkdedup import Index
from chunkdedup.normalize import exact_key

POLICY = Path(__file__).resolve().parents[2] / "shared" / "data" / "site-policy"
#: One output document as the checks read it: (id, text, metadata).
Out = tuple[str, str, dict[str, Any]]
CURRENT = "current/acceptable-use-policies/github-acceptable-use-policies.md"
HISTORY = "history/github-acceptable-use-policies/2024-09-06_31615f94.md"
PRIVACY = "current/privacy-policies/github-general-privacy-statement.md"


def policy_documents() -> list[tuple[str, str, dict[str, Any]]]:
    """Every site-policy file the manifest lists: (path, text, the manifest's metadata)."""
    manifest = POLICY / "manifest.jsonl"
    if not manifest.exists():
        pytest.skip(f"needs the site-policy corpus at {POLICY}")
    rows = [json.loads(line) for line in manifest.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [
        (
            r["path"],
            (POLICY / r["path"]).read_text(encoding="utf-8"),
            {k: v for k, v in r.items() if k != "path"},
        )
        for r in rows
    ]


def edited(text: str) -> str:
    """A two-word edit of one sentence of ``text``."""
    assert "GitHub" in text
    return text.replace("GitHub", "GitHub Inc.", 1)


Given = tuple[str, str, dict[str, Any]]


def check_deduplicated(out: Sequence[Out], given: Sequence[Given], index: Path) -> None:
    """One output per canonical, no exact copy twice, every chunk of every given document cited
    exactly once, and a cross-source copy (the acceptable-use policy and its 2024 history version)
    returned once with both citations and the current version's family and date."""
    out = [(i, t, _nested(m)) for i, t, m in out]
    ids = [o[0] for o in out]
    assert len(ids) == len(set(ids))
    keys = [exact_key(o[1]) for o in out]
    assert len(keys) == len(set(keys)), "an exact copy came back twice"
    with Index.open(index) as ix:
        stats = ix.stats()
    assert len(out) == stats["canonical_chunks"]
    assert sum(len(o[2]["sources"]) for o in out) == stats["raw_chunks"]
    names = {g[0] for g in given}
    assert {s["doc"] for o in out for s in o[2]["sources"]} == names
    texts = {g[0]: exact_key(g[1]) for g in given}
    both = [
        o
        for o in out
        if {CURRENT, HISTORY} <= set(o[2]["docs"]) and all(s["relation"] == "exact" for s in o[2]["sources"])
    ]
    assert both, "no chunk shared by the policy and its history version came back with both citations"
    for o in both:
        assert exact_key(o[1]) in texts[CURRENT] and exact_key(o[1]) in texts[HISTORY]
        assert o[2]["source"] == CURRENT
        assert (o[2]["family"], o[2]["effective_date"]) == ("github-acceptable-use-policies", "2026-03-17")
    assert len(out) < sum(len(g[1].split("\n\n")) for g in given) / 2  # far fewer than the copies given
    # the files' YAML front matter is their metadata, as a file ingest reads it, not chunk text
    assert not any(o[1].startswith("---") or "\nredirect_from:" in o[1] for o in out)
    with Index.open(index) as ix:
        assert ix.metadata(CURRENT)["title"] == "GitHub Acceptable Use Policies"


def _nested(meta: dict[str, Any]) -> dict[str, Any]:
    """A Deduplicator's metadata with ``sources`` and ``docs`` as lists (flat metadata: JSON text)."""
    return {
        k: json.loads(v) if k in ("sources", "docs") and isinstance(v, str) else v for k, v in meta.items()
    }


def check_incremental(run: Callable[[list[tuple[str, str, dict[str, Any]]]], list[Out]], index: Path) -> None:
    """A re-run with the same documents changes nothing; with one edited, only canonicals citing it
    change (upserted or deleted), and the others come back as they were."""
    given = policy_documents()
    first = {o[0]: (o[0], o[1], _nested(o[2])) for o in run(given)}
    with Index.open(index) as ix:
        before = ix.stats()["last_run"]
    assert {o[0]: (o[0], o[1], _nested(o[2])) for o in run(given)} == first
    with Index.open(index) as ix:
        assert list(ix.records(since_run=before)) == [] and ix.deleted_since(before) == []
        before = ix.stats()["last_run"]
    target = next(i for i, g in enumerate(given) if g[0] == PRIVACY)
    name = given[target][0]
    given[target] = (name, edited(given[target][1]), given[target][2])
    second = {o[0]: (o[0], o[1], _nested(o[2])) for o in run(given)}
    with Index.open(index) as ix:
        changed = list(ix.records(since_run=before))
        deleted = ix.deleted_since(before)
    assert changed, "the edit changed no canonical"
    assert all(name in {s.doc for s in r.sources} for r in changed)
    assert all(name in first[cid][2]["docs"] for cid in deleted)
    untouched = {cid for cid in first if cid not in deleted and cid not in {r.id for r in changed}}
    assert untouched and all(second[cid] == first[cid] for cid in untouched)
    assert len(untouched) > 0.9 * len(first)
