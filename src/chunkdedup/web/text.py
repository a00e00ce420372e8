"""Pure text layout for the web view: a page with its stripped lines and chunks, word differences.

Every function returns plain pieces of text with a role; the templates escape each piece, so no
markup is ever built from document text here.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from chunkdedup.normalize import boilerplate_key
from chunkdedup.text.boilerplate import key_id

Role = Literal["text", "stripped"]

_WORDS = re.compile(r"\S+|\s+")


@dataclass(frozen=True, slots=True)
class Span:
    """A chunk's span of a clean page and the canonical it is indexed under."""

    start: int
    end: int
    canonical_id: str
    relation: str


@dataclass(frozen=True, slots=True)
class Segment:
    """A piece of a page as shown: kept text (inside chunk ``chunk`` or between chunks) or a stripped line."""

    text: str
    role: Role
    chunk: int | None = None
    canonical_id: str | None = None
    starts_chunk: bool = False
    scope: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"text": self.text, "role": self.role}
        if self.role == "stripped":
            out["scope"] = self.scope
        elif self.chunk is not None:
            out["chunk"] = self.chunk
            out["canonical"] = self.canonical_id
        return out


@dataclass(frozen=True, slots=True)
class StrippedAt:
    """A raw line missing from the clean text, the clean offset it stood at, and its raw line number."""

    offset: int
    line: str
    index: int


def align(raw: str, clean: str) -> tuple[list[StrippedAt], bool]:
    """The raw lines stripping removed, each at the clean-text offset where it stood.

    Stripping removes whole lines and collapses blank runs, so the clean text is the raw lines
    with some left out: each raw line is matched to the clean text in order, and a line that does
    not stand next is a stripped one. ``False`` when the clean text is not such a subsequence.
    """
    if raw == clean:
        return [], True
    out: list[StrippedAt] = []
    pos = 0
    for i, line in enumerate(raw.split("\n")):
        p = pos
        while p < len(clean) and clean[p] == "\n":
            p += 1
        end = p + len(line)
        if clean.startswith(line, p) and (end == len(clean) or clean[end] == "\n"):
            pos = end
        elif line.strip():
            out.append(StrippedAt(p, line, i))
    ok = not clean[pos:].strip()
    return out, ok


def layout(
    raw: str, clean: str, spans: Sequence[Span], scopes: dict[int, str] | None = None
) -> tuple[tuple[Segment, ...], bool]:
    """A page as segments in reading order: stripped lines where they stood, kept text cut at the
    chunk boundaries. ``scopes`` maps a boilerplate key id to its scope for the stripped lines (a
    line of a stripped block has no key of its own: it is chrome). ``False`` when the stripped
    lines could not be placed (then the clean text alone is shown)."""
    stripped, ok = align(raw, clean)
    if not ok:
        stripped = []
    scopes = scopes or {}
    ordered = sorted(spans, key=lambda s: (s.start, s.end))
    cuts = {0, len(clean)}
    for s in ordered:
        cuts.update((s.start, s.end))
    cuts.update(s.offset for s in stripped)
    points = sorted(c for c in cuts if 0 <= c <= len(clean))
    segments: list[Segment] = []
    si = 0
    for a, b in zip(points, [*points[1:], None], strict=False):
        while si < len(stripped) and stripped[si].offset == a:
            line = stripped[si].line
            scope = scopes.get(key_id(boilerplate_key(line)), "chrome")
            segments.append(Segment(line, "stripped", scope=scope))
            si += 1
        if b is None:
            break
        inside = [(n, s) for n, s in enumerate(ordered) if s.start <= a < s.end]
        if inside:
            n, s = inside[-1]
            segments.append(Segment(clean[a:b], "text", n + 1, s.canonical_id, a == s.start))
        else:
            segments.append(Segment(clean[a:b], "text"))
    return tuple(segments), ok


@dataclass(frozen=True, slots=True)
class ContextLine:
    """A raw line around a stripped key: ``match`` for the key's own lines."""

    number: int
    text: str
    match: bool

    def to_json(self) -> dict[str, Any]:
        return {"line": self.number, "text": self.text, "match": self.match}


def key_lines(raw: str, clean: str, khash: int, around: int = 2) -> tuple[ContextLine, ...]:
    """The stripped lines of key ``khash`` on a page with ``around`` raw lines either side; empty
    when the key was not stripped on this page. A key is a line's (running lines, page-edge
    chrome) or a block's: consecutive stripped lines joined by a space (chrome blocks)."""
    stripped, ok = align(raw, clean)
    if not ok or not stripped:
        return ()
    hits: set[int] = set()
    block: list[StrippedAt] = []

    def close() -> None:
        if block and key_id(boilerplate_key(" ".join(s.line for s in block))) == khash:
            hits.update(s.index for s in block)
        block.clear()

    lines = raw.split("\n")
    for s in stripped:
        if key_id(boilerplate_key(s.line)) == khash:
            hits.add(s.index)
        if block and (s.index != block[-1].index + 1):
            close()
        block.append(s)
    close()
    if not hits:
        return ()
    shown = sorted({j for i in hits for j in range(i - around, i + around + 1) if 0 <= j < len(lines)})
    return tuple(ContextLine(j + 1, lines[j], j in hits) for j in shown)


@dataclass(frozen=True, slots=True)
class Word:
    """A piece of a text (a word or the space after it), ``changed`` when the other text lacks it."""

    text: str
    changed: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"text": self.text, "changed": self.changed}


def word_diff(base: str, other: str) -> tuple[tuple[Word, ...], tuple[Word, ...]]:
    """Both texts as words, each word marked where it differs from the other text (case and
    whitespace ignored): what a merged copy or a kept-apart version says differently."""
    a, b = _WORDS.findall(base), _WORDS.findall(other)
    # compare the words alone: the spaces between them would all match each other (slow, and noise)
    ia, ib = _word_positions(a), _word_positions(b)
    changed_a: set[int] = set()
    changed_b: set[int] = set()
    ka, kb = [a[i].lower() for i in ia], [b[j].lower() for j in ib]
    matcher = difflib.SequenceMatcher(None, ka, kb, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            changed_a.update(ia[i1:i2])
            changed_b.update(ib[j1:j2])
    return _marked(a, changed_a), _marked(b, changed_b)


def _word_positions(pieces: Iterable[str]) -> list[int]:
    return [i for i, w in enumerate(pieces) if not w.isspace()]


def _marked(words: Sequence[str], changed: set[int]) -> tuple[Word, ...]:
    return tuple(Word(w, i in changed and not w.isspace()) for i, w in enumerate(words))
