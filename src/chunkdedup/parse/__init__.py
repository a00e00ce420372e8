"""Parsing: find input files, give them ids, and turn each into documents of pages.

Example:
    >>> from chunkdedup.config import ParseConfig
    >>> inputs = discover(["docs"], "docs/manifest.jsonl", ParseConfig())  # doctest: +SKIP
    >>> [parse_file(i, ParseConfig()).status for i in inputs]  # doctest: +SKIP
    ['ingested', 'skipped']
"""

from __future__ import annotations

from chunkdedup.parse.base import Extracted, Extraction, Parser
from chunkdedup.parse.discover import InputFile, discover
from chunkdedup.parse.registry import file_hash, input_fingerprint, parse_file, parser_for

__all__ = [
    "Extracted",
    "Extraction",
    "InputFile",
    "Parser",
    "discover",
    "file_hash",
    "input_fingerprint",
    "parse_file",
    "parser_for",
]
