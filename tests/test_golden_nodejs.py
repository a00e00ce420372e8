"""benchmarks/golden/nodejs.jsonl: every answer is on a page the question names, of the Node.js API
docs a Debian ``nodejs`` install puts in /usr/share/doc/nodejs/api.

The page text is the one an index holds before stripping (chunkdedup's own HTML parser); answers are
compared with whitespace normalised. Each HTML file is one document whose id is its file name (the
docs folder ingested as a folder), of one page, or two where the parser splits a long one (fs.html:
the ``fs.Stats`` class onwards is page 2), so a label is ``{"doc": "<name>.html", "page": <n>}``.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from chunkdedup.config import ParseConfig
from chunkdedup.evaluate import Question, Relevant, load_golden
from chunkdedup.parse import discover, parse_file

REPO = Path(__file__).resolve().parents[1]
GOLDEN = REPO / "benchmarks" / "golden" / "nodejs.jsonl"
NODE_DOCS = Path("/usr/share/doc/nodejs/api")


def _spaced(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture(scope="module")
def pages() -> dict[str, list[str]]:
    """Each document's page texts by document id, page 1 first (the folder ingested as a folder)."""
    if not (NODE_DOCS / "fs.html").exists():
        pytest.skip(f"the Node.js API docs are not installed at {NODE_DOCS} (Debian package nodejs's docs)")
    out: dict[str, list[str]] = {}
    for found in discover([NODE_DOCS], None, ParseConfig()):
        if not found.doc_id.endswith(".html") or found.doc_id == "all.html":
            continue  # the folder also holds each page's markdown source and JSON
        for doc in parse_file(found, ParseConfig()).documents:
            out[doc.doc_id] = [_spaced(p.text) for p in doc.pages]
    return out


def _wrong_labels(questions: list[Question], pages: dict[str, list[str]]) -> list[tuple[str, str]]:
    """(question id, what is wrong) for each label naming no page, each answer on none of its
    question's pages and each page holding none of its question's answers."""
    wrong = []
    for q in questions:
        texts = []
        for rel in q.relevant:
            doc = pages.get(rel.doc, [])
            if rel.page is None or not 1 <= rel.page <= len(doc):
                wrong.append((q.id, f"no page {rel.page} of {rel.doc}"))
            texts.append(doc[rel.page - 1] if rel.page is not None and 1 <= rel.page <= len(doc) else "")
        wrong += [(q.id, f"answer {a!r} on none of its pages") for a in q.answers
                  if not any(_spaced(a) in t for t in texts)]
        wrong += [(q.id, f"page {rel.doc} holds none of the answers")
                  for rel, t in zip(q.relevant, texts, strict=True)
                  if not any(_spaced(a) in t for a in q.answers)]
    return wrong


def test_every_answer_is_on_a_page_its_question_names(pages: dict[str, list[str]]) -> None:
    assert _wrong_labels(load_golden(GOLDEN), pages) == []


def test_a_wrong_label_is_caught(pages: dict[str, list[str]]) -> None:
    """The check itself: a question sent to another document or another page of its own, or given an
    answer no page holds."""
    questions = {q.id: q for q in load_golden(GOLDEN)}
    q = questions["j001"]
    other = next(doc for doc in sorted(pages) if all(_spaced(a) not in pages[doc][0] for a in q.answers))
    moved = Question(q.id, q.question, (Relevant(other, 1),), q.answers)
    invented = Question(q.id, q.question, q.relevant, (*q.answers, "fs.readEverythingAtOnce(path)"))
    size = questions["j016"]  # the file size, on fs.html's second page only
    first_page = Question(size.id, size.question, (Relevant(size.relevant[0].doc, 1),), size.answers)
    assert _wrong_labels([moved], pages) != []
    assert _wrong_labels([invented], pages) != []
    assert _wrong_labels([first_page], pages) != []
    assert _wrong_labels([q, size], pages) == []


def test_the_set_covers_the_site(pages: dict[str, list[str]]) -> None:
    questions = load_golden(GOLDEN)
    assert len(questions) >= 60
    assert len({q.question for q in questions}) == len(questions)
    assert len({q.id for q in questions}) == len(questions)
    per_page = Counter(rel.doc for q in questions for rel in q.relevant)
    assert len(per_page) >= 30  # many modules, not one
    assert max(per_page.values()) <= len(questions) // 5  # no page holds the set
    assert sum(len(q.relevant) > 1 for q in questions) >= 2  # some need two pages
