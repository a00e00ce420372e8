"""Markdown: YAML front matter becomes metadata; the body is kept as written."""

from __future__ import annotations

import re
from typing import Any

import yaml

from chunkdedup.errors import ParseError
from chunkdedup.parse.base import Extracted, Extraction
from chunkdedup.parse.text import decode_text
from chunkdedup.types import Page

_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
_OPEN = "---"
_CLOSE = ("---", "...")


def split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """Split text into its YAML front matter (a mapping, empty when absent) and the body.

    Raises ``ParseError`` when the front matter is not valid YAML or not a mapping.

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
    if not isinstance(loaded, dict):
        raise ParseError(
            f"front matter is a {type(loaded).__name__}, not a mapping: "
            "write 'key: value' lines between the '---' lines"
        )
    return {str(k): v for k, v in loaded.items()}, "\n".join(lines[end + 1 :]).strip("\n")


def _where(error: yaml.YAMLError) -> str:
    mark = getattr(error, "problem_mark", None)
    # The mark counts from 0 inside the front matter; the file has the opening '---' before it.
    return f"line {mark.line + 2} of the file" if mark is not None else "position unknown"


def _problem(error: yaml.YAMLError) -> str:
    problem = getattr(error, "problem", None)
    return str(problem) if problem else str(error).splitlines()[0]


def title(body: str) -> str | None:
    """The first heading of the highest level (``# A`` before ``## B``), if the body has headings.

    Example:
        >>> title("Intro\n\n## 1. Scope\n\n# Refund policy #\n")
        'Refund policy'
    """
    headings = [(len(m.group(1)), m.start(), m.group(2)) for m in _HEADING.finditer(body)]
    return min(headings)[2] if headings else None


class MarkdownParser:
    """Markdown files as one page: front matter to metadata, markdown syntax left in the text."""

    def parse(self, data: bytes) -> Extraction:
        """Decode, split off the front matter, and keep the body."""
        metadata, body = split_front_matter(decode_text(data))
        page = Page(number=1, text=body)
        return Extraction(documents=(Extracted(pages=(page,), metadata=metadata, title=title(body)),))
