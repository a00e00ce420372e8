"""A fresh ``chunkdedup ingest`` against its floor: the same work through the project's pure functions,
written to SQLite in bulk (issue #12: the ratio ingest / floor, goal <= 2x).

**Ingest row.** ``chunkdedup ingest CORPUS --index FRESH --parallelism 1 --json`` in its own process
(this tree's ``src`` first on its path): wall and CPU seconds of the whole process, and the report's
``totals.engine.seconds`` per stage.

**Floor rows**, in a second process, one stage after another, everything in memory, none of the
incremental machinery (no dirty marks, no per-batch refreshes of groups and canonicals, no band
stage table, no reads of text the process holds):

0. kernels: the numba kernels loaded from their cache (or compiled) on a 3-key toy, which the ingest
   pays too;
1. parse: ``parse.discover`` + ``parse.parse_file`` on every input (no file hashes: they serve only
   the next run's "unchanged" check);
2. boilerplate keys: ``boilerplate.document_keys`` per document;
3. chrome: distinct units per candidate key (a dict of sets), ``boilerplate.is_chrome`` on each;
4. strip + chunk + exact key: ``stages.chunk_pages(..., compiled=True)`` per document (``boilerplate.strip``,
   ``chunk.chunk_document``, ``dedup.exact.key_chunk``);
5. exact groups: chunks grouped by canonical id, each group's smallest (doc_id, page, start) source
   its representative;
6. MinHash: ``dedup.near.sign_keys`` with ``MinHasher.from_config`` on every group's exact key
   (signatures and band keys);
7. candidate pairs: groups sharing a band key (band keys carry their band index), from one sort of
   the band key array, as neighbour lists (what ``store.bands.band_neighbours`` reads);
8. verification: ``dedup.near.connect`` over those lists, shingle Jaccard of ``MinHasher.shingles``
   (cached per group), as :mod:`chunkdedup.ingestion.clusters` runs it;
9. clustering: ``dedup.near.decide`` (leader clustering with the number/date guard);
10. page text: ``store.pagetext.PageCodec`` trained on the first pages and encoding every raw page
    (and each clean page that stripping changed), as the store keeps them;
11. contexts: ``context.document_contexts`` of every document (its metadata, title, file name and
    stripped running lines);
12. row tuples: documents, doc_keys, pages, stripped, bp_keys, chrome, sources, groups (with text,
    marked signed), bands (unique, in key order), canonicals (with the store's signature), variants;
13. bulk insert: one transaction, ``executemany`` per table into a fresh file with the store's page
    size, journal and cache settings, secondary indexes created after the rows, commit;
14. FTS5: the groups' and contexts' external-content tables each built once with ``'rebuild'``.

The floor is the sum of the stages (wall and CPU seconds each; imports and the interpreter's start
are outside it, and reported as the floor process's own wall). Its schema is a **simplified copy** of
the real tables: the same columns the ingest fills, the same keys, no triggers, and none of
``meta``, ``runs``, ``files``, ``migrations``, ``dirty``, ``band_stage``, ``doc_chrome``,
``tombstones``; it is a measurement target, not an index the CLI opens.

Printed: each floor stage, the floor total, the ingest's stages and whole process, the ratio ingest /
floor (wall, and CPU: on a loaded machine the CPU ratio is the steadier one), and the counts of both
(documents, pages, chunks, groups, canonicals, variants, stripped lines): they are equal when the
floor made the ingest's decisions. ``--rounds N`` interleaves N rounds (ingest, floor, ingest, ...)
and prints medians. The JSON holds all of it, every round, the machine, the corpus and the commit.

Example:
    python benchmarks/ingest_floor.py --corpus /tmp/corpus50k --rounds 2
    python benchmarks/ingest_floor.py --records 50000        # writes ingest_vs_datasketch.py's corpus
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DEFAULT_OUT = REPO / "benchmarks" / "results" / "ingest_floor.json"

#: The floor's tables: the columns the ingest fills, keys as the store declares them; secondary
#: indexes are made after the rows (:data:`INDEXES`).
SCHEMA = """
CREATE TABLE paths(fkey INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE);
CREATE TABLE document_rows(
    doc_id TEXT PRIMARY KEY, fkey INTEGER NOT NULL, content_hash TEXT NOT NULL,
    unit TEXT NOT NULL, metadata TEXT, department TEXT, family TEXT,
    effective_date TEXT, n_pages INTEGER NOT NULL, title TEXT, state TEXT NOT NULL,
    config_hash TEXT, run_id INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE pages(
    doc_id TEXT NOT NULL, page INTEGER NOT NULL, has_text INTEGER NOT NULL,
    raw_text TEXT NOT NULL, clean_text TEXT, UNIQUE(doc_id, page));
CREATE TABLE doc_keys(khash INTEGER NOT NULL, doc_id TEXT NOT NULL, counted INTEGER NOT NULL,
    PRIMARY KEY(khash, doc_id)) WITHOUT ROWID;
CREATE TABLE stripped(
    doc_id TEXT NOT NULL, khash INTEGER NOT NULL, scope TEXT NOT NULL,
    pages INTEGER NOT NULL, lines INTEGER NOT NULL, example TEXT NOT NULL,
    PRIMARY KEY(doc_id, khash, scope)) WITHOUT ROWID;
CREATE TABLE bp_keys(khash INTEGER PRIMARY KEY, key TEXT NOT NULL);
CREATE TABLE chrome(khash INTEGER PRIMARY KEY, units INTEGER NOT NULL);
CREATE TABLE source_rows(
    doc_id TEXT NOT NULL, page INTEGER NOT NULL, start INTEGER NOT NULL, "end" INTEGER NOT NULL,
    gid INTEGER NOT NULL, PRIMARY KEY(doc_id, page, start)) WITHOUT ROWID;
CREATE TABLE groups(
    gid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, text TEXT NOT NULL,
    n_sources INTEGER NOT NULL, rep_doc TEXT NOT NULL, rep_page INTEGER NOT NULL,
    rep_start INTEGER NOT NULL, signed INTEGER, canonical_id TEXT NOT NULL,
    relation TEXT NOT NULL, similarity REAL NOT NULL, differing TEXT NOT NULL,
    edged INTEGER NOT NULL DEFAULT 0);
CREATE TABLE bands(band_key INTEGER NOT NULL, gid INTEGER NOT NULL,
    PRIMARY KEY(band_key, gid)) WITHOUT ROWID;
CREATE TABLE canonicals(
    id TEXT PRIMARY KEY, text TEXT, n_sources INTEGER NOT NULL, signature TEXT NOT NULL,
    updated_run INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE variants(
    a TEXT NOT NULL, b TEXT NOT NULL, similarity REAL NOT NULL, differing TEXT NOT NULL,
    reason TEXT NOT NULL DEFAULT 'number', PRIMARY KEY(a, b)) WITHOUT ROWID;
CREATE TABLE contexts(dkey INTEGER PRIMARY KEY, doc_id TEXT NOT NULL UNIQUE, text TEXT NOT NULL);
CREATE TABLE text_dicts(dict_id INTEGER PRIMARY KEY, data BLOB NOT NULL);
CREATE VIRTUAL TABLE groups_fts USING fts5(
    text, content='groups', content_rowid='gid', tokenize='porter unicode61');
CREATE VIRTUAL TABLE contexts_fts USING fts5(
    text, content='contexts', content_rowid='dkey', tokenize='porter unicode61');
"""
INDEXES = """
CREATE INDEX documents_file ON document_rows(fkey);
CREATE INDEX documents_pending ON document_rows(state) WHERE state = 'pending';
CREATE INDEX documents_family ON document_rows(family) WHERE family IS NOT NULL;
CREATE INDEX doc_keys_doc ON doc_keys(doc_id);
CREATE INDEX stripped_key ON stripped(khash);
CREATE INDEX source_rows_gid ON source_rows(gid, doc_id, page, start);
CREATE INDEX groups_canonical ON groups(canonical_id);
CREATE INDEX variants_b ON variants(b);
"""

#: The floor's stages in order: (JSON key, table label).
FLOOR_STAGES = (
    ("kernels", "numba kernels load (sign, shingle, cluster a 3-key toy)"),
    ("parse", "parse (discover + parse_file)"),
    ("boilerplate_keys", "boilerplate document_keys"),
    ("chrome", "chrome decision (unit counts, is_chrome)"),
    ("chunk_pages", "strip + chunk + exact key (chunk_pages)"),
    ("exact_groups", "exact groups (group by canonical id)"),
    ("minhash", "MinHash signatures + band keys (sign_keys)"),
    ("candidates", "candidate pairs (equal band keys)"),
    ("verify", "verification (connect, shingle Jaccard)"),
    ("cluster", "leader clustering + guard (decide)"),
    ("page_codec", "page text compression (PageCodec)"),
    ("contexts", "document contexts (document_contexts)"),
    ("rows", "row tuples (every other table)"),
    ("bulk_insert", "bulk insert, indexes after, commit"),
    ("fts5", "FTS5 external-content 'rebuild' (groups, contexts)"),
)


class Clock:
    """Wall and CPU seconds (every thread of the process) per named stage."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.cpu: dict[str, float] = {}

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        start, cpu = time.perf_counter(), time.process_time()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - start
            self.cpu[name] = self.cpu.get(name, 0.0) + time.process_time() - cpu


def floor(corpus: Path, out: Path) -> dict[str, Any]:
    """Run the floor's stages on ``corpus`` and write its rows to ``out`` (a new file); returns the
    stage seconds and the counts."""
    import numpy as np

    from chunkdedup.config import Config
    from chunkdedup.dedup.exact import KeyedChunk, KeyedDocument
    from chunkdedup.dedup.minhash import MinHasher, jaccard
    from chunkdedup.dedup.near import connect, decide, sign_keys
    from chunkdedup.ingestion.context import ContextSource, document_contexts, running_lines
    from chunkdedup.ingestion.stages import chunk_pages
    from chunkdedup.normalize import key_hash
    from chunkdedup.parse import discover, parse_file
    from chunkdedup.store.band_tables import fold_keys
    from chunkdedup.store.core import document_row
    from chunkdedup.store.pagetext import PageCodec
    from chunkdedup.store.schema import stored_hash
    from chunkdedup.text import boilerplate
    from chunkdedup.text.chunk import chunk_document
    from chunkdedup.types import Document, FileStatus, GroupRow, Page

    cfg = Config()
    bp, near = cfg.boilerplate, cfg.near
    clock = Clock()

    hasher = MinHasher.from_config(near)
    with clock("kernels"):  # the compiled kernels' cache load (or compile), which the ingest pays too
        toy = ["a b c d e f g", "a b c d e f h", "x y z w v u t"]
        toy_keys = dict(zip("abc", toy, strict=True))
        sign_keys(hasher, toy, near)
        hasher.shingles(toy[0])
        decide(
            [GroupRow(g, None, (g, 1, 0), g) for g in "abc"],
            {("a", "b"): ("near", 0.9)},
            near.guard,
            near.linkage,
            toy_keys,
        )
        chunk_document("toy", (Page(1, "A b.\nC d. E f."),), cfg.chunk, compiled=True)

    with clock("parse"):
        docs: list[Document] = []
        for inp in discover([corpus], None, cfg.parse):
            pf = parse_file(inp, cfg.parse)
            if pf.status == FileStatus.INGESTED:
                docs.extend(pf.documents)
        docs.sort(key=lambda d: d.doc_id)  # the ingest chunks in doc_id order

    with clock("boilerplate_keys"):
        doc_keys = [boilerplate.document_keys(d.pages, bp) for d in docs]

    with clock("chrome"):
        units_of: dict[int, set[str]] = {}
        for d, dk in zip(docs, doc_keys, strict=True):
            for candidate in dk.candidates:
                units_of.setdefault(boilerplate.key_id(candidate), set()).add(d.unit)
        total_units = len({d.unit for d in docs})
        unit_counts = {h: len(u) for h, u in units_of.items()}
        chrome = {h: n for h, n in unit_counts.items() if boilerplate.is_chrome(n, total_units, bp)}
        chrome_ids = frozenset(chrome)

    with clock("chunk_pages"):
        # each document with the chrome keys it holds, as the ingest's chunk jobs carry them
        # (compiled, as the ingest's chunk jobs of a run this size chunk)
        keyed_docs: list[KeyedDocument] = []
        for d, dk in zip(docs, doc_keys, strict=True):
            held = chrome_ids & {boilerplate.key_id(k) for k in dk.strippable}
            keyed_docs.append(chunk_pages(d.doc_id, d.pages, held, cfg, compiled=True))

    with clock("exact_groups"):
        members: dict[str, list[KeyedChunk]] = {}
        for kd in keyed_docs:
            for k in kd.keyed:
                members.setdefault(k.canonical_id, []).append(k)
        gids = sorted(members)
        for gid in gids:
            members[gid].sort(key=lambda k: (k.chunk.doc_id, k.chunk.page, k.chunk.start))
        keys = {gid: members[gid][0].key for gid in gids}

    with clock("minhash"):
        bands = sign_keys(hasher, [keys[g] for g in gids], near)

    with clock("candidates"):
        flat = bands.ravel()
        owner = np.repeat(np.arange(len(gids), dtype=np.int64), bands.shape[1] if bands.ndim == 2 else 0)
        order = np.argsort(flat, kind="stable")
        sorted_keys, sorted_owner = flat[order], owner[order]
        # runs of equal band keys: every pair in a run is a candidate
        starts = np.flatnonzero(np.r_[True, sorted_keys[1:] != sorted_keys[:-1]])
        ends = np.r_[starts[1:], len(sorted_keys)]
        neighbour_sets: dict[str, set[str]] = {}
        for lo, hi in zip(starts[ends - starts > 1].tolist(), ends[ends - starts > 1].tolist(), strict=True):
            run = {gids[i] for i in sorted_owner[lo:hi].tolist()}
            if len(run) < 2:
                continue
            for g in run:
                neighbour_sets.setdefault(g, set()).update(run - {g})
        neighbours = {g: sorted(s) for g, s in neighbour_sets.items()}
        candidate_pairs = sum(len(s) for s in neighbours.values()) // 2

    with clock("verify"):
        shingle_cache: dict[str, Any] = {}

        def shingles(gid: str) -> Any:
            found = shingle_cache.get(gid)
            if found is None:
                found = shingle_cache[gid] = hasher.shingles(keys[gid])
            return found

        seen, edges = connect(
            gids,
            lambda g: neighbours.get(g, ()),
            lambda a, b: jaccard(shingles(a), shingles(b)),
            near.threshold,
        )
        shingle_cache.clear()

    with clock("cluster"):
        first = {gid: members[gid][0].chunk for gid in gids}
        rows = [GroupRow(g, None, (first[g].doc_id, first[g].page, first[g].start), g) for g in seen]
        on_edges = {g for pair in edges for g in pair}
        assignments, variants = decide(
            rows, edges, near.guard, near.linkage, keys,
            texts={g: first[g].text for g in on_edges}, meaning=near.meaning, numbering=near.numbering,
        )
        decided = {a.group_id: a for a in assignments}
    canonical_ids = sorted({a.canonical_id for a in assignments})

    with clock("page_codec"):
        codec = PageCodec({}, lambda _dict_id: None)
        codec.learn([p.text for d in docs for p in d.pages])
        raw_pages = [codec.encode(p.text) for d in docs for p in d.pages]
        changed = {(kd.doc_id, s.page) for kd in keyed_docs for s in kd.stripped}
        clean_pages = {
            (kd.doc_id, p.number): codec.encode(p.text)
            for kd in keyed_docs
            for p in kd.clean
            if (kd.doc_id, p.number) in changed
        }

    with clock("rows"):
        run_id, config_hash = 1, "floor"
        # a document row as the store keeps it (migrations 0024-0025): its file by a key into paths,
        # its content hash in 16 bytes, no '{}' metadata
        fkey = {path: i + 1 for i, path in enumerate(sorted({d.path for d in docs}))}
        document_rows = []
        for d in docs:
            path, content_hash, unit, metadata, *rest = document_row(d)
            kept = None if metadata == "{}" else metadata
            own = "" if unit == f"doc:{d.doc_id}" else unit  # its own unit as '' (migration 0024)
            row = (d.doc_id, fkey[path], stored_hash(content_hash), own, kept, *rest)
            document_rows.append((*row, "indexed", config_hash, run_id))
        page_rows = [
            (d.doc_id, p.number, int(p.has_text_layer), raw, clean_pages.get((d.doc_id, p.number)))
            for d, p, raw in zip(
                (d for d in docs for _ in d.pages), (p for d in docs for p in d.pages), raw_pages, strict=True
            )
        ]
        key_rows: list[tuple[int, str, int]] = []
        for d, dk in zip(docs, doc_keys, strict=True):
            hashes = {boilerplate.key_id(k): 0 for k in dk.strippable} | {
                boilerplate.key_id(k): 1 for k in dk.candidates
            }
            key_rows.extend((h, d.doc_id, counted) for h, counted in hashes.items())
        key_rows.sort()
        stripped_rows: list[tuple[str, int, str, int, int, str]] = []
        bp_keys: dict[int, str] = {}
        running_of: dict[str, list[tuple[int, int, str]]] = {}
        for kd in keyed_docs:
            by_key: dict[tuple[str, str], list[Any]] = {}
            for s in kd.stripped:
                by_key.setdefault((s.key, s.scope), []).append(s)
            for (key, scope), lines in sorted(by_key.items()):
                example = "\n".join(ln.line for ln in lines if ln.page == lines[0].page)
                khash, n_pages = boilerplate.key_id(key), len({ln.page for ln in lines})
                stripped_rows.append((kd.doc_id, khash, scope, n_pages, len(lines), example))
                bp_keys[khash] = key
                if scope == "running":
                    running_of.setdefault(kd.doc_id, []).append((-n_pages, khash, example))
        source_rows = []
        for gid in gids:
            a = decided[gid]
            for kc in members[gid]:
                ch = kc.chunk
                source_rows.append(
                    (ch.doc_id, ch.page, ch.start, ch.end, gid, a.canonical_id, a.relation, a.similarity)
                )
        source_rows.sort(key=lambda r: (r[0], r[1], r[2]))
        gkey = {gid: i + 1 for i, gid in enumerate(gids)}
        # each group's band keys, as the bands table keeps them (folded to 32 bits); a group keeps only
        # the mark that it is signed (its keys are signed again from its text where they are needed)
        if bands.ndim == 2:
            bands = fold_keys(bands)
        group_rows = [
            (
                gkey[gid],
                gid,
                first[gid].text,
                len(members[gid]),
                first[gid].doc_id,
                first[gid].page,
                first[gid].start,
                1 if bands.ndim == 2 else None,
                decided[gid].canonical_id,
                decided[gid].relation,
                decided[gid].similarity,
                json.dumps(list(decided[gid].differing)),
            )
            for gid in gids
        ]
        # bands: (band_key, gid) unique, in key order (one sort of the arrays; gid = index + 1)
        band_gid = np.repeat(np.arange(1, len(gids) + 1, dtype=np.int64), bands.shape[1])
        band_key = bands.ravel()
        by = np.lexsort((band_gid, band_key))
        band_key, band_gid = band_key[by], band_gid[by]
        keep = np.r_[True, (band_key[1:] != band_key[:-1]) | (band_gid[1:] != band_gid[:-1])]
        band_rows = list(zip(band_key[keep].tolist(), band_gid[keep].tolist(), strict=True))
        by_canonical: dict[str, list[tuple[Any, ...]]] = {}
        for r in source_rows:
            by_canonical.setdefault(r[5], []).append((r[0], r[1], r[2], r[3], r[6], r[7], r[4]))
        canonical_rows = []
        for cid in canonical_ids:
            srcs = by_canonical[cid]  # in (doc_id, page, start) order: source_rows are
            text = first[srcs[0][6]].text  # the canonical's first source is its group's first
            signature = stored_hash(key_hash(json.dumps([text, [list(r[:6]) for r in srcs]])))
            canonical_rows.append((cid, None if srcs[0][6] == cid else text, len(srcs), signature, run_id))
        variant_rows = [(a, b, s, json.dumps(list(diff)), why) for a, b, s, diff, why in variants]
    with clock("contexts"):
        sources = [
            ContextSource(
                d.doc_id,
                d.path,
                d.metadata,
                d.title,
                running_lines([ex for _, _, ex in sorted(running_of.get(d.doc_id, []))]),
            )
            for d in docs
        ]
        texts = document_contexts(sources, cfg.retrieval)
        context_rows = [(d.doc_id, text) for d, text in zip(docs, texts, strict=True)]

    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{out}{suffix}").unlink(missing_ok=True)
    conn = sqlite3.connect(out, isolation_level=None)
    conn.execute("PRAGMA page_size = 16384")  # the store's settings for a new file
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA cache_size = -262144")
    conn.executescript(SCHEMA)
    with clock("bulk_insert"):
        conn.execute("BEGIN")
        c = conn
        c.executemany("INSERT INTO paths(fkey, path) VALUES (?, ?)", [(k, p) for p, k in fkey.items()])
        c.executemany("INSERT INTO document_rows VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                      document_rows)
        c.executemany(
            "INSERT INTO pages(doc_id, page, has_text, raw_text, clean_text) VALUES (?, ?, ?, ?, ?)",
            page_rows,
        )
        if codec.active is not None:
            c.execute("INSERT INTO text_dicts(dict_id, data) VALUES (?, ?)", codec.active)
        c.executemany("INSERT INTO doc_keys(khash, doc_id, counted) VALUES (?, ?, ?)", key_rows)
        c.executemany("INSERT INTO chrome(khash, units) VALUES (?, ?)", sorted(chrome.items()))
        c.executemany("INSERT INTO bp_keys(khash, key) VALUES (?, ?)", sorted(bp_keys.items()))
        c.executemany("INSERT INTO stripped VALUES (?, ?, ?, ?, ?, ?)", stripped_rows)
        c.executemany(  # a source names its group by its integer key (migration 0025)
            'INSERT INTO source_rows(doc_id, page, start, "end", gid) VALUES (?, ?, ?, ?, ?)',
            [(*r[:4], gkey[r[4]]) for r in source_rows],
        )
        c.executemany(
            "INSERT INTO groups(gid, id, text, n_sources, rep_doc, rep_page, rep_start, signed, canonical_id,"
            " relation, similarity, differing) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            group_rows,
        )
        c.executemany("INSERT INTO bands(band_key, gid) VALUES (?, ?)", band_rows)
        c.executemany(
            "INSERT INTO canonicals(id, text, n_sources, signature, updated_run) VALUES (?, ?, ?, ?, ?)",
            canonical_rows,
        )
        c.executemany("INSERT INTO variants VALUES (?, ?, ?, ?, ?)", variant_rows)
        c.executemany("INSERT INTO contexts(doc_id, text) VALUES (?, ?)", context_rows)
        for statement in INDEXES.strip().split(";\n"):
            c.execute(statement)
        c.execute("COMMIT")
    with clock("fts5"):
        c.execute("BEGIN")
        c.execute("INSERT INTO groups_fts(groups_fts) VALUES('rebuild')")
        c.execute("INSERT INTO contexts_fts(contexts_fts) VALUES('rebuild')")
        c.execute("COMMIT")
    c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()

    seconds = {name: round(clock.seconds.get(name, 0.0), 3) for name, _ in FLOOR_STAGES}
    cpu = {name: round(clock.cpu.get(name, 0.0), 3) for name, _ in FLOOR_STAGES}
    return {
        "seconds": seconds,
        "total_seconds": round(sum(clock.seconds.values()), 3),
        "cpu_seconds": cpu,
        "total_cpu_seconds": round(sum(clock.cpu.values()), 3),
        "counts": {
            "documents": len(docs),
            "pages": len(page_rows),
            "raw_chunks": len(source_rows),
            "after_exact": len(gids),
            "canonical_chunks": len(canonical_ids),
            "candidate_pairs": candidate_pairs,
            "verified_edges": len(edges),
            "variant_pairs": len(variant_rows),
            "chrome_keys": len(chrome),
            "lines_stripped": sum(r[4] for r in stripped_rows),
            "band_rows": len(band_rows),
            "doc_key_rows": len(key_rows),
        },
        "index_bytes": out.stat().st_size,
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def _env() -> dict[str, str]:
    """This tree's ``src`` first on the path of every child process."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO / "src"), env.get("PYTHONPATH")) if p)
    return env


def _run_child(cmd: Sequence[str]) -> tuple[float, str, float, float]:
    """Wall seconds, stdout, peak RSS (MiB) and CPU seconds of one child process (its own rusage,
    from ``wait4``: not the maximum over every child so far)."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, text=True, env=_env())
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{err.read()[-4000:]}")
        return wall, out.read(), usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime


def run_ingest(corpus: Path, index: Path) -> dict[str, Any]:
    """``chunkdedup ingest CORPUS --index INDEX --parallelism 1 --json`` on a fresh index, timed."""
    for suffix in ("", "-wal", "-shm"):
        Path(f"{index}{suffix}").unlink(missing_ok=True)
    cmd = [sys.executable, "-c", "import sys; from chunkdedup.cli import main; sys.exit(main())"]
    cmd += ["ingest", str(corpus), "--index", str(index), "--parallelism", "1", "--json"]
    wall, stdout, rss, cpu = _run_child(cmd)
    totals = json.loads(stdout)["totals"]
    keep = ("documents", "pages", "raw_chunks", "after_exact", "canonical_chunks", "variant_pairs")
    return {
        "command": "chunkdedup ingest CORPUS --index FRESH --parallelism 1 --json",
        "wall_seconds": round(wall, 3),
        "cpu_seconds": round(cpu, 3),
        "seconds": totals["engine"]["seconds"],
        "counts": {k: totals[k] for k in keep} | {"lines_stripped": totals["lines_stripped"]},
        "index_bytes": totals["index_bytes"],
        "peak_rss_mib": round(rss, 1),
    }


def run_floor(corpus: Path, index: Path) -> dict[str, Any]:
    """:func:`floor` in its own process, timed as a whole too."""
    wall, stdout, _, cpu = _run_child(
        [sys.executable, __file__, "--floor-only", str(corpus), "--index-out", str(index)]
    )
    result: dict[str, Any] = json.loads(stdout)
    result["process_wall_seconds"] = round(wall, 3)  # with the interpreter's start and the imports
    result["process_cpu_seconds"] = round(cpu, 3)
    return result


def _git_head() -> str | None:
    try:
        done = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    return done.stdout.strip()


def _corpus_counts(corpus: Path) -> dict[str, Any]:
    files = [p for p in corpus.rglob("*") if p.is_file()]
    return {"path": str(corpus), "files": len(files), "bytes": sum(p.stat().st_size for p in files)}


def median_run(runs: Sequence[Any]) -> Any:
    """The median of every number across rounds (the same shape as one round; counts are equal)."""
    first = runs[0]
    if isinstance(first, dict):
        return {k: median_run([r[k] for r in runs]) for k in first}
    if isinstance(first, float):
        return round(statistics.median(runs), 3)
    if isinstance(first, int) and not isinstance(first, bool):
        return statistics.median_low(runs)  # counts are equal in every round; bytes stay integers
    return first


def report(
    corpus: Path, ingests: Sequence[dict[str, Any]], floors: Sequence[dict[str, Any]], out: Path
) -> dict[str, Any]:
    """Print the table (medians over the rounds) and write the JSON (medians and every round)."""
    ingest, fl = median_run(ingests), median_run(floors)
    from rich.console import Console
    from rich.table import Table

    total, total_cpu = fl["total_seconds"], fl["total_cpu_seconds"]
    ratio = ingest["wall_seconds"] / total if total else float("inf")
    cpu_ratio = ingest["cpu_seconds"] / total_cpu if total_cpu else float("inf")
    title = f"ingest vs its floor: {corpus} ({fl['counts']['documents']:,} documents)"
    if len(ingests) > 1:
        title += f", median of {len(ingests)} interleaved rounds"
    table = Table(title=title)
    for col in ("row", "wall s", "share", "CPU s"):
        table.add_column(col, justify="left" if col == "row" else "right")
    for key, label in FLOOR_STAGES:
        s = fl["seconds"][key]
        share = f"{100 * s / total:.0f}%" if total else ""
        table.add_row(f"floor: {label}", f"{s:.2f}", share, f"{fl['cpu_seconds'][key]:.2f}")
    table.add_row(
        "[bold]floor total (sum of the stages)[/bold]",
        f"[bold]{total:.2f}[/bold]",
        "100%",
        f"[bold]{total_cpu:.2f}[/bold]",
    )
    table.add_row(
        "floor process (with interpreter start, imports)",
        f"{fl['process_wall_seconds']:.2f}",
        "",
        f"{fl['process_cpu_seconds']:.2f}",
        end_section=True,
    )
    for stage, s in ingest["seconds"].items():
        table.add_row(f"ingest: {stage} (engine.seconds)", f"{s:.2f}", "", "")
    table.add_row(
        "[bold]ingest (whole process)[/bold]",
        f"[bold]{ingest['wall_seconds']:.2f}[/bold]",
        "",
        f"[bold]{ingest['cpu_seconds']:.2f}[/bold]",
        end_section=True,
    )
    table.add_row(
        "[bold]ratio ingest / floor[/bold] (goal <= 2x)",
        f"[bold]{ratio:.2f}x[/bold]",
        "",
        f"[bold]{cpu_ratio:.2f}x[/bold]",
    )
    console = Console(width=120)
    console.print(table)
    counts = Table(title="counts")
    counts.add_column("count")
    counts.add_column("ingest", justify="right")
    counts.add_column("floor", justify="right")
    for key in ("documents", "pages", "raw_chunks", "after_exact", "canonical_chunks", "variant_pairs"):
        counts.add_row(key, f"{ingest['counts'][key]:,}", f"{fl['counts'][key]:,}")
    stripped = ingest["counts"]["lines_stripped"]
    counts.add_row(
        "lines_stripped",
        f"{stripped['running'] + stripped['chrome']:,}",
        f"{fl['counts']['lines_stripped']:,}",
    )
    counts.add_row("index bytes", f"{ingest['index_bytes']:,}", f"{fl['index_bytes']:,}")
    counts.add_row("peak RSS MiB", f"{ingest['peak_rss_mib']:,.0f}", f"{fl['peak_rss_mib']:,.0f}")
    console.print(counts)
    gap = fl["counts"]["canonical_chunks"] - ingest["counts"]["canonical_chunks"]
    ours, theirs = fl["counts"]["canonical_chunks"], ingest["counts"]["canonical_chunks"]
    console.print(f"canonicals: ingest {theirs:,}, floor {ours:,} (floor - ingest: {gap:+,})")
    walls = " / ".join(
        f"{i['wall_seconds']:.1f} vs {f['total_seconds']:.1f}" for i, f in zip(ingests, floors, strict=True)
    )
    console.print(f"each round, ingest wall vs floor total: {walls}")
    result: dict[str, Any] = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": _git_head(),
        "machine": {
            "platform": platform.platform(),
            "python": platform.python_version(),
            "cores": os.cpu_count(),
            "load_average": list(os.getloadavg()),
        },
        "corpus": _corpus_counts(corpus),
        "ingest": ingest,
        "floor": fl,
        "ratio_ingest_over_floor": round(ratio, 3),
        "cpu_ratio_ingest_over_floor": round(cpu_ratio, 3),
        # both whole processes (the floor's with its interpreter start and imports, as the ingest's)
        "ratio_process_walls": round(ingest["wall_seconds"] / fl["process_wall_seconds"], 3),
        "canonical_gap_floor_minus_ingest": gap,
        "rounds": {"ingest": list(ingests), "floor": list(floors)},
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    console.print(f"written to {out}")
    return result


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--corpus", type=Path, help="a folder of input files (default: write --records records)")
    ap.add_argument(
        "--records", type=int, default=50_000, help="records of the generated corpus (no --corpus)"
    )
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--index-out", type=Path, help="the floor's SQLite file (default: a temp file)")
    ap.add_argument("--rounds", type=int, default=1, help="interleaved rounds (ingest, floor, ...); medians")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--floor-only", type=Path, metavar="DIR", help=argparse.SUPPRESS)  # the floor's process
    args = ap.parse_args(argv)
    if args.floor_only is not None:
        with tempfile.TemporaryDirectory(prefix="chunkdedup-floor-") as tmp:
            out = args.index_out or Path(tmp) / "floor.sqlite"
            print(json.dumps(floor(args.floor_only, out)))
        return 0
    with tempfile.TemporaryDirectory(prefix="chunkdedup-floor-") as tmp:
        corpus = args.corpus
        if corpus is None:
            sys.path.insert(0, str(REPO / "benchmarks"))
            from ingest_vs_datasketch import write_corpus  # type: ignore[import-not-found]

            corpus = Path(tmp) / "corpus"
            write_corpus(corpus, args.records, args.seed)
        ingests, floors = [], []
        for _ in range(max(1, args.rounds)):
            ingests.append(run_ingest(corpus, Path(tmp) / "ingest.sqlite"))
            floors.append(run_floor(corpus, args.index_out or Path(tmp) / "floor.sqlite"))
        report(corpus, ingests, floors, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
