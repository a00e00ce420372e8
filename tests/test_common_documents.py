"""Nothing a user ingests vanishes because it is common. Chrome is a block repeated beside a
document's own content; a block that is (most of) a document is that document, and its copies become
one chunk with many sources."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chunkdedup import Index, ingest, search
from chunkdedup.config import BoilerplateConfig, Config
from chunkdedup.errors import ConfigError
from chunkdedup.text import boilerplate
from chunkdedup.types import Page

POLICY = (
    "# Travel expenses\n\n"
    "Employees book travel through the internal portal at least fourteen days ahead.\n\n"
    "Economy class is required for flights under six hours; receipts are filed within thirty days.\n"
)
NOTICE = "This message is confidential and intended only for the named recipient of this email."
TOPICS = ("invoices", "laptops", "parking", "badges", "holidays", "payroll", "printing", "security")


def _doc(i: int) -> str:
    topic = TOPICS[i % len(TOPICS)]
    return (
        f"# Note {i} on {topic}\n\n"
        f"The {topic} desk answers request number {i} within {i % 5 + 2} business days of receipt.\n\n"
        f"Questions about {topic} for team {i} go to the office manager of building {i % 7}.\n"
    )


def test_ten_copies_of_a_policy_among_forty_files_stay_one_chunk_with_ten_sources(tmp_path: Path) -> None:
    corpus = tmp_path / "docs"
    corpus.mkdir()
    for i in range(30):
        (corpus / f"note-{i:02}.md").write_text(_doc(i) + "\n" + NOTICE + "\n", encoding="utf-8")
    for i in range(10):
        (corpus / f"copy-{i}.md").write_text(POLICY, encoding="utf-8")
    index = tmp_path / "corpus.sqlite"
    ingest([corpus], index)
    with Index.open(index) as ix:
        hits = search(ix, "how many days ahead is travel booked", k=3).hits
    assert hits and "fourteen days ahead" in hits[0].text
    assert {c.doc for c in hits[0].citations} == {f"copy-{i}.md" for i in range(10)}
    with Index.open(index) as ix:
        texts = [r.text or "" for r in ix.records()]
    assert not any(NOTICE in t for t in texts), "the notice beside each note's content is chrome"
    assert sum("fourteen days ahead" in t for t in texts) == 1


def test_repeated_faq_answers_and_templated_records_are_kept(tmp_path: Path) -> None:
    answer = "Reset your password from the sign-in page: choose Forgot password and follow the emailed link."
    rows = [{"id": f"faq-{i}", "text": answer if i % 4 == 0 else _doc(i)} for i in range(100)]
    templated = [
        {"id": f"t-{i}", "text": f"Order {i} shipped on 2026-0{i % 9 + 1}-1{i % 9} to warehouse {i % 3}."}
        for i in range(1000)
    ]
    (tmp_path / "faq.jsonl").write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    (tmp_path / "orders.jsonl").write_text("\n".join(json.dumps(r) for r in templated), encoding="utf-8")
    index = tmp_path / "records.sqlite"
    report = ingest([tmp_path / "faq.jsonl", tmp_path / "orders.jsonl"], index)
    assert report.totals["canonical_chunks"] > 0
    with Index.open(index) as ix:
        hit = search(ix, "how do I reset my password", k=1).hits[0]
    assert hit.text == answer and len(hit.citations) == 25
    with Index.open(index) as ix:
        texts = {r.text for r in ix.records()}
    assert {r["text"] for r in templated} <= texts  # each record keeps its own words


def test_chrome_beside_content_still_goes_and_the_share_is_a_setting() -> None:
    config = BoilerplateConfig()
    key = boilerplate.key_id(boilerplate.boilerplate_key(NOTICE))
    beside = [Page(1, _doc(3) + "\n" + NOTICE + "\n")]
    alone = [Page(1, NOTICE + "\n")]
    assert NOTICE not in boilerplate.strip(beside, {key}, config).pages[0].text
    assert boilerplate.strip(alone, {key}, config).pages[0].text.strip() == NOTICE
    strip_all = BoilerplateConfig(max_chrome_share=1.0)
    assert boilerplate.strip(alone, {key}, strip_all).pages[0].text.strip() == ""
    forced = BoilerplateConfig(always_strip=(NOTICE,))
    assert boilerplate.strip(alone, {key}, forced).pages[0].text.strip() == ""  # forced goes anywhere
    with pytest.raises(ConfigError, match="max_chrome_share"):
        Config.from_dict({"boilerplate": {"max_chrome_share": 0}})
