"""A document's context: the words that say which document a chunk comes from.

Questions name the company, the year, the policy ("What is 3M's FY2018 capital expenditure?"); the
page that answers is a table that names neither. The identity lives in the manifest, the title, the
file name, the running headers that boilerplate stripping removes and the labelled header fields of a
form's first page ("Location: Tallahassee, FL", "Aircraft: Piper PA-22-150"). :func:`document_context`
gathers them into one text per document; retrieval ranks each chunk on its own text plus the context
of the documents it cites (:mod:`chunkdedup.query.context`). Shown text, export and citations stay
the clean text.

A pure function of its inputs: the local and the distributed ingest store the same context.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import PurePosixPath
from urllib.parse import unquote

from chunkdedup.config import RetrievalConfig
from chunkdedup.normalize import collapse_ws, with_word_parts
from chunkdedup.normalize import running_lines as running_lines
from chunkdedup.types import ContextSource, MetaValue

#: Bumped when the context of the same inputs changes, so an ingest recomputes every document's.
CONTEXT_FORMAT = "3"
#: A context longer than this is cut: it identifies a document, it is not a second body.
MAX_CONTEXT_CHARS = 2_000
#: The labels of a first page's header fields that name a document (a report's place, aircraft and
#: registration; a letter's date and operator): a closed set, matched whole and case-insensitively.
HEADER_LABELS = ("location", "date", "date & time", "aircraft", "registration", "operator", "accident number")
#: How far into the first page a header block lies, and the longest value a field may have.
HEADER_LINES = 15
MAX_FIELD_CHARS = 60
#: the longest header line read (two fields and their labels)
MAX_LINE_CHARS = 160
_LABELS = "|".join(re.escape(x) for x in sorted(HEADER_LABELS, key=len, reverse=True))  # longest first
_LABEL = re.compile(r"(?<![\w&/-])(" + _LABELS + r")\s?:(?=\s)", re.IGNORECASE)
#: any other "Label:" (title-case words), where a field's value ends: "Aircraft Damage:", "Injuries:"
_OTHER_LABEL = re.compile(r"(?:^|\s)[A-Z][a-z]+(?:\s(?:&|and|[A-Z][a-z]+)){0,3}\s?:(?=\s|$)")
#: a value ending in a lower-case word and a full stop is a sentence, not a field ("... was full.")
_SENTENCE_END = re.compile(r"\b[a-z]+\.$")
_TITLE_WORD_BEFORE = re.compile(r"\b[A-Z][a-z]+\s$")
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_SEPARATORS = re.compile(r"[\W_]+")
BACKSLASH = chr(92)  # a Windows path separator


def filename_words(path: str) -> str:
    """A file name as words: URL-decoded (``%20`` is a space), split at separators, the suffix
    dropped; a camel-case word is followed by its pieces.

    Example:
        >>> filename_words("reports/AnnualReport_FY2018-3M.pdf")
        'AnnualReport Annual Report FY2018 3M'
        >>> filename_words("ndas/DBT%20Mutual%20NDA.txt")
        'DBT Mutual NDA'
    """
    stem = PurePosixPath(unquote(path.replace(BACKSLASH, "/"))).stem
    words: list[str] = []
    for part in _SEPARATORS.split(stem):
        pieces = [p for p in _CAMEL.split(part) if p]
        words.extend([part, *pieces] if len(pieces) > 1 else pieces)
    return " ".join(words)


def header_fields(page: str) -> list[str]:
    """The values of the labelled header fields (:data:`HEADER_LABELS`) in a first page's header
    block: its first :data:`HEADER_LINES` lines, a field only on a line of at most
    :data:`MAX_LINE_CHARS` characters that starts with a label (a form's ``Label: value`` line; two
    fields may share one), its value up to the next label, at most :data:`MAX_FIELD_CHARS`
    characters and not ending a sentence (prose is not a field).

    Example:
        >>> header_fields("Aviation Accident Final Report\\nLocation: Tallahassee, FL Accident Number: "
        ...               "NYC08CA055\\nAircraft: Piper PA-22-150 Aircraft Damage: Substantial")
        ['Tallahassee, FL', 'NYC08CA055', 'Piper PA-22-150']
    """
    values: list[str] = []
    for line in page.split("\n", HEADER_LINES)[:HEADER_LINES]:  # not the whole of a long page
        if ":" not in line or len(line) > MAX_LINE_CHARS:
            continue  # a field line is short
        line = " ".join(line.split())  # collapse_ws, faster on short lines
        if not (_LABEL.match(line) or _OTHER_LABEL.match(line)):
            continue  # a field line starts with a label
        # a label word that ends a longer label ("Effective Date:") is not that label
        found = [m for m in _LABEL.finditer(line) if not _TITLE_WORD_BEFORE.search(line, 0, m.start())]
        if not found:
            continue
        for m, nxt in zip(found, [*found[1:], None], strict=True):
            value = line[m.end() : nxt.start() if nxt else len(line)]
            other = _OTHER_LABEL.search(value)
            value = (value[: other.start()] if other else value).strip()
            if value and len(value) <= MAX_FIELD_CHARS and not _SENTENCE_END.search(value):
                values.append(value)
    return values


def document_contexts(sources: Sequence[ContextSource], config: RetrievalConfig) -> list[str]:
    """:func:`document_context` of each source; the file name's words are made once per file (the
    records of a JSONL or Parquet file share it: building a path object cost half the context), and a
    context once per distinct input (records of one file with the same metadata, title, running lines
    and header fields: 50k records of ten shards, ~8 us each, made ten contexts)."""
    names: dict[str, str] = {}
    made: dict[tuple[object, ...], str] = {}
    out: list[str] = []
    for s in sources:
        # a value's type is part of its key: 1, 1.0 and True are equal, and give other contexts
        fields = tuple(header_fields(s.first_page))  # a record's whole text is its first page
        key = (s.path, s.title, s.running, fields, *((k, type(v), v) for k, v in s.metadata.items()))
        text = made.get(key)
        if text is None:
            name = names.get(s.path) or names.setdefault(s.path, filename_words(s.path))
            text = made[key] = document_context(s, config, name, fields)
        out.append(text)
    return out


def document_context(
    source: ContextSource,
    config: RetrievalConfig,
    filename: str | None = None,
    fields: Sequence[str] | None = None,
) -> str:
    """The context text of one document (empty when ``config.context`` is empty).

    Parts in a fixed order, one per line: metadata values (every key's scalar value, or the values of
    ``context_fields``; without ``context_fields``, then the first page's :func:`header_fields`), the
    title, the file name as words, the running header and footer lines; each letter-digit run
    followed by its parts (``FY2018`` adds ``2018``), as the query side does; each word once
    (case-insensitively), where it first appears. ``filename``: the file name's words when the caller
    has them (:func:`filename_words` of ``source.path``); ``fields``: likewise the first page's
    :func:`header_fields`.

    Example:
        >>> meta = {"company": "3M", "fiscal_year": 2018}
        >>> src = ContextSource("3M_2018.pdf", "/in/3M_2018.pdf", meta, "3M 10-K", ("3M Co. | 2018 10-K",))
        >>> print(document_context(src, RetrievalConfig()))
        3M 3
        2018
        10-K
        Co.
    """
    lines: list[str] = []
    for part in config.context:
        if part == "metadata":
            named = bool(config.context_fields)
            keys = config.context_fields or tuple(sorted(source.metadata))
            lines.extend(_value(source.metadata.get(k), named) for k in keys)
            if not named:
                lines.extend(header_fields(source.first_page) if fields is None else fields)
        elif part == "title" and source.title:
            lines.append(source.title)
        elif part == "filename":
            lines.append(filename_words(source.path) if filename is None else filename)
        elif part == "running":
            lines.extend(source.running)
    # Each word once: a name the family, the title and the file name all repeat would otherwise
    # weigh three times what a name said once weighs (BM25 counts term frequency).
    words: set[str] = set()
    out: list[str] = []
    for line in lines:
        fresh = []
        for word in with_word_parts(collapse_ws(line)).split(" "):
            key = _SEPARATORS.sub("", word).casefold()  # "PepsiCo," is "PepsiCo"; "|" is nothing
            if key and key not in words:
                words.add(key)
                fresh.append(word)
        if fresh:
            out.append(" ".join(fresh))
    return "\n".join(out)[:MAX_CONTEXT_CHARS]


def _value(value: MetaValue, named: bool) -> str:
    if value is None or isinstance(value, bool):
        return ""  # a flag says nothing a question would name
    text = str(value)
    if not named and text[:1] in "[{":
        return ""  # a list or mapping (JSON text: redirect paths, version maps) only when asked for
    return text
