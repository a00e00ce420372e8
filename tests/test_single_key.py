"""A group whose shingle set is too small to reach the near threshold with any other set has one LSH key,
the hash of its set, instead of a key per band: the same verified edges and clusters as with band keys
for every group, one band row for such a group, and an index signed before the rule signed again."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from chunkdedup import Index, ingest
from chunkdedup.config import NearConfig
from chunkdedup.dedup import near as near_module
from chunkdedup.dedup.lsh import band_keys, bucket_pairs, leader_cluster, verified_edges_flat
from chunkdedup.dedup.minhash import MinHasher
from chunkdedup.dedup.near import sign_keys
from chunkdedup.dedup.settings import near_hashing, single_key_shingles
from chunkdedup.normalize import exact_key, key_hash

_WORDS = ("alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta", "iota")
#: two different exact keys with one shingle set of 5 members (9 words, and 14 that go round again)
_CYCLE = ("alpha beta gamma delta eps alpha beta gamma delta", "alpha beta gamma delta eps " * 2
          + "alpha beta gamma delta")


def _edges(rows: np.ndarray, keys: list[str], threshold: float) -> dict[tuple[int, int], float]:
    """The verified edges among ``keys`` whose LSH keys are ``rows`` (one row per key): pairs sharing a
    key, kept where the exact shingle Jaccard reaches ``threshold``."""
    n, width = rows.shape
    pairs = bucket_pairs(rows.reshape(-1), np.repeat(np.arange(n, dtype=np.int64), width))
    flat, offsets = MinHasher().shingle_sets(keys)
    found, sims = verified_edges_flat(pairs, np.arange(n, dtype=np.int64), flat, offsets, threshold)
    return {(int(a), int(b)): float(s) for (a, b), s in zip(found.tolist(), sims.tolist(), strict=True)}


def _edited(text: str, edit: tuple[int, int, int]) -> str:
    """``text`` with one small edit: a word replaced, inserted or dropped, or the text said twice."""
    kind, at, word = edit
    words = text.split()
    at %= len(words) + 1
    if kind == 0 and at < len(words):
        words[at] = _WORDS[word]
    elif kind == 1:
        words.insert(at, _WORDS[word])
    elif kind == 2 and len(words) > 1 and at < len(words):
        del words[at]
    elif kind == 3:
        words = words + words
    return " ".join(words)


_texts = st.lists(st.sampled_from(_WORDS), min_size=1, max_size=16).map(" ".join)
_edits = st.tuples(st.integers(0, 3), st.integers(0, 20), st.integers(0, len(_WORDS) - 1))


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(_texts, st.lists(_edits, max_size=3)), min_size=1, max_size=25),
    st.sampled_from([0.5, 0.8, 0.85, 0.9, 1.0]),
)
@example([(_CYCLE[0], []), (_CYCLE[1], []), ("alpha beta", [(1, 2, 3)])], 0.85)
def test_one_key_for_a_small_set_verifies_the_edges_of_sixteen_bands(
    drawn: list[tuple[str, list[tuple[int, int, int]]]], threshold: float
) -> None:
    config = NearConfig(threshold=threshold)
    texts = []
    for text, edits in drawn:
        texts.append(text)
        texts.extend(_edited(text, edit) for edit in edits)  # near copies of it
    keys = sorted({exact_key(t) for t in texts} - {""})
    hasher = MinHasher.from_config(config)
    rows = sign_keys(hasher, keys, config)
    reference = band_keys(hasher.signatures(keys), config.bands, config.rows).view(np.int64)
    small = single_key_shingles(threshold)
    sizes = [hasher.shingles(k).size for k in keys]
    # a small set's row is one key; every other row is its band keys
    for i, size in enumerate(sizes):
        assert (len(set(rows[i].tolist())) == 1) == (size <= small)
        if size > small:
            assert rows[i].tolist() == reference[i].tolist()
    edges = _edges(rows, keys, threshold)
    assert edges == _edges(reference, keys, threshold)
    assert _clusters(edges, keys) == _clusters(_edges(reference, keys, threshold), keys)


def _clusters(edges: dict[tuple[int, int], float], keys: list[str]) -> list[int]:
    """Each key's leader under the leader rule over ``edges``, keys ranked in order."""
    pairs = np.array(sorted(edges), dtype=np.int64).reshape(-1, 2)
    sims = np.array([edges[p] for p in sorted(edges)], dtype=np.float64)
    order = np.arange(len(keys), dtype=np.int64)
    leaders: list[int] = leader_cluster(order, pairs, sims, keys).leader.tolist()
    return leaders


