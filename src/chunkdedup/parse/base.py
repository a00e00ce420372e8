"""The parser contract and the records parsers return, shared by every format module."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Protocol, TypeVar, cast, runtime_checkable

from chunkdedup.errors import ParseError
from chunkdedup.types import MetaValue, Page
from chunkdedup.visible import SHOWN_CHARS as SHOWN_CHARS
from chunkdedup.visible import shown as shown

T = TypeVar("T")

#: How much of an untrusted value (a record's id, a date field) a note or reason echoes.
_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True, slots=True)
class Extracted:
    """One document as a parser found it, before ids and manifest metadata are applied.

    ``record_id`` is set for records of a multi-record file (JSONL); ``content_hash`` when the hash
    covers less than the whole file; ``title`` when the format carries one (a PDF's title metadata, a
    Markdown or HTML heading); ``notes`` about this document (a record's replaced characters), which
    a multi-record format reports with the record's line.
    """

    pages: tuple[Page, ...]
    metadata: Mapping[str, object] = field(default_factory=dict)
    record_id: str | None = None
    content_hash: str | None = None
    title: str | None = None
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Extraction:
    """What a parser returns: documents, plus notes about parts it could not use."""

    documents: tuple[Extracted, ...]
    notes: tuple[str, ...] = ()
    #: record ids of records the index holds as they are (see :class:`RecordParser`), not extracted
    kept: tuple[str, ...] = ()
    #: every record id in file order, when some are ``kept``
    order: tuple[str, ...] = ()


#: ``keep(content_hash, number)``: the record id of the stored record that the record with this
#: content hash at this line (row) number is, when it is one (else ``None``)
Keep = Callable[[str, int], "str | None"]


class Parser(Protocol):
    """Turns one file's bytes into documents; raises ``ParseError`` when it cannot."""

    def parse(self, data: bytes) -> Extraction:
        """Extract the documents of a file from its bytes."""
        ...


@runtime_checkable
class RecordParser(Parser, Protocol):
    """A multi-record format that can leave alone the records an index holds already."""

    def parse_known(self, data: bytes, keep: Keep) -> Extraction:
        """``parse(data)``, but a record that ``keep`` names is only listed (``kept``), not extracted."""
        ...


def scrub_surrogates(value: T) -> tuple[T, int]:
    r"""``value`` (a JSON or YAML value: strings, lists and mappings of them) with every lone surrogate
    replaced by U+FFFD, and how many were. JSON and YAML escapes (``\ud800``) can write a surrogate
    that no UTF-8 text holds; it would fail every later step that encodes the text. A pair that YAML
    leaves as two escapes is joined into its character.

    Example:
        >>> fixed = scrub_surrogates({"title": "a \ud800 b", "tags": ["\ud83d\ude00"]})
        >>> fixed == ({"title": "a \ufffd b", "tags": ["\U0001f600"]}, 1)
        True
    """
    if isinstance(value, str):
        if _SURROGATE.search(value) is None:
            return value, 0
        fixed = value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
        return cast(T, fixed), fixed.count("\ufffd") - value.count("\ufffd")
    if isinstance(value, dict):
        keys, values = list(value), list(value.values())
        (new_keys, a), (new_values, b) = scrub_surrogates(keys), scrub_surrogates(values)
        if new_keys is keys and new_values is values:
            return value, 0
        return cast(T, dict(zip(new_keys, new_values, strict=True))), a + b
    if isinstance(value, list | tuple):
        pairs = [scrub_surrogates(item) for item in value]
        if all(new is old for (new, _), old in zip(pairs, value, strict=True)):
            return value, 0
        return cast(T, type(value)(new for new, _ in pairs)), sum(n for _, n in pairs)
    return value, 0


def meta_value(value: object) -> MetaValue:
    """A metadata value as a JSON scalar: dates as ISO strings, lists and mappings as JSON text."""
    if value is None or isinstance(value, str | bool | int | float):
        return value
    if isinstance(value, date):
        return value.isoformat()
    return json.dumps(value, ensure_ascii=False, default=str)


def parse_date(value: object) -> date | None:
    """An ``effective_date`` value as a date: an ISO date or datetime string, or a date object."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    if isinstance(value, str):
        text = value.strip()
        try:
            return date.fromisoformat(text)
        except ValueError:
            pass
        try:
            return datetime.fromisoformat(text).date()
        except ValueError:
            pass
    raise ParseError(f"effective_date {shown(value)} is not a date: write it as YYYY-MM-DD")
