"""benchmarks/golden/ntsb.jsonl: every answer is on its evidence page of the real report.

The page text is the one an index holds before stripping (chunkdedup's own PDF parser); answers are
compared with whitespace normalised, so a line break inside an answer is a space.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from chunkdedup.config import ParseConfig
from chunkdedup.evaluate import load_golden
from chunkdedup.parse import discover, parse_file

REPO = Path(__file__).resolve().parents[1]
GOLDEN = REPO / "benchmarks" / "golden" / "ntsb.jsonl"
NTSB = REPO.parent / "shared" / "data" / "ntsb" / "docs"


def _spaced(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture(scope="module")
def pages() -> dict[str, list[str]]:
    """Each report's page texts by file stem, page 1 first."""
    if not NTSB.exists():
        pytest.fail(f"real corpus missing at {NTSB}: the repo must sit beside shared/ (see README)")
    out: dict[str, list[str]] = {}
    for found in discover([NTSB], None, ParseConfig()):
        for doc in parse_file(found, ParseConfig()).documents:
            out[Path(doc.doc_id).stem] = [_spaced(p.text) for p in doc.pages]
    return out


def test_every_answer_is_on_its_evidence_page(pages: dict[str, list[str]]) -> None:
    questions = load_golden(GOLDEN)
    missing = []
    for q in questions:
        assert len(q.relevant) == 1 and q.answers, q.id
        (rel,) = q.relevant
        assert rel.doc in pages, f"{q.id}: no report {rel.doc} in {NTSB}"
        assert rel.page is not None and 1 <= rel.page <= len(pages[rel.doc]), q.id
        text = pages[rel.doc][rel.page - 1]
        missing += [(q.id, a) for a in q.answers if _spaced(a) not in text]
    assert missing == []


def test_no_other_page_of_the_report_holds_the_answer(pages: dict[str, list[str]]) -> None:
    """Page recall names one page: an answer that another page of the report also held would let a
    hit on that page hold the answer and still count as a miss."""
    elsewhere = []
    for q in load_golden(GOLDEN):
        (rel,) = q.relevant
        for number, text in enumerate(pages[rel.doc], start=1):
            if number != rel.page and any(_spaced(a).casefold() in text.casefold() for a in q.answers):
                elsewhere.append((q.id, number))
    assert elsewhere == []


def test_the_set_covers_the_reports_with_narrative_and_table_evidence(pages: dict[str, list[str]]) -> None:
    questions = load_golden(GOLDEN)
    assert len(questions) >= 60
    assert {q.relevant[0].doc for q in questions} == set(pages)  # every report is asked about
    where = Counter("narrative" if q.relevant[0].page == 1 else "factual tables" for q in questions)
    assert where["narrative"] >= 20 and where["factual tables"] >= 20
    assert len({q.question for q in questions}) == len(questions)
