"""The writer's page cache held smaller for a block (the cluster pass) and given back after it."""

from __future__ import annotations

from pathlib import Path

from chunkdedup.store import Store
from chunkdedup.store.connection import PAGE_CACHE_KIB


def _cache_kib(store: Store) -> int:
    return -int(store.conn.execute("PRAGMA cache_size").fetchone()[0])


def test_a_block_runs_under_a_smaller_page_cache_and_the_usual_one_comes_back(tmp_path: Path) -> None:
    with Store.open(tmp_path / "i.sqlite", create=True) as store:
        assert _cache_kib(store) == PAGE_CACHE_KIB
        with store.page_cache(1024):
            assert _cache_kib(store) == 1024
            with store.transaction():
                store.set_meta("near_hashing", "x")
        assert _cache_kib(store) == PAGE_CACHE_KIB
        assert store.meta("near_hashing") == "x"
