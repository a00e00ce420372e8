"""The near-duplicate tier in the index: merges explained, versions kept apart, incremental."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunkdedup import ChunkConfig, Config, Index, ingest, remove_documents
from chunkdedup.config import NearConfig, SemanticConfig
from chunkdedup.dedup.guard import guard_diff
from chunkdedup.dedup.meaning import meaning_diff, numbering_only
from chunkdedup.dedup.near import word_diff
from chunkdedup.embed import HashEmbedder
from chunkdedup.errors import ConfigError
from chunkdedup.normalize import exact_key
from conftest import POLICY, POLICY_MANIFEST
from test_ingest import snapshot

PARA = (
    "Members of the finance team review every corporate card statement at the end of each month and "
    "flag any purchase that lacks a receipt, a business purpose or the approval of a line manager. "
    "Cardholders answer a flagged purchase within the next statement cycle, either by attaching the "
    "missing document or by explaining in writing why it cannot be produced. Repeated purchases "
    "without receipts lead to a review of the card limit, and personal purchases are repaid through "
    "payroll deduction after the cardholder has been told about the amount and the reason."
)
EDITED = PARA.replace("flag any purchase", "flag every purchase")
VERSION = PARA + " Receipts are kept for 7 years."
VERSION2 = PARA + " Receipts are kept for 10 years."
CFG = Config(chunk=ChunkConfig(target_words=200, max_words=250, paragraph_words=20))


def _write(folder: Path, files: dict[str, str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")


def _by_text(index: Path) -> dict[str, dict[str, Any]]:
    with Index.open(index) as ix:
        return {r["text"]: r for r in ix.export()}


def test_near_copy_merges_with_explanation_and_versions_stay_apart(tmp_path: Path) -> None:
    _write(tmp_path / "c", {"a.txt": PARA, "b.txt": EDITED, "c.txt": VERSION, "d.txt": VERSION2})
    index = tmp_path / "i.sqlite"
    ingest([tmp_path / "c"], index, config=CFG)
    records = _by_text(index)
    merged = records[PARA]
    assert [(s["doc"], s["relation"]) for s in merged["sources"]] == [("a.txt", "exact"), ("b.txt", "near")]
    assert 0.85 <= merged["sources"][1]["similarity"] < 1.0
    assert VERSION in records and VERSION2 in records  # a number differs: never merged
    with Index.open(index) as ix:
        merges = ix.merges(merged["id"])
        assert [m["differing"] for m in merges if m["relation"] == "near"] == [["-any", "+every"]]
        variants = {v.other_id: v for v in ix.variants(records[VERSION]["id"])}
        stats = ix.stats()
    # 7 years against 10 years: kept apart by the number guard, with the two numbers as what differs
    # (in the pair's stored direction), and apart from the near cluster it would otherwise join
    assert set(variants) == {records[VERSION2]["id"], merged["id"]}
    pair = variants[records[VERSION2]["id"]]
    assert pair.reason == "number" and set(pair.differing) in ({"-7", "+10"}, {"+7", "-10"})
    assert variants[merged["id"]].reason == "number"
    assert stats["near_merged"] == 1 and stats["variant_pairs"] >= 1


def test_removing_the_leader_keeps_the_near_copy_and_equals_fresh(tmp_path: Path) -> None:
    folder = tmp_path / "c"
    _write(folder, {"a.txt": PARA, "b.txt": EDITED, "c.txt": VERSION})
    index = tmp_path / "i.sqlite"
    ingest([folder], index, config=CFG)
    remove_documents(index, ["a.txt"])
    records = _by_text(index)
    assert EDITED in records and PARA not in records
    assert [s["relation"] for s in records[EDITED]["sources"]] == ["exact"]
    (folder / "a.txt").unlink()
    fresh = tmp_path / "fresh.sqlite"
    ingest([folder], fresh, config=CFG)
    assert snapshot(index) == snapshot(fresh)
    # and adding it back makes it the leader again, as a fresh ingest would
    _write(folder, {"a.txt": PARA})
    ingest([folder], index, config=CFG)
    records = _by_text(index)
    assert [s["doc"] for s in records[PARA]["sources"]] == ["a.txt", "b.txt"]


def test_changing_near_settings_reclusters_everything(tmp_path: Path) -> None:
    _write(tmp_path / "c", {"a.txt": PARA, "b.txt": EDITED})
    index = tmp_path / "i.sqlite"
    ingest([tmp_path / "c"], index, config=CFG)
    assert len(_by_text(index)) == 1
    off = Config(chunk=CFG.chunk, near=NearConfig(enabled=False))
    ingest([tmp_path / "c"], index, config=off)
    assert len(_by_text(index)) == 2
    fresh = tmp_path / "fresh.sqlite"
    ingest([tmp_path / "c"], fresh, config=off)
    assert snapshot(index) == snapshot(fresh)


def test_site_policy_versions_differing_in_a_number_or_date_are_never_merged(policy_index: Path) -> None:
    with Index.open(policy_index) as ix:
        rows = ix.store.conn.execute(
            "SELECT g.text, l.text, g.similarity FROM groups g JOIN groups l ON l.id = g.canonical_id"
            " WHERE g.relation = 'near'"
        ).fetchall()
        variants = ix.store.conn.execute(
            "SELECT a.text, b.text, v.differing, v.reason FROM variants v"
            " JOIN groups a ON a.id=v.a JOIN groups b ON b.id=v.b"
        ).fetchall()
        families = {f["family"]: f for f in ix.family_report()}
    assert rows, "policy versions hold near copies"
    released = 0
    for member, leader, sim in rows:  # numbers equal, or differing only in numbering and comments
        if guard_diff(exact_key(member), exact_key(leader)) != ():
            assert numbering_only(leader, member)
            released += 1
        assert meaning_diff(leader, member) is None
        assert sim >= 0.85
    assert released  # e.g. "## 11." against "## 12." over one clause, a date in an HTML comment
    assert variants, "some versions differ only in a number or date"
    reasons = Counter(reason for *_, reason in variants)
    for a, b, differing, reason in variants:
        assert json.loads(differing)
        if reason == "number":
            assert guard_diff(exact_key(a), exact_key(b)) != () and not numbering_only(a, b)
        else:
            assert meaning_diff(a, b) is not None
    assert reasons["number"] and sum(reasons.values()) > reasons["number"]
    assert sum(f["near"] for f in families.values()) == len(rows)
    assert len([f for f in families if f != '(no family)']) == 57


def test_policy_in_two_batches_equals_fresh_with_near(tmp_path: Path, policy_index: Path) -> None:
    index = tmp_path / "i.sqlite"
    ingest([POLICY / "history"], index, manifest=POLICY_MANIFEST)
    ingest([POLICY], index, manifest=POLICY_MANIFEST)
    assert snapshot(index) == snapshot(policy_index)


# -- the semantic tier, with the deterministic hash embedder ------------------------------------
REORDERED = (
    "Each month the finance team reviews every corporate card statement and flags any purchase that "
    "lacks a line manager approval, a business purpose or a receipt. Within the next statement cycle "
    "cardholders answer a flagged purchase by attaching the missing document or by explaining in "
    "writing why it cannot be produced. Repeated purchases without receipts lead to a review of the "
    "card limit, and personal purchases are repaid through payroll deduction after the cardholder has "
    "been told about the amount and the reason."
)
SEMANTIC = Config(chunk=CFG.chunk, semantic=SemanticConfig(enabled=True, threshold=0.8, embedder="hash"))


def test_semantic_tier_merges_reworded_copies_the_near_tier_misses(tmp_path: Path) -> None:
    folder = tmp_path / "c"
    _write(folder, {"a.txt": PARA, "b.txt": EDITED, "r.txt": REORDERED, "v.txt": VERSION})
    near_only = tmp_path / "near.sqlite"
    ingest([folder], near_only, config=CFG)
    assert REORDERED in _by_text(near_only)  # too reworded for shingles
    index = tmp_path / "i.sqlite"
    ingest([folder], index, config=SEMANTIC, embedder=HashEmbedder(dim=256))
    records = _by_text(index)
    assert REORDERED not in records
    relations = {s["doc"]: s["relation"] for s in records[PARA]["sources"]}
    assert relations == {"a.txt": "exact", "b.txt": "near", "r.txt": "semantic"}
    assert VERSION in records  # the guard keeps versions apart in this tier too
    # incremental equals fresh with the semantic tier, removals included
    remove_documents(index, ["b.txt"])
    (folder / "b.txt").unlink()
    fresh = tmp_path / "fresh.sqlite"
    ingest([folder], fresh, config=SEMANTIC, embedder=HashEmbedder(dim=256))
    assert snapshot(index) == snapshot(fresh)


def test_another_embedder_is_refused_unless_reembedding(tmp_path: Path) -> None:
    folder = tmp_path / "c"
    _write(folder, {"a.txt": PARA, "r.txt": REORDERED})
    index = tmp_path / "i.sqlite"
    ingest([folder], index, config=SEMANTIC, embedder=HashEmbedder(dim=256))
    with pytest.raises(ConfigError, match=r"embedded with hash:256:0.*--reembed"):
        ingest([folder], index, config=SEMANTIC, embedder=HashEmbedder(dim=128))
    ingest([folder], index, config=SEMANTIC, embedder=HashEmbedder(dim=128), reembed=True)
    with Index.open(index) as ix:
        assert ix.store.meta("embedder_name") == "hash:128:0"
        dims = {len(r[0]) for r in ix.store.conn.execute("SELECT vector FROM embeddings")}
    assert dims == {128 * 4}


def test_components_are_the_same_from_any_candidate_order() -> None:
    """``connect`` (shared by the local pass and the Ray path) depends on the edges alone: candidates
    listed in any order, from every pair or only the verified ones, give the same groups and edges."""
    import random

    from chunkdedup.dedup.near import connect

    rnd = random.Random(5)
    ids = [f"g{i:02d}" for i in range(40)]
    sims = {}
    for _ in range(120):
        a, b = sorted(rnd.sample(ids, 2))
        sims[(a, b)] = rnd.choice([0.5, 0.86, 0.9, 0.97])
    semantic = {(a, b): 0.95 for a, b in list(sims)[:10]} | {("g00", "g39"): 1.2}

    def lookup(edges: dict[tuple[str, str], float], shuffle: bool) -> Any:
        def neighbours(gid: str) -> list[Any]:
            out = sorted((b if a == gid else a, s) for (a, b), s in edges.items() if gid in (a, b))
            if shuffle:
                rnd.shuffle(out)
            return out

        return neighbours

    def run(candidates: dict[tuple[str, str], float], shuffle: bool) -> Any:
        near = lookup(candidates, shuffle)
        return connect(
            rnd.sample(["g00", "g17", "g30"], 3) if shuffle else ["g00", "g17", "g30"],
            lambda gid: [g for g, _ in near(gid)],
            lambda a, b: sims[(a, b) if a < b else (b, a)],
            0.85,
            lookup(semantic, shuffle),
        )

    seen, edges = run(sims, shuffle=False)
    verified = {p: s for p, s in sims.items() if s >= 0.85}
    assert run(sims, shuffle=True) == (seen, edges)
    assert run(verified, shuffle=True) == (seen, edges)
    assert any(kind == "semantic" for kind, _ in edges.values())
    assert edges[("g00", "g39")] == ("semantic", 1.0)  # a cosine is capped at 1
    assert all(kind == "near" for p, (kind, _) in edges.items() if p in verified)



def _counted_word_diff(member: str, leader: str) -> tuple[str, ...]:
    """word_diff's definition: every word of both texts counted."""
    a, b = Counter(member.split()), Counter(leader.split())
    out = [f"-{w}" for w in sorted((b - a).elements())] + [f"+{w}" for w in sorted((a - b).elements())]
    return tuple(out[:20])


