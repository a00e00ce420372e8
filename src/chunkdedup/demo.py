"""A self-made demo corpus of corporate policies that exercises every stage of the pipeline.

The corpus is generated from the templates in :mod:`chunkdedup.demo_text` with a seeded
``random.Random``: the same seed gives byte-identical files. It holds

* running PDF headers, footers and page numbers (stripped as running text),
* a confidentiality footer in every document (stripped as corpus chrome),
* clauses copied verbatim between a few families (merged by exact dedup),
* dated versions of one policy that differ only in a number, amount or date (kept apart by the
  number guard), and
* PDF, Markdown with front matter, HTML with scripts and styles, and form-feed paged text.
"""

from __future__ import annotations

import html
import importlib
import itertools
import json
import math
import random
import re
import textwrap
from collections import Counter
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from chunkdedup import demo_text as tpl
from chunkdedup.errors import InputError, MissingExtraError

if TYPE_CHECKING:
    from fpdf import FPDF

__all__ = ["MANIFEST_KEYS", "MANIFEST_NAME", "DemoCorpus", "require_fpdf", "write_demo_corpus"]

MANIFEST_NAME = "manifest.jsonl"
MANIFEST_KEYS = ("path", "department", "family", "effective_date", "version", "title")

_VERSIONED = (2, 2, 2, 2, 3, 3, 3, 3)  # version counts of the families that have versions
_FIXED_TIME = datetime(2024, 1, 1, tzinfo=UTC)  # PDF creation date, so PDFs are byte-stable
_PLACEHOLDER = re.compile(r"(\{(\w+)\})")
_CHOICE = re.compile(r"\[([^\]|]+(?:\|[^\]|]+)+)\]")
_Fmt = Literal["pdf", "md", "html", "txt"]
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
           "October", "November", "December")
# How a later version changes each figure ("within 30 days" becomes "within 45 days").
_STEPS = (("days", (5, 10, 15)), ("amount", (250, 500)), ("limit", (2500, 5000)), ("pct", (0.5, 1.0)),
          ("hours", (-12,)), ("count", (1,)), ("months", (12,)))
_PAGE_H = 297.0  # A4, mm
_BODY_BOTTOM = _PAGE_H - 24.0  # body text must end above the footer


@dataclass(frozen=True, slots=True)
class DemoCorpus:
    """What :func:`write_demo_corpus` wrote.

    ``documents``: files listed in the manifest; ``families``: distinct policy families;
    ``versioned_families``: families with two or more dated versions; ``pdfs``: PDF files;
    ``shared_clauses``: distinct clauses copied verbatim into several families.
    """

    folder: Path
    manifest: Path
    documents: int
    families: int
    versioned_families: int
    pdfs: int
    shared_clauses: int


@dataclass(frozen=True, slots=True)
class _Figures:
    """The numbers one version of a policy states; a later version changes one or two."""

    days: int
    amount: int
    limit: int
    pct: float
    hours: int
    count: int
    months: int

    def fill(self) -> dict[str, str]:
        return {
            "days": str(self.days), "amount": f"${self.amount:,.2f}", "limit": f"${self.limit:,.2f}",
            "pct": f"{self.pct:.1f}%", "hours": str(self.hours), "count": str(self.count),
            "months": str(self.months),
        }


@dataclass(frozen=True, slots=True)
class _Block:
    kind: Literal["heading", "para", "list"]
    text: str
    items: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class _Doc:
    department: str
    family: str
    title: str
    version: int
    effective_date: date
    fmt: _Fmt
    pages: int  # pages of a PDF or form-feed pages of a text file; 1 otherwise
    meta: str  # the "Effective date: ..." line under the title
    units: tuple[tuple[_Block, ...], ...]  # body, a heading kept with the block after it

    @property
    def path(self) -> str:
        return f"{self.department}/{self.family}-v{self.version}.{self.fmt}"

    def record(self) -> dict[str, str]:
        return {"path": self.path, "department": self.department, "family": self.family,
                "effective_date": self.effective_date.isoformat(), "version": f"v{self.version}",
                "title": self.title}


