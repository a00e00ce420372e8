"""Where an index's bytes go: each table with its indexes, from SQLite's ``dbstat``, against the input.

By default it ingests ``--records`` tiny JSONL records (3-12 words each, as ``memory.py`` writes them)
into a fresh index and breaks that index down; ``--index FILE`` breaks down an existing index instead
(``--input`` names what it was made from, for the ratio). Each row is one table and the indexes on it
(an FTS5 table's shadow tables count as the FTS5 table's), in bytes of whole pages, with the payload
SQLite stores in them and the bytes per document (a record is one).

Example:
    python benchmarks/index_size.py                      # 100k tiny records
    python benchmarks/index_size.py --records 1000000
    python benchmarks/index_size.py --index corpus.sqlite --input docs/
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

from memory import _ingest, write_records  # this folder is the script's first import path

#: FTS5 keeps a virtual table's data in shadow tables named after it
_FTS_SHADOWS = ("_data", "_idx", "_docsize", "_config", "_content")


def breakdown(index: Path) -> tuple[list[tuple[str, int, int, int, int]], dict[str, list[tuple[str, int]]]]:
    """``(table, table bytes, index bytes, payload bytes, rows)`` per table, largest first, and each
    table's indexes with their bytes."""
    conn = sqlite3.connect(f"file:{index}?mode=ro", uri=True)
    try:
        owner = dict(conn.execute("SELECT name, tbl_name FROM sqlite_master"))
        kinds = dict(conn.execute("SELECT name, type FROM sqlite_master"))
        schema = conn.execute("SELECT name, sql FROM sqlite_master").fetchall()
        virtual = {name for name, sql in schema if "VIRTUAL" in (sql or "")}
        for name in list(owner):
            for base in virtual:
                if any(name == base + suffix for suffix in _FTS_SHADOWS):
                    owner[name] = base
        sizes: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
        indexes: dict[str, list[tuple[str, int]]] = defaultdict(list)
        sql = "SELECT name, SUM(pgsize), SUM(payload) FROM dbstat GROUP BY name"
        for name, size, payload in conn.execute(sql):
            table = owner.get(name, name)
            is_index = kinds.get(name) == "index" or name.startswith("sqlite_autoindex")
            sizes[table][1 if is_index else 0] += size
            sizes[table][2] += payload
            if is_index:
                indexes[table].append((name, size))
        out = []
        for table, (data, on, payload) in sizes.items():
            try:
                rows = conn.execute(f'SELECT COUNT(*) FROM "{table}"').fetchone()[0]
            except sqlite3.Error:
                rows = 0
            out.append((table, data, on, payload, rows))
        return sorted(out, key=lambda r: -(r[1] + r[2])), indexes
    finally:
        conn.close()


def report(index: Path, text_bytes: int, records: int) -> None:
    rows, indexes = breakdown(index)
    size = index.stat().st_size
    print(f"index {size / 1e6:.1f} MB = {size / text_bytes:.2f}x the input ({text_bytes / 1e6:.1f} MB),"
          f" {size / records:,.0f} bytes a document ({records:,})")
    print(f"{'table':26s} {'rows':>10s} {'table MB':>9s} {'indexes MB':>10s} {'payload MB':>10s}"
          f" {'share':>6s} {'B/doc':>6s}")
    small = 0
    for table, data, on, payload, count in rows:
        if data + on < 0.002 * size:
            small += data + on
            continue
        print(f"{table:26s} {count:10,d} {data / 1e6:9.1f} {on / 1e6:10.1f} {payload / 1e6:10.1f}"
              f" {(data + on) / size:6.1%} {(data + on) / records:6,.0f}")
        for name, bytes_ in sorted(indexes[table], key=lambda x: -x[1]):
            if bytes_ >= 0.002 * size:
                print(f"  {name:36s} {bytes_ / 1e6:10.1f}")
    print(f"{'(the rest)':26s} {'':10s} {small / 1e6:9.1f}")


def _documents(index: Path) -> int:
    conn = sqlite3.connect(f"file:{index}?mode=ro", uri=True)
    try:
        return max(1, int(conn.execute("SELECT COUNT(*) FROM documents").fetchone()[0]))
    finally:
        conn.close()


def _input_bytes(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--index", type=Path, help="break down this index instead of making one")
    parser.add_argument("--input", type=Path, help="with --index: the input it was made from")
    args = parser.parse_args(argv)
    if args.index is not None:
        text = _input_bytes(args.input) if args.input is not None else args.index.stat().st_size
        report(args.index, text, _documents(args.index))
        return 0
    with tempfile.TemporaryDirectory(prefix="chunkdedup-size-") as tmp:
        folder = Path(tmp) / "records"
        folder.mkdir()
        write_records(folder / "tiny.jsonl", args.records)
        index = Path(tmp) / "records.sqlite"
        wall, peak = _ingest(folder, index)
        print(f"{args.records:,} tiny records: ingest {wall:.1f} s, peak RSS {peak:,.0f} MB")
        report(index, (folder / "tiny.jsonl").stat().st_size, args.records)
    return 0


if __name__ == "__main__":
    sys.exit(main())
