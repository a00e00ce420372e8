"""A first ingest makes the group indexes its chunk phase does not read once, after it: the same
indexes as the schema's, the same index content, and a run killed in between leaves a mark the next
run completes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from chunkdedup import Index, ingest
from chunkdedup.store import Store
from chunkdedup.store.core import DEFERRED_INDEXES
from conftest import POLICY, new_index_schema_sql, schema_sql, traced_statements


def _indexes(index: Path) -> dict[str, str]:
    return schema_sql(index, "index", DEFERRED_INDEXES)


def _meta(index: Path) -> str | None:
    with Store.open(index, readonly=True) as store:
        return store.meta("deferred_indexes")


def _new_index_indexes() -> dict[str, str]:
    return new_index_schema_sql("index", DEFERRED_INDEXES)


def _export(index: Path) -> list[Any]:
    with Index.open(index) as ix:
        return list(ix.export())


def test_a_first_ingest_writes_its_groups_without_them_and_makes_them_as_the_schema_has_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    new = _new_index_indexes()
    assert sorted(new) == sorted(DEFERRED_INDEXES)
    index = tmp_path / "i.sqlite"
    statements = traced_statements(monkeypatch)
    ingest([POLICY / "current"], index)
    monkeypatch.undo()
    writes = [i for i, s in enumerate(statements) if s.startswith("INSERT INTO groups(id, text, n_sources")]
    assert writes
    for name in DEFERRED_INDEXES:
        dropped = statements.index(f"DROP INDEX {name}")
        made = next(i for i in range(dropped, len(statements))
                    if statements[i].startswith(f"CREATE INDEX {name} "))
        assert dropped < writes[0] and writes[-1] < made
    assert _indexes(index) == new
    assert _meta(index) is None
    # an incremental run into an index with groups keeps them
    (tmp_path / "more").mkdir()
    (tmp_path / "more" / "note.md").write_text("# A note\n\nA new document of its own words.\n")
    statements = traced_statements(monkeypatch)
    ingest([POLICY / "current", tmp_path / "more"], index)
    monkeypatch.undo()
    assert not [s for s in statements if s.startswith("DROP INDEX")]
    assert _indexes(index) == new


def test_a_run_killed_before_they_are_made_is_completed_by_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = tmp_path / "i.sqlite"

    def killed(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    # after the chunk phase's batches are committed, before the indexes are made
    monkeypatch.setattr("chunkdedup.ingestion.sequence.refresh_contexts", killed)
    with pytest.raises(KeyboardInterrupt):
        ingest([POLICY / "current"], index)
    monkeypatch.undo()
    assert _indexes(index) == {}
    assert _meta(index) is not None
    with Store.open(index, readonly=True) as store:
        assert store.groups.group_count() > 0
    ingest([POLICY / "current"], index)
    assert _indexes(index) == _new_index_indexes()
    assert _meta(index) is None
    fresh = tmp_path / "fresh.sqlite"
    ingest([POLICY / "current"], fresh)
    assert _export(index) == _export(fresh)