def write_demo_corpus(folder: Path, *, seed: int = 0) -> DemoCorpus:
    """Write the demo policy corpus and its ``manifest.jsonl`` into ``folder``.

    ``folder`` may be missing, empty, or a demo corpus written earlier (its files are replaced);
    anything else raises :class:`InputError`. The PDFs need fpdf2 (the ``[demo]`` extra): without it
    :class:`MissingExtraError` is raised before anything is written.

    Example:
        >>> corpus = write_demo_corpus(Path("demo"), seed=0)  # doctest: +SKIP
        >>> corpus.documents, corpus.pdfs  # doctest: +SKIP
        (36, 12)
    """
    require_fpdf()
    _prepare_folder(folder)
    docs = _plan(random.Random(seed))
    for doc in docs:
        target = folder / doc.path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(_render(doc))
    manifest = folder / MANIFEST_NAME
    lines = [json.dumps(doc.record()) + "\n" for doc in sorted(docs, key=lambda d: d.path)]
    manifest.write_bytes("".join(lines).encode("utf-8"))
    versions = Counter(doc.family for doc in docs)
    return DemoCorpus(
        folder=folder, manifest=manifest, documents=len(docs), families=len(versions),
        versioned_families=sum(1 for n in versions.values() if n > 1),
        pdfs=sum(1 for d in docs if d.fmt == "pdf"), shared_clauses=len(tpl.SHARED_CLAUSES),
    )


def require_fpdf() -> None:
    """Check that fpdf2, which writes the demo's PDFs (the ``[demo]`` extra), is installed."""
    try:
        importlib.import_module("fpdf")
    except ImportError:
        raise MissingExtraError("chunkdedup demo", "demo", "fpdf") from None


# ---- the folder -------------------------------------------------------------------------------


