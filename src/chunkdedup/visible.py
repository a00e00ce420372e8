"""Untrusted text made safe to show a person: control characters and bidirectional overrides as escapes.

Text from documents, file names and metadata reaches terminals (the CLI), web pages (``chunkdedup
serve``) and the HTML report. HTML escaping stops markup, not a right-to-left override that shows
``cabc\u202edcba.exe.md`` as another name, nor ESC and BEL; a terminal obeys those. Every
human-facing output passes such text through :func:`safe_text` (one field: newlines escaped too) or
:func:`safe_block` (a body of text: newlines and tabs kept). ``--json`` and ``?format=json`` stay exact.
"""

from __future__ import annotations

import html
import re

# C0 and C1 controls (ESC, the CSI and OSC introducers, BEL, CR, NUL, DEL), lone surrogates (from
# file names that are not UTF-8), line and paragraph separators, and the bidirectional overrides that
# reorder what is shown. Other format characters (soft hyphens, joiners) are harmless text.
_OTHERS = "\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff"
_UNSAFE = re.compile(f"[\x00-\x1f{_OTHERS}]")
_UNSAFE_IN_BLOCK = re.compile(f"[\x00-\x08\x0b-\x1f{_OTHERS}]")  # \t (09) and \n (0a) kept


def safe_text(text: str) -> str:
    """``text`` with every control character (ESC, OSC/CSI introducers, BEL, CR, NUL, ...) and
    bidirectional override shown as an escape such as ``\\x1b``, so text from documents and file names
    cannot drive a terminal, forge output lines or reorder what is shown. Newlines and tabs are escaped
    too: callers pass one field at a time.

    Example:
        >>> safe_text("ok\\x1b]0;owned\\x07\\nfiles: 9 ingested")
        'ok\\\\x1b]0;owned\\\\x07\\\\nfiles: 9 ingested'
    """
    return _UNSAFE.sub(lambda m: _escape(m.group()), text)


def safe_block(text: str) -> str:
    """Like :func:`safe_text`, but keeps newlines and tabs: for a multi-line body (a chunk's text).

    Example:
        >>> safe_block("a\\u202etxt.exe\\n\\tb")
        'a\\\\u202etxt.exe\\n\\tb'
    """
    return _UNSAFE_IN_BLOCK.sub(lambda m: _escape(m.group()), text)


def html_text(text: str) -> str:
    """``text`` for an HTML page built by hand (the report): :func:`safe_block`, then HTML-escaped.

    Example:
        >>> html_text('<b>"x"</b>\u202e')
        '&lt;b&gt;&quot;x&quot;&lt;/b&gt;\\\\u202e'
    """
    return html.escape(safe_block(text))


def _escape(c: str) -> str:
    code = ord(c)
    if c == "\n":
        return "\\n"
    if c == "\t":
        return "\\t"
    if c == "\r":
        return "\\r"
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


__all__ = ["html_text", "safe_block", "safe_text"]


#: the most characters of an untrusted value a note or reason repeats
SHOWN_CHARS = 80


def shown(value: object, limit: int = SHOWN_CHARS) -> str:
    """``repr(value)`` for a note or reason, cut to ``limit`` characters with the whole size said: an
    untrusted value (a 200 KB object given as an id) is never echoed whole.

    Example:
        >>> shown("refunds"), shown("x" * 500, 10)
        ("'refunds'", "'xxxxxxxx… (500 characters)")
    """
    text = repr(value)
    if len(text) <= limit:
        return text
    size = len(value) if isinstance(value, str) else len(text)
    what = "characters" if isinstance(value, str) else f"characters as a {type(value).__name__}"
    return f"{text[: limit - 1]}… ({size:,} {what})"
