"""The records the text stages share with their compiled kernels: a page's non-blank lines and blocks
(boilerplate), and the abbreviations a sentence does not end at (chunking). One module below both
stages and both kernels, so neither kernel reaches into its stage's private names."""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["ABBREVIATIONS", "Block", "Line"]

#: Abbreviations a sentence does not end at: lowercased, without the final period.
ABBREVIATIONS = frozenset(
    [
        "e.g",
        "i.e",
        "etc",
        "vs",
        "cf",
        "al",
        "approx",
        "dept",
        "est",
        "fig",
        "inc",
        "ltd",
        "co",
        "corp",
        "llc",
        "plc",
        "jr",
        "sr",
        "dr",
        "mr",
        "mrs",
        "ms",
        "prof",
        "st",
        "no",
        "nos",
        "vol",
        "pp",
        "p",
        "sec",
        "art",
        "ch",
        "para",
        "u.s",
        "u.k",
        "u.n",
        "e.u",
        "a.m",
        "p.m",
        "jan",
        "feb",
        "mar",
        "apr",
        "jun",
        "jul",
        "aug",
        "sep",
        "sept",
        "oct",
        "nov",
        "dec",
        "mt",
        "ft",
        "oz",
        "lb",
        "lbs",
        "ph.d",
        "m.d",
        "b.a",
        "u.s.c",
    ]
)


class Line(NamedTuple):
    """A non-blank line of a page (a named tuple: one is built per line, and a frozen dataclass's
    ``__init__`` costs several times more)."""

    at: int  # its index in the page's lines
    text: str
    key: str
    edge: bool


class Block(NamedTuple):
    """Consecutive non-blank lines, with the block's key and whether the corpus counts it."""

    lines: tuple[Line, ...]
    key: str
    counted: bool
