"""The ingest pipeline end to end: provenance, incremental equals fresh, bad input, safety."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from chunkdedup import Config, FileStatus, Index, exact_key, ingest, remove_documents
from chunkdedup.config import BoilerplateConfig
from chunkdedup.dedup.minhash import MinHasher, jaccard
from chunkdedup.errors import IndexBusyError, SchemaError
from chunkdedup.store import Store
from chunkdedup.store.boilerplate_tables import BoilerplateTables
from chunkdedup.store.document_tables import DocumentTables
from chunkdedup.store.schema import CLEAN_TEXT
from conftest import POLICY, POLICY_MANIFEST


def snapshot(index: Path) -> dict[str, Any]:
    """Everything a user can see of an index, minus run ids and timestamps."""
    with Index.open(index) as ix:
        records = list(ix.export())
        bp = sorted((b.key, b.scope, b.doc_count, b.page_count) for b in ix.boilerplate())
        docs = [
            (d["doc"], d["pages"], d["state"], json.dumps(d["metadata"], sort_keys=True))
            for d in ix.documents()
        ]
    return {"records": records, "boilerplate": bp, "documents": docs}


def test_site_policy_metadata_ids_and_provenance(policy_index: Path) -> None:
    with Index.open(policy_index) as ix:
        docs = {d["doc"]: d for d in ix.documents()}
        stats = ix.stats()
        records = list(ix.export())
        sql = f"SELECT doc_id, page, {CLEAN_TEXT} FROM pages"
        pages = {(r[0], r[1]): r[2] for r in ix.store.conn.execute(sql)}
    current = docs["current/acceptable-use-policies/github-acceptable-use-policies.md"]
    assert current["metadata"]["family"] == "github-acceptable-use-policies"
    assert current["metadata"]["department"] == "acceptable-use-policies"
    assert current["metadata"]["effective_date"] == "2026-03-17"
    assert "manifest.jsonl" not in docs
    assert len([d for d in docs if d.startswith(("current/", "history/"))]) == 185
    assert stats["canonical_chunks"] < stats["raw_chunks"]  # versions repeat clauses verbatim
    multi = [r for r in records if len(r["sources"]) > 1]
    assert multi, "dated versions share unchanged clauses"
    hasher = MinHasher()
    for rec in records:
        key = exact_key(rec["text"])
        for s in rec["sources"]:
            # every exact source slices its cleaned page back to the canonical's key, and every
            # near source to a text whose shingle Jaccard with it is the recorded similarity
            copy = exact_key(pages[(s["doc"], s["page"])][s["start"] : s["end"]])
            if s["relation"] == "exact":
                assert copy == key and s["similarity"] == 1.0
            else:
                assert s["relation"] == "near" and 0.85 <= s["similarity"] < 1.0
                assert jaccard(hasher.shingles(copy), hasher.shingles(key)) == s["similarity"]
        assert rec["sources"] == sorted(rec["sources"], key=lambda s: (s["doc"], s["page"], s["start"]))
        first = rec["sources"][0]
        assert rec["text"] == pages[(first["doc"], first["page"])][first["start"] : first["end"]]


def test_reingesting_unchanged_files_changes_nothing(tmp_path: Path) -> None:
    index = tmp_path / "i.sqlite"
    ingest([POLICY], index, manifest=POLICY_MANIFEST)
    before = snapshot(index)
    report = ingest([POLICY], index, manifest=POLICY_MANIFEST)
    assert {f.status for f in report.files} == {FileStatus.UNCHANGED}
    assert report.totals["documents_chunked"] == 0
    assert snapshot(index) == before


def test_two_batches_and_a_removal_equal_one_fresh_ingest(tmp_path: Path) -> None:
    corpus = tmp_path / "site-policy"
    shutil.copytree(POLICY, corpus)
    manifest = corpus / "manifest.jsonl"
    family = corpus / "history" / "github-acceptable-use-policies"
    gone = "history/github-acceptable-use-policies/" + sorted(p.name for p in family.iterdir())[0]

    incremental = tmp_path / "incremental.sqlite"
    ingest([corpus / "history"], incremental, manifest=manifest)
    ingest([corpus / "current", corpus / "history"], incremental, manifest=manifest)
    remove_documents(incremental, [gone])

    (corpus / gone).unlink()
    fresh = tmp_path / "fresh.sqlite"
    ingest([corpus / "current", corpus / "history"], fresh, manifest=manifest)
    a, b = snapshot(incremental), snapshot(fresh)
    assert a["documents"] == b["documents"]
    assert a["records"] == b["records"]


def _write_corpus(folder: Path, n: int, footer_in: set[int], start: int = 0) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    topics = [
        "travel",
        "expenses",
        "security",
        "hiring",
        "leave",
        "laptops",
        "badges",
        "vendors",
        "privacy",
        "training",
        "parking",
        "meals",
        "phones",
        "offices",
        "contracts",
        "audits",
    ]
    for i in range(start, start + n):
        t = topics[i % len(topics)]
        body = [
            f"# Policy on {t} number {i}",
            "",
            f"Employees handle {t} according to rule {i}. Approval takes {i} days.",
            "",
            f"The {t} owner reviews the {t} register every quarter and records the outcome.",
        ]
        if i in footer_in:
            body += ["", "Confidential: internal use only, do not forward outside the company."]
        (folder / f"doc{i:03d}.md").write_text("\n".join(body) + "\n", encoding="utf-8")


def test_chrome_crossing_the_threshold_later_is_stripped_everywhere_and_restored(tmp_path: Path) -> None:
    cfg = Config(boilerplate=BoilerplateConfig(min_units=3))
    corpus = tmp_path / "c"
    _write_corpus(corpus, 10, footer_in={0, 1})  # 2 of 10: 20%, not more than 20%
    index = tmp_path / "i.sqlite"
    ingest([corpus], index, config=cfg)
    assert any("Confidential" in r["text"] for r in _records(index))
    _write_corpus(corpus, 2, footer_in={10, 11}, start=10)  # now 4 of 12: chrome
    report = ingest([corpus], index, config=cfg)
    assert not any("Confidential" in r["text"] for r in _records(index))
    assert report.totals["documents_chunked"] == 4  # the two new ones and the two that hold the footer
    assert _stored_clean_pages(index) == ["doc000.md", "doc001.md", "doc010.md", "doc011.md"]
    remove_documents(index, ["doc010.md", "doc011.md"])
    (corpus / "doc010.md").unlink()
    (corpus / "doc011.md").unlink()
    assert any("Confidential" in r["text"] for r in _records(index))  # back under the threshold: restored
    assert _stored_clean_pages(index) == []  # a page stripped of nothing keeps no second copy
    fresh = tmp_path / "fresh.sqlite"
    ingest([corpus], fresh, config=cfg)
    assert snapshot(index)["records"] == snapshot(fresh)["records"]


def _stored_clean_pages(index: Path) -> list[str]:
    """The documents whose pages hold a clean text of their own (stripping changed them)."""
    conn = sqlite3.connect(index)
    try:
        rows = conn.execute("SELECT DISTINCT doc_id FROM pages WHERE clean_text IS NOT NULL ORDER BY doc_id")
        return [r[0] for r in rows]
    finally:
        conn.close()


def _records(index: Path) -> list[dict[str, Any]]:
    with Index.open(index) as ix:
        return list(ix.export())


def test_changed_file_is_reprocessed_and_prune_removes_gone_files(tmp_path: Path) -> None:
    corpus = tmp_path / "c"
    _write_corpus(corpus, 4, footer_in=set())
    index = tmp_path / "i.sqlite"
    ingest([corpus], index)
    (corpus / "doc001.md").write_text(
        "# Replaced\n\nAn entirely new text for this policy.\n", encoding="utf-8"
    )
    (corpus / "doc002.md").unlink()
    report = ingest([corpus], index, prune=True)
    status = {Path(f.path).name: f.status for f in report.files}
    assert status == {"doc000.md": "unchanged", "doc001.md": "ingested", "doc003.md": "unchanged"}
    with Index.open(index) as ix:
        assert [d["doc"] for d in ix.documents()] == ["doc000.md", "doc001.md", "doc003.md"]
    assert any("entirely new text" in r["text"] for r in _records(index))
    assert not any("number 2." in r["text"] for r in _records(index))


def test_removing_a_document_keeps_text_another_document_holds(tmp_path: Path) -> None:
    corpus = tmp_path / "c"
    corpus.mkdir()
    shared = "Refunds are paid within 30 days of the request."
    (corpus / "a.txt").write_text(f"Alpha policy intro.\n\n{shared}\n", encoding="utf-8")
    (corpus / "b.txt").write_text(f"Bravo policy intro.\n\n{shared}\n", encoding="utf-8")
    index = tmp_path / "i.sqlite"
    ingest([corpus], index, config=Config(chunk=_small_chunks()))
    held = [r for r in _records(index) if r["text"] == shared]
    assert len(held) == 1 and [s["doc"] for s in held[0]["sources"]] == ["a.txt", "b.txt"]
    remove_documents(index, ["a.txt"])
    held = [r for r in _records(index) if r["text"] == shared]
    assert len(held) == 1 and [s["doc"] for s in held[0]["sources"]] == ["b.txt"]
    assert not any("Alpha" in r["text"] for r in _records(index))


def _small_chunks() -> Any:
    from chunkdedup import ChunkConfig

    return ChunkConfig(target_words=8, max_words=20)


def test_bad_files_never_stop_a_run(tmp_path: Path) -> None:
    corpus = tmp_path / "bad"
    corpus.mkdir()
    good = (POLICY / "current").rglob("*.md")
    first = next(good)
    shutil.copy(first, corpus / "good.md")
    sec_pdf = next((POLICY.parent / "ntsb" / "docs").glob("*.pdf"))
    data = sec_pdf.read_bytes()
    (corpus / "truncated.pdf").write_bytes(data[: len(data) // 2])
    (corpus / "empty.txt").write_bytes(b"")
    import random

    (corpus / "random.txt").write_bytes(random.Random(0).randbytes(4096))
    (corpus / "latin1.txt").write_bytes(
        "Caf\xe9 cr\xe8me policy: the d\xe9j\xe0 vu clause applies.".encode("latin-1")
    )
    (corpus / "big.txt").write_text(("word " * 10_000_000).strip(), encoding="utf-8")
    shutil.copy(sec_pdf, corpus / "fine.pdf")
    import io

    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(data)))
    writer.encrypt("secret")
    with (corpus / "encrypted.pdf").open("wb") as fh:
        writer.write(fh)
    index = tmp_path / "i.sqlite"
    report = ingest([corpus], index)
    status = {Path(f.path).name: (str(f.status), f.reason) for f in report.files}
    assert len(status) == 8  # every input is accounted for
    assert status["encrypted.pdf"][0] == "failed" and "encrypted" in (status["encrypted.pdf"][1] or "")
    assert status["truncated.pdf"][0] == "failed" and status["truncated.pdf"][1]
    assert status["empty.txt"][0] == "skipped" and "empty" in (status["empty.txt"][1] or "")
    assert status["random.txt"][0] in ("skipped", "failed") and status["random.txt"][1]
    for name in ("good.md", "latin1.txt", "big.txt", "fine.pdf"):
        assert status[name][0] == "ingested", (name, status[name])
    assert any("Café crème" in r["text"] for r in _records(index))
    with Index.open(index) as ix:
        assert {d["doc"] for d in ix.documents()} == {"good.md", "latin1.txt", "big.txt", "fine.pdf"}


def test_second_writer_waits_then_fails_clearly_and_readers_still_read(tmp_path: Path) -> None:
    index = tmp_path / "i.sqlite"
    _write_corpus(tmp_path / "c", 3, footer_in=set())
    ingest([tmp_path / "c"], index)
    with Store.open(index) as holder, holder.writer():
        with pytest.raises(IndexBusyError, match="being written by another process"):
            ingest([tmp_path / "c"], index, lock_timeout=0.3)
        with Index.open(index) as reader:
            assert reader.stats()["documents"] == 3


def test_not_an_index_is_refused_with_a_clear_message(tmp_path: Path) -> None:
    bogus = tmp_path / "notes.txt"
    bogus.write_text("hello")
    with pytest.raises(SchemaError, match="not a chunkdedup index"):
        Index.open(bogus)
    with pytest.raises(SchemaError, match="does not exist"):
        Index.open(tmp_path / "missing.sqlite")


def test_dry_run_writes_nothing_and_shows_what_would_be_stripped(tmp_path: Path) -> None:
    corpus = tmp_path / "c"
    _write_corpus(corpus, 10, footer_in={0, 1, 2, 3, 4, 5})
    index = tmp_path / "i.sqlite"
    report = ingest([corpus], index, dry_run=True, config=Config(boilerplate=BoilerplateConfig(min_units=3)))
    assert not index.exists()
    assert report.dry_run and report.run_id is None
    assert [b.scope for b in report.top_stripped] == ["chrome"]
    assert report.top_stripped[0].doc_count == 6
    assert "Confidential" in report.top_stripped[0].example


def test_changing_two_files_that_share_a_clause(tmp_path: Path) -> None:
    corpus = tmp_path / "c"
    corpus.mkdir()
    shared = "Refunds are paid within 30 days of the request."
    (corpus / "a.txt").write_text(f"Alpha intro.\n\n{shared}\n", encoding="utf-8")
    (corpus / "b.txt").write_text(f"Bravo intro.\n\n{shared}\n", encoding="utf-8")
    index = tmp_path / "i.sqlite"
    cfg = Config(chunk=_small_chunks())
    ingest([corpus], index, config=cfg)
    (corpus / "a.txt").write_text("Alpha intro, and the clause is gone.\n", encoding="utf-8")
    (corpus / "b.txt").write_text(f"Bravo intro, rewritten.\n\n{shared}\n", encoding="utf-8")
    ingest([corpus], index, config=cfg)
    held = [r for r in _records(index) if r["text"] == shared]
    assert len(held) == 1 and [s["doc"] for s in held[0]["sources"]] == ["b.txt"]
    fresh = tmp_path / "fresh.sqlite"
    ingest([corpus], fresh, config=cfg)
    assert snapshot(index)["records"] == snapshot(fresh)["records"]


def test_a_manifest_change_reaches_the_index_and_its_filters(tmp_path: Path) -> None:
    corpus = tmp_path / "c"
    _write_corpus(corpus, 2, footer_in=set())
    manifest = corpus / "manifest.jsonl"
    manifest.write_text('{"path": "doc000.md", "department": "public"}\n', encoding="utf-8")
    index = tmp_path / "i.sqlite"
    ingest([corpus], index, manifest=manifest)
    manifest.write_text('{"path": "doc000.md", "department": "restricted"}\n', encoding="utf-8")
    report = ingest([corpus], index, manifest=manifest)
    status = {Path(f.path).name: str(f.status) for f in report.files}
    assert status == {"doc000.md": "ingested", "doc001.md": "unchanged"}
    with Index.open(index) as ix:
        assert ix.metadata("doc000.md")["department"] == "restricted"
        assert ix.query("rule", where={"department": "public"}) == []


def test_a_moved_corpus_ingested_with_prune_keeps_every_chunk(tmp_path: Path) -> None:
    _write_corpus(tmp_path / "old", 5, footer_in=set())
    index = tmp_path / "i.sqlite"
    ingest([tmp_path / "old"], index)
    before = snapshot(index)["records"]
    (tmp_path / "old").rename(tmp_path / "new")
    report = ingest([tmp_path / "new"], index, prune=True)
    assert {str(f.status) for f in report.files} == {"ingested"}
    assert snapshot(index)["records"] == before


def test_a_removed_jsonl_record_comes_back_on_the_next_ingest(tmp_path: Path) -> None:
    corpus = tmp_path / "c"
    corpus.mkdir()
    (corpus / "recs.jsonl").write_text(
        '{"id": "r1", "text": "Refunds take 30 days."}\n'
        '{"id": "r2", "text": "Badges are returned on exit."}\n',
        encoding="utf-8",
    )
    index = tmp_path / "i.sqlite"
    ingest([corpus], index)
    remove_documents(index, ["recs.jsonl#r1"])
    ingest([corpus], index)
    with Index.open(index) as ix:
        assert [d["doc"] for d in ix.documents()] == ["recs.jsonl#r1", "recs.jsonl#r2"]


def test_two_first_ingests_into_a_new_index_both_succeed(tmp_path: Path) -> None:
    import subprocess
    import sys

    _write_corpus(tmp_path / "c", 20, footer_in=set())
    index = tmp_path / "race.sqlite"
    code = "import sys; from chunkdedup import ingest; ingest([sys.argv[1]], sys.argv[2])"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, str(tmp_path / "c"), str(index)], stderr=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    errors = [p.communicate(timeout=120)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], errors
    with Index.open(index) as ix:
        assert ix.stats()["documents"] == 20


def test_documents_written_one_per_batch_or_many_give_the_same_index(
    tmp_path: Path, policy_index: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Groups and canonicals are re-derived once per batch of documents; per document gives the same."""
    monkeypatch.setattr("chunkdedup.ingestion.sequence.STORE_BATCH", 1)
    one = tmp_path / "one.sqlite"
    ingest([POLICY], one, manifest=POLICY_MANIFEST)
    assert snapshot(one) == snapshot(policy_index)


