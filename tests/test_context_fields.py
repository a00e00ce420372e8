"""A document's context takes the labelled header fields of its first page (``Location:``,
``Aircraft:``, ``Registration:``, ...): a closed set of labels, in the first page's header block only."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from chunkdedup import ingest
from chunkdedup.config import RetrievalConfig
from chunkdedup.ingestion.context import document_context, document_contexts, header_fields
from chunkdedup.types import ContextSource
from conftest import CONTEXTS_BY_DOC

FORM = """Page 1 of 4
National Transportation Safety Board
Aviation Accident Final Report
Location: Tallahassee, FL Accident Number: NYC08CA055
Date & Time: 12/08/2007, 1730 EST Registration: N5921D
Aircraft: Piper PA-22-150 Aircraft Damage: Substantial
Defining Event: Injuries: 1 Minor
Analysis
The pilot, age 85, was attempting to land at his private airstrip.
"""


def test_a_form_header_gives_its_identity_fields_each_up_to_the_next_label() -> None:
    assert header_fields(FORM) == [
        "Tallahassee, FL", "NYC08CA055", "12/08/2007, 1730 EST", "N5921D", "Piper PA-22-150"
    ]


def test_labels_outside_the_closed_set_give_nothing() -> None:
    # "Aircraft Damage", "Injuries", "Effective Date" are not identity labels
    assert header_fields("Aircraft Damage: Substantial\nInjuries: 1 Minor\nEffective Date: 2024-01-01") == []


def test_only_a_line_that_starts_with_a_label_in_the_header_block_counts() -> None:
    prose = "The crew reported the location: a field near the river.\nIt left the Operator: none."
    assert header_fields(prose) == []
    late = "\n".join(["filler line"] * 20 + ["Location: Springfield"])
    assert header_fields(late) == []  # past the first page's header block
    long = "Operator: " + "a very long sentence that is certainly prose and not a field value at all " * 2
    assert header_fields(long) == []


def test_header_fields_enter_the_context_after_the_metadata_unless_fields_are_named() -> None:
    src = ContextSource("r1.pdf", "/in/r1.pdf", {"kind": "report"}, None, (), FORM)
    lines = document_context(src, RetrievalConfig(context=("metadata",))).splitlines()
    assert lines[0] == "report"
    assert "Tallahassee, FL" in lines and "Piper PA-22-150" in lines
    named = RetrievalConfig(context=("metadata",), context_fields=("kind",))
    assert document_context(src, named) == "report"
    assert document_context(src, RetrievalConfig(context=("title", "filename"))) == "r1 1"


def test_ingest_stores_the_first_page_fields_in_the_context(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("Location: Springfield, IL\nAircraft: Cessna 172\n\nThe engine lost power.\n")
    (docs / "b.txt").write_text("Minutes of the meeting.\nLocation: the board room was full.\n" * 3)
    index = tmp_path / "i.sqlite"
    ingest([docs], index)
    with sqlite3.connect(index) as conn:
        ctx = dict(conn.execute(CONTEXTS_BY_DOC))
    assert "Springfield, IL" in ctx["a.txt"] and "Cessna 172" in ctx["a.txt"]
    assert "board" not in ctx["b.txt"]


def test_records_of_one_file_with_other_header_fields_get_their_own_contexts() -> None:
    sources = [
        ContextSource(f"f.jsonl#{i}", "/in/f.jsonl", {"team": "a"}, None, (), f"Location: {town}\nbody")
        for i, town in enumerate(["Springfield", "Shelbyville", "Springfield"])
    ]
    contexts = document_contexts(sources, RetrievalConfig())
    assert contexts == [document_context(s, RetrievalConfig()) for s in sources]
    assert "Springfield" in contexts[0] and "Shelbyville" in contexts[1] and contexts[2] == contexts[0]
