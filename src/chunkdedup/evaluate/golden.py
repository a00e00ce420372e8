"""Golden sets: one question a line in JSONL, document names resolved against an index, and the
converter for docugami's ``qna_data.csv``.

A line: ``{"id": ..., "question": ..., "relevant": [{"doc": DOC, "page": N}], "answers": [...]}``;
``page`` (1-based) and ``answers`` are optional. ``doc`` is a document id, or a document's file name
without extension when exactly one document in the index has it.
"""

from __future__ import annotations

import csv
import fnmatch
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from chunkdedup.errors import InputError
from chunkdedup.outfile import text_out


@dataclass(frozen=True, slots=True)
class Relevant:
    """A relevant document, or one page of it (``page`` is 1-based; ``None`` means any page)."""

    doc: str
    page: int | None = None


@dataclass(frozen=True, slots=True)
class Question:
    """One golden question with what should be retrieved and, optionally, accepted answers."""

    id: str
    question: str
    relevant: tuple[Relevant, ...]
    answers: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "question": self.question,
            "relevant": [{"doc": r.doc} if r.page is None else {"doc": r.doc, "page": r.page}
                         for r in self.relevant],
        }
        if self.answers:
            out["answers"] = list(self.answers)
        return out


def load_golden(path: str | Path) -> list[Question]:
    """Read a golden JSONL file; every malformed line is an error naming the file and line.

    Example:
        >>> questions = load_golden("benchmarks/golden/site-policy.jsonl")  # doctest: +SKIP
    """
    p = Path(path)
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise InputError(f"golden file {p} does not exist: check the path") from None
    questions: list[Question] = []
    seen: set[str] = set()
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            q = _question(json.loads(line), n)
        except (json.JSONDecodeError, TypeError, ValueError, KeyError) as e:
            raise InputError(
                f"{p}:{n}: not a golden question ({e}); expected "
                '{"id", "question", "relevant": [{"doc", "page"?}], "answers"?: [...]}'
            ) from None
        if q.id in seen:
            raise InputError(f"{p}:{n}: question id {q.id!r} appears twice: give each question its own id")
        seen.add(q.id)
        questions.append(q)
    if not questions:
        raise InputError(f"golden file {p} holds no questions")
    return questions


def _question(data: Any, line: int) -> Question:
    if not isinstance(data, dict):
        raise TypeError("a line must be a JSON object")
    question = data["question"]
    if not isinstance(question, str) or not question.strip():
        raise ValueError("'question' must be a non-empty string")
    listed = data.get("relevant", [])
    if isinstance(listed, str | dict):  # one document: "a.pdf" or {"doc": "a.pdf", "page": 3}
        listed = [listed]
    if not isinstance(listed, list):
        raise TypeError(f"'relevant' must be a list of {{\"doc\", \"page\"?}} objects, got {listed!r}")
    relevant = []
    for r in listed:
        r = {"doc": r} if isinstance(r, str) else r  # a bare name is a document
        if not isinstance(r, dict) or "doc" not in r:
            raise TypeError(f"a 'relevant' entry must be a document name or a {{\"doc\", \"page\"?}} object, "
                            f"got {r!r}")
        page = r.get("page")
        if page is not None and (not isinstance(page, int) or isinstance(page, bool) or page < 1):
            raise ValueError(f"page must be an integer >= 1, got {page!r}")
        relevant.append(Relevant(str(r["doc"]), page))
    answers = data.get("answers", [])
    if isinstance(answers, str):
        answers = [answers]
    if not relevant and not answers:
        raise ValueError("the question lists no 'relevant' document and no 'answers': nothing to score it by")
    return Question(str(data.get("id", line)), question, tuple(relevant), tuple(str(a) for a in answers))


#: a line naming where an answer came from (docugami's ``SOURCE(S): 2022 Q3 AAPL.pdf, ...``) and an
#: inline ``(SOURCE: 2023 Q1 AAPL.pdf)``: the files an answer was read from, no part of the answer
_SOURCE_LINE = re.compile(r"^[ \t]*SOURCES?(?:\(S\))?:.*$\n?", re.MULTILINE)
_SOURCE_NOTE = re.compile(r"[ \t]*\n?[ \t]*\(SOURCES?(?:\(S\))?:[^)\n]*\)")
_BLANK_LINES = re.compile(r"\n(?:[ \t]*\n)+")


