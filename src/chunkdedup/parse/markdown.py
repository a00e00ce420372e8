"""Markdown: YAML front matter becomes metadata; the body is kept as written."""

from __future__ import annotations

import re
from typing import Any

import yaml

from chunkdedup.errors import ParseError
from chunkdedup.parse.base import Extracted, Extraction, scrub_surrogates
from chunkdedup.parse.text import decode_noted
from chunkdedup.types import Page

_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})", re.MULTILINE)
_OPEN = "---"
_CLOSE = ("---", "...")
#: A YAML escape of a lone surrogate (``\ud800``, ``\U0000dc00``: a high one not followed by a low one,
#: a low one not after a high one)
_LONE_ESCAPE = re.compile(
    r"\\(?:u|U0000)[dD][89abAB][0-9a-fA-F]{2}(?!\\(?:u|U0000)[dD][c-fC-F])"
    r"|(?<![dD][89abAB][0-9a-fA-F]{2})\\(?:u|U0000)[dD][c-fC-F]"
)
#: What front matter may expand to, counted as values plus characters of their strings once YAML
#: aliases are expanded (metadata is stored expanded, as JSON). 419 bytes of nested anchors expand to
#: gigabytes; real front matter stays far below this.
MAX_FRONT_MATTER_SIZE = 1_000_000


def split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """Split text into its YAML front matter (a mapping, empty when absent) and the body.

    Raises ``ParseError`` when the front matter is not valid YAML or not a mapping. YAML escapes can
    write lone surrogates (``"\\ud800"``), which no UTF-8 text holds: :func:`surrogate_note` replaces them.

    Example:
        >>> split_front_matter("---\\ntitle: Refunds\\n---\\n\\nBody.\\n")
        ({'title': 'Refunds'}, 'Body.')
    """
    lines = text.split("\n")
    if not lines or lines[0].rstrip() != _OPEN:
        return {}, text.strip("\n")
    end = next((i for i in range(1, len(lines)) if lines[i].rstrip() in _CLOSE), None)
    if end is None:
        # An opening rule with no closing one is a thematic break, not front matter.
        return {}, text.strip("\n")
    try:
        loaded = yaml.safe_load("\n".join(lines[1:end]))
    except yaml.YAMLError as e:
        raise ParseError(f"front matter is not valid YAML ({_where(e)}): {_problem(e)}") from None
    if loaded is None:
        loaded = {}
    _check_size(loaded)
    if not isinstance(loaded, dict):
        raise ParseError(
            f"front matter is a {type(loaded).__name__}, not a mapping: "
            "write 'key: value' lines between the '---' lines"
        )
    return {str(k): v for k, v in loaded.items()}, "\n".join(lines[end + 1 :]).strip("\n")


def surrogate_note(text: str, metadata: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """``metadata`` (the front matter of ``text``) with lone surrogates replaced by U+FFFD, and a note
    naming the lines that write lone surrogate escapes when any was replaced (``None``: none was)."""
    fixed, replaced = scrub_surrogates(metadata)
    if not replaced:
        return fixed, None  # a pair YAML left as two escapes is joined, which needs no note
    head = text.split("\n")[1:]
    end = next((i for i, line in enumerate(head) if line.rstrip() in _CLOSE), len(head))
    where = [str(i + 2) for i, line in enumerate(head[:end]) if _LONE_ESCAPE.search(line)]
    lines = f" line {where[0]}" if len(where) == 1 else f" lines {', '.join(where[:10])}" if where else ""
    return fixed, (
        f"front matter{lines}: {replaced:,} lone surrogate escape(s) (\\ud800-\\udfff without its "
        "pair) replaced by U+FFFD; write the character itself or a valid pair"
    )


def _check_size(loaded: object) -> None:
    """Raise ``ParseError`` when ``loaded`` expands (aliases followed) beyond ``MAX_FRONT_MATTER_SIZE``
    or refers to itself. Sizes of shared nodes are memoised, so the walk is linear in the YAML graph."""
    sizes: dict[int, int] = {}
    active: set[int] = set()

    def size(node: object) -> int:
        if isinstance(node, str | bytes):
            return 1 + len(node)
        if not isinstance(node, dict | list | tuple | set):
            return 1
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in active:
            raise ParseError(
                "front matter refers to itself (a YAML alias inside its own anchor): remove the alias"
            )
        active.add(key)
        items = [*node.keys(), *node.values()] if isinstance(node, dict) else list(node)
        total = 1
        for item in items:
            total += size(item)
            if total > MAX_FRONT_MATTER_SIZE:
                raise ParseError(
                    f"front matter expands to more than {MAX_FRONT_MATTER_SIZE:,} values and characters "
                    "(YAML aliases repeated inside aliases: an 'alias bomb'): write the values out plainly"
                )
        active.discard(key)
        sizes[key] = total
        return total

    size(loaded)


def _where(error: yaml.YAMLError) -> str:
    mark = getattr(error, "problem_mark", None)
    # The mark counts from 0 inside the front matter; the file has the opening '---' before it.
    return f"line {mark.line + 2} of the file" if mark is not None else "position unknown"


def _problem(error: yaml.YAMLError) -> str:
    problem = getattr(error, "problem", None)
    return str(problem) if problem else str(error).splitlines()[0]


def title(body: str) -> str | None:
    """The first heading of the highest level (``# A`` before ``## B``), if the body has headings.

    A ``#`` line inside a fenced code block (a shell comment) is no heading.

    Example:
        >>> title("Intro\\n\\n## 1. Scope\\n\\n# Refund policy #\\n")
        'Refund policy'
        >>> title("## Installing the CLI\\n\\n```sh\\n# remove all user data\\nrm -rf ~/.app\\n```\\n")
        'Installing the CLI'
    """
    fenced = _fenced_spans(body)
    headings = [
        (len(m.group(1)), m.start(), m.group(2))
        for m in _HEADING.finditer(body)
        if not any(lo <= m.start() < hi for lo, hi in fenced)
    ]
    return min(headings)[2] if headings else None


def _fenced_spans(body: str) -> list[tuple[int, int]]:
    """The (start, end) offsets of the fenced code blocks (```` ``` ```` or ``~~~``, closed by a fence of
    the same character at least as long; an unclosed one runs to the end)."""
    spans: list[tuple[int, int]] = []
    opened: re.Match[str] | None = None
    for m in _FENCE.finditer(body):
        if opened is None:
            opened = m
        elif m.group(1)[0] == opened.group(1)[0] and len(m.group(1)) >= len(opened.group(1)):
            spans.append((opened.start(), m.end()))
            opened = None
    if opened is not None:
        spans.append((opened.start(), len(body)))
    return spans


class MarkdownParser:
    """Markdown files as one page: front matter to metadata, markdown syntax left in the text."""

    def parse(self, data: bytes) -> Extraction:
        """Decode, split off the front matter, and keep the body."""
        text, note = decode_noted(data)
        metadata, body = split_front_matter(text)
        metadata, replaced = surrogate_note(text, metadata)
        page = Page(number=1, text=body)
        notes = tuple(n for n in (note, replaced) if n)
        found = Extracted(pages=(page,), metadata=metadata, title=title(body))
        return Extraction(documents=(found,), notes=notes)
