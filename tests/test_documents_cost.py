"""A Deduplicator call reads the canonicals its documents cite through those documents' sources, not
every record of the index: ``Index.records_citing`` gives what a filtered export gives, every statement
it runs searches by key (the query plans), and the work SQLite does for it (virtual machine steps) stays
the same when the index holds a hundred times as many other documents."""

from __future__ import annotations

import random
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from adapter_corpus import CONFIG, small_corpus
from chunkdedup import Index, ingest

MINE = ["bravo.txt", "alpha.txt"]  # they share a chunk
FILLER = 200
VOCABULARY = (
    "account audit billing cancel contract customer data delete deliver device email export invoice "
    "license limit login migrate notice order partner payment policy privacy quota record region "
    "renew report request retain review schedule secure service share storage subscribe support "
    "suspend tax team terminate transfer update upload usage vendor verify warranty window workspace"
)


@pytest.fixture(scope="module")
def indexes(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The small corpus alone, and the same documents among ``FILLER`` others."""
    root = tmp_path_factory.mktemp("cost")
    corpus = small_corpus(root)
    small = root / "small.sqlite"
    ingest([corpus], small, config=CONFIG)
    big_corpus = root / "big"
    shutil.copytree(corpus, big_corpus)
    (big_corpus / "filler").mkdir()
    words = random.Random(36).choices(VOCABULARY.split(), k=FILLER * 40)
    for i in range(FILLER):  # each its own words (shared lines would be stripped as boilerplate)
        mine = words[i * 40 : (i + 1) * 40]
        text = " ".join(mine[:20]).capitalize() + ".\n\n" + " ".join(mine[20:]).capitalize() + ".\n"
        (big_corpus / "filler" / f"f{i:03}.txt").write_text(text, encoding="utf-8")
    big = root / "big.sqlite"
    ingest([big_corpus], big, config=CONFIG)
    return small, big


def _filtered(index: Path, docs: list[str]) -> list[Any]:
    with Index.open(index) as ix:
        return [r for r in ix.records() if any(s.doc in docs for s in r.sources)]


@pytest.mark.parametrize("docs", [MINE, ["charlie.txt"], ["alpha.txt", "nowhere.txt"], []])
def test_records_citing_is_the_export_filtered_by_document(
    indexes: tuple[Path, Path], docs: list[str]
) -> None:
    for index in indexes:
        with Index.open(index) as ix:
            got = ix.records_citing(docs)
        assert got == _filtered(index, docs)
        assert bool(got) is bool(set(docs) - {"nowhere.txt"})


def test_records_of_gives_the_records_it_names_that_stand(indexes: tuple[Path, Path]) -> None:
    """What a Deduplicator reads again after a call: the canonicals its documents cited before."""
    small, big = indexes
    want = _filtered(big, MINE)
    ids = [r.id for r in want]
    with Index.open(big) as ix:
        assert ix.records_of([*reversed(ids), "not-a-canonical"]) == want
    with Index.open(small) as ix:
        assert ix.records_of(ids) == _filtered(small, MINE)


@contextmanager
def _counted(ix: Index) -> Iterator[Callable[[], tuple[int, list[str]]]]:
    """SQLite's virtual machine steps (in tens) and the statements run inside the block."""
    conn = ix.store.conn
    steps = [0]
    statements: list[str] = []

    def tick() -> int:
        steps[0] += 1
        return 0

    conn.set_progress_handler(tick, 10)
    conn.set_trace_callback(statements.append)
    try:
        yield lambda: (steps[0], statements)
    finally:
        conn.set_progress_handler(None, 0)
        conn.set_trace_callback(None)


def _cost(index: Path, read: Callable[[Index], object]) -> tuple[int, list[str]]:
    with Index.open(index) as ix, _counted(ix) as counted:
        read(ix)
        return counted()


def test_every_statement_searches_by_key(indexes: tuple[Path, Path]) -> None:
    _, big = indexes
    ids = [r.id for r in _filtered(big, MINE)]
    _, statements = _cost(big, lambda ix: (ix.records_citing(MINE), ix.records_of(ids)))
    assert statements
    with Index.open(big) as ix:
        for sql in statements:
            plan = [row[3] for row in ix.store.conn.execute("EXPLAIN QUERY PLAN " + sql)]
            # a view of two parts (pages: rows and rowless pages) is read as a co-routine whose
            # parts each search by key; the scan of its few rows is no scan of a table
            coroutines = {step.split()[1] for step in plan if step.startswith("CO-ROUTINE")}
            scans = [step for step in plan if step.startswith("SCAN") and step.split()[1] not in coroutines]
            assert not scans, (sql, plan)


def test_the_cost_follows_the_documents_not_the_index(indexes: tuple[Path, Path]) -> None:
    small, big = indexes
    citing_small, _ = _cost(small, lambda ix: ix.records_citing(MINE))
    citing_big, _ = _cost(big, lambda ix: ix.records_citing(MINE))
    export_small, _ = _cost(small, lambda ix: list(ix.records()))
    export_big, _ = _cost(big, lambda ix: list(ix.records()))
    assert export_big > 20 * export_small  # the measure sees the index grow ...
    assert citing_big <= 1.5 * citing_small + 50  # ... and this read does not