def _prepare_folder(folder: Path) -> None:
    """Create ``folder``, or clear it when it holds exactly a previous demo corpus."""
    if folder.exists() and not folder.is_dir():
        raise InputError(f"{folder} is a file; pass a new or empty folder for the demo corpus")
    folder.mkdir(parents=True, exist_ok=True)
    entries = [p for p in folder.rglob("*") if p.is_symlink() or not p.is_dir()]
    files = sorted(p.relative_to(folder).as_posix() for p in entries)
    if not files:
        return
    listed = _previous_demo_files(folder)
    foreign = [f for f in files if listed is None or f not in listed]
    if foreign:
        why = (f"it has no demo {MANIFEST_NAME}" if listed is None
               else f"its demo {MANIFEST_NAME} does not list {foreign[0]!r}")
        raise InputError(
            f"{folder} is not empty and is not a chunkdedup demo corpus ({why}); "
            "pass a new or empty folder, or empty this one first"
        )
    for name in files:
        (folder / name).unlink()
    for sub in sorted((p for p in folder.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
        if not any(sub.iterdir()):
            sub.rmdir()


def _previous_demo_files(folder: Path) -> set[str] | None:
    """The files a demo manifest in ``folder`` lists (with the manifest), or None if there is none."""
    manifest = folder / MANIFEST_NAME
    if not manifest.is_file():
        return None
    listed = {MANIFEST_NAME}
    try:
        for line in manifest.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            if not isinstance(record, dict) or tuple(record) != MANIFEST_KEYS:
                return None
            path = record["path"]
            if not isinstance(path, str) or path.startswith("/") or ".." in path.split("/"):
                return None
            listed.add(path)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    return listed


# ---- the plan: which documents, with which text -------------------------------------------------


def _plan(rng: random.Random) -> list[_Doc]:
    """Every document of the corpus, drawn from ``rng`` in a fixed order."""
    families = [(dept, owner, *fam) for dept, owner, fams in tpl.DEPARTMENTS for fam in fams]
    versions = [1] * len(families)
    for index, count in zip(rng.sample(range(len(families)), len(_VERSIONED)), _VERSIONED, strict=True):
        versions[index] = count
    shared: list[list[str]] = [[] for _ in families]
    for _, clause in tpl.SHARED_CLAUSES:
        # 3 or 4 of 24 families: repeated content, below the 20% share that makes chrome.
        for index in rng.sample(range(len(families)), rng.choice((3, 4))):
            shared[index].append(clause)
    total = sum(versions)
    shares: tuple[tuple[_Fmt, int], ...] = (("pdf", total // 3), ("md", total // 3), ("html", total // 6),
                                            ("txt", total - 2 * (total // 3) - total // 6))
    fmts = [fmt for fmt, count in shares for _ in range(count)]
    rng.shuffle(fmts)
    return [doc for family, count, clauses in zip(families, versions, shared, strict=True)
            for doc in _family_docs(rng, family, count, clauses, fmts)]


def _family_docs(rng: random.Random, family: tuple[str, str, str, str, str], versions: int,
                 clauses: list[str], fmts: list[_Fmt]) -> list[_Doc]:
    """The dated versions of one policy: same text, one or two figures changed per version."""
    dept, owner, slug, title, topic = family
    words = {"company": tpl.COMPANY, "topic": topic, "Topic": topic[0].upper() + topic[1:],
             "owner": owner, "Owner": owner[0].upper() + owner[1:],
             "approver": rng.choice(tpl.APPROVERS), "system": rng.choice(tpl.SYSTEMS)}
    figures = [_Figures(days=rng.choice((10, 14, 15, 20, 30)), amount=rng.choice((250, 500, 750, 1250)),
                        limit=rng.choice((5000, 7500, 10000, 25000)), pct=rng.choice((1.5, 2.5, 3.5, 5.0)),
                        hours=rng.choice((24, 48, 72)), count=rng.choice((2, 3, 4)),
                        months=rng.choice((12, 18, 24)))]
    dates = [date(rng.randint(2019, 2021), rng.randint(1, 12), rng.choice((1, 15)))]
    sections = _sections(rng, words, figures[0], dates[0], clauses)
    body = " ".join(b.text + " " + " ".join(b.items) for unit in sections for b in unit)
    used = {name for _, name in _PLACEHOLDER.findall(body)}
    for _ in range(versions - 1):
        figures.append(_bump(rng, figures[-1], used))
        dates.append(_add_months(dates[-1], rng.randint(9, 20)))
    docs = []
    for number, (figs, day) in enumerate(zip(figures, dates, strict=True), start=1):
        values = {**words, **figs.fill(), "review_date": _long_date(_add_months(day, 12))}
        units = tuple(tuple(_fill_block(b, values) for b in unit) for unit in sections)
        fmt = fmts.pop()
        pages = (rng.randint(max(3, math.ceil(len(units) / 4)), min(6, len(units) // 2)) if fmt == "pdf"
                 else rng.randint(2, 3) if fmt == "txt" else 1)
        meta = f"Effective date: {day.isoformat()}. Policy owner: {owner}."
        docs.append(_Doc(dept, slug, title, number, day, fmt, pages, meta, units))
    return docs


def _sections(rng: random.Random, words: dict[str, str], figs: _Figures, day: date,
              clauses: list[str]) -> list[tuple[_Block, ...]]:
    """The body as templates: numbered sections of 6-15 paragraphs, one of them a list."""
    sample = {**words, **figs.fill(), "review_date": _long_date(day)}
    pool: list[str] = []
    body = rng.randint(max(6, 4 + len(clauses)), 15)
    generated = body - 1 - len(clauses)
    paras = [_paragraph(rng, pool, sample) for _ in range(generated)]
    purpose = 2 if generated >= 7 else 1
    rest = generated - purpose - 1
    policy = math.ceil(rest / 2)
    items = rng.sample(tpl.LIST_ITEMS, rng.randint(4, 5))
    listing = _Block("list", _resolve(rng, rng.choice(tpl.LIST_INTROS)),
                     tuple(_resolve(rng, i) + (";" if n < len(items) - 1 else ".")
                           for n, i in enumerate(items)))
    groups: list[list[_Block]] = [
        [_Block("para", p) for p in paras[:purpose]],
        [_Block("para", p) for p in paras[purpose:purpose + policy]],
        [listing] + [_Block("para", p) for p in paras[purpose + policy:-1]],
        [_Block("para", c) for c in clauses] + [_Block("para", paras[-1])],
    ]
    units: list[tuple[_Block, ...]] = []
    for heading, blocks in zip(tpl.SECTION_HEADINGS, groups, strict=True):
        units.append((_Block("heading", heading), blocks[0]))
        units.extend((b,) for b in blocks[1:])
    return units


def _paragraph(rng: random.Random, pool: list[str], sample: dict[str, str]) -> str:
    """Sentences drawn without repeats (until the pool runs dry) to 40-120 words."""
    target, sentences, count = rng.randint(45, 105), [], 0
    while count < target:
        if not pool:
            pool.extend(tpl.NUMBER_SENTENCES + tpl.PLAIN_SENTENCES)
            rng.shuffle(pool)
        sentence = _resolve(rng, pool.pop())
        length = len(sentence.format_map(sample).split())
        if count + length > 120:
            break
        sentences.append(sentence)
        count += length
    return " ".join(sentences)


def _resolve(rng: random.Random, template: str) -> str:
    """Make the ``[a|b]`` wording choices of a template."""
    return _CHOICE.sub(lambda m: rng.choice(m.group(1).split("|")), template)


def _fill_block(block: _Block, values: dict[str, str]) -> _Block:
    return replace(block, text=block.text.format_map(values),
                   items=tuple(i.format_map(values) for i in block.items))


def _bump(rng: random.Random, figs: _Figures, used: set[str]) -> _Figures:
    """The next version's figures: one or two of the numbers the text states are changed."""
    steps = dict(_STEPS)
    names = sorted(used & steps.keys())
    for name in rng.sample(names, min(len(names), rng.randint(1, 2))):
        figs = replace(figs, **{name: getattr(figs, name) + rng.choice(steps[name])})
    return figs


def _add_months(day: date, months: int) -> date:
    index = day.month - 1 + months
    return date(day.year + index // 12, index % 12 + 1, day.day)


def _long_date(day: date) -> str:
    return f"{_MONTHS[day.month - 1]} {day.day}, {day.year}"


# ---- rendering --------------------------------------------------------------------------------


def _render(doc: _Doc) -> bytes:
    if doc.fmt == "pdf":
        return _pdf(doc)
    return {"md": _markdown, "html": _html, "txt": _text}[doc.fmt](doc).encode("utf-8")


def _split(units: tuple[tuple[_Block, ...], ...], pages: int) -> list[list[_Block]]:
    """Cut the body into ``pages`` runs of near-equal numbers of units."""
    cuts = [len(units) * page // pages for page in range(pages + 1)]
    return [[b for unit in units[lo:hi] for b in unit] for lo, hi in itertools.pairwise(cuts)]


def _markdown(doc: _Doc) -> str:
    record = doc.record()
    front = ["---", f"title: {json.dumps(doc.title)}"]
    front += [f"{key}: {record[key]}" for key in ("department", "family", "effective_date", "version")]
    lines = [*front, "---", "", f"# {doc.title}", "", doc.meta, ""]
    for block in (b for unit in doc.units for b in unit):
        if block.kind == "heading":
            lines += [f"## {block.text}", ""]
        elif block.kind == "list":
            lines += [block.text, "", *(f"- {item}" for item in block.items), ""]
        else:
            lines += [block.text, ""]
    lines += ["---", "", tpl.FOOTER, ""]
    return "\n".join(lines)


def _html(doc: _Doc) -> str:
    esc = html.escape
    body = []
    for block in (b for unit in doc.units for b in unit):
        if block.kind == "heading":
            body.append(f"<h2>{esc(block.text)}</h2>")
        elif block.kind == "list":
            items = "".join(f"<li>{esc(i)}</li>" for i in block.items)
            body.append(f"<p>{esc(block.text)}</p>\n<ul>{items}</ul>")
        else:
            body.append(f"<p>{esc(block.text)}</p>")
    return tpl.HTML_PAGE.format(title=esc(doc.title), company=esc(tpl.COMPANY), family=doc.family,
                                meta=esc(doc.meta), body="\n".join(body), footer=esc(tpl.FOOTER))


def _text(doc: _Doc) -> str:
    pages = []
    for number, blocks in enumerate(_split(doc.units, doc.pages), start=1):
        lines = [doc.title, "=" * len(doc.title), "", *textwrap.wrap(doc.meta, 78), ""] if number == 1 else []
        for block in blocks:
            if block.kind == "heading":
                lines += [block.text.upper(), ""]
                continue
            lines += textwrap.wrap(block.text, 78)
            for item in block.items:
                lines += textwrap.wrap(item, 78, initial_indent="  - ", subsequent_indent="    ")
            lines.append("")
        if number == doc.pages:
            lines += [*textwrap.wrap(tpl.FOOTER, 78), ""]
        pages.append("\n".join(lines))
    return "\f".join(pages)


def _pdf(doc: _Doc) -> bytes:
    from fpdf import FPDF  # the one renderer that needs fpdf2; imported only when a PDF is written

    pdf = FPDF(format="A4", unit="mm")
    pdf.set_creation_date(_FIXED_TIME)  # with a fixed producer and creator: byte-stable output
    pdf.set_producer("chunkdedup demo")
    pdf.set_creator("chunkdedup demo")
    pdf.set_title(doc.title)
    pdf.set_author(tpl.COMPANY)
    pdf.set_auto_page_break(False)  # pages are cut by the plan, so each gets its header and footer
    pdf.set_margins(20, 20, 20)
    header = f"{tpl.COMPANY} | {doc.title} | Rev {doc.version}"
    for number, blocks in enumerate(_split(doc.units, doc.pages), start=1):
        pdf.add_page()
        pdf.set_font("Helvetica", size=8)
        pdf.set_xy(20, 10)
        pdf.cell(0, 5, header)
        pdf.line(20, 16, 190, 16)
        pdf.set_xy(20, 22)
        if number == 1:
            _pdf_para(pdf, doc.title, 16, 8, bold=True)
            _pdf_para(pdf, doc.meta, 9, 5)
        for block in blocks:
            heading = block.kind == "heading"
            _pdf_para(pdf, block.text, 12 if heading else 10, 6 if heading else 5, bold=heading)
            for item in block.items:
                pdf.set_x(26)
                _pdf_para(pdf, f"- {item}", 10, 5, gap=0.5)
        if pdf.get_y() > _BODY_BOTTOM:
            raise RuntimeError(f"demo page {number} of {doc.path} overflows into its footer")
        pdf.set_font("Helvetica", size=8)
        pdf.set_xy(20, _PAGE_H - 18)
        pdf.cell(0, 4, tpl.FOOTER, align="C")
        pdf.set_xy(20, _PAGE_H - 13)
        pdf.cell(0, 4, f"Page {number} of {doc.pages}", align="C")
    return bytes(pdf.output())


def _pdf_para(pdf: FPDF, text: str, size: int, line: float, *, bold: bool = False,
              gap: float = 2.5) -> None:
    """Write one wrapped paragraph at the cursor and move below it."""
    pdf.set_font("Helvetica", style="B" if bold else "", size=size)
    pdf.multi_cell(0, line, text, new_x="LMARGIN", new_y="NEXT")
    pdf.ln(gap)
