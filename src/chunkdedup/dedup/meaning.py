"""The meaning guard: two near-duplicate texts whose differing words change what is said are versions,
not copies, and are never merged; and numbering alone does not make two clauses versions.

The number/date guard (:mod:`chunkdedup.dedup.guard`) reads digits. A near pair can also differ in
words that change its meaning with every digit equal: Amazon's certification "I, Andrew R. Jassy,
certify" against Apple's "I, Timothy D. Cook, certify" (Jaccard 0.878), "first quarter" against
"third quarter", "may" against "must". :func:`meaning_diff` reads only where the two texts differ
(their shared head and tail left out): a count of the space-separated words each side holds more
often settles most pairs at once (no listed word, no capital where no sentence starts, no reference,
fewer than ``CONTENT_WORDS`` new words: the same meaning; :func:`judge_edges` over many pairs first
runs the compiled twin of that count, :mod:`chunkdedup.dedup.meaning_kernel`); the rest are aligned
word by word (rapidfuzz's Levenshtein opcodes over the words as written, case kept) after dropping
what is no difference at all:

- markup and addresses: link targets ``](...)`` (with a title too), images, the brackets of a link to
  a place on the same page, URLs and ``www.`` addresses, HTML comments, e-mail addresses (and the
  "[email protected]" a web page shows scrapers), emphasis and bullet marks, heading marks; words
  are compared casefolded with their punctuation dropped, so ``U.S.``/``US``,
  ``on-premises``/``on\u00adpremises``, ``can not``/``cannot`` are equal; a compound or a path
  (``-`` or ``/`` between letters or digits) that differs is read part by part, so
  ``Attribution-NonCommercial`` against ``Attribution`` drops a part, not an abbreviation;
- an acronym against the words it stands for (``U.S.``/``United States``; "Universal Code of
  Conduct (UCoC)" against "(UCoC)"), an abbreviation against its word (``St``/``Street``,
  ``Dept``/``Department``), a misspelling of a long word (``Polices``/``Policies``; a capitalised one
  must be closer still), a legal form (``Inc.``), a status said two ways ("shall be subject to", "is
  subject to");
- words moved within the text; whole lines on one side only that state nothing: a heading (marked
  with ``#``, or every word capitalised with no listed word), and at a text's edge, where one chunk's
  cut caught it, a lead-in closed by a colon or a question with no listed word ("The Platform uses
  cookies for the following purposes:", "Was this article helpful?").

What is left is checked in this order; the first reason that holds is the pair's:

============  =====================================================================================
reason        a changed stretch ...
============  =====================================================================================
order         puts a figure where the other text has another, the texts holding the same figures
              (numbering left out) in another order: "30 days ... 60 days" / "60 days ... 30 days"
negation      holds a negation (not, no, never, without, except, unless, nor, cannot, n't ...)
modality      changes the modal class of the pair: obligation (must, shall, required), permission
              (may, can, permitted), recommendation (should), prohibition (prohibited)
ordinal       replaces an ordinal or number word by another (first/third quarter, thirty/sixty days)
reference     replaces a lettered reference by another (``4(b)``/``4(d)``, ``Section 1(f)``/``1(g)``); or
              a URL standing in the text points at another page of its site: the last part of its
              path holds a word the other's does not, either way (``terms/ABC-2``/``terms/XABC-2``; a
              language's part, another folder or a part added is the same page moved)
qualifier     holds a word that narrows or widens scope (only, exclusive, non-commercial, before,
              some, certain, substantially, reasonably ..., "or any later version"), or joins two
              items another way ("and"/"or"), or adds or drops an enumeration's item:
              a stretch on one side only, shorter than a statement, holding a joining word (and, or,
              nor) or a comma-closed item, or standing as an item beside a joining word
              ("functionalities, designs and platforms"), or a bulleted line; or replaces items of
              an enumeration by others ("alpha, beta" / "private preview, public preview")
name          holds a name: a capitalised word standing where a sentence does not start, that
              neither text writes in lower case and the other text does not hold (Jassy/Cook,
              Xeon/Optane, Expert/Professional Services); a text whose case is noise (title case,
              shouting, OCR) names nobody by its case. Wherever it stands and whatever the text's
              case, a capitalised word that ordinary English rarely uses (below ``RARE_ZIPF`` on the
              ``wordfreq`` package's scale: Taboola/Teads) is a name. No model: the pair's own words,
              their case and a fixed word-frequency list decide, so the verdict is a rule on the two
              texts alone (incremental equals fresh, Ray equals local). A URL standing in the text
              (not a link's target) that names another site is another party (tagged.com/hi5.com).
              A name the other text holds is no new name, nor is its possessive ("Rivian's" cut at a
              page break where the other text names Rivian)
content       adds or drops a statement: at least ``CONTENT_WORDS`` words on one side only, most of
              them lower case (a title-case line such as a table header or a leaked heading is not
              a statement)
doubt         where the reading is unsure: a link and its words on one side only (a pointer to
              another document dropped, or a copy's artefact: the guard cannot tell, so the pair stays
              a version)
============  =====================================================================================

:func:`numbering_only` is the other direction: a pair the number/date guard kept apart whose
numeric tokens are equal once each text's enumeration labels (``12.``, ``(c)``, ``Section 12.`` opening
a line), a page-number line opening or closing the text (``20``, ``Page 3 of 9``, ``Other Key
Information 41``) and link targets are left out differs only in numbering: the same clause.

Nothing is kept between calls; the word lists and expressions are module constants (wordfreq loads
its English list on the first rarity question of a process).

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
from itertools import compress
from typing import Literal, NamedTuple

import numpy as np
import numpy.typing as npt
from rapidfuzz.distance import Indel, Levenshtein

from chunkdedup.config import MEANING_REASONS
from chunkdedup.dedup.guard import numeric_sequence, numeric_tokens
from chunkdedup.normalize import exact_key

__all__ = [
    "CONTENT_WORDS",
    "REASONS",
    "MeaningDiff",
    "Reason",
    "judge_edges",
    "meaning_diff",
    "numbering_only",
    "shared_head",
]

def _set(words: str) -> frozenset[str]:
    return frozenset(words.split())


Reason = Literal[
    "order", "negation", "modality", "ordinal", "reference", "qualifier", "name", "content", "doubt"
]
#: every reason, in the order they are checked
REASONS: tuple[Reason, ...] = MEANING_REASONS  # type: ignore[assignment]
#: words on one side only that make a statement added or dropped
CONTENT_WORDS = 6
#: a capitalised word below this frequency in English (wordfreq's Zipf scale: 3 is once per million
#: words) names someone or something, whatever the text's case and wherever it stands
RARE_ZIPF = 3.0
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
    "minimum maximum least most more less fewer before after prior some certain "
    # degree: a hedge dropped or added widens or narrows what is promised
    "substantially materially reasonably reasonable significantly generally primarily mainly "
    "approximately necessarily"
)
_LATER = _set("later earlier newer older")
#: the ways legal drafting states a status ("shall be subject to", "is subject to")
_STATUS = frozenset(("shall be", "is", "are", "will be"))
#: the words that join the items of an enumeration: one changed is an item added or dropped
_CONJUNCTION = _set("and or nor")
#: the marks that open a list's item
_BULLETS = frozenset("*+-•")
#: capitalised words that are no name: legal forms, the pronoun, headings' words
_LEGAL = _set("inc corp corporation co company llc ltd limited plc lp llp na sa ag gmbh nv bv")
_NOT_NAMES = _LEGAL | _set(
    "i part item section article exhibit note notes schedule table contents page chapter appendix annex"
)
#: small words a title-case line writes in lower case
_SMALL = _set("a an and as at by for in of on or the to with")
#: words after which an enumeration's first item opens
_OPENS_ITEM = _set("as including include includes like")
#: words that make no item of an enumeration alone
_FUNCTION = _SMALL | _set("this that these those its our your their his her they it we you he she them us")
_ROMAN = re.compile(r"[ivxlcdm]+")
#: what is no text: HTML comments, images (their alternative text too), link targets (with a title),
#: URLs, e-mail addresses
_NO_TEXT = (  # (a mark the text must hold, what to leave out): each is looked for only where it can be
    ("<!--", re.compile(r"<!--.*?-->", re.S)),
    ("![", re.compile(r"!\[[^\]\n]*\]\([^)\s]*(?:[ \t]+\"[^\"\n]*\")?\)")),
    # a link to a place on the same page (a table of contents, "back to top"): its words, no link
    ("](#", re.compile(r"\[([^\]\n]*)\]\(#[^)\s]*(?:[ \t]+\"[^\"\n]*\")?\)")),
    ("](", re.compile(r"\]\([^)\s]*(?:[ \t]+\"[^\"\n]*\")?\)")),
    ("://", re.compile(r"(?:https?|ftp)://\S+")),
    ("www.", re.compile(r"(?<![\w@.])www\.[\w-]+\.\S+", re.I)),
    ("@", re.compile(r"(?<![\w.+-])(?:mailto:)?[\w.+-]+@(?:\\?\[)?[\w-]+(?:\.[\w-]+)+(?:\\?\])?")),
    # an address a web page hid from scrapers: "[email protected]", as a link's text or alone
    # (with what a page glued to it: "[email protected][Company.com]", an address literal's domain)
    (
        "protected",
        re.compile(
            r"\[?\\?\[email\s+protected\\?\](?:\][^)\s]*\)|\])?"
            r"(?:[ \t]*\\?\[[\w-]+(?:\.[\w-]+)+\\?\])?"
        ),
    ),
)


def _text(text: str) -> str:
    """``text`` without what is no text: HTML comments, images, link targets, URLs, e-mail addresses."""
    for mark, pattern in _NO_TEXT:
        if mark in text:
            text = pattern.sub(_anchor_text if mark == "](#" else " ", text)
    return text


def _anchor_text(m: re.Match[str]) -> str:
    return f" {m.group(1)} "
def _markup(text: str) -> bool:
    """Whether ``text`` may hold what :func:`_text` leaves out, or a part of it (an HTML comment's end)."""
    return any(mark in text for mark in _MARKS)


_MARKS = (*(mark for mark, _ in _NO_TEXT), "-->")
#: what may spread what :func:`_text` leaves out over spaces: a comment, an image, a hidden address
_SPREAD = ("<!--", "-->", "![", "protected")
#: a link with a title: ``](target "title")``
_TITLED = re.compile(r'\]\([^)\s]*[ \t]+"')
#: a URL that stands in the text (not a link's target): its host
_VISIBLE_URL = re.compile(r"(?<!\]\()(?:https?|ftp)://([\w.-]+)([^\s?#()\]]*)", re.I)
#: a path's part that names a language, with a country or a script or not (``en``, ``en-us``,
#: ``de_DE``, ``zh-hant``): the same page in a reader's language (the languages of the web's most
#: translated pages, ISO 639-1; "by" and "by-sa" of a licence's path are none)
_LANGUAGES = "ar|cs|da|de|el|en|es|fi|fr|he|hi|hu|id|it|ja|ko|ms|nb|nl|no|pl|pt|ro|ru|sv|th|tr|uk|vi|zh"
#: a web page's file type, which names no page: ``contact.html``, ``terms.aspx``
_WEB_FILE = re.compile(r"\.(?:s?html?|aspx?|php|jsp)$")
_LOCALE = re.compile(rf"(?:{_LANGUAGES})(?:[-_](?:[a-z]{{2}}|hans|hant|latn))?")
_NOT_ALNUM = re.compile(r"[\W_]+")
#: a space-separated word holding a digit
_DIGIT_WORD = re.compile(r"[^\s\d]*\d\S*")
_STOPS = re.compile(r"[.!?:;]")
#: what stands before a word where no sentence starts: a lower-case letter, a digit, a comma
_MID = frozenset("abcdefghijklmnopqrstuvwxyz0123456789,;)")
_EDGES = re.compile(r"^[\W_]+|[\W_]+$")
_SPACE = re.compile(r"(\s+)")
#: characters read on each side of where two texts differ (then out to the next space)
_MARGIN = 40
_LOOKBACK = 60
#: what may stand between a sentence's start and its first word: bullets, marks, quotes, brackets
_OPENERS = " \t*_#>`\"'“‘([{|-•–—"
#: what may close a word: punctuation and marks
_CLOSERS = ".,;:!?)]}*_`\"'”’"
#: marks that close a word and are not punctuation
_MARK_CLOSERS = ")]}*_`\"'”’\\"
_ENDS = (".", "!", "?", ":", ";")
#: the words that name a part before its letter ("section (a)", "exhibit b")
_REFERRING = _set("section paragraph clause subsection subparagraph article exhibit schedule appendix annex")
_LETTERED = re.compile(r"(?<=[\w)])\((?!s\))[a-z]{1,4}\)", re.I)
_NAMED_PART = re.compile(rf"\b(?:{'|'.join(sorted(_REFERRING))}) \(?(?:[a-z]|[ivx]{{1,4}})\)?(?![\w(])", re.I)
#: any word, and a capitalised one after a lower-case letter, a digit or a comma (where no sentence starts)
_ANY_WORD = re.compile(r"[^\W_][\w'’\-\u00ad\ufffe]*")
_MID_CAPITAL = re.compile(r"(?<=[a-z0-9,;)]) +([A-Z][\w'’\-\u00ad\ufffe]*)")
#: from so many pairs :func:`judge_edges` reads them with the compiled kernel first (numba's start-up,
#: about a second where nothing loaded it yet, is then under a tenth of the Python reading's cost)
KERNEL_PAIRS = 20_000
#: the closed lists: a changed word in one of them sends the pair to the full reading
_LISTED = _NEGATION | frozenset(_MODAL) | _ORDINAL | _QUALIFIER | _LATER | _CONJUNCTION


@dataclass(frozen=True, slots=True)
class MeaningDiff:
    """Why a near pair is a version: ``reason`` and the words that differ (``-`` only in the first
    text, ``+`` only in the second, as written, at most 20)."""

    reason: Reason
    words: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class _Word:
    raw: str  # as written, the marks and punctuation around it left out
    norm: str  # casefolded, letters and digits only
    initial: bool  # opens a sentence, a line or a list item
    line_start: bool  # nothing but marks before it on its line
    line_end: bool  # nothing but marks after it on its line
    comma: bool = False  # a comma closes it: an item of an enumeration
    bullet: bool = False  # it opens a bulleted line: an item of a list
    heading: bool = False  # it opens a line marked as a heading (``#``)
    end: str = ""  # the mark that closes it, where it ends its line (``:``, ``?``, ``.``)
    link: bool = False  # it opens a link's text (``[``)


class _Norms(dict[str, str]):
    """Each word's :func:`_norm`, worked out once per word for as long as one call of
    :func:`judge_edges` or :func:`meaning_diff` lasts (a corpus repeats its words), and whether a
    normal form is rare in ordinary English (:meth:`rare`), likewise once per form."""

    __slots__ = ("_rare",)

    def __init__(self) -> None:
        super().__init__()
        self._rare: dict[str, bool] = {}

    def __missing__(self, word: str) -> str:
        norm = self[word] = _norm(word)
        return norm

    def rare(self, norm: str) -> bool:
        """Whether ``norm`` (a word's normal form) is a word ordinary English rarely uses: below
        ``RARE_ZIPF`` on wordfreq's scale (a company, product or place: Taboola, Teads, Gemini), and
        not a number. A word's case cannot tell a name in text set in capitals or at a sentence's
        start; its frequency in English can."""
        found = self._rare.get(norm)
        if found is None:
            found = self._rare[norm] = _rare_word(norm)
        return found


def _rare_word(norm: str) -> bool:
    if len(norm) < 3 or not norm.isalpha() or not norm.isascii():
        return False
    from wordfreq import zipf_frequency  # its English list loads once, on the first rare-word question

    return bool(zipf_frequency(norm, "en") < RARE_ZIPF)


def _norm(word: str) -> str:
    """A word as the guard compares it: casefolded, letters and digits only (``U.S.`` is ``us``)."""
    folded = word.casefold()
    return folded if folded.isalnum() else _NOT_ALNUM.sub("", folded)  # \w is isalnum() and "_"


class _Span:
    """The words of ``text[start:stop]`` (markup already left out), split at spaces: their
    normalised forms at once; each word's case, position and the spaces around it only when a rule
    asks (:meth:`word`)."""

    __slots__ = ("_at", "_lead", "_parts", "chunks", "first", "last", "norms", "opens")

    def __init__(self, text: str, start: int, stop: int, opens: bool, norms: _Norms) -> None:
        parts = _SPACE.split(text[start:stop])
        words = parts[::2]
        every = list(map(norms.__getitem__, words))
        self.opens = opens
        self._parts = parts
        self._lead = "\n" if opens and start == 0 else ""
        self.last = stop >= len(text)  # the span ends its text: a line ends after its last word
        self.first = start == 0  # the span opens its text
        if all(every):  # no mark alone (the common case): word k is chunk k
            self.chunks, self.norms, self._at = words, every, None
        else:  # a mark alone (a bullet, a heading's #) is no word; the space around it still counts
            at = list(compress(range(len(every)), every))
            self.chunks, self.norms, self._at = list(compress(words, every)), list(filter(None, every)), at

    def gap(self, i: int) -> str:
        """What stands between word ``i - 1`` and word ``i`` (marks alone included)."""
        return self._sep(i)

    def _sep(self, i: int) -> str:
        """What stands before word ``i`` (marks alone included); ``i == len(chunks)``: after the last."""
        at, n = self._at, len(self.chunks)
        lo = 0 if i == 0 else 2 * (at[i - 1] if at is not None else i - 1) + 1
        hi = len(self._parts) if i == n else 2 * (at[i] if at is not None else i)
        gap = ("" if i else self._lead) + "".join(self._parts[lo:hi])
        return gap + "\n" if i == n and self.last and "\n" not in gap else gap

    def word(self, k: int) -> _Word:
        chunk = self.chunks[k]
        before = self._sep(k)
        if k == 0:
            initial = self.opens or "\n" in before
        else:
            prev = self.chunks[k - 1].rstrip(_CLOSERS.replace(".", "").replace(":", "").replace(";", ""))
            ended = prev.endswith(_ENDS) and not _abbreviation(prev)
            initial = "\n" in before or ended or _STOPS.search(before) is not None
        raw = _EDGES.sub("", chunk) or chunk
        line_start = "\n" in before or (k == 0 and self.opens)
        comma = chunk.rstrip(_CLOSERS.replace(",", "")).endswith(",")
        opening = before.rsplit("\n", 1)[-1] if line_start else ""
        bullet = line_start and opening.strip(" \t[(") in _BULLETS
        heading = line_start and opening.lstrip(" \t>").startswith("#")
        after = self._sep(k + 1)
        line_end = "\n" in after
        end = (chunk + after.split("\n", 1)[0]).rstrip(" \t" + _MARK_CLOSERS)[-1:] if line_end else ""
        link = chunk.lstrip("*_").startswith("[")
        return _Word(raw, self.norms[k], initial, line_start, line_end, comma, bullet, heading, end, link)

    def closes(self, k: int) -> str:
        """The punctuation closing word ``k`` as written (``,`` for "functionalities,"), else ""."""
        return self.chunks[k].rstrip(_MARK_CLOSERS)[-1:]

    def words(self, lo: int, hi: int) -> list[_Word]:
        return [self.word(k) for k in range(lo, hi)]


def _opens_sentence(text: str, start: int) -> bool:
    """Whether the word at ``start`` opens a sentence, read from what stands before it."""
    before = text[max(0, start - _LOOKBACK) : start]
    kept = before.rstrip(_OPENERS)
    gap = before[len(kept) :]
    if "\n" in gap or (not kept.strip() and start <= _LOOKBACK):
        return True
    last = kept.split()[-1] if kept.split() else ""
    last = last.rstrip(_CLOSERS.replace(".", "").replace(":", "").replace(";", ""))
    return last.endswith(_ENDS) and not _abbreviation(last)


def _windows(a: str, b: str) -> tuple[int, int, int]:
    """Where two texts differ, widened to whole words and a few more: ``(start, stop_a, stop_b)``;
    both texts are equal before ``start`` and after their stops. A near pair differs in a few
    places: reading only there keeps the guard's cost to the words that changed."""
    head = shared_head(a, b)
    tail = _shared_tail(a, b, min(len(a), len(b)) - head)
    start = a.rfind(" ", 0, max(0, head - _MARGIN)) + 1
    line = a.rfind("\n", 0, max(0, head - _MARGIN)) + 1
    start = max(start, line)
    end = len(a) - tail
    stop = a.find(" ", min(len(a), end + _MARGIN))
    line_end = a.find("\n", min(len(a), end + _MARGIN))
    stops = [s for s in (stop, line_end) if s >= 0]
    after = len(a) - (min(stops) if stops else len(a))
    return start, len(a) - after, len(b) - after


def shared_head(a: str, b: str) -> int:
    """The length of the longest common prefix of ``a`` and ``b`` (a binary search of slice equality:
    each step compares only the characters it adds)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _shared_tail(a: str, b: str, most: int) -> int:
    """The length of the longest common suffix of ``a`` and ``b``, at most ``most`` (as
    :func:`shared_head`, from the end)."""
    lo, hi, la, lb = 0, most, len(a), len(b)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[la - mid : la - lo] == b[lb - mid : lb - lo]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _abbreviation(raw: str) -> bool:
    """``D.``, ``U.S.``, ``Inc.``, ``e.g.``: a period that ends no sentence."""
    if not raw.endswith("."):
        return False
    body = raw[:-1].lstrip(_OPENERS)
    return len(body) <= 1 or "." in body or body.casefold() in _LEGAL or body.casefold() in {"no", "vs", "st"}


def _equivalent(a: Sequence[_Word], b: Sequence[_Word]) -> bool:
    """Whether a changed stretch says the same: equal letters once spaces go, an acronym and its words,
    an abbreviation and its word, a misspelling, legal forms only."""
    wa = [w for w in a if w.norm not in _LEGAL]
    wb = [w for w in b if w.norm not in _LEGAL]
    na, nb = [w.norm for w in wa], [w.norm for w in wb]
    if "".join(na) == "".join(nb):
        return True
    if " ".join(na) in _STATUS and " ".join(nb) in _STATUS:
        return True  # "shall be subject to" says what "is subject to" says: a status, not a duty
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
        # difflib's ratio counts at most the longest common subsequence that Indel's similarity counts:
        # below the bar there, below it here
        if len(short) < 5 or Indel.normalized_similarity(short, long_) < close:
            return False
        return SequenceMatcher(None, short, long_).ratio() >= close
    return False


class _Change(NamedTuple):
    """A stretch that differs: its words in the first text and in the second (one side may be empty),
    whether they stand as an enumeration's item (:func:`_item`), and whether they open with a link's
    words where the other side holds no link."""

    a: list[_Word]
    b: list[_Word]
    joined: bool = False
    linked: bool = False


def _changes(a: _Span, b: _Span) -> list[_Change]:
    """The aligned stretches that differ and are not :func:`_equivalent`, nor :func:`_aside` or an
    acronym's words on one side only: the words between two runs of equal words, aligned by
    rapidfuzz's Levenshtein opcodes (in C++) over the normal forms."""
    out = []
    at = None  # where the stretch being read began: (i, j)
    for op in (*Levenshtein.opcodes(a.norms, b.norms), None):
        if op is not None and op.tag != "equal":
            at = at or (op.src_start, op.dest_start)
            continue
        if at is not None:
            i2, j2 = (op.src_start, op.dest_start) if op is not None else (len(a.norms), len(b.norms))
            sa, sb = a.words(at[0], i2), b.words(at[1], j2)
            if sa and sb:
                if _compound(sa) or _compound(sb):
                    out.extend(_part_changes(sa, sb))
                elif not _equivalent(sa, sb):
                    out.append(_Change(sa, sb))
            else:
                span, lo, hi, words = (a, at[0], i2, sa) if sa else (b, at[1], j2, sb)
                after = span.norms[hi] if hi < len(span.norms) else ""
                edge = (lo == 0 and span.first) or (hi == len(span.norms) and span.last)
                if not (_aside(words, edge) or _spelled_out(words, after)):
                    other, there = (b, at[1]) if sa else (a, at[0])
                    linked = words[0].link and "[" not in other.gap(there) and any(
                        len(w.norm) > 1 and w.norm.isalpha() for w in words
                    )
                    out.append(_Change(sa, sb, _item(span, lo, hi), linked))
            at = None
    return out


#: a mark that joins the parts of a compound or a path between two letters or digits: "Attribution-
#: NonCommercial", "Widget/Pro", "terms/ABC-2"
_JOINT = re.compile(r"(?<=[^\W_])[-/](?=[^\W_])")


def _compound(words: Sequence[_Word]) -> bool:
    return any("-" in w.raw or "/" in w.raw for w in words) and any(_JOINT.search(w.raw) for w in words)


def _parts(words: Sequence[_Word], norms: Callable[[str], str]) -> list[_Word]:
    """``words`` with each compound split into its parts (the first part keeps where the word stands,
    the last what closes it)."""
    out: list[_Word] = []
    for w in words:
        pieces = [p for p in _JOINT.split(w.raw) if p]
        if len(pieces) < 2:
            out.append(w)
            continue
        for k, piece in enumerate(pieces):
            first, last = k == 0, k == len(pieces) - 1
            out.append(_Word(
                piece, norms(piece), w.initial and first, w.line_start and first, w.line_end and last,
                w.comma and last, w.bullet and first, w.heading and first, w.end if last else "",
                w.link and first,
            ))
    return out


def _part_changes(sa: list[_Word], sb: list[_Word]) -> list[_Change]:
    """The changes between two stretches that hold a compound, read part by part: "Attribution-
    NonCommercial-NoDerivs" against "Attribution" drops two parts (an abbreviation of a word is no
    compound's stem), "Widget/Pro" against "Widget/Lite" replaces one; "e-mail" against "email" is
    equal letters."""
    if "".join(w.norm for w in sa) == "".join(w.norm for w in sb):
        return []
    pa, pb = _parts(sa, _norm), _parts(sb, _norm)
    out = []
    at = None  # where the stretch being read began, as in _changes
    for op in (*Levenshtein.opcodes([w.norm for w in pa], [w.norm for w in pb]), None):
        if op is not None and op.tag != "equal":
            at = at or (op.src_start, op.dest_start)
            continue
        if at is not None:
            i2, j2 = (op.src_start, op.dest_start) if op is not None else (len(pa), len(pb))
            xa, xb = pa[at[0] : i2], pb[at[1] : j2]
            if not (xa and xb and _equivalent(xa, xb)):
                out.append(_Change(xa, xb))
            at = None
    return out


def _item(span: _Span, lo: int, hi: int) -> bool:
    """Whether words ``lo:hi`` of ``span`` stand as an enumeration's item: after a joining word (and,
    or, nor), or before one where an item opens (after a comma, "such as", "including", a colon):
    "functionalities, designs and platforms"; "direct marketing purposes and" completes a phrase."""
    before = span.norms[lo - 1] if lo else ""
    if before in _CONJUNCTION:
        return True
    if hi >= len(span.norms) or span.norms[hi] not in _CONJUNCTION:
        return False
    return not lo or before in _OPENS_ITEM or span.closes(lo - 1) in (",", ":", ";")


def _aside(words: list[_Word], edge: bool) -> bool:
    """Whether words on one side only are whole lines that state nothing: a heading marked with
    ``#`` ("### 6.2 No Effect on Processor Terms"), a line whose every word is capitalised (a title, a
    table's header) holding no listed word ("WE DO NOT SELL YOUR DATA." is a statement), and at a
    text's ``edge`` (where one chunk's cut caught it) a lead-in closed by a colon or a question
    holding no listed word ("The Platform uses cookies for the following purposes:", "Was this
    article helpful?"; "You may not:" is read, and so is "If you reside outside the EU, the following
    applies:" where it stands inside the text)."""
    if not words[0].line_start or not words[-1].line_end:
        return False
    starts = [k for k, w in enumerate(words) if w.line_start]
    for lo, hi in zip(starts, [*starts[1:], len(words)], strict=True):
        line = words[lo:hi]
        if line[0].bullet or not line[-1].line_end:
            return False
        if line[0].heading:
            continue
        if any(w.norm in _LISTED for w in line):
            return False
        if all(w.raw[:1].isupper() or w.norm in _SMALL or _numbered(w) for w in line):
            continue
        if not (edge and line[-1].end in (":", "?")):
            return False
    return True


def _spelled_out(words: list[_Word], after: str) -> bool:
    """Whether words on one side only spell out the acronym that follows them in both texts
    ("Universal Code of Conduct (UCoC)" against "(UCoC)"; not a link's words: a pointer went with them,
    and two readers told that pair apart)."""
    if len(words) < 2 or len(after) != len(words) or words[0].link:  # a link dropped with them: doubt
        return False
    return after == "".join(w.norm[:1] for w in words)


def _may_matter(a: str, b: str, norms: _Norms) -> bool:
    """Whether any rule may hold for two stretches, read from the space-separated words each holds
    more often than the other (counted in C): a listed word, a capital where no sentence starts, a
    bracket (a reference), ``CONTENT_WORDS`` new words on a side, or words only moved (equal counts,
    read in full). ``False`` means the pair says the same for every reason, without reading it word
    by word."""
    ca, cb = Counter(a.split()), Counter(b.split())
    changed = {w: norms[w] for w, _ in ca.items() ^ cb.items()}
    net: Counter[str] = Counter()
    for w, n in changed.items():
        net[n] += ca[w] - cb[w]
    moved = not any(net.values())
    if moved or not _LISTED.isdisjoint(n for n, d in net.items() if d):
        return True
    if max(sum(d for d in net.values() if d > 0), -sum(d for d in net.values() if d < 0)) >= CONTENT_WORDS:
        return True
    referred = False  # a changed word may make or unmake a lettered reference
    for w, n in changed.items():
        if not net[n]:
            continue
        if not referred and _may_refer(w, n):
            referred = True
            if _referred(_references(a), _references(b)):
                return True
        if _EDGES.sub("", w)[:1].isupper() and (
            _written_mid_sentence(w, a if ca[w] > cb[w] else b) or norms.rare(n)
        ):
            return True
        if w.rstrip(_CLOSERS.replace(",", "")).endswith(","):  # an enumeration's item may have changed
            return True
        if w.lstrip("*_").startswith("["):  # a link's words may have come or gone
            return True
        if ("-" in w or "/" in w) and not _LISTED.isdisjoint(map(_norm, _JOINT.split(w))):
            return True  # a compound holding a listed part ("version-2-or-later", "and/or")
    if any(ca[w] != cb[w] for w in _BULLETS):  # a list's item came or went
        return True
    if _joined(a, changed, net, norms) or _joined(b, changed, net, norms):
        return True
    return _reordered(_figures(a, norms), _figures(b, norms))  # the same figures in another order


def _reordered(fa: list[str], fb: list[str]) -> bool:
    return fa != fb and sorted(fa) == sorted(fb)


def _figures_of(words: list[_Word]) -> list[str]:
    return [w.norm for w in words if any(ch.isdigit() for ch in w.norm)]


def _figures(text: str, norms: _Norms) -> list[str]:
    """The normal forms of the words of ``text`` that hold a digit, in order."""
    return [norms[w] for w in _DIGIT_WORD.findall(text)]


def _joined(text: str, changed: dict[str, str], net: Counter[str], norms: _Norms) -> bool:
    """Whether a word whose count changed (no function word, no figure) may stand in ``text`` as an
    enumeration's item (:func:`_item`): after a joining word (and, or, nor), or before one where an
    item opens (after a comma, a colon, "such as", or a word that changed too)."""
    words = text.split()
    for k, w in enumerate(words):
        if not (w in changed and net[changed[w]]) or changed[w] in _FUNCTION:
            continue
        if any(ch.isdigit() for ch in w):  # a figure: the number guard's
            continue
        if k and norms[words[k - 1]] in _CONJUNCTION:
            return True
        if k + 1 >= len(words) or norms[words[k + 1]] not in _CONJUNCTION:
            continue
        before = words[k - 1] if k else ""
        if not k or norms[before] in _OPENS_ITEM or before.rstrip(_MARK_CLOSERS)[-1:] in (",", ":", ";"):
            return True
        if before in changed:  # the word before changed too: the item may start there
            return True
    return False


def _written_mid_sentence(word: str, text: str) -> bool:
    """Whether ``word`` stands in ``text`` after a lower-case letter, a digit or a comma: where no
    sentence starts (a capital there may be a name)."""
    at = text.find(word)
    while at >= 0:
        end = at + len(word)
        before = text[:at].rstrip(" \t")
        if len(before) < at and before[-1:] in _MID and (end == len(text) or text[end].isspace()):
            return True
        at = text.find(word, end)
    return False


class _Whole:
    """What the name rule reads of the whole pair: the words either text writes in lower case,
    each text's words, and whether a text's case is noise."""

    __slots__ = ("in_a", "in_b", "lower", "noise")

    def __init__(self, a: str, b: str, norms: _Norms) -> None:
        words_a, words_b = _ANY_WORD.findall(a), _ANY_WORD.findall(b)
        norms_a, norms_b = list(map(norms.__getitem__, words_a)), list(map(norms.__getitem__, words_b))
        self.in_a, self.in_b = set(norms_a), set(norms_b)
        self.lower = {
            n for words, norms in ((words_a, norms_a), (words_b, norms_b))
            for w, n in zip(words, norms, strict=True) if w[:1].islower()
        }
        self.noise = _case_noise(a, len(words_a), self.lower, norms) or _case_noise(
            b, len(words_b), self.lower, norms
        )


def _case_noise(text: str, words: int, lower: set[str], norms: _Norms) -> bool:
    """Whether a text's case says nothing of names: more than ``_CASE_NOISE`` of its words are
    capitalised where no sentence starts although the pair writes them in lower case (title-case
    headings, shouting, OCR or re-cased copies)."""
    noisy = sum(1 for w in _MID_CAPITAL.findall(text) if norms[w] in lower)
    return noisy > _CASE_NOISE * words


def _may_name(w: _Word) -> bool:
    """Whether a changed word may be a name (then the whole texts are read to judge its case)."""
    return w.raw[:1].isupper() and not w.initial and w.norm not in _NOT_NAMES


def _is_name(w: _Word, lower: set[str]) -> bool:
    if not _may_name(w) or w.norm in lower:
        return False
    if w.raw.isupper() and (_ROMAN.fullmatch(w.norm) or len(w.norm) > _ACRONYM):
        return False  # a roman numeral, or a shouted word (a heading, a placeholder), not an acronym
    return not any(ch.isdigit() for ch in w.norm)


def _not_heading(mine: list[_Word], other: list[_Word]) -> list[_Word]:
    """``mine``, unless it is a heading line on one side only: whole lines whose every word is
    capitalised, or a section's number or label ("6", "D7"), a heading or a table header that one
    chunk's edge caught."""
    if other or not mine or mine[0].bullet:  # a bulleted line is a list's item
        return mine
    if not all(w.raw[:1].isupper() or w.norm in _SMALL or _numbered(w) for w in mine):
        return mine
    return [] if mine[0].line_start and mine[-1].line_end else mine


def _numbered(w: _Word) -> bool:
    """A section's number or label: digits, after at most one letter ("12", "A17")."""
    body = w.norm[1:] if w.norm[:1].isalpha() else w.norm
    return body.isdigit() and len(body) <= 3


def _reason(
    changes: list[_Change],
    whole: Callable[[], _Whole],
    refs: Callable[[], tuple[Counter[str], Counter[str]]],
    reasons: frozenset[str],
    rare: Callable[[str], bool],
) -> Reason | None:
    left = [w for sa, *_ in changes for w in sa]
    right = [w for _, sb, *_ in changes for w in sb]
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
        for sa, sb, *_ in changes:
            oa = Counter(w.norm for w in sa if w.norm in _ORDINAL)
            ob = Counter(w.norm for w in sb if w.norm in _ORDINAL)
            if oa and ob and oa != ob:
                return "ordinal"
    may_refer = any(_may_refer(w.raw, w.norm) for w in (*left, *right))
    if "reference" in reasons and may_refer and _referred(*refs()):
        return "reference"
    if "qualifier" in reasons and (
        norms & _QUALIFIER or _version_scope(changes) or _enumeration(changes) or _joined_otherwise(changes)
    ):
        return "qualifier"
    if "name" in reasons and any(_may_name(w) or _capital(w) for w in (*left, *right)):
        pair = whole()

        def named(w: _Word) -> bool:  # a name by its case (where case can tell), or by its rarity
            return (not pair.noise and _is_name(w, pair.lower)) or (_capital(w) and rare(w.norm))

        for sa, sb, *_ in changes:
            if any(named(w) and not _held(w, pair.in_b) for w in _not_heading(sa, sb)):
                return "name"
            if any(named(w) and not _held(w, pair.in_a) for w in _not_heading(sb, sa)):
                return "name"
    if "content" in reasons:
        for sa, sb, *_ in changes:
            extra, only = (sa, only_a) if len(sa) > len(sb) else (sb, only_b)
            new = [w for w in extra if only[w.norm] > 0]
            lowercase = sum(1 for w in new if not w.raw[:1].isupper())
            longer = abs(len(sa) - len(sb)) >= CONTENT_WORDS
            if longer and len(new) >= CONTENT_WORDS and 2 * lowercase > len(new):
                return "content"
    if "doubt" in reasons and any(change.linked for change in changes):
        return "doubt"  # a link and its words on one side only: a pointer dropped, or a copy's artefact
    return None


def _held(w: _Word, words: set[str]) -> bool:
    """Whether the other text holds the name ``w``, itself or its possessive's stem ("Rivian's" where
    the other text names Rivian: a chunk's edge or a page break cut the word, not the party)."""
    if w.norm in words:
        return True
    return w.raw[-2:] in ("'s", "’s") and _norm(w.raw[:-2]) in words


def _capital(w: _Word) -> bool:
    """A word written with a capital (where case may show a name, or a sentence's start hides it)."""
    return w.raw[:1].isupper() and w.norm not in _NOT_NAMES


def _enumeration(changes: list[_Change]) -> bool:
    """An item added to or dropped from an enumeration: a stretch on one side only, of fewer words than
    a statement, that holds a joining word (and, or, nor) or an item closed by a comma ("searches" /
    "searches, chats, or browsing history"; "claim or dispute" / "claim, request for relief, or
    dispute"), or stands beside a joining word ("websites, functionalities, designs and platforms"),
    or a bulleted line. A heading line one chunk's edge caught is none."""
    for sa, sb, joined, _ in changes:
        if sa and sb:
            short = max(len(sa), len(sb)) < CONTENT_WORDS and not (sa[0].heading or sb[0].heading)
            if short and any(w.comma for w in sa[:-1]) and any(w.comma for w in sb[:-1]):
                return True  # items of an enumeration replaced by others ("alpha, beta" / "x, y, z")
            continue
        added = _not_heading(sa or sb, [])
        joins = joined and any(w.norm not in _FUNCTION for w in added)  # "and the X": no item
        listed = joins or any(w.comma or w.norm in _CONJUNCTION for w in added)
        if 0 < len(added) < CONTENT_WORDS and listed:
            return True
        if added and added[0].bullet and added[-1].line_end:  # a list's whole item
            return True
    return False


def _joined_otherwise(changes: list[_Change]) -> bool:
    """Two items joined another way: "records and invoices" against "records or invoices" (both, or
    either one)."""
    for sa, sb, *_ in changes:
        na, nb = [w.norm for w in sa], [w.norm for w in sb]
        if len(na) == len(nb) == 1 and na != nb and na[0] in _CONJUNCTION and nb[0] in _CONJUNCTION:
            return True
    return False


def _version_scope(changes: list[_Change]) -> bool:
    """A changed stretch widens or narrows a version: "or (at your option) any later version"."""
    for sa, sb, *_ in changes:
        for side in (sa, sb):
            words = {w.norm for w in side}
            if words & _LATER and words & {"or", "version", "versions"}:
                return True
    return False


def _references(text: str) -> Counter[str]:
    """The lettered references ``text`` holds, casefolded without spaces (``4(b)``, ``sectiona``)."""
    found: Counter[str] = Counter()
    if "(" in text:
        found.update(m.group().casefold() for m in _LETTERED.finditer(text))
    folded = text.casefold()
    if any(word in folded for word in _REFERRING):
        found.update("".join(m.group().casefold().split()) for m in _NAMED_PART.finditer(text))
    return found


def _may_refer(raw: str, n: str) -> bool:
    """Whether a changed word (as written, and its normal form ``n``) may make or unmake a lettered
    reference: a bracket, one letter, a short roman numeral, a part's name (only then are the
    stretches' references counted)."""
    return "(" in raw or len(n) == 1 or n in _REFERRING or (0 < len(n) <= 4 and not n.strip("ivx"))


def _referred(a: Counter[str], b: Counter[str]) -> bool:
    """Whether each side holds a reference the other does not (``4(b)`` against ``4(d)``)."""
    return a != b and bool(a - b) and bool(b - a)


def meaning_diff(a: str, b: str, reasons: Iterable[str] = REASONS) -> MeaningDiff | None:
    """Why texts ``a`` and ``b`` (a near pair, case kept) say different things, or ``None`` when their
    differing words change no meaning the guard knows (see the module docstring). ``reasons``: the
    reasons checked (any of :data:`REASONS`).

    Only the stretch where the texts differ is read, widened to whole lines; the whole texts are read
    only when a changed word may be a name (its case is judged against every word of the pair)."""
    return _diff(a, b, frozenset(reasons), _Norms())


def _counts_matter(a: str, b: str, norms: _Norms) -> bool:
    """:func:`_may_matter` over where ``a`` and ``b`` differ, markup left out."""
    start, stop_a, stop_b = _windows(a, b)
    win_a, win_b = a[start:stop_a], b[start:stop_b]
    if ("://" in win_a or "://" in win_b) and _referred(_pages(win_a), _pages(win_b)):
        return True  # a URL standing in the text names another site or page
    if any(mark in win_a or mark in win_b for mark in _SPREAD) or _titled(a) or _titled(b):
        # a comment, a link's title or an image may cross where they differ
        a, b = _text(a), _text(b)
        start, stop_a, stop_b = _windows(a, b)
        win_a, win_b = a[start:stop_a], b[start:stop_b]
    else:  # a link target, URL or address holds no space: each lies wholly in a window or outside both
        win_a, win_b = _text(win_a), _text(win_b)
    return _may_matter(win_a, win_b, norms)


def _titled(text: str) -> bool:
    """Whether ``text`` holds a link with a title (its words spread over spaces)."""
    return "](" in text and _TITLED.search(text) is not None


def _sites(text: str) -> Counter[str]:
    """The sites the URLs standing in ``text`` name (a link's target, right after ``](``, is none):
    each host's last two labels
    (three under a country's second level: ``example.co.uk``), ``www.`` and case aside."""
    return Counter(_site(host) for host, _ in _VISIBLE_URL.findall(text))


def _site(host: str) -> str:
    labels = host.casefold().strip(".").split(".")
    keep = 3 if len(labels) >= 3 and len(labels[-1]) == 2 and len(labels[-2]) <= 3 else 2
    return ".".join(labels[-keep:])


def _pages(text: str) -> Counter[str]:
    """The pages the URLs standing in ``text`` name: site (as :func:`_sites` reads it) and path
    (``example.com/terms/abc-2``), casefolded, without the query, the fragment, a language's part
    (``/en-us/``) or a closing slash or mark."""
    found: Counter[str] = Counter()
    for host, path in _VISIBLE_URL.findall(text):
        parts = path.casefold().rstrip("/.,;:!'\"*_").split("/")
        kept = [part for part in parts if part and not _LOCALE.fullmatch(part)]
        found["/".join([_site(host), *kept])] += 1
    return found


def _page_names(text: str) -> Counter[str]:
    """The words that name the pages the URLs standing in ``text`` point at: the parts of each path's
    last part (``example.com/abc`` and ``example.com/2`` for ``.../terms/ABC-2``), as :func:`_pages`
    reads the path. A page one side names by a word the other does not name is another page ("ABC-2"
    / "XABC-2"); a path that only gains a part or moves its folders is the same page moved
    ("annex-i-introduction" / "s/article/annex-i-introduction-dpf")."""
    found: Counter[str] = Counter()
    for page in _pages(text):
        host, _, path = page.partition("/")
        if path:
            last = _WEB_FILE.sub("", path.rsplit("/", 1)[-1])
            found.update(f"{host}/{part}" for part in _NOT_ALNUM.split(last) if part)
    return found


def _moved_figures(a: str, b: str, changes: list[_Change]) -> tuple[str, ...]:
    """The figures of ``a`` and ``b`` where the two hold the same figures in another order ("30 days
    ... 60 days" against "60 days ... 30 days"), numbering left out, and a figure stands where the
    other text has another (a paragraph moved whole changes no figure's place in its sentence): ``-``
    as ``a`` orders them, ``+`` as ``b`` does, from the first place they differ; else nothing."""
    if not any(
        sa and sb and _figures_of(sa) and _figures_of(sb) and _figures_of(sa) != _figures_of(sb)
        for sa, sb, *_ in changes
    ):
        return ()
    start, stop_a, stop_b = _windows(a, b)
    win_a, win_b = a[start:stop_a], b[start:stop_b]
    if not any(ch.isdigit() for ch in win_a):
        return ()
    norms = _Norms()
    fa, fb = _figures(win_a, norms), _figures(win_b, norms)
    if not _reordered(fa, fb):
        return ()
    ta = numeric_sequence(exact_key(_without_numbering(a)))
    tb = numeric_sequence(exact_key(_without_numbering(b)))
    if ta == tb or sorted(ta) != sorted(tb):
        return ()
    first = next(k for k, (x, y) in enumerate(zip(ta, tb, strict=True)) if x != y)
    moved_a, moved_b = ta[first : first + _MAX_WORDS // 2], tb[first : first + _MAX_WORDS // 2]
    return tuple([f"-{t}" for t in moved_a] + [f"+{t}" for t in moved_b])


def _other_site(a: str, b: str, wanted: frozenset[str]) -> MeaningDiff | None:
    """Where a URL standing where ``a`` and ``b`` differ names a site on one side and not the other,
    each side naming one the other does not: ``name`` with the sites (``-tagged.com``, ``+hi5.com``);
    else where it names another page (:func:`_page_names`): ``reference`` with the words that name it
    (``-example.com/abc``, ``+example.com/xabc``: a path's last part is a compound whose every part
    counts); else nothing. Only the reasons ``wanted`` are read."""
    if "://" not in a and "://" not in b:
        return None
    start, stop_a, stop_b = _windows(a, b)
    readings: tuple[tuple[Reason, Callable[[str], Counter[str]]], ...] = (
        ("name", _sites), ("reference", _page_names),
    )
    for reason, read in readings:
        if reason not in wanted:
            continue
        sa, sb = read(a[start:stop_a]), read(b[start:stop_b])
        if _referred(sa, sb):
            words = [f"-{s}" for s in sorted(sa - sb)] + [f"+{s}" for s in sorted(sb - sa)]
            return MeaningDiff(reason, tuple(words[:_MAX_WORDS]))
    return None


def _diff(
    a: str, b: str, wanted: frozenset[str], norms: _Norms, *, counted: bool = False
) -> MeaningDiff | None:
    """:func:`meaning_diff` with the reasons as a set and the words' normal forms worked out so far;
    ``counted``: the word count is known to send the pair to the word-by-word reading."""
    if not wanted:
        return None
    if not counted and not _counts_matter(a, b, norms):
        return None
    site = _other_site(a, b, wanted)
    raw_a, raw_b = a, b
    a, b = _text(a), _text(b)
    start, stop_a, stop_b = _windows(a, b)
    opens = start == 0 or _opens_sentence(a, start)
    wa, wb = _Span(a, start, stop_a, opens, norms), _Span(b, start, stop_b, opens, norms)
    changes = _changes(wa, wb)
    if not changes:
        return site
    if "order" in wanted and (moved := _moved_figures(raw_a, raw_b, changes)):
        return MeaningDiff("order", moved)
    reason = _reason(
        changes,
        lambda: _Whole(a, b, norms),
        lambda: (_references(a[start:stop_a]), _references(b[start:stop_b])),
        wanted,
        norms.rare,
    )
    if reason is None:
        return site
    minus = sorted(w.raw for sa, *_ in changes for w in sa)
    plus = sorted(w.raw for _, sb, *_ in changes for w in sb)
    return MeaningDiff(reason, tuple([f"-{w}" for w in minus] + [f"+{w}" for w in plus])[:_MAX_WORDS])


# An enumeration label opens a line: at most three digits a level (a year opening a wrapped line,
# "2023.", is no label), a letter or a roman numeral in brackets or before a point, after a bullet, a
# heading's marks or an emphasis mark; "Section 12.", "Article 9:" and "Item 2." too; a letter before
# the digits ("A17.", "D7."); a point or bracket escaped as HTML-to-Markdown converters write it
# ("10\. Changes"); a label of two levels or more without its point when a capital follows ("14.2
# Uninstallation": "3.5 percent" opening a line is a figure).
_LABEL = re.compile(
    r"^[ \t]*(?:[-*•][ \t]+)?(?:#+[ \t]+)?(?:[*_]{1,2})?"
    r"(?:(?:section|article|clause|item|§)[ \t]*\d{1,3}(?:\.\d{1,3})*\\?[.):]?"
    r"|\d{1,3}(?:\.\d{1,3})+(?=[ \t]+[*_]*(?-i:[A-Z]))"
    r"|[a-z]?\d{1,3}(?:\.\d{1,3})*\\?[.)]|\(\d{1,3}\)|\(?[a-z]{1,2}\\?[.)]|\(?[ivxlc]{1,6}\\?[.)])"
    r"(?=[ \t]|$)",
    re.I | re.M,
)
# A page number standing alone on a text's first or last line ("20", "Page 3 of 9"; a four-digit
# number alone is a year), or beside a running title in title case ("Other Key Information 41").
_PAGE_LINE = re.compile(r"^(?:page[ \t]+)?\d{1,3}(?:[ \t]+of[ \t]+\d{1,3})?$", re.I)
_TITLE = r"(?:[A-Z][\w'’&-]*|and|of|the|for|to|in|on|a|an|&|[-–—|•·])"
_FOOTER_NUMBER = re.compile(
    rf"^(?P<text>{_TITLE}(?:[ \t]+{_TITLE}){{0,7}})[ \t]+\d{{1,3}}$"
    rf"|^\d{{1,3}}[ \t]+(?P<rest>{_TITLE}(?:[ \t]+{_TITLE}){{0,7}})$"
)


def _without_numbering(text: str) -> str:
    text = _LABEL.sub("", _text(text))
    lines = [line.strip() for line in text.strip().splitlines()]
    if len(lines) < 2:  # a text of one line is a sentence, not a page's edge
        return "\n".join(lines)
    for end, side in ((0, "rest"), (-1, "text")):  # a header's number opens it, a footer's closes it
        line = lines[end]
        if _PAGE_LINE.match(line):
            lines[end] = ""
        elif (m := _FOOTER_NUMBER.match(line)) and m.group(side):
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
    override: Callable[[int, int], bool | None] | None = None,
    *,
    compiled: bool | None = None,
) -> tuple[npt.NDArray[np.bool_], dict[tuple[int, int], tuple[str, tuple[str, ...]]]]:
    """The meaning guard over verified edges: ``(passed, why)``.

    ``edges`` is an ``(m, 2)`` array of items, ``order[i]`` item ``i``'s rank, ``passed[k]`` the
    number/date guard's verdict on edge ``k`` and ``text(i)`` item ``i``'s text (case kept). With
    ``numbering``, a failed edge whose texts differ only in numbering (:func:`numbering_only`)
    passes; then every passing edge whose texts differ in meaning for one of ``reasons`` fails, and
    ``why[(i, j)]`` (``i < j``) holds its reason and words, read earlier text first. ``override(i,
    j)``: ``True`` passes the edge whatever the guards say, ``False`` fails it (reason ``override``),
    ``None`` leaves it to them (``near.always_merge`` and ``near.keep_apart``). ``compiled``: whether
    the pairs are first read by the compiled kernel of :mod:`chunkdedup.dedup.meaning_kernel`, which
    settles most pairs that change no meaning without a Python call each (``None``: from
    ``KERNEL_PAIRS`` pairs; ``True`` where numba is loaded already): the same verdicts either way.

    Example:
        >>> texts = ["Pay in the first month.", "Pay in the third month.", "Pay in the first month!"]
        >>> edges, ok = np.array([[0, 1], [0, 2]]), np.array([True, True])
        >>> ok, why = judge_edges(edges, np.arange(3), ok, texts.__getitem__)
        >>> ok.tolist(), why
        ([False, True], {(0, 1): ('ordinal', ('-first', '+third'))})
    """
    out = np.array(passed, dtype=np.bool_, copy=True)
    why: dict[tuple[int, int], tuple[str, tuple[str, ...]]] = {}
    wanted, norms = frozenset(reasons), _Norms()
    read: list[tuple[int, int, int]] = []  # (edge, earlier item, later item) the meaning guard reads
    for k, (i, j) in enumerate(np.asarray(edges, dtype=np.int64).reshape(-1, 2).tolist()):
        first, later = (i, j) if order[i] < order[j] else (j, i)
        decided = override(i, j) if override is not None else None
        if decided is not None:
            out[k] = decided
            if not decided:
                why[(min(i, j), max(i, j))] = ("override", ())
            continue
        if not out[k]:
            if not (numbering and numbering_only(text(first), text(later))):
                continue
            out[k] = True
        if wanted:
            read.append((k, first, later))
    known = [0] * len(read)  # meaning_kernel.UNKNOWN
    if compiled or (compiled is None and len(read) >= KERNEL_PAIRS):
        known = _settled(read, text).tolist()
    for (k, first, later), kernel_says in zip(read, known, strict=True):
        if kernel_says == 1:  # meaning_kernel.SETTLED
            continue
        found = _diff(text(first), text(later), wanted, norms, counted=kernel_says == 2)  # READ
        if found is not None:
            out[k] = False
            why[(min(first, later), max(first, later))] = (found.reason, found.words)
    return out, why


def _settled(read: list[tuple[int, int, int]], text: Callable[[int], str]) -> npt.NDArray[np.int8]:
    """What the compiled kernel knows of each pair of ``read`` (:func:`meaning_kernel.settled`)."""
    from chunkdedup.dedup.meaning_kernel import norm_hashes, settled

    items = sorted({i for _, first, later in read for i in (first, later)})
    at = {item: n for n, item in enumerate(items)}
    pairs = np.asarray([(at[first], at[later]) for _, first, later in read], dtype=np.int64)
    encoded = [text(i).encode("utf-8", "surrogatepass") for i in items]
    return settled(
        encoded, pairs, norm_hashes(_LISTED), norm_hashes(_REFERRING), CONTENT_WORDS,
        norm_hashes(_CONJUNCTION), norm_hashes(_FUNCTION), norm_hashes(_OPENS_ITEM),
    )
