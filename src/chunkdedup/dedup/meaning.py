"""The meaning guard: two near-duplicate texts whose differing words change what is said are versions,
not copies, and are never merged; and numbering alone does not make two clauses versions.

The number/date guard (:mod:`chunkdedup.dedup.guard`) reads digits. A near pair can also differ in
words that change its meaning with every digit equal: Amazon's certification "I, Andrew R. Jassy,
certify" against Apple's "I, Timothy D. Cook, certify" (Jaccard 0.878), "first quarter" against
"third quarter", "may" against "must". :func:`meaning_diff` aligns the two texts' words (as written,
case kept) and reads only the stretches that differ, after dropping what is no difference at all:

- markup and addresses: link targets ``](...)``, URLs, e-mail-free HTML comments, emphasis and bullet
  marks, heading marks; words are compared casefolded with their punctuation dropped, so
  ``U.S.``/``US``, ``on-premises``/``on\u00adpremises``, ``can not``/``cannot`` are equal;
- an acronym against the words it stands for (``U.S.``/``United States``), an abbreviation against
  its word (``St``/``Street``, ``Dept``/``Department``), a legal form (``Inc.``, ``Corp``, ``LLC``).

What is left is checked in this order; the first reason that holds is the pair's:

============  =====================================================================================
reason        a changed stretch ...
============  =====================================================================================
negation      holds a negation (not, no, never, without, except, unless, nor, cannot, n't ...)
modality      changes the modal class of the pair: obligation (must, shall, required), permission
              (may, can, permitted), recommendation (should), prohibition (prohibited)
ordinal       replaces an ordinal or number word by another (first/third quarter, thirty/sixty days)
reference     replaces a lettered reference by another (``4(b)``/``4(d)``, ``Section 1(f)``/``1(g)``)
qualifier     holds a word that narrows or widens scope (only, later, exclusive, non-commercial ...)
name          holds a name: a capitalised word standing where a sentence does not start, that
              neither text writes in lower case (Jassy/Cook, Xeon/Optane, Expert/Professional
              Services). No model: the case of the pair's own words decides, so the verdict is a
              rule on the two texts alone (incremental equals fresh, Ray equals local)
content       adds or drops a statement: at least ``CONTENT_WORDS`` words on one side only, most of
              them lower case (a title-case line such as a table header or a leaked heading is not
              a statement)
============  =====================================================================================

:func:`numbering_only` is the other direction: a pair the number/date guard kept apart whose
numeric tokens are equal once each text's enumeration labels (``12.``, ``(c)``, ``Section 12.`` opening
a line), a page-number line opening or closing the text (``20``, ``Page 3 of 9``, ``Other Key
Information 41``) and link targets are left out differs only in numbering: the same clause.

Nothing is kept between calls; the word lists and expressions are module constants.

Example:
    >>> meaning_diff("I, Timothy D. Cook, certify that", "I, Andrew R. Jassy, certify that")
    MeaningDiff(reason='name', words=('-Cook', '-D', '-Timothy', '+Andrew', '+Jassy', '+R'))
    >>> meaning_diff("Refunds are given in the first quarter.", "Refunds are given in the third quarter.")
    MeaningDiff(reason='ordinal', words=('-first', '+third'))
    >>> meaning_diff("See the U.S. office.", "See the United States office.") is None
    True
    >>> numbering_only("12. Fees are due monthly.", "14. Fees are due monthly.")
    True
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Literal

import numpy as np
import numpy.typing as npt

from chunkdedup.config import MEANING_REASONS
from chunkdedup.dedup.guard import numeric_tokens
from chunkdedup.normalize import exact_key

__all__ = [
    "CONTENT_WORDS",
    "REASONS",
    "MeaningDiff",
    "Reason",
    "judge_edges",
    "meaning_diff",
    "numbering_only",
]

def _set(words: str) -> frozenset[str]:
    return frozenset(words.split())


Reason = Literal["negation", "modality", "ordinal", "reference", "qualifier", "name", "content"]
#: every reason, in the order they are checked
REASONS: tuple[Reason, ...] = MEANING_REASONS  # type: ignore[assignment]
#: words on one side only that make a statement added or dropped
CONTENT_WORDS = 6
#: the share of a text's words capitalised against the pair's own lower case that makes its case noise
_CASE_NOISE = 0.1
#: the longest word in capitals read as an acronym (a name); longer ones are headings or shouting
_ACRONYM = 4
#: a one-word change this close (difflib's ratio of the two words' letters) is a misspelling
_TYPO_RATIO = 0.8
_NAME_TYPO_RATIO = 0.9
_MAX_WORDS = 20

_NEGATION = _set(
    "not no never without except unless nor cannot neither none nothing nobody nowhere "
    "dont doesnt didnt isnt arent wasnt werent wont cant couldnt shouldnt wouldnt mustnt hasnt havent "
    "hadnt neednt"
)
_MODAL = {
    **dict.fromkeys(_set("must shall required require requires mandatory obligated obliged"), "obligation"),
    **dict.fromkeys(_set("may can permitted permit permits allowed allow allows entitled"), "permission"),
    **dict.fromkeys(_set("should recommended"), "recommendation"),
    **dict.fromkeys(_set("prohibited prohibit prohibits forbidden forbid"), "prohibition"),
}
_ORDINAL = _set(
    "first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth thirteenth "
    "fourteenth fifteenth twentieth thirtieth last one two three four five six seven eight nine ten "
    "eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty thirty forty "
    "fifty sixty seventy eighty ninety hundred thousand million billion trillion half double triple "
    "once twice"
)
_QUALIFIER = _set(
    "only solely exclusively exclusive nonexclusive noncommercial commercial derivative "
    "derivatives sharealike irrevocable revocable perpetual temporary permanent partial partially "
    "minimum maximum least most more less fewer before after prior"
)
_LATER = _set("later earlier newer older")
#: capitalised words that are no name: legal forms, the pronoun, headings' words
_LEGAL = _set("inc corp corporation co company llc ltd limited plc lp llp na sa ag gmbh nv bv")
_NOT_NAMES = _LEGAL | _set(
    "i part item section article exhibit note notes schedule table contents page chapter appendix annex"
)
#: small words a title-case line writes in lower case
_SMALL = _set("a an and as at by for in of on or the to with")
_ROMAN = re.compile(r"[ivxlcdm]+")
#: what is no text: HTML comments, link targets, URLs, e-mail addresses
_NO_TEXT = re.compile(r"<!--.*?-->|\]\([^)\s]*\)|(?:https?|ftp)://\S+|mailto:\S+|\S+@\S+\.\w+", re.S)
_WORD = re.compile(r"[^\W_](?:[\w'’.\-\u00ad\ufffe&/]*[^\W_])?\.?")
#: what may stand between a sentence's start and its first word: bullets, marks, quotes, brackets
_OPENERS = " \t*_#>`\"'“‘([{|-•–—"
_REFERENCE = re.compile(
    r"(?<=[\w)])\((?!s\))[a-z]{1,4}\)"
    r"|\b(?:section|paragraph|clause|subsection|subparagraph|article|exhibit|schedule|appendix|annex)"
    r" \(?(?:[a-z]|[ivx]{1,4})\)?(?![\w(])",
    re.I,
)


@dataclass(frozen=True, slots=True)
class MeaningDiff:
    """Why a near pair is a version: ``reason`` and the words that differ (``-`` only in the first
    text, ``+`` only in the second, as written, at most 20)."""

    reason: Reason
    words: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class _Word:
    raw: str
    norm: str  # casefolded, letters and digits only
    initial: bool  # opens a sentence, a line or a list item
    line: int  # the line it stands on


def _words(text: str) -> list[_Word]:
    text = _NO_TEXT.sub(" ", text)
    out: list[_Word] = []
    prev_end = 0
    boundary = True
    line = 0
    for m in _WORD.finditer(text):
        gap = text[prev_end : m.start()]
        line += gap.count("\n")
        if "\n" in gap or any(ch in ".!?:;" for ch in gap):
            boundary = True
        elif gap.strip(_OPENERS):
            boundary = False
        raw = m.group()
        norm = "".join(ch for ch in raw.casefold() if ch.isalnum())
        if norm:
            out.append(_Word(raw.rstrip("."), norm, boundary, line))
            boundary = raw.endswith((".", "!", "?", ":")) and not _abbreviation(raw)
        prev_end = m.end()
    return out


def _abbreviation(raw: str) -> bool:
    """``D.``, ``U.S.``, ``Inc.``, ``e.g.``: a period that ends no sentence."""
    body = raw[:-1]
    return len(body) <= 1 or "." in body or body.casefold() in _LEGAL or body.casefold() in {"no", "vs", "st"}


def _equivalent(a: Sequence[_Word], b: Sequence[_Word]) -> bool:
    """Whether a changed stretch says the same: equal letters once spaces go, an acronym and its words,
    an abbreviation and its word, legal forms only."""
    wa = [w for w in a if w.norm not in _LEGAL]
    wb = [w for w in b if w.norm not in _LEGAL]
    na, nb = [w.norm for w in wa], [w.norm for w in wb]
    if "".join(na) == "".join(nb):
        return True
    if len(na) == 1 and len(nb) > 1 and na[0] == "".join(w[0] for w in nb):
        return True
    if len(nb) == 1 and len(na) > 1 and nb[0] == "".join(w[0] for w in na):
        return True
    if len(na) == 1 and len(nb) == 1:
        short, long_ = sorted((na[0], nb[0]), key=len)
        if len(short) >= 2 and long_.startswith(short) and not short.isdigit():
            return True  # an abbreviation
        # a misspelling: one or two letters of a long word (Polices/Policies, insure/ensure); closer
        # still for capitalised words, so two names a letter apart (Kress/Krebs) stay two names
        close = _NAME_TYPO_RATIO if wa[0].raw[:1].isupper() or wb[0].raw[:1].isupper() else _TYPO_RATIO
        return len(short) >= 5 and SequenceMatcher(None, short, long_).ratio() >= close
    return False


def _changes(a: list[_Word], b: list[_Word]) -> list[tuple[list[_Word], list[_Word]]]:
    """The aligned stretches that differ and are not :func:`_equivalent`."""
    na, nb = [w.norm for w in a], [w.norm for w in b]
    head = 0
    while head < min(len(na), len(nb)) and na[head] == nb[head]:
        head += 1
    tail = 0
    while tail < min(len(na), len(nb)) - head and na[-1 - tail] == nb[-1 - tail]:
        tail += 1
    ma, mb = na[head : len(na) - tail], nb[head : len(nb) - tail]
    out = []
    matcher = SequenceMatcher(None, ma, mb, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        sa, sb = a[head + i1 : head + i2], b[head + j1 : head + j2]
        if not _equivalent(sa, sb):
            out.append((sa, sb))
    return out


def _case_seen(words: Iterable[_Word]) -> tuple[set[str], set[str]]:
    """(words written in lower case somewhere, words capitalised where no sentence starts)."""
    lower: set[str] = set()
    capital: set[str] = set()
    for w in words:
        if w.raw[:1].islower():
            lower.add(w.norm)
        elif w.raw[:1].isupper() and not w.initial:
            capital.add(w.norm)
    return lower, capital


def _case_noise(words: Sequence[_Word], lower: set[str]) -> bool:
    """Whether a text's case says nothing of names: more than ``_CASE_NOISE`` of its words are
    capitalised where no sentence starts although the pair writes them in lower case (title-case
    headings, shouting, OCR or re-cased copies)."""
    noisy = sum(1 for w in words if not w.initial and w.raw[:1].isupper() and w.norm in lower)
    return noisy > _CASE_NOISE * len(words)


def _is_name(w: _Word, lower: set[str], capital: set[str]) -> bool:
    if not w.raw[:1].isupper() or w.norm in lower or w.norm not in capital or w.norm in _NOT_NAMES:
        return False
    if w.raw.isupper() and (_ROMAN.fullmatch(w.norm) or len(w.norm) > _ACRONYM):
        return False  # a roman numeral, or a shouted word (a heading, a placeholder), not an acronym
    return not any(ch.isdigit() for ch in w.norm)


def _not_heading(mine: list[_Word], other: list[_Word], text: list[_Word]) -> list[_Word]:
    """``mine``, unless it is a heading line on one side only: whole lines of ``text`` whose every
    word is capitalised (a heading or a table header that one chunk's edge caught)."""
    if other or not mine or not all(w.raw[:1].isupper() or w.norm in _SMALL for w in mine):
        return mine
    lines = {w.line for w in mine}
    whole = sum(1 for w in text if w.line in lines) == len(mine)
    return [] if whole else mine


def _reason(
    changes: list[tuple[list[_Word], list[_Word]]],
    a: list[_Word],
    b: list[_Word],
    ref_a: Counter[str],
    ref_b: Counter[str],
    reasons: frozenset[str],
) -> Reason | None:
    left = [w for sa, _ in changes for w in sa]
    right = [w for _, sb in changes for w in sb]
    # words one side holds more often than the other among the changes: moved words cancel
    only_a = Counter(w.norm for w in left) - Counter(w.norm for w in right)
    only_b = Counter(w.norm for w in right) - Counter(w.norm for w in left)
    norms = set(only_a) | set(only_b)
    if "negation" in reasons and norms & _NEGATION:
        return "negation"
    if "modality" in reasons:
        modal_a = Counter(_MODAL[w.norm] for w in left if w.norm in _MODAL)
        modal_b = Counter(_MODAL[w.norm] for w in right if w.norm in _MODAL)
        if modal_a != modal_b:
            return "modality"
    if "ordinal" in reasons:
        for sa, sb in changes:
            oa = Counter(w.norm for w in sa if w.norm in _ORDINAL)
            ob = Counter(w.norm for w in sb if w.norm in _ORDINAL)
            if oa and ob and oa != ob:
                return "ordinal"
    if "reference" in reasons and ref_a != ref_b and ref_a - ref_b and ref_b - ref_a:
        return "reference"
    if "qualifier" in reasons and (norms & _QUALIFIER or _version_scope(changes)):
        return "qualifier"
    if "name" in reasons:
        lower_a, cap_a = _case_seen(a)
        lower_b, cap_b = _case_seen(b)
        lower = lower_a | lower_b
        in_a, in_b = {w.norm for w in a}, {w.norm for w in b}
        if _case_noise(a, lower) or _case_noise(b, lower):
            cap_a = cap_b = set()
        for sa, sb in changes:
            if any(_is_name(w, lower, cap_a) and w.norm not in in_b for w in _not_heading(sa, sb, a)):
                return "name"
            if any(_is_name(w, lower, cap_b) and w.norm not in in_a for w in _not_heading(sb, sa, b)):
                return "name"
    if "content" in reasons:
        for sa, sb in changes:
            extra, only = (sa, only_a) if len(sa) > len(sb) else (sb, only_b)
            new = [w for w in extra if only[w.norm] > 0]
            lowercase = sum(1 for w in new if not w.raw[:1].isupper())
            longer = abs(len(sa) - len(sb)) >= CONTENT_WORDS
            if longer and len(new) >= CONTENT_WORDS and 2 * lowercase > len(new):
                return "content"
    return None


def _version_scope(changes: list[tuple[list[_Word], list[_Word]]]) -> bool:
    """A changed stretch widens or narrows a version: "or (at your option) any later version"."""
    for sa, sb in changes:
        for side in (sa, sb):
            words = {w.norm for w in side}
            if words & _LATER and words & {"or", "version", "versions"}:
                return True
    return False


def _references(text: str) -> Counter[str]:
    found = _REFERENCE.finditer(_NO_TEXT.sub(" ", text))
    return Counter("".join(m.group().casefold().split()) for m in found)


def meaning_diff(a: str, b: str, reasons: Iterable[str] = REASONS) -> MeaningDiff | None:
    """Why texts ``a`` and ``b`` (a near pair, case kept) say different things, or ``None`` when their
    differing words change no meaning the guard knows (see the module docstring). ``reasons``: the
    reasons checked (any of :data:`REASONS`)."""
    wanted = frozenset(reasons)
    wa, wb = _words(a), _words(b)
    changes = _changes(wa, wb)
    if not changes:
        return None
    reason = _reason(changes, wa, wb, _references(a), _references(b), wanted)
    if reason is None:
        return None
    minus = sorted(w.raw for sa, _ in changes for w in sa)
    plus = sorted(w.raw for _, sb in changes for w in sb)
    return MeaningDiff(reason, tuple([f"-{w}" for w in minus] + [f"+{w}" for w in plus])[:_MAX_WORDS])


_LABEL = re.compile(
    r"^[ \t]*(?:[-*•][ \t]+)?(?:#+[ \t]+)?"
    r"(?:(?:section|article|clause|item|§)[ \t]*\d+(?:\.\d+)*[.)]?"
    r"|\d+(?:\.\d+)*[.)]|\(\d+\)|\(?[a-z]{1,2}[.)]|\(?[ivxlc]{1,6}[.)])(?=[ \t])",
    re.I | re.M,
)
_PAGE_LINE = re.compile(r"^(?:page[ \t]+)?\d{1,4}(?:[ \t]+of[ \t]+\d{1,4})?$", re.I)
_FOOTER_NUMBER = re.compile(
    r"^(?P<text>[^\d.!?;:]{1,80}?)[ \t]+\d{1,4}$|^\d{1,4}[ \t]+(?P<rest>[^\d.!?;:]{1,80})$"
)


def _without_numbering(text: str) -> str:
    text = _LABEL.sub("", _NO_TEXT.sub(" ", text))
    lines = [line.strip() for line in text.strip().splitlines()]
    if len(lines) < 2:  # a text of one line is a sentence, not a page's edge
        return "\n".join(lines)
    for end, side in ((0, "rest"), (-1, "text")):  # a header's number opens it, a footer's closes it
        line = lines[end]
        if _PAGE_LINE.match(line):
            lines[end] = ""
        elif (m := _FOOTER_NUMBER.match(line)) and m.group(side) and len(line.split()) <= 8:
            lines[end] = m.group(side)
    return "\n".join(lines)


def numbering_only(a: str, b: str) -> bool:
    """Whether texts ``a`` and ``b`` (a near pair the number/date guard kept apart) have the same
    numeric tokens once enumeration labels, page-number lines at either end and link targets are
    left out (see the module docstring)."""
    return _numbers(a) == _numbers(b)


def _numbers(text: str) -> tuple[str, ...]:
    return numeric_tokens(exact_key(_without_numbering(text)))


def judge_edges(
    edges: npt.NDArray[np.int64],
    order: npt.NDArray[np.int64],
    passed: npt.NDArray[np.bool_],
    text: Callable[[int], str],
    reasons: Sequence[str] = REASONS,
    numbering: bool = True,
) -> tuple[npt.NDArray[np.bool_], dict[tuple[int, int], tuple[str, tuple[str, ...]]]]:
    """The meaning guard over verified edges: ``(passed, why)``.

    ``edges`` is an ``(m, 2)`` array of items, ``order[i]`` item ``i``'s rank, ``passed[k]`` the
    number/date guard's verdict on edge ``k`` and ``text(i)`` item ``i``'s text (case kept). With
    ``numbering``, a failed edge whose texts differ only in numbering (:func:`numbering_only`)
    passes; then every passing edge whose texts differ in meaning for one of ``reasons`` fails, and
    ``why[(i, j)]`` (``i < j``) holds its reason and words, read earlier text first.

    Example:
        >>> texts = ["Pay in the first month.", "Pay in the third month.", "Pay in the first month!"]
        >>> edges, ok = np.array([[0, 1], [0, 2]]), np.array([True, True])
        >>> ok, why = judge_edges(edges, np.arange(3), ok, texts.__getitem__)
        >>> ok.tolist(), why
        ([False, True], {(0, 1): ('ordinal', ('-first', '+third'))})
    """
    out = np.array(passed, dtype=np.bool_, copy=True)
    why: dict[tuple[int, int], tuple[str, tuple[str, ...]]] = {}
    for k, (i, j) in enumerate(np.asarray(edges, dtype=np.int64).reshape(-1, 2).tolist()):
        first, later = (i, j) if order[i] < order[j] else (j, i)
        if not out[k]:
            if not (numbering and numbering_only(text(first), text(later))):
                continue
            out[k] = True
        if reasons:
            found = meaning_diff(text(first), text(later), reasons)
            if found is not None:
                out[k] = False
                why[(min(i, j), max(i, j))] = (found.reason, found.words)
    return out, why