def answer_text(answer: str) -> str:
    r"""``answer`` without the lines (and parenthesised notes) that name its source files: the text a
    passage must hold to hold the answer.

    Example:
        >>> answer_text("Cash from operations was $98,024 million.\n\nSOURCE(S): 2022 Q3 AAPL.pdf")
        'Cash from operations was $98,024 million.'
    """
    return _BLANK_LINES.sub("\n\n", _SOURCE_LINE.sub("", _SOURCE_NOTE.sub("", answer))).strip()


class DocResolver:
    """Map golden ``doc`` names onto document ids: an exact id, else a unique file name or stem
    (a golden set written against ``ingest DOCS`` still resolves when a manifest one folder up gives
    ids such as ``docs/NAME``)."""

    def __init__(self, doc_ids: Iterable[str]) -> None:
        self.ids = set(doc_ids)
        self.by_stem: dict[str, list[str]] = {}
        for doc in sorted(self.ids):
            name = PurePosixPath(doc.split("#", 1)[0]).name
            for key in dict.fromkeys((_stem(doc), name)):
                self.by_stem.setdefault(key, []).append(doc)

    def resolve(self, name: str) -> str:
        if name in self.ids:
            return name
        found = self.by_stem.get(name, [])
        if len(found) == 1:
            return found[0]
        if found:
            raise InputError(f"golden doc {name!r} matches several documents {found}: use the full id")
        raise InputError(f"golden doc {name!r} is neither a document id nor a unique file name in the "
                         "index: `chunkdedup stats` and `chunkdedup export` show the ids")

    def questions(self, questions: Sequence[Question]) -> list[Question]:
        """The questions with every ``doc`` replaced by its document id."""
        return [
            Question(q.id, q.question, tuple(Relevant(self.resolve(r.doc), r.page) for r in q.relevant),
                     q.answers)
            for q in questions
        ]


def _stem(doc_id: str) -> str:
    name = PurePosixPath(doc_id.split("#", 1)[0]).name
    return name.rsplit(".", 1)[0] if "." in name else name


def convert_docugami(csv_path: str | Path, docs: str | Path) -> list[Question]:
    """Convert docugami's ``qna_data.csv`` (Question, Source Docs, Answer): each "Source Docs" glob
    (``*AAPL*``, ``*2023 Q3 NVDA*``) is matched against the file names in ``docs``; relevant docs are
    written as document ids relative to ``docs`` (what ``chunkdedup ingest DOCS`` gives). An answer
    is kept without its ``SOURCE(S): ...`` lines (:func:`answer_text`): they name the files, which
    ``relevant`` holds.

    Example:
        >>> data = "../shared/data/sec-10q"
        >>> qs = convert_docugami(f"{data}/qna_data.csv", f"{data}/docs")  # doctest: +SKIP
    """
    folder = Path(docs)
    if not folder.is_dir():
        raise InputError(f"--docs {folder} is not a folder: give the folder the filings were ingested from")
    names = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    try:
        with Path(csv_path).open(encoding="utf-8-sig", newline="") as f:
            rows = list(csv.DictReader(f))
    except FileNotFoundError:
        raise InputError(f"question file {csv_path} does not exist: check the path") from None
    out: list[Question] = []
    for n, row in enumerate(rows, start=1):
        if "Question" not in row or "Source Docs" not in row:
            raise InputError(f"{csv_path}: expected the columns Question, Source Docs, Answer")
        patterns = [p.strip() for p in row["Source Docs"].replace(";", ",").split(",") if p.strip()]
        matched = sorted({name for pat in patterns for name in names
                          if fnmatch.fnmatchcase(PurePosixPath(name).name, pat)})
        if not matched:
            raise InputError(f"{csv_path}: row {n}: {row['Source Docs']!r} matches no file in {folder}")
        answer = answer_text(row.get("Answer") or "")
        out.append(Question(f"q{n:03d}", row["Question"].strip(), tuple(Relevant(m) for m in matched),
                            (answer,) if answer else ()))
    return out


def write_golden(questions: Sequence[Question], out: str | Path) -> None:
    """Write golden JSONL to ``out``: a file is replaced whole (a failed write, a full disk, leaves it as
    it was), a device or FIFO written through; a failure is an :class:`InputError` naming ``out``.

    Example:
        >>> write_golden(convert_docugami("qna_data.csv", "docs/"), "golden.jsonl")  # doctest: +SKIP
    """
    with text_out(out, "the golden set") as fh:
        for q in questions:
            fh.write(golden_line(q) + "\n")


def golden_line(q: Question) -> str:
    """One question as a line of golden JSONL (without its newline)."""
    return json.dumps(q.to_json(), ensure_ascii=False)


__all__ = ["DocResolver", "Question", "Relevant", "answer_text", "convert_docugami", "golden_line",
           "load_golden", "write_golden"]