def test_rewriting_a_documents_unchanged_chunks_keeps_its_groups_and_canonicals(
    tmp_path: Path, policy_index: Path
) -> None:
    """A re-chunk that yields the same chunks (e.g. a config change that does not move them) keeps each
    group's bands and cluster and every canonical's last-change run: nothing to re-sign or re-send."""
    from chunkdedup.ingestion.stages import chunk_pages

    index = tmp_path / "i.sqlite"
    shutil.copy(policy_index, index)
    with Store.open(index) as store:
        before = store.conn.execute(
            "SELECT id, canonical_id, signed IS NOT NULL FROM groups ORDER BY id"
        ).fetchall()
        canonical_rows = "SELECT id, updated_run, signature FROM canonicals ORDER BY id"
        canonicals = store.conn.execute(canonical_rows).fetchall()
        tombstones = store.conn.execute("SELECT * FROM tombstones ORDER BY canonical_id").fetchall()
        docs = store.documents.doc_ids()[:25]
        run_id = store.runs.begin_run([str(POLICY)], None, Config().to_dict())
        chrome = store.boilerplate.doc_chrome_ids(docs)  # as the chunk jobs carry it
        with store.transaction():
            pages = {d: store.documents.load_pages(d) for d in docs}
            keyed = [chunk_pages(d, pages[d], chrome.get(d, frozenset()), Config()) for d in docs]
            store.documents.replace_chunks(keyed, "same", run_id)
        assert sum(len(k.keyed) for k in keyed) > 100
        after = store.conn.execute(
            "SELECT id, canonical_id, signed IS NOT NULL FROM groups ORDER BY id"
        ).fetchall()
        assert after == before and all(signed for _, _, signed in after)
        assert store.conn.execute("SELECT COUNT(*) FROM dirty").fetchone()[0] == 0
        assert store.conn.execute(canonical_rows).fetchall() == canonicals
        assert store.conn.execute("SELECT * FROM tombstones ORDER BY canonical_id").fetchall() == tombstones


