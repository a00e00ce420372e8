"""Table-aware ranking: a question that asks for an amount favours passages dense in numbers.

"What was 3M's FY2018 capital expenditure?" is answered by a cash-flow statement, a table of figures
whose words ("Purchases of property, plant and equipment") are not the question's; a narrative page
that repeats "capital expenditure" outscores it on text. :func:`asks_amount` tells such a question
by its words, :func:`~chunkdedup.figures.number_density` measures how much of a passage is figures
(the tantivy folder keeps it for each text); context ranking adds ``number_weight`` times the density
to each candidate's score for such questions (:mod:`chunkdedup.query.context`).
"""

from __future__ import annotations

import re
from itertools import pairwise

from chunkdedup.figures import number_density

#: words that ask for an amount (lowercased question words; a phrase is its words in order)
_AMOUNT = """
amount amounts total totals revenue revenues sales sale income expense expenses expenditure
expenditures spend spent spending cost costs capex earnings profit profits loss losses margin
margins cash price prices percentage percent proportion ratio rate rates dividend dividends
debt balance value worth figure figures paid pay payment payments eps share shares
"""
AMOUNT_WORDS: frozenset[str] = frozenset(_AMOUNT.split())
#: phrases that ask for an amount
AMOUNT_PHRASES: tuple[tuple[str, str], ...] = (("how", "much"), ("how", "many"))
_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def asks_amount(question: str) -> bool:
    """Whether a question asks for an amount: it holds an amount word or ``how much``/``how many``.

    Example:
        >>> asks_amount("How much did NVIDIA spend on R&D in Q1 2023?")
        True
        >>> asks_amount("Who is the custodian of the records?")
        False
    """
    words = [w.lower() for w in _WORD.findall(question)]
    if any(w in AMOUNT_WORDS for w in words):
        return True
    return any(pair in AMOUNT_PHRASES for pair in pairwise(words))


__all__ = ["AMOUNT_PHRASES", "AMOUNT_WORDS", "asks_amount", "number_density"]
