"""A document's context: the words that say which document a chunk comes from.

Questions name the company, the year, the policy ("What is 3M's FY2018 capital expenditure?"); the
page that answers is a table that names neither. The identity lives in the manifest, the title, the
file name and the running headers that boilerplate stripping removes. :func:`document_context`
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
CONTEXT_FORMAT = "2"
#: A context longer than this is cut: it identifies a document, it is not a second body.
MAX_CONTEXT_CHARS = 2_000
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


def document_contexts(sources: Sequence[ContextSource], config: RetrievalConfig) -> list[str]:
    """:func:`document_context` of each source; the file name's words are made once per file (the
    records of a JSONL or Parquet file share it: building a path object cost half the context), and a
    context once per distinct input (records of one file with the same metadata, title and running
    lines: 50k records of ten shards, ~8 us each, made ten contexts)."""
    names: dict[str, str] = {}
    made: dict[tuple[object, ...], str] = {}
    out: list[str] = []
    for s in sources:
        # a value's type is part of its key: 1, 1.0 and True are equal, and give other contexts
        key = (s.path, s.title, s.running, *((k, type(v), v) for k, v in s.metadata.items()))
        text = made.get(key)
        if text is None:
            name = names.get(s.path) or names.setdefault(s.path, filename_words(s.path))
            text = made[key] = document_context(s, config, name)
        out.append(text)
    return out


def document_context(source: ContextSource, config: RetrievalConfig, filename: str | None = None) -> str:
    """The context text of one document (empty when ``config.context`` is empty).

    Parts in a fixed order, one per line: metadata values (every key's scalar value, or the values of
    ``context_fields``), the title, the file name as words, the running header and footer lines; each
    letter-digit run followed by its parts (``FY2018`` adds ``2018``), as the query side does; each
    word once (case-insensitively), where it first appears. ``filename``: the file name's words when
    the caller has them (:func:`filename_words` of ``source.path``).

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
