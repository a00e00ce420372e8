"""Query aliases: names a corpus writes one way and questions another (``JnJ = Johnson & Johnson``).

An alias file holds one ``ALIAS = EXPANSION`` a line (``#`` starts a comment; several aliases may
share an expansion). A question that holds an alias as a whole word (case-insensitively) is searched
with the expansion's words added; the question itself, shown and logged, stays as asked. Off unless
``[query] aliases`` names a file.

Example:
    >>> table = parse_aliases("JnJ = Johnson & Johnson\\n# comment\\nMSFT = Microsoft\\n", "a.txt")
    >>> expand("What was JnJ's revenue vs msft?", table)
    "What was JnJ's revenue vs msft? Johnson & Johnson Microsoft"
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from chunkdedup.errors import ConfigError

_WORD = re.compile(r"[^\W_]+(?:['\u2019][^\W_]+)*")


def parse_aliases(text: str, source: str) -> dict[str, str]:
    """``alias (casefolded) -> expansion`` from an alias file's text; a bad line is a ConfigError."""
    table: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        body = line.split("#", 1)[0].strip()
        if not body:
            continue
        alias, sep, expansion = (part.strip() for part in body.partition("="))
        if not sep or not alias or not expansion or " " in alias:
            raise ConfigError(
                f"{source} line {number}: write one ALIAS = EXPANSION a line (the alias one word), "
                f"got {line.strip()!r}"
            )
        table[alias.casefold()] = expansion
    return table


def load_aliases(path: str | Path) -> dict[str, str]:
    """Read an alias file; a missing or unreadable file is a ConfigError naming it."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        why = f"query.aliases file {p} cannot be read ({e}): check its path in the config"
        raise ConfigError(why) from None
    return parse_aliases(text, str(p))


def expand(question: str, table: Mapping[str, str]) -> str:
    """The question followed by the expansions of the aliases it holds (each once, in order)."""
    if not table:
        return question
    found: dict[str, None] = {}
    for word in _WORD.findall(question):
        base = re.sub(r"['\u2019]s$", "", word).casefold()
        if base in table:
            found.setdefault(table[base], None)
    return " ".join([question, *found]) if found else question
