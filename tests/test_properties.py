"""Hypothesis properties of ingest on random corpora built from a small pool of text.

The pool is small on purpose: copies, shared footers and chrome crossing the threshold happen often.
"""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from chunkdedup import BoilerplateConfig, ChunkConfig, Config, Index, exact_key, ingest, remove_documents
from chunkdedup.dedup.minhash import MinHasher, jaccard
from chunkdedup.store.schema import CLEAN_TEXT
from test_ingest import snapshot

SENTENCES = [
    "Managers approve travel before booking and the booking tool records the approval with the trip so that "
    "finance can match every invoice to an approved request when the card statement arrives later.",
    "Managers approve travel before booking and the booking tool records the approval with the trip so that "
    "finance can match every invoice to an approved request when the card statement arrives afterwards.",
    "Managers approve travel before booking and the booking tool records the approval with the trip so that "
    "finance can match every invoice to an approved request when the card statement arrives within 5 days.",
    "Refunds are paid within 30 days of the request.",
    "Refunds are paid within 45 days of the request.",
    "Managers approve travel before booking.",
    "All laptops use full disk encryption, e.g. BitLocker.",
    "The U.S. office follows the same rule.",
    "Incidents are reported to security within 24 hours.",
    "Visitors sign in at the front desk.",
    "Expenses above $1,250.00 need a second approval.",
]
FOOTER = "Confidential: internal use only, do not forward."
CONFIG = Config(
    boilerplate=BoilerplateConfig(min_units=2, share=0.3), chunk=ChunkConfig(target_words=40, max_words=60)
)

paragraph = st.lists(st.sampled_from(SENTENCES), min_size=1, max_size=3).map(" ".join)
page = st.lists(paragraph, min_size=1, max_size=3).map("\n\n".join)
document = st.tuples(st.lists(page, min_size=1, max_size=4), st.booleans())
corpus = st.lists(document, min_size=1, max_size=6)


def _write(folder: Path, docs: list[tuple[list[str], bool]]) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, (pages, footer) in enumerate(docs):
        body = [p + (f"\n\n{FOOTER}" if footer else "") for p in pages]
        path = folder / f"doc{i}.txt"
        path.write_text("\f".join(body), encoding="utf-8")
        paths.append(path)
    return paths


@settings(max_examples=30, deadline=None)
@given(corpus)
def test_every_source_slices_back_to_its_canonical_key(docs: list[tuple[list[str], bool]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "c"
        _write(folder, docs)
        index = Path(tmp) / "i.sqlite"
        ingest([folder], index, config=CONFIG)
        with Index.open(index) as ix:
            pages = {
                (r[0], r[1]): r[2]
                for r in ix.store.conn.execute(f"SELECT doc_id, page, {CLEAN_TEXT}"
                    " FROM pages")
            }
            records = list(ix.export())
        seen = set()
        hasher = MinHasher.from_config(CONFIG.near)
        for rec in records:
            key = exact_key(rec["text"])
            assert key not in seen  # one canonical per key
            seen.add(key)
            for s in rec["sources"]:
                copy = exact_key(pages[(s["doc"], s["page"])][s["start"] : s["end"]])
                if s["relation"] == "exact":
                    assert copy == key
                else:
                    sim = jaccard(hasher.shingles(copy), hasher.shingles(key))
                    assert sim == s["similarity"] >= CONFIG.near.threshold


@settings(max_examples=15, deadline=None)
@given(corpus, st.randoms(use_true_random=False))
def test_order_batches_and_repeats_do_not_change_the_result(
    docs: list[tuple[list[str], bool]], rnd: object
) -> None:
    import random

    assert isinstance(rnd, random.Random)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "c"
        paths = _write(folder, docs)
        fresh = Path(tmp) / "fresh.sqlite"
        ingest([folder], fresh, config=CONFIG)
        expected = snapshot(fresh)
        ingest([folder], fresh, config=CONFIG)  # ingesting the same files twice changes nothing
        assert snapshot(fresh) == expected

        shuffled = list(paths)
        rnd.shuffle(shuffled)
        incremental = Path(tmp) / "inc.sqlite"
        for path in shuffled:  # one file at a time, in random order
            ingest([path], incremental, config=CONFIG)
        assert snapshot(incremental) == expected

        # removals: drop a random subset, then compare with a fresh ingest of what is left
        gone = [p for p in paths if rnd.random() < 0.4]
        if gone and len(gone) < len(paths):
            remove_documents(incremental, [p.name for p in gone])
            for p in gone:
                p.unlink()
            rest = Path(tmp) / "rest.sqlite"
            ingest([folder], rest, config=CONFIG)
            assert snapshot(incremental) == snapshot(rest)


def test_the_pool_holds_near_copies_and_a_version(tmp_path: Path) -> None:
    """The properties above are only worth something if the pool makes near merges and variants."""
    _write(tmp_path / "c", [([SENTENCES[0]], False), ([SENTENCES[1]], False), ([SENTENCES[2]], False)])
    ingest([tmp_path / "c"], tmp_path / "i.sqlite", config=CONFIG)
    with Index.open(tmp_path / "i.sqlite") as ix:
        stats = ix.stats()
    assert stats["near_merged"] == 1 and stats["variant_pairs"] >= 1


def test_a_line_on_one_page_edge_is_restripped_when_its_key_becomes_chrome(tmp_path: Path) -> None:
    """Found by the property above: doc1 does not count the short line on its last page (one edge of
    three pages, a block too short to count), yet strip() removes it once other documents make its
    key chrome. Ingested before they arrive, doc1 must be re-stripped when they do."""
    short, long = SENTENCES[5], SENTENCES[0]
    paths = _write(tmp_path / "c", [([short], False), ([long, long, short], False), ([short], False)])
    fresh = tmp_path / "fresh.sqlite"
    ingest([tmp_path / "c"], fresh, config=CONFIG)
    incremental = tmp_path / "inc.sqlite"
    for path in paths:
        ingest([path], incremental, config=CONFIG)
    assert snapshot(incremental) == snapshot(fresh)
    with Index.open(fresh) as ix:  # doc0 and doc2 are the line alone: it is their content, and stays
        assert [(b.doc_count, b.scope) for b in ix.boilerplate()] == [(1, "chrome")]
    # an index whose doc_keys predate the strippable keys gets them recomputed once, and re-strips
    with sqlite3.connect(incremental) as conn:
        conn.execute("DELETE FROM doc_keys WHERE counted = 0")
        conn.execute("DELETE FROM doc_chrome")
        conn.execute("UPDATE meta SET value = '1' WHERE key = 'doc_keys_format'")
    ingest([tmp_path / "c"], incremental, config=CONFIG)
    assert snapshot(incremental) == snapshot(fresh)
    with sqlite3.connect(incremental) as conn:
        assert conn.execute("SELECT value FROM meta WHERE key = 'doc_keys_format'").fetchone() == ("2",)
        assert conn.execute("SELECT doc_id FROM doc_keys WHERE counted = 0").fetchall() == [("doc1.txt",)]
        assert conn.execute("SELECT COUNT(DISTINCT doc_id) FROM doc_chrome").fetchone() == (3,)
