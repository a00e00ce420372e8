"""The bound on a question: the work of a query grows with the question's terms (each is a posting
list to read and score), so a question is held to ``[query] max_question_chars`` characters and
``max_question_terms`` terms before any of it is read."""

from __future__ import annotations

import re

from chunkdedup.config import QueryConfig
from chunkdedup.errors import QuestionError

#: a term: a run of letters and digits (what the text engines index as a word, or more)
_TERM = re.compile(r"\w+")


def check_question(text: str, config: QueryConfig) -> None:
    """Raise :class:`~chunkdedup.errors.QuestionError` when ``text`` has more characters or terms
    than ``config`` allows; the message gives both counts and the setting that bounds them.

    Example:
        >>> check_question("how long are logs kept", QueryConfig())
        >>> check_question("why " * 300, QueryConfig())  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        chunkdedup.errors.QuestionError: the question has 300 terms; at most 128 are asked ...
    """
    chars = len(text)
    if chars > config.max_question_chars:
        raise QuestionError(
            f"the question has {chars:,} characters; at most {config.max_question_chars:,} are asked "
            "([query] max_question_chars): ask a shorter question, or raise the bound in the config"
        )
    terms = sum(1 for _ in _TERM.finditer(text))
    if terms > config.max_question_terms:
        raise QuestionError(
            f"the question has {terms:,} terms; at most {config.max_question_terms:,} are asked "
            "([query] max_question_terms): ask a shorter question, or raise the bound in the config"
        )