_WORDS = st.lists(st.sampled_from(["net", "sales", "30", "days", "ab", "abc", "b", "\u00e9t\u00e9"]),
                  max_size=30)
_SPACES = st.sampled_from([" ", "  ", "\n", "\t", "\u2009", "\x1c"])
# a word's prefix ("ab" of "abc") or suffix ("b" of "ab") must not pass for a shared end
_EDITS = st.sampled_from(["", "edited", "net", "3", "abcd", "b", "bc"])


@settings(max_examples=400, deadline=None)
@given(_WORDS, st.lists(st.tuples(st.integers(0, 30), _EDITS), max_size=4), _SPACES, st.booleans())
def test_word_diff_counts_only_the_stretch_between_shared_ends_as_all_words_would(
    words: list[str], edits: list[tuple[int, str]], space: str, pad: bool
) -> None:
    """A near copy: some words replaced, dropped or glued on; the diff of the trimmed stretch is the
    diff of every word."""
    other = list(words)
    for at, word in edits:
        if other and at < len(other):
            other[at] = word  # "" drops the word (the join below leaves a double space)
        else:
            other.append(word)
    member = (" " if pad else "") + " ".join(words)
    leader = space.join(other) + (space if pad else "")
    assert word_diff(member, leader) == _counted_word_diff(member, leader)
    assert word_diff(leader, member) == _counted_word_diff(leader, member)
    assert word_diff(member, member) == ()