def test_one_edited_record_of_a_jsonl_file_is_the_only_one_redone(tmp_path: Path) -> None:
    """A JSONL file with one record edited and one record's metadata changed: the file is parsed
    again, but the untouched records are neither keyed nor stored again; the index equals a fresh one."""
    texts = sorted((POLICY / "current").rglob("*.md"))[:40]
    records = [
        {"id": f"r{i}", "text": p.read_text(encoding="utf-8"), "team": "a"} for i, p in enumerate(texts)
    ]
    corpus, shard = _write_shard(tmp_path, records)
    index = tmp_path / "i.sqlite"
    first = ingest([corpus], index)
    assert first.totals["documents_chunked"] == 40
    records[7]["text"] = records[7]["text"].replace("GitHub", "GitLab", 1)
    records[21]["team"] = "b"  # metadata only: stored again (filters see it), its text re-chunked too
    shard.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    again = ingest([corpus], index)
    assert again.files[0].status == FileStatus.INGESTED
    assert again.totals["documents_chunked"] == 2
    fresh = tmp_path / "fresh.sqlite"
    ingest([corpus], fresh)
    assert snapshot(index) == snapshot(fresh)


def test_a_dry_run_on_an_index_of_an_older_version_leaves_it_as_it_was(tmp_path: Path) -> None:
    """The dry run works on a copy, migrated there: the index itself is neither migrated nor written."""
    import hashlib
    import sqlite3

    corpus = tmp_path / "c"
    corpus.mkdir()
    (corpus / "a.md").write_text("# A\n\nRefunds take 30 days from the request.\n", encoding="utf-8")
    index = tmp_path / "i.sqlite"
    ingest([corpus], index)
    conn = sqlite3.connect(index)
    with conn:  # as an index before migration 0013 is
        conn.execute("DROP TABLE band_stage")
        conn.execute("DELETE FROM migrations WHERE name = '0013_band_stage'")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    before = hashlib.sha256(index.read_bytes()).hexdigest()
    (corpus / "b.md").write_text("# B\n\nBadges are returned on the last day.\n", encoding="utf-8")
    report = ingest([corpus], index, dry_run=True)
    assert report.dry_run and report.totals["documents"] == 2
    assert hashlib.sha256(index.read_bytes()).hexdigest() == before