def test_two_different_texts_of_one_small_set_share_their_one_key() -> None:
    """Different exact keys with the same set of 5 shingles: one key each, the same one, and an edge
    at Jaccard 1.0; a text one shingle apart from them has another key."""
    config = NearConfig()
    keys = [exact_key(t) for t in (*_CYCLE, "alpha beta gamma delta eps alpha beta gamma delta eps zeta")]
    rows = sign_keys(MinHasher.from_config(config), keys, config)
    assert len(set(rows[0].tolist())) == 1 and rows[0].tolist() == rows[1].tolist()
    assert len(set(rows[2].tolist())) == 16
    assert _edges(rows, keys, config.threshold) == {(0, 1): 1.0}


def _write(folder: Path, records: list[tuple[str, str]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    lines = (json.dumps({"id": i, "text": t}) for i, t in records)
    (folder / f"{folder.name}.jsonl").write_text("\n".join(lines) + "\n", "utf-8")
    return folder


_LONG = ("The committee approved the annual budget for the new library after a long public hearing on "
         "the costs of the building and its staff")
_RECORDS = [
    ("r01", _CYCLE[0]),
    ("r02", "the refund is paid within thirty days"),
    ("r03", "refund paid in thirty days"),
    ("r04", _LONG),
    ("r05", _LONG.replace("long public", "long and public")),
    ("r06", "short note"),
    ("r07", _LONG.replace("annual", "yearly")),
    ("r08", "the refund is paid within thirty days of a request"),
]
_MORE = [
    ("m01", _CYCLE[1]),
    ("m02", "refund paid in thirty days!"),
    ("m03", _LONG.replace("staff", "staff members")),
    ("m04", "short note again"),
]


def _export(index: Path) -> list[Any]:
    with Index.open(index) as ix:
        return list(ix.export())


def _meta(index: Path, key: str) -> str | None:
    conn = sqlite3.connect(index)
    try:
        found = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    finally:
        conn.close()
    return None if found is None else str(found[0])


def _band_rows(index: Path) -> dict[str, tuple[int, int]]:
    """Each group's text -> (its band rows, its ``signed`` mark)."""
    conn = sqlite3.connect(index)
    try:
        rows = conn.execute(
            "SELECT g.text, (SELECT COUNT(*) FROM bands b WHERE b.gid = g.gid), g.signed"
            " FROM groups g"
        ).fetchall()
    finally:
        conn.close()
    return {text: (n, size) for text, n, size in rows}


def test_a_small_group_keeps_one_band_row_and_the_ingest_is_what_sixteen_give(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = _write(tmp_path / "c1", _RECORDS)
    more = _write(tmp_path / "c2", _MORE)
    index = tmp_path / "one.sqlite"
    ingest([corpus], index)
    ingest([corpus, more], index)  # an incremental run: the new groups signed by the cluster pass
    rows = _band_rows(index)
    assert rows["short note"] == (1, 1)
    assert rows["refund paid in thirty days"] == (1, 1)
    assert rows[_LONG] == (16, 1)
    export = _export(index)
    cycled = [r for r in export if exact_key(r["text"]) in {exact_key(t) for t in _CYCLE}]
    assert len(cycled) == 1 and len(cycled[0]["sources"]) == 2  # one set, different texts: merged
    # the same corpus with band keys for every group: the same index answers
    monkeypatch.setattr(near_module, "single_key_shingles", lambda threshold: -1)
    sixteen = tmp_path / "sixteen.sqlite"
    ingest([corpus], sixteen)
    ingest([corpus, more], sixteen)
    assert _band_rows(sixteen)["short note"] == (16, 1)
    assert _export(sixteen) == export


def _as_before(index: Path) -> None:
    """Make ``index`` what the ingest before the one-key rule left: 16 band rows for every group, and
    the hashing fingerprint of that time."""
    config = NearConfig()
    hasher = MinHasher.from_config(config)
    conn = sqlite3.connect(index)
    try:
        groups = conn.execute("SELECT gid, text FROM groups ORDER BY gid").fetchall()
        keys = band_keys(hasher.signatures([exact_key(t) for _, t in groups]), config.bands, config.rows)
        folded = keys.view(np.int64).astype(np.int32)
        conn.execute("DELETE FROM bands")
        for (gid, _), row in zip(groups, folded.tolist(), strict=True):
            conn.execute("UPDATE groups SET signed = 1 WHERE gid = ?", (gid,))
            insert = "INSERT OR IGNORE INTO bands(band_key, gid) VALUES (?, ?)"
            conn.executemany(insert, [(k, gid) for k in row])
        hashing = {"num_perm": 128, "shingle_words": 5, "seed": 1, "bands": 16, "rows": 8}
        old = key_hash(json.dumps(hashing, sort_keys=True))
        conn.execute("UPDATE meta SET value = ? WHERE key = 'near_hashing'", (old,))
        conn.commit()
    finally:
        conn.close()


def test_an_index_signed_before_the_rule_then_added_to_equals_a_fresh_ingest(tmp_path: Path) -> None:
    """An index whose small groups have 16 band rows (signed before the rule) is signed again by the next
    run: a new small group finds an old one of the same set, and the index equals a fresh ingest."""
    corpus = _write(tmp_path / "c1", _RECORDS)
    more = _write(tmp_path / "c2", _MORE)
    old = tmp_path / "old.sqlite"
    ingest([corpus], old)
    _as_before(old)
    assert _band_rows(old)["short note"] == (16, 1)
    assert _meta(old, "near_hashing") != near_hashing(NearConfig())
    ingest([corpus, more], old)
    assert _meta(old, "near_hashing") == near_hashing(NearConfig())
    fresh = tmp_path / "fresh.sqlite"
    ingest([corpus, more], fresh)
    assert _band_rows(old) == _band_rows(fresh)
    assert _band_rows(old)["short note"] == (1, 1)
    assert _export(old) == _export(fresh)
    cycled = [r for r in _export(old) if exact_key(r["text"]) in {exact_key(t) for t in _CYCLE}]
    assert len(cycled) == 1 and len(cycled[0]["sources"]) == 2


def test_one_key_rows_written_from_memory_are_those_the_stage_writes(tmp_path: Path) -> None:
    """A first ingest's band rows, written from memory (put_first_bands), and the stage's (sign_groups,
    then the SQL merge) are the same rows and kept keys, for groups of one key and of 16."""
    from chunkdedup.store import Store

    index = tmp_path / "i.sqlite"
    ingest([_write(tmp_path / "c1", _RECORDS + _MORE)], index)  # a first ingest: from memory
    config = NearConfig()

    def state(store: Store) -> tuple[list[Any], list[Any]]:
        bands = store.conn.execute("SELECT band_key, gid FROM bands ORDER BY 1, 2").fetchall()
        return bands, store.conn.execute("SELECT id, signed FROM groups ORDER BY id").fetchall()

    with Store.open(index) as store, store.transaction():
        memory = state(store)
        groups = store.conn.execute("SELECT id, text FROM groups ORDER BY id").fetchall()
        keys = sign_keys(MinHasher.from_config(config), [exact_key(t) for _, t in groups], config)
        store.conn.execute("DELETE FROM bands")
        store.conn.execute("UPDATE groups SET signed = NULL")
        store.bands.sign_groups(zip([g for g, _ in groups], keys.tolist(), strict=True))
        store.bands.merge_bands()
        assert state(store) == memory
    rows_of = Counter(gid for _, gid in memory[0])
    assert sorted(set(rows_of.values())) == [1, 16]  # both kinds of group are there
    assert {signed for _, signed in memory[1]} == {1}
