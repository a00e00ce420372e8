"""Migration 0041: a group keeps no band keys. Where the store names a group's band rows (it goes, its
band neighbours are asked for), it signs the group's text again with the run's near settings: an edit,
a removal and a change of settings leave the band rows every remaining group's text gives, and no row
of a group that is gone; an index that kept the keys migrates and runs as a fresh one."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from chunkdedup import Index, ingest
from chunkdedup.config import Config, NearConfig
from chunkdedup.ingestion.clusters import NearKeyer
from chunkdedup.ingestion.remove import remove_documents
from chunkdedup.store import Store
from chunkdedup.store.band_tables import fold_keys, pack_bands
from conftest import stop_at_chunk_write

#: near copies (a word changed), exact copies and lone records, some short enough for one band key
_RECORDS = {
    "a1": "The committee meets every month to review the claims that members filed before the deadline.",
    "a2": "The committee meets every month to review the claims that members filed before the due date.",
    "a3": "The committee meets every week to review the claims that members filed before the deadline.",
    "b1": "Refunds are paid within thirty days of a written request from the account holder.",
    "b2": "Refunds are paid within thirty days of a written request from the account owner.",
    "c1": "short note",
    "c2": "Short note",
    "d1": "Each record stands alone and says something no other record says at all.",
}


def _write(folder: Path, records: dict[str, str]) -> Path:
    folder.mkdir(exist_ok=True)
    lines = (json.dumps({"id": k, "text": v}) + "\n" for k, v in records.items())
    (folder / "r.jsonl").write_text("".join(lines))
    return folder


def _bands(index: Path, config: NearConfig) -> tuple[set[tuple[int, str]], set[tuple[int, str]]]:
    """(the band rows stored, the rows the signed groups' texts give), each as (band key, group id)."""
    conn = sqlite3.connect(index)
    try:
        stored = set(conn.execute("SELECT b.band_key, g.id FROM bands b LEFT JOIN groups g ON g.gid = b.gid"))
        groups = conn.execute("SELECT id, text FROM groups WHERE signed IS NOT NULL").fetchall()
        assert {s for (s,) in conn.execute("SELECT signed FROM groups")} <= {None, 1}  # no keys kept
    finally:
        conn.close()
    keys = fold_keys(NearKeyer(config).keys([t for _, t in groups])).tolist()
    signed = {(k, gid) for (gid, _), row in zip(groups, keys, strict=True) for k in row}
    return stored, signed


def _answers(index: Path) -> tuple[list[Any], list[Any]]:
    with Index.open(index) as ix:
        clusters = ix.store.conn.execute("SELECT id, canonical_id FROM groups ORDER BY id").fetchall()
        return list(ix.export()), clusters


def test_edits_and_removals_leave_the_bands_the_texts_give(tmp_path: Path) -> None:
    docs = _write(tmp_path / "docs", _RECORDS)
    index = tmp_path / "i.sqlite"
    ingest([docs], index)
    stored, signed = _bands(index, NearConfig())
    assert stored == signed and len({g for _, g in stored}) == 7  # every group, one row per kept key
    edited = dict(_RECORDS, a1=_RECORDS["a1"].replace("month", "quarter"), c1="a different note now")
    del edited["b2"]
    _write(docs, edited)
    run = ingest([docs], index)  # a1's and c1's old groups and b2's go, with their band rows
    assert run.totals["cluster_pass"]["signed"] == 2  # a1's and c1's new groups: nothing signed again
    remove_documents(index, ["r.jsonl#d1"])
    stored, signed = _bands(index, NearConfig())
    assert stored == signed and all(g is not None for _, g in stored)  # no row of a group gone
    fresh = tmp_path / "fresh.sqlite"
    ingest([_write(tmp_path / "again", {k: v for k, v in edited.items() if k != "d1"})], fresh)
    assert _bands(fresh, NearConfig())[0] == stored
    assert _answers(index)[1] == _answers(fresh)[1]


def test_a_run_under_other_near_settings_that_drops_groups_signs_all_again(tmp_path: Path) -> None:
    """The run's settings cannot name the rows made under the index's: its first drop clears every
    signature and band (as its cluster pass would), and the index ends as a fresh one under them."""
    docs = _write(tmp_path / "docs", _RECORDS)
    index = tmp_path / "i.sqlite"
    ingest([docs], index)
    other = Config(near=NearConfig(shingle_words=3))
    edited = dict(_RECORDS, a1=_RECORDS["a1"].replace("month", "quarter"))
    _write(docs, edited)
    ingest([docs], index, config=other)
    stored, signed = _bands(index, other.near)
    assert stored == signed and all(g is not None for _, g in stored)
    fresh = tmp_path / "fresh.sqlite"
    ingest([_write(tmp_path / "again", edited)], fresh, config=other)
    assert _bands(fresh, other.near)[0] == stored
    assert _answers(index) == _answers(fresh)


def test_a_run_under_other_settings_killed_after_its_drops_leaves_no_row_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Killed after it dropped a group and before its cluster pass, then run again under the index's
    own settings: no band row of the dropped group is left (its first drop cleared them all), and the
    index ends as a fresh one."""
    docs = _write(tmp_path / "docs", _RECORDS)
    index = tmp_path / "i.sqlite"
    ingest([docs], index)
    edited = dict(_RECORDS, a1=_RECORDS["a1"].replace("month", "quarter"))
    _write(docs, edited)
    stop_at_chunk_write(monkeypatch, 1)  # the parse phase has dropped a1's old group
    with pytest.raises(KeyboardInterrupt):
        ingest([docs], index, config=Config(near=NearConfig(shingle_words=3)))
    monkeypatch.undo()
    stored, _ = _bands(index, NearConfig())
    assert all(g is not None for _, g in stored)
    ingest([docs], index)
    stored, signed = _bands(index, NearConfig())
    assert stored == signed
    fresh = tmp_path / "fresh.sqlite"
    ingest([_write(tmp_path / "again", edited)], fresh)
    assert _answers(index) == _answers(fresh)


def test_the_store_refuses_to_guess_band_rows_without_a_keyer(tmp_path: Path) -> None:
    index = tmp_path / "i.sqlite"
    ingest([_write(tmp_path / "docs", _RECORDS)], index)
    with Store.open(index) as store, pytest.raises(RuntimeError, match="band keyer"):
        store.bands.band_neighbour_map([r[0] for r in store.conn.execute("SELECT id FROM groups")])


def test_an_index_that_kept_band_keys_migrates_and_runs_as_fresh(tmp_path: Path) -> None:
    docs = _write(tmp_path / "docs", _RECORDS)
    index = tmp_path / "i.sqlite"
    ingest([docs], index)
    stored = _bands(index, NearConfig())[0]
    conn = sqlite3.connect(index)
    groups = conn.execute("SELECT id, text FROM groups").fetchall()
    keys = NearKeyer(NearConfig()).keys([t for _, t in groups]).tolist()
    with conn:  # as 0022-0040 kept them: each group's folded keys, packed, in its row
        conn.executemany(
            "UPDATE groups SET signed = ? WHERE id = ?",
            [(pack_bands(row), gid) for (gid, _), row in zip(groups, keys, strict=True)],
        )
        conn.execute("DELETE FROM migrations WHERE name = '0041_band_keys_from_text'")
    conn.close()
    before = _answers(index)
    assert _bands(index, NearConfig())[0] == stored  # opening migrates: signed is 1, bands as they were
    edited = dict(_RECORDS, b1=_RECORDS["b1"].replace("thirty", "forty"))
    _write(docs, edited)
    ingest([docs], index)
    fresh = tmp_path / "fresh.sqlite"
    ingest([_write(tmp_path / "again", edited)], fresh)
    assert _bands(index, NearConfig()) == _bands(fresh, NearConfig())
    assert _answers(index) == _answers(fresh) != before
