"""How much of a text is figures: the share the ranking's number boost reads
(:mod:`chunkdedup.query.numbers`) and the tantivy folder keeps beside each text
(:mod:`chunkdedup.store.textindex`), so a question reads it without reading the text."""

from __future__ import annotations

import string

_PUNCTUATION = string.punctuation.encode()
_SHAPE = bytes(
    ord("0") if chr(b).isdigit() else ord(" ") if chr(b).isspace() and b < 128 else ord("a")
    for b in range(256)
)


def number_density(text: str) -> float:
    """The share of a text's tokens (whitespace-separated, holding a letter or digit) that are
    figures, a token whose first letter or digit is a digit (``1,234``, ``(567)``, ``$12.5``,
    ``34.9%``); 0 for a text without tokens. A statement table is mostly figures, a narrative page
    mostly words.

    Example:
        >>> number_density("Net sales $ 81,797 $ 82,959 (1.4)%")
        0.6
    """
    # counted in C over a byte map (a query reads hundreds of candidates' texts): each digit becomes
    # 0, each other letter or byte of a non-ASCII character a, whitespace a space, punctuation nothing
    shape = text.encode().translate(_SHAPE, _PUNCTUATION)
    tokens = len(shape.split())
    if not tokens:
        return 0.0
    return (shape.count(b" 0") + shape.startswith(b"0")) / tokens


__all__ = ["number_density"]