def test_other_parse_settings_parse_every_file_again(tmp_path: Path) -> None:
    """A page-size change re-cuts the pages of unchanged files and of unchanged records: the index is
    the one a fresh ingest under the new settings writes."""
    from chunkdedup.config import ParseConfig

    texts = sorted((POLICY / "current").rglob("*.md"))[:12]
    long_text = "\n\n".join(p.read_text(encoding="utf-8") for p in texts)
    assert len(long_text) > 6000
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "book.txt").write_text(long_text, encoding="utf-8")
    (corpus / "records.jsonl").write_text(json.dumps({"id": "r", "text": long_text}) + "\n", encoding="utf-8")
    index = tmp_path / "i.sqlite"
    ingest([corpus], index, config=Config(parse=ParseConfig(max_page_chars=200_000)))
    smaller = Config(parse=ParseConfig(max_page_chars=3000))
    again = ingest([corpus], index, config=smaller)
    assert {str(f.status) for f in again.files} == {"ingested"}
    fresh = tmp_path / "fresh.sqlite"
    ingest([corpus], fresh, config=smaller)
    assert snapshot(index) == snapshot(fresh)
    with Index.open(index) as ix:
        assert all(d["pages"] > 1 for d in ix.documents())


def _count_built_records(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the JSONL records built (decoded and turned into a record) from here on."""
    from chunkdedup.parse import jsonl

    built: list[int] = []
    real = jsonl.parse_record

    def counting(line: str, number: int, content_hash: str | None = None) -> Any:
        built.append(number)
        return real(line, number, content_hash)

    monkeypatch.setattr(jsonl, "parse_record", counting)
    return built


def _jsonl_records(n: int) -> list[dict[str, Any]]:
    """Records with an id (even) and without (odd: their ids are their line numbers)."""
    texts = sorted((POLICY / "current").rglob("*.md"))[:n]
    return [
        {**({"id": f"r{i}"} if i % 2 == 0 else {}), "text": p.read_text(encoding="utf-8"), "team": "a"}
        for i, p in enumerate(texts)
    ]


def _write_shard(tmp_path: Path, records: list[dict[str, Any]]) -> tuple[Path, Path]:
    """A corpus folder holding one JSONL shard of ``records``: (corpus, shard)."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    shard = corpus / "records.jsonl"
    shard.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return corpus, shard


def test_unchanged_jsonl_records_are_known_by_their_bytes_and_place_and_not_built_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A record whose line bytes the index holds, at a place giving the same id, is not decoded again:
    a given id anywhere, a line-numbered one only on its line. The index equals a fresh one."""
    records = _jsonl_records(30)
    corpus, shard = _write_shard(tmp_path, records)
    index = tmp_path / "i.sqlite"
    ingest([corpus], index)
    records[4]["text"] = records[4]["text"].replace("GitHub", "GitLab", 1)
    # a new first line: every line-numbered record moves to another line, so another id
    edited = [{"id": "first", "text": "A new first record about refunds within 30 days."}, *records]
    shard.write_text("".join(json.dumps(r) + "\n" for r in edited), encoding="utf-8")
    built = _count_built_records(monkeypatch)
    again = ingest([corpus], index)
    # built: the new line, the edited record, the 15 moved line-numbered ones; the other 14 kept
    assert sorted(built) == sorted([1, 6, *range(3, 32, 2)])
    assert again.totals["documents_chunked"] == 17
    fresh = tmp_path / "fresh.sqlite"
    report = ingest([corpus], fresh)
    assert again.files[0].doc_ids == report.files[0].doc_ids  # file order, kept and built alike
    assert snapshot(index) == snapshot(fresh)
    built.clear()
    shard.write_text("".join(json.dumps(r) + "\n" for r in edited) + "\n", encoding="utf-8")  # bytes only
    assert ingest([corpus], index).totals["documents_chunked"] == 0 and built == []
    assert snapshot(index) == snapshot(fresh)


def test_a_changed_manifest_entry_builds_every_record_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A JSONL file's manifest metadata goes into every record: when it changes, no record is known by
    its bytes (each is built and compared), so the index still equals a fresh one."""
    records = _jsonl_records(12)
    corpus, _ = _write_shard(tmp_path, records)
    manifest = tmp_path / "manifest.jsonl"
    manifest.write_text(json.dumps({"path": "corpus/records.jsonl", "department": "hr"}) + "\n")
    index = tmp_path / "i.sqlite"
    ingest([corpus], index, manifest=manifest)
    manifest.write_text(json.dumps({"path": "corpus/records.jsonl", "department": "it"}) + "\n")
    built = _count_built_records(monkeypatch)
    again = ingest([corpus], index, manifest=manifest)
    assert len(built) == 12 and again.totals["documents_chunked"] == 12
    fresh = tmp_path / "fresh.sqlite"
    ingest([corpus], fresh, manifest=manifest)
    assert snapshot(index) == snapshot(fresh)
    with Index.open(index) as ix:
        assert {d["metadata"]["department"] for d in ix.documents()} == {"it"}


def test_a_repeated_id_among_kept_records_still_fails_the_file(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    shard = corpus / "records.jsonl"
    line = json.dumps({"id": "same", "text": "Refunds take 30 days from the request."})
    shard.write_text(line + "\n" + json.dumps({"id": "b", "text": "Badges go back on exit."}) + "\n")
    index = tmp_path / "i.sqlite"
    ingest([corpus], index)
    shard.write_text(line + "\n" + line + "\n")
    (result,) = ingest([corpus], index).files
    assert result.status == FileStatus.FAILED and "'same' is used on lines 1 and 2" in (result.reason or "")


def test_the_chrome_is_counted_again_only_after_a_documents_keys_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Deciding the chrome counts every key's units: a run that changed no document's keys (nor the
    boilerplate settings) keeps the stored decision, and still equals a fresh ingest."""
    cfg = Config(boilerplate=BoilerplateConfig(min_units=3))
    corpus = tmp_path / "c"
    _write_corpus(corpus, 10, footer_in={0, 1, 2, 3})
    index = tmp_path / "i.sqlite"
    ingest([corpus], index, config=cfg)
    counted: list[int] = []
    real = BoilerplateTables.kept_key_unit_counts
    monkeypatch.setattr(
        BoilerplateTables,
        "kept_key_unit_counts",
        lambda self, m, stamp: counted.append(m) or real(self, m, stamp),
    )
    ingest([corpus], index, config=cfg)
    assert counted == []
    _write_corpus(corpus, 1, footer_in=set())  # doc000 loses the footer: 3 of 10, not chrome
    ingest([corpus], index, config=cfg)
    assert counted == [3]
    ingest([corpus], index, config=cfg)
    assert counted == [3]
    ingest([corpus], index, config=Config(boilerplate=BoilerplateConfig(min_units=4)))
    assert counted == [3, 4]
    remove_documents(index, ["doc009.md"])
    assert counted == [3, 4, 4]
    (corpus / "doc009.md").unlink()
    ingest([corpus], index, config=cfg)
    assert counted == [3, 4, 4, 3]
    fresh = tmp_path / "fresh.sqlite"
    ingest([corpus], fresh, config=cfg)
    assert snapshot(index) == snapshot(fresh)


def test_kept_key_unit_counts_equal_a_full_count_after_every_kind_of_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Deciding the chrome recounts only the keys a run changed (store/keyunits.py), never all of
    them: after a key gained and lost, documents added, a unit (family) change, a removal and a prune,
    the kept counts equal a full count of the tables, and the index equals a fresh ingest."""
    from chunkdedup.store import keyunits

    cfg = Config(boilerplate=BoilerplateConfig(min_units=2))
    corpus = tmp_path / "c"
    _write_corpus(corpus, 10, footer_in={0, 1, 2, 3})
    manifest = tmp_path / "manifest.jsonl"

    def families(of: dict[int, str]) -> None:
        manifest.write_text(
            "".join(json.dumps({"path": f"c/doc{i:03d}.md", "family": f}) + "\n" for i, f in of.items())
        )

    def run(**kw: Any) -> None:
        ingest([corpus], index, config=cfg, manifest=manifest, **kw)
        with Store.open(index) as store:
            kept = dict(store.conn.execute("SELECT khash, units FROM key_units").fetchall())
            assert kept == store.boilerplate.key_unit_counts(2) and kept  # the footer, at least
            assert store.conn.execute("SELECT COUNT(*) FROM stale_keys").fetchone()[0] == 0

    families({0: "f", 1: "f"})
    index = tmp_path / "i.sqlite"
    run()
    # from here on a full count fails: every decision below recounts the changed keys only
    with monkeypatch.context() as m:
        m.setattr(keyunits, "_COUNT_ALL", "SELECT no_such_column FROM doc_keys")
        _write_corpus(corpus, 1, footer_in={4}, start=4)  # doc004 gains the footer
        run()
        _write_corpus(corpus, 1, footer_in=set(), start=2)  # doc002 loses it (a unit of its own)
        run()
        _write_corpus(corpus, 2, footer_in={10, 11}, start=10)  # new documents with it
        run()
        families({0: "f", 1: "f", 2: "f", 3: "f"})  # doc002 and doc003 join family f: fewer units
        run()
        remove_documents(index, ["c/doc004.md"])
        (corpus / "doc004.md").unlink()
        (corpus / "doc011.md").unlink()
        run(prune=True)
    fresh = tmp_path / "fresh.sqlite"
    ingest([corpus], fresh, config=cfg, manifest=manifest)
    assert snapshot(index) == snapshot(fresh)


def test_an_unchanged_corpus_is_ingested_without_the_array_stack(tmp_path: Path) -> None:
    """Nothing to sign or cluster: NumPy, the MinHash and LSH modules and numba are never imported;
    a small change signs and clusters with the NumPy paths, still without numba."""
    import subprocess
    import sys

    corpus = tmp_path / "c"
    _write_corpus(corpus, 6, footer_in=set())
    index = tmp_path / "i.sqlite"
    ingest([corpus], index)
    heavy = ("numpy", "numba", "chunkdedup.dedup.minhash", "chunkdedup.dedup.lsh")
    script = (
        "import sys\n"
        "from chunkdedup.cli import main\n"
        f"main(['ingest', {str(corpus)!r}, '--index', {str(index)!r}], standalone_mode=False)\n"
        f"print(sorted(m for m in {heavy!r} if m in sys.modules))\n"
    )

    def loaded() -> str:
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip().splitlines()[-1]

    assert loaded() == "[]"
    _write_corpus(corpus, 1, footer_in=set(), start=6)
    assert loaded() == "['chunkdedup.dedup.lsh', 'chunkdedup.dedup.minhash', 'numpy']"


def test_files_of_an_index_with_fingerprints_of_the_older_form_stay_unchanged(tmp_path: Path) -> None:
    """Fingerprints written before they carried their id-and-metadata part (``<hash>``, not
    ``<hash>.<context>``) still name the unchanged files: an upgraded index parses nothing again."""
    corpus = tmp_path / "c"
    _write_corpus(corpus, 3, footer_in=set())
    index = tmp_path / "i.sqlite"
    ingest([corpus], index)
    with Store.open(index) as store, store.writer(), store.transaction() as c:
        c.execute("UPDATE files SET content_hash = substr(content_hash, 1, instr(content_hash, '.') - 1)")
        assert all("." not in r[0] for r in c.execute("SELECT content_hash FROM files"))
    report = ingest([corpus], index)
    assert {str(f.status) for f in report.files} == {"unchanged"}


def test_a_leader_chunk_moving_to_a_new_document_in_one_run_keeps_its_near_copies(tmp_path: Path) -> None:
    """The leader's document loses the chunk and a new document holds it, in one run: the group is made
    again under the id its near copies still cite, so its canonical must count their sources too (a
    made group's rows are taken from the batch only when no other source cites it)."""
    words = " ".join(f"term{i}" for i in range(60))
    leader = f"Refunds are issued within thirty days of the request. {words} final clause."
    near = f"Refunds are issued within thirty days of the claim. {words} final clause."
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.md").write_text(leader + "\n", encoding="utf-8")
    (corpus / "b.md").write_text(near + "\n", encoding="utf-8")
    (corpus / "c.md").write_text("An unrelated note about parking permits and renewals.\n", encoding="utf-8")
    index = tmp_path / "index.sqlite"
    ingest([corpus], index)
    with Index.open(index) as ix:
        assert ix.stats()["near_merged"] == 1  # b's chunk is a near copy of a's
    (corpus / "a.md").write_text("This document now says something else, about lockers.\n", encoding="utf-8")
    (corpus / "0.md").write_text(leader + "\n", encoding="utf-8")  # first in order: still the leader
    ingest([corpus], index)
    fresh = tmp_path / "fresh.sqlite"
    ingest([corpus], fresh)
    assert snapshot(index) == snapshot(fresh)
    with Index.open(index) as ix:
        counted = dict(ix.store.conn.execute("SELECT id, n_sources FROM canonicals").fetchall())
        assert counted == {r["id"]: len(r["sources"]) for r in ix.export()}
        assert sorted(counted.values()) == [1, 1, 2]  # 0.md's chunk leads b's near copy


@pytest.mark.parametrize("room", [None, 0])
def test_the_chunk_phase_takes_the_parsed_pages_at_hand(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, room: int | None
) -> None:
    """A fresh ingest chunks the pages its parse phase stored without reading them back (all of them
    fit in AT_HAND_CHARS here); with no room, each is read back. The index is the same either way."""
    from chunkdedup.ingestion import sequence as pipeline

    if room is not None:
        monkeypatch.setattr(pipeline, "AT_HAND_CHARS", room)
    reads: list[str] = []
    load = DocumentTables.load_pages

    def counted(self: DocumentTables, doc_id: str, *, clean: bool = False) -> Any:
        reads.append(doc_id)
        return load(self, doc_id, clean=clean)

    monkeypatch.setattr(DocumentTables, "load_pages", counted)
    index = tmp_path / "policy.sqlite"
    report = ingest([POLICY], index, manifest=POLICY_MANIFEST, workers=1)
    chunked = report.totals["documents_chunked"]
    assert chunked > 100
    assert len(reads) == (0 if room is None else chunked)
    monkeypatch.setattr(DocumentTables, "load_pages", load)
    again = tmp_path / "again.sqlite"
    monkeypatch.setattr(pipeline, "AT_HAND_CHARS", 0 if room is None else 1 << 30)
    ingest([POLICY], again, manifest=POLICY_MANIFEST, workers=1)
    assert snapshot(index) == snapshot(again)


def test_a_document_id_two_files_of_one_transaction_give_is_kept_by_the_first(tmp_path: Path) -> None:
    # A record "r1.md" of notes.jsonl has the id "notes.jsonl#r1.md", which a file of that name also
    # has. The files of a transaction are decided one by one (input order) and stored together: the
    # second is told the id is taken, as when the first was stored before it was decided.
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    records = corpus / "notes.jsonl"
    records.write_text(
        json.dumps({"id": "r1.md", "text": "Refunds take 30 days from the request."})
        + "\n"
        + json.dumps({"id": "r2", "text": "Badges go back to security on the last day."})
        + "\n"
    )
    clash = corpus / "notes.jsonl#r1.md"
    clash.write_text("Visitors sign in at the front desk and wear a badge.\n")
    index = tmp_path / "i.sqlite"
    by_path = {Path(r.path).name: r for r in ingest([corpus], index).files}
    assert by_path["notes.jsonl"].status == FileStatus.INGESTED
    assert by_path[clash.name].status == FileStatus.FAILED
    assert "'notes.jsonl#r1.md' is already taken by" in (by_path[clash.name].reason or "")
    with Index.open(index) as ix:
        (doc,) = [d for d in ix.documents() if d["doc"] == "notes.jsonl#r1.md"]
        assert Path(doc["path"]).name == "notes.jsonl"  # the record's, not overwritten by the file
        assert ix.stats()["documents"] == 2
    # once the record is gone from its file (the earlier input), the file may take the id in one run
    records.write_text(json.dumps({"id": "r2", "text": "Badges go back to security on the last day."}) + "\n")
    by_path = {Path(r.path).name: r for r in ingest([corpus], index).files}
    assert by_path[clash.name].status == FileStatus.INGESTED
    with Index.open(index) as ix:
        (doc,) = [d for d in ix.documents() if d["doc"] == "notes.jsonl#r1.md"]
        assert Path(doc["path"]).name == clash.name
        assert ix.stats()["documents"] == 2


def test_inputs_the_manifest_does_not_list_are_named(tmp_path: Path) -> None:
    """site-policy's LICENSE.md is read with no metadata (no family: no version of anything, found by
    no department filter): the report says so, naming it, instead of indexing it silently."""
    listed = {json.loads(line)["path"] for line in POLICY_MANIFEST.read_text().splitlines() if line.strip()}
    report = ingest([POLICY], tmp_path / "p.sqlite", manifest=POLICY_MANIFEST, dry_run=True)
    read = {d for f in report.files if f.status == FileStatus.INGESTED for d in f.doc_ids}
    assert read - listed == {"LICENSE.md"}
    assert len(report.notes) == 1 and "LICENSE.md" in report.notes[0] and "1 input file is" in report.notes[0]
    assert report.to_json()["notes"] == list(report.notes)
    current = POLICY / "current"  # every file under it is listed: nothing to say
    assert ingest([current], tmp_path / "c.sqlite", manifest=POLICY_MANIFEST, dry_run=True).notes == ()
    assert ingest([current], tmp_path / "n.sqlite", dry_run=True).notes == ()  # no manifest, no note


def test_an_html_site_navigation_and_footer_lists_are_stripped_whole(tmp_path: Path) -> None:
    """30 pages sharing an 8-link nav and a 5-link footer: each list is one block, so the corpus chrome
    counts it; as one-word blocks, 8 of the 13 links stayed in every page's first chunk."""
    words = ["install", "configure", "deploy", "server", "cluster", "node", "backup", "restore", "upgrade",
             "monitor", "alert", "metric"]
    links = ["Home", "Docs", "Guides", "API reference", "Pricing", "Blog", "Community forum", "Sign in"]
    nav = "".join(f"<li><a href='#'>{x}</a></li>" for x in links)
    foot = "".join(f"<li>{x}</li>" for x in ["About", "Careers", "Press", "Status", "Security"])
    site = tmp_path / "site"
    site.mkdir()
    for i in range(30):
        body = " ".join(words[(i * 7 + j) % len(words)] for j in range(40))
        (site / f"p{i:02d}.html").write_text(
            f"<html><head><title>Guide {i}</title></head><body><header><nav><ul>{nav}</ul></nav></header>"
            f"<main><h1>How to {words[i % 12]} the {words[(i * 5) % 12]} {i}</h1><p>{body.capitalize()}.</p>"
            f"</main><footer><ul>{foot}</ul><p>Example Inc. All rights reserved.</p></footer></body></html>"
        )
    index = tmp_path / "site.sqlite"
    ingest([site], index)
    with Index.open(index) as ix:
        texts = [r["text"] for r in ix.export()]
    lines = {line for t in texts for line in t.split("\n")}
    assert not lines & {"- Home", "- API reference", "- Sign in", "- Careers", "- Security"}
    assert not any("All rights reserved" in t for t in texts)
    assert sum(f"How to {words[0]} the" in t for t in texts) >= 1  # the pages' own text stays


def test_a_document_emptied_by_boilerplate_stripping_is_named(tmp_path: Path) -> None:
    """A file whose every line the config strips wherever it stands ended with no chunk and no word of
    why. (A file that is only the corpus's shared notice keeps it: chrome is what stands beside a
    document's own words, tests/test_common_documents.py.)"""
    notice = "Disclaimer: the information in this report is provided as is, without warranty of any kind."
    topics = ["billing", "travel", "security", "hiring", "privacy", "payroll", "backups", "access"]
    docs = tmp_path / "docs"
    docs.mkdir()
    for t in topics:
        (docs / f"{t}.md").write_text(f"# {t.title()} policy\n\nThe {t} team owns the {t} rules and "
                                      f"reviews every {t} request within the quarter.\n\n{notice}\n")
    (docs / "only-notice.md").write_text(notice + "\n")
    kept = ingest([docs], tmp_path / "kept.sqlite")
    assert not kept.notes and kept.totals["raw_chunks"] == len(topics) + 1
    forced = Config(boilerplate=BoilerplateConfig(always_strip=(notice,)))
    report = ingest([docs], tmp_path / "i.sqlite", config=forced)
    assert len(report.notes) == 1 and "1 document lost every line" in report.notes[0]
    assert "only-notice.md" in report.notes[0] and "billing.md" not in report.notes[0]
    assert report.totals["raw_chunks"] == len(topics)
