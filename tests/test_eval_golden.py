"""Golden files: loading, doc names resolved by id or unique stem, and the docugami converter."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chunkdedup.errors import InputError
from chunkdedup.evaluate.golden import DocResolver, Relevant, convert_docugami, load_golden
from conftest import DATA


def test_load_golden_reads_optional_fields(tmp_path: Path) -> None:
    p = tmp_path / "g.jsonl"
    p.write_text(
        json.dumps({"id": "a", "question": "Q1?", "relevant": [{"doc": "x.md", "page": 2}],
                    "answers": ["y"]})
        + "\n\n" + json.dumps({"question": "Q2?", "relevant": [{"doc": "z"}]}) + "\n"
    )
    qs = load_golden(p)
    assert [q.id for q in qs] == ["a", "3"]
    assert qs[0].relevant == (Relevant("x.md", 2),) and qs[0].answers == ("y",)
    assert qs[1].relevant == (Relevant("z"),) and qs[1].answers == ()


def test_relevant_may_name_documents_by_name(tmp_path: Path) -> None:
    """A string or a list of strings crashed eval with AttributeError: they are document names."""
    p = tmp_path / "g.jsonl"
    lines = [
        {"id": "s", "question": "Q?", "relevant": "a.md"},
        {"id": "l", "question": "Q?", "relevant": ["a", "b"]},
        {"id": "o", "question": "Q?", "relevant": {"doc": "c", "page": 2}},
    ]
    p.write_text("".join(json.dumps(x) + "\n" for x in lines))
    qs = load_golden(p)
    assert [q.relevant for q in qs] == [
        (Relevant("a.md"),), (Relevant("a"), Relevant("b")), (Relevant("c", 2),)
    ]


BAD = [
    '{"relevant": []}', '{"question": "q", "relevant": [{"doc": "a", "page": 0}]}', "not json", "[1]",
    '{"question": "q"}', '{"question": "q", "relevant": 3}', '{"question": "q", "relevant": [{"page": 1}]}',
]


@pytest.mark.parametrize("line", BAD)
def test_bad_lines_name_the_file_and_line(tmp_path: Path, line: str) -> None:
    p = tmp_path / "g.jsonl"
    p.write_text(line + "\n")
    with pytest.raises(InputError, match=r"g\.jsonl:1"):
        load_golden(p)


def test_doc_resolution_by_id_or_unique_stem() -> None:
    res = DocResolver(["policies/a.md", "history/a/2024.md", "current/a.md", "b.pdf", "data.jsonl#7"])
    assert res.resolve("b.pdf") == "b.pdf"
    assert res.resolve("b") == "b.pdf"
    assert res.resolve("2024") == "history/a/2024.md"
    with pytest.raises(InputError, match=r"current/a\.md.*policies/a\.md"):
        res.resolve("a")  # ambiguous: lists the candidates
    with pytest.raises(InputError, match="neither"):
        res.resolve("nope")


def test_convert_docugami_matches_globs(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("2022 Q3 AAPL.pdf", "2023 Q3 AAPL.pdf", "2023 Q3 NVDA.pdf"):
        (docs / name).write_bytes(b"%PDF")
    csv = tmp_path / "q.csv"
    csv.write_text('\ufeffQuestion,Source Docs,Question Type,Source Chunk Type,Answer\n'
                   'Apple sales?,*AAPL*,Multi-Doc RAG,Table,"$1 million"\n'
                   'NVDA Q3?,*2023 Q3 NVDA*,Single-Doc,Text,\n', encoding="utf-8")
    qs = convert_docugami(csv, docs)
    assert [r.doc for r in qs[0].relevant] == ["2022 Q3 AAPL.pdf", "2023 Q3 AAPL.pdf"]
    assert qs[0].answers == ("$1 million",)
    assert [r.doc for r in qs[1].relevant] == ["2023 Q3 NVDA.pdf"] and qs[1].answers == ()
    csv.write_text("Question,Source Docs,Answer\nX?,*MSFT*,a\n")
    with pytest.raises(InputError, match="matches no file"):
        convert_docugami(csv, docs)


def test_convert_real_docugami_file() -> None:
    sec = DATA / "sec-10q"
    qs = convert_docugami(sec / "qna_data.csv", sec / "docs")
    assert len(qs) == 195
    assert all(q.relevant for q in qs)
    quarters = ("2022 Q3", "2023 Q1", "2023 Q2", "2023 Q3")
    assert {r.doc for r in qs[0].relevant} == {f"{p} AAPL.pdf" for p in quarters}


def test_hand_made_policy_golden_set_resolves() -> None:
    root = DATA / "site-policy"
    ids = [str(p.relative_to(root)) for p in root.rglob("*.md")]
    golden = Path(__file__).parents[1] / "benchmarks" / "golden" / "site-policy.jsonl"
    qs = DocResolver(ids).questions(load_golden(golden))
    assert len(qs) >= 25
    assert all(r.doc.startswith("current/") for q in qs for r in q.relevant)
