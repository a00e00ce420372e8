"""Band rows name their group by its integer key (migration 0012); a group keeps neither its MinHash
signature (0011) nor its band keys (0018-0040; 0041: they are signed again from its text where the
store names its rows) nor an index of the rows by group: the near tier finds the same neighbours, and
an index written before migrates to the same neighbours, clusters and export."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from chunkdedup import Index, ingest
from chunkdedup.config import NearConfig
from chunkdedup.ingestion.clusters import NearKeyer
from chunkdedup.store import Store
from chunkdedup.store.band_tables import fold_keys
from conftest import POLICY, POLICY_MANIFEST, stop_at_chunk_write


def _neighbours(index: Path) -> dict[str, list[str]]:
    with Store.open(index, keyer=NearKeyer(NearConfig())) as store:  # what an ingest run gives the store
        ids = [r.id for r in Index(store).records()]
        return store.bands.band_neighbour_map(ids)


def test_an_index_with_text_band_rows_and_signatures_migrates(policy_index: Path, tmp_path: Path) -> None:
    index = tmp_path / "old.sqlite"
    shutil.copy(policy_index, index)
    neighbours = _neighbours(index)
    assert sum(map(len, neighbours.values())) > 100  # the corpus has near candidates
    with Index.open(index) as ix:
        exported = list(ix.export())
    conn = sqlite3.connect(index)
    with conn:  # the tables as the code before 0011 and 0012 kept them
        conn.execute(
            "CREATE TABLE old_bands(band_key INTEGER NOT NULL, group_id TEXT NOT NULL,"
            " PRIMARY KEY(band_key, group_id)) WITHOUT ROWID"
        )
        conn.execute(
            "INSERT INTO old_bands SELECT b.band_key, g.id FROM bands b JOIN groups g ON g.gid = b.gid"
        )
        conn.execute("DROP TABLE bands")
        conn.execute("ALTER TABLE old_bands RENAME TO bands")
        conn.execute("CREATE INDEX bands_group ON bands(group_id)")
        conn.execute("ALTER TABLE groups RENAME COLUMN signed TO signature")
        conn.execute("UPDATE groups SET signature = randomblob(512) WHERE signature IS NOT NULL")
        gone = ("0011_signed_flag", "0012_bands_by_gid", "0018_group_band_keys", "0022_folded_band_keys")
        conn.execute(f"DELETE FROM migrations WHERE name IN {gone}")
    conn.close()
    assert _neighbours(index) == neighbours  # Store.open migrates
    conn = sqlite3.connect(index)
    columns = [r[1] for r in conn.execute("PRAGMA table_info(bands)")]
    bands = conn.execute("SELECT band_key, gid FROM bands ORDER BY 1, 2").fetchall()
    own = _own_rows(conn)
    conn.close()
    assert columns == ["band_key", "gid"] and own == bands and len(bands) > 1000
    with Index.open(index) as ix:
        assert list(ix.export()) == exported
    # the migrated index takes the next run as a fresh one would: nothing changed, nothing re-decided
    again = ingest([POLICY], index, manifest=POLICY_MANIFEST)
    assert {str(f.status) for f in again.files} == {"unchanged"}
    assert again.totals["cluster_pass"]["reclustered"] == 0
    with Index.open(index) as ix:
        assert list(ix.export()) == exported


def test_an_index_with_an_index_of_band_rows_by_group_migrates(policy_index: Path, tmp_path: Path) -> None:
    """An index as 0012-0017 kept it (a signed flag, the rows indexed by group) migrates to kept keys
    that name exactly its band rows, with the same neighbours and export, and its next run re-decides
    nothing."""
    index = tmp_path / "old.sqlite"
    shutil.copy(policy_index, index)
    neighbours = _neighbours(index)
    with Index.open(index) as ix:
        exported = list(ix.export())
    conn = sqlite3.connect(index)
    with conn:
        bands = conn.execute("SELECT band_key, gid FROM bands ORDER BY 1, 2").fetchall()
        conn.execute("UPDATE groups SET signed = 1 WHERE signed IS NOT NULL")
        conn.execute("CREATE INDEX bands_gid ON bands(gid)")
        conn.execute("DELETE FROM migrations WHERE name IN ('0018_group_band_keys', '0022_folded_band_keys')")
    conn.close()
    assert _neighbours(index) == neighbours  # Store.open migrates
    conn = sqlite3.connect(index)
    sql = "SELECT name FROM sqlite_master WHERE type='index' AND tbl_name='bands'"
    indexes = conn.execute(sql).fetchall()
    own = _own_rows(conn)
    conn.close()
    assert own == bands and ("bands_gid",) not in indexes
    with Index.open(index) as ix:
        assert list(ix.export()) == exported
    again = ingest([POLICY], index, manifest=POLICY_MANIFEST)
    assert {str(f.status) for f in again.files} == {"unchanged"}
    assert again.totals["cluster_pass"]["reclustered"] == 0


def test_one_scan_of_the_bands_finds_every_groups_neighbours(policy_index: Path) -> None:
    """A first ingest reads all neighbours from one scan of the bands: the lists the per-block joins
    give, for every group that has any."""
    with Store.open(policy_index, keyer=NearKeyer(NearConfig())) as store:
        ids = [r[0] for r in store.conn.execute("SELECT id FROM groups ORDER BY id")]
        joined = {gid: found for gid, found in store.bands.band_neighbour_map(ids).items() if found}
        scanned = store.bands.all_band_neighbours()
    assert len(scanned) > 50
    assert scanned == joined


def _own_rows(conn: sqlite3.Connection) -> list[tuple[int, int]]:
    """The band rows of the signed groups, their texts signed again as the store signs them, sorted."""
    rows = conn.execute("SELECT gid, text FROM groups WHERE signed IS NOT NULL").fetchall()
    keys = fold_keys(NearKeyer(NearConfig()).keys([text for _, text in rows])).tolist()
    return sorted({(key, gid) for (gid, _), row in zip(rows, keys, strict=True) for key in row})


def _band_state(conn: sqlite3.Connection) -> tuple[list[tuple[int, int]], list[tuple[str, int | None]]]:
    bands = conn.execute("SELECT band_key, gid FROM bands ORDER BY 1, 2").fetchall()
    signed = conn.execute("SELECT id, signed FROM groups ORDER BY id").fetchall()
    return bands, signed


@pytest.mark.parametrize("every", [True, False], ids=["every-group", "one-left-unsigned"])
def test_a_first_ingest_writes_from_memory_the_bands_the_stage_writes(
    policy_index: Path, tmp_path: Path, every: bool
) -> None:
    """put_first_bands (a first ingest's band keys, held in memory) writes the rows, the index and the
    signed marks that the stage and its SQL merge write for the same keys, and its table gives the
    band neighbours a scan of the bands gives; a group gone since, or named twice, changes nothing."""
    import numpy as np

    from chunkdedup.config import Config
    from chunkdedup.dedup.minhash import MinHasher
    from chunkdedup.dedup.near import sign_keys
    from chunkdedup.ingestion.clusters import _table_neighbours
    from chunkdedup.normalize import exact_key

    near = Config().near
    with Store.open(policy_index) as store:
        groups = store.conn.execute("SELECT id, text FROM groups ORDER BY gid DESC").fetchall()
        stored = _band_state(store.conn)
    keys = sign_keys(MinHasher.from_config(near), [exact_key(t) for _, t in groups], near)
    ids = [g for g, _ in groups] + ["gone-since", groups[0][0]]  # a dropped group, and one named again
    keys = np.concatenate((keys, keys[:1], keys[:1]))
    if not every:  # a group whose keys are not held stays unsigned, without bands, either way
        ids, keys = ids[:1] + ids[2:], np.concatenate((keys[:1], keys[2:]))
    states = []
    for way in ("stage", "memory"):
        index = tmp_path / f"{way}.sqlite"
        shutil.copy(policy_index, index)
        with Store.open(index) as store, store.transaction():
            store.conn.execute("DELETE FROM bands")
            store.conn.execute("UPDATE groups SET signed = NULL")
            assert not store.bands.has_bands()
            if way == "stage":
                store.bands.sign_groups(zip(ids, keys.tolist(), strict=True))
                assert store.bands.merge_bands() == len(stored[0]) - (0 if every else near.bands)
            else:
                table = store.bands.put_first_bands(ids, keys)
                assert table is not None and table.keys.size == len(stored[0]) - (0 if every else near.bands)
                assert _table_neighbours(table) == store.bands.all_band_neighbours()
                assert sum(map(len, _table_neighbours(table).values())) > 100  # the corpus has candidates
                assert store.bands.put_first_bands(ids, keys) is None  # bands hold rows now
            states.append(_band_state(store.conn))
            # no index of the rows by group: a group's own rows are those its kept keys name
            sql = "SELECT name FROM sqlite_master WHERE type='index' AND tbl_name='bands'"
            assert store.conn.execute(sql).fetchall() == []  # WITHOUT ROWID: its key is the table
            assert _own_rows(store.conn) == states[-1][0]
    assert states[0] == states[1]
    assert (states[0] == stored) is every  # the ingest's own rows, when every group is held


def test_a_first_ingests_edges_from_its_band_table_are_the_walks(policy_index: Path, tmp_path: Path) -> None:
    """The near edges a first ingest verifies in one pass over its band table (every candidate pair of
    the table) are those the walk from every dirty group verifies over the store's band neighbours,
    with the same similarities; a table with a group that is not dirty is not taken for the walk."""
    from chunkdedup.config import Config
    from chunkdedup.dedup.minhash import MinHasher
    from chunkdedup.dedup.near import sign_keys
    from chunkdedup.ingestion.clusters import _components, _covers, _table_edges
    from chunkdedup.normalize import exact_key

    near = Config().near
    index = tmp_path / "first.sqlite"
    shutil.copy(policy_index, index)
    with Store.open(index) as store, store.transaction():
        groups = store.conn.execute("SELECT id, text FROM groups ORDER BY id").fetchall()
        ids = [g for g, _ in groups]
        keys = sign_keys(MinHasher.from_config(near), [exact_key(t) for _, t in groups], near)
        store.conn.execute("DELETE FROM bands")
        store.conn.execute("UPDATE groups SET signed = NULL")
        table = store.bands.put_first_bands(ids, keys)
        assert table is not None
        assert _covers(table, ids) and not _covers(table, ids[1:])
        walked_seen, walked = _components(store, ids, near, {}, semantic=False)
        edges = _table_edges(store, table, near, {})
        rows_seen = list(walked_seen)
    assert len(edges) > 20  # the corpus has near duplicates
    assert edges == walked
    assert rows_seen == ids


def test_a_failed_staging_leaves_no_transaction_open(policy_index: Path, tmp_path: Path) -> None:
    """Rows that cannot be staged (a row of the wrong width) raise, and leave the connection as it
    was: no savepoint or transaction open, so the next write transaction begins."""
    from chunkdedup.store.chunk_tables import staged_rows

    index = tmp_path / "index.sqlite"
    shutil.copy(policy_index, index)
    with Store.open(index) as store:
        assert not store.conn.in_transaction
        stage = ("t_stage", "a INTEGER")
        with pytest.raises(sqlite3.ProgrammingError), staged_rows(store.conn, stage, [(1, 2)]):
            pass
        assert not store.conn.in_transaction
        with store.writer(), store.transaction():
            assert store.conn.execute("SELECT COUNT(*) FROM temp.t_stage").fetchone()[0] == 0


@pytest.mark.parametrize("stop", ["after the chunk phase", "within the chunk phase"])
def test_a_first_ingest_stopped_before_its_cluster_pass_is_completed_by_the_next(
    policy_index: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stop: str
) -> None:
    """A first ingest writes each new group with its band keys and the band rows at its cluster pass:
    stopped between the two, the index holds signed groups and no band row, and the next run (with
    documents left to chunk, or none) writes the rows from those keys: the same bands, neighbours,
    clusters and export as an ingest never stopped."""
    import chunkdedup.ingestion.sequence as pipeline
    from test_ingest import snapshot

    index = tmp_path / "stopped.sqlite"

    def stopped(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    if stop == "after the chunk phase":
        monkeypatch.setattr(pipeline, "update_clusters", stopped)
    else:  # the third chunk batch's write fails: two are committed, with their groups signed
        monkeypatch.setattr(pipeline, "STORE_BATCH", 8)
        stop_at_chunk_write(monkeypatch, 3)
    with pytest.raises(KeyboardInterrupt):
        ingest([POLICY], index, manifest=POLICY_MANIFEST)
    monkeypatch.undo()
    conn = sqlite3.connect(index)
    try:
        assert conn.execute("SELECT COUNT(*) FROM bands").fetchone()[0] == 0
        signed = conn.execute("SELECT COUNT(*) FROM groups WHERE signed IS NOT NULL").fetchone()[0]
        assert signed > 0
    finally:
        conn.close()
    ingest([POLICY], index, manifest=POLICY_MANIFEST)
    assert _neighbours(index) == _neighbours(policy_index)
    assert snapshot(index) == snapshot(policy_index)


def test_a_first_ingest_writes_its_band_rows_packed(tmp_path: Path) -> None:
    """A first ingest's band rows are copied into the empty table in one bulk load, which fills each
    leaf: inserted in key order they left each leaf about a third empty (1.5 bytes of pages a byte of
    rows, against 1.3 packed)."""
    import random

    folder = tmp_path / "records"
    folder.mkdir()
    rng = random.Random(7)
    words = [f"word{i}" for i in range(5_000)]
    with (folder / "r.jsonl").open("w") as f:
        for i in range(20_000):
            text = " ".join(rng.choice(words) for _ in range(rng.randint(6, 12)))
            f.write(f'{{"id": "r{i}", "text": "{text}"}}\n')
    index = tmp_path / "i.sqlite"
    ingest([folder], index)
    conn = sqlite3.connect(index)
    try:
        pages, payload, rows = conn.execute(
            "SELECT SUM(pgsize), SUM(payload), (SELECT COUNT(*) FROM bands) FROM dbstat WHERE name = 'bands'"
        ).fetchone()
    finally:
        conn.close()
    assert rows > 50_000
    assert pages < 1.4 * payload
