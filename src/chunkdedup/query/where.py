"""Filters on sources: ``KEY=VALUE``, ``KEY>=VALUE``, ``KEY<=VALUE``.

Equalities on the same key are OR (``department=legal`` and ``department=hr``: either); bounds are
always AND, with each other and with the rest (``effective_date>=2024-01-01`` and
``effective_date<=2024-12-31``: a range); different keys AND. Keys are ``doc`` (the document id),
``department``, ``family``, ``effective_date``, or any metadata key. A source whose document lacks
the key fails. ``>=``/``<=`` compare numbers as numbers when both sides are decimal numbers
(``-2``, ``10.5``), else as strings (ISO dates order correctly as strings; ``480e3063`` is a string).
``=`` compares a field that is a number (a JSON number, a Parquet numeric column) as a number, so
``score=2`` finds 2.0 (a pandas integer column with a missing value is floats); a string field as
written (``zip=2134`` does not find "02134").
A list value (front matter's ``topics: [Policy, Legal]``) passes when one of its members does, so
``topics=Legal`` finds it. There is no ``!=``: a filter names what passes.

Example:
    >>> f = Filter.parse(["department=legal", "department=hr", "effective_date>=2024-01-01"])
    >>> f.passes({"department": "hr", "effective_date": "2024-05-01"})
    True
    >>> Filter.parse(["score=2"]).passes({"score": 2.0}), Filter.parse(["zip=2134"]).passes({"zip": "02134"})
    (True, False)
    >>> year = Filter.parse(["effective_date>=2024-01-01", "effective_date<=2024-12-31"])
    >>> year.passes({"effective_date": "2024-05-01"}), year.passes({"effective_date": "2025-01-01"})
    (True, False)
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Literal

from chunkdedup.errors import InputError
from chunkdedup.types import MetaValue

Op = Literal["=", ">=", "<="]
_CONDITION = re.compile(r"^\s*([^\s=<>!]+)\s*(>=|<=|=)\s*(.*?)\s*$", re.DOTALL)
#: a decimal number (what ``>=``/``<=`` compare as a number): not ``float()``'s ``inf``, ``nan``,
#: ``1e3`` or ``1_000``, which are strings in metadata (a version ``480e3063`` is not infinity)
_DECIMAL = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)")
#: What the Python API accepts: equality by mapping (a list value is OR), or condition strings.
Where = Mapping[str, MetaValue | Sequence[MetaValue]] | Sequence["str | Condition"]


@dataclass(frozen=True, slots=True)
class Condition:
    key: str
    op: Op
    value: str

    @classmethod
    def parse(cls, text: str) -> Condition:
        """Parse ``KEY=VALUE``, ``KEY>=VALUE`` or ``KEY<=VALUE``."""
        m = _CONDITION.match(text)
        if m is None and "!=" in text:
            raise InputError(
                f"cannot read the filter {text!r}: there is no != (a filter names what passes: "
                "give KEY=VALUE for each value to keep)"
            )
        if m is None or not m.group(3):
            raise InputError(
                f"cannot read the filter {text!r}: write KEY=VALUE, KEY>=VALUE or KEY<=VALUE "
                "(e.g. department=legal, effective_date>=2024-01-01)"
            )
        op: Op = m.group(2)  # type: ignore[assignment]
        return cls(m.group(1), op, m.group(3))

    def holds(self, actual: MetaValue) -> bool:
        """Whether a document's value of the key passes; a list value (front matter's ``topics: [a,
        b]``, stored as JSON text) passes when one of its members does."""
        if actual is None:
            return False
        members = _members(actual)
        if members is not None:
            return any(self._holds(m) for m in members)
        return self._holds(actual)

    def _holds(self, actual: MetaValue) -> bool:
        if actual is None:
            return False
        left = _text(actual)
        if self.op == "=":
            number = isinstance(actual, int | float) and not isinstance(actual, bool)
            if number and _DECIMAL.fullmatch(self.value):
                return Decimal(left) == Decimal(self.value)  # exact: 2.0 is 2, 0.1 is 0.1
            return left == self.value
        a, b = _number(left), _number(self.value)
        if a is not None and b is not None:
            return a >= b if self.op == ">=" else a <= b
        return left >= self.value if self.op == ">=" else left <= self.value

    def __str__(self) -> str:
        return f"{self.key}{self.op}{self.value}"


@dataclass(frozen=True, slots=True)
class Filter:
    """An AND of groups, each an OR of conditions on one key: a document passes when every group has
    a condition that holds. :meth:`parse` puts a key's equalities in one group and each bound in a
    group of its own."""

    groups: tuple[tuple[str, tuple[Condition, ...]], ...] = ()

    @classmethod
    def parse(cls, where: Where | None) -> Filter:
        if where is None:
            return cls()
        conditions: list[Condition] = []
        if isinstance(where, Mapping):
            for key, value in where.items():
                values = value if isinstance(value, Sequence) and not isinstance(value, str) else [value]
                if not values:
                    raise InputError(f"filter key {key!r} has an empty list of values: give at least one")
                conditions.extend(Condition(str(key), "=", _text(v)) for v in values)
        elif isinstance(where, str):
            raise InputError(f"where={where!r} is one string: pass a list of conditions or a mapping")
        else:
            for c in where:
                if not isinstance(c, (str, Condition)):
                    raise InputError(
                        f"filter condition {c!r} is a {type(c).__name__}: give 'KEY=VALUE' strings "
                        "(or a mapping {key: value})"
                    )
            conditions = [c if isinstance(c, Condition) else Condition.parse(c) for c in where]
        equal: dict[str, list[Condition]] = {}
        groups: list[tuple[str, tuple[Condition, ...]]] = []
        for c in conditions:
            if c.op == "=":
                equal.setdefault(c.key, []).append(c)
            else:  # a bound: ANDed (two bounds on one key are a range, never an OR that passes all)
                groups.append((c.key, (c,)))
        groups.extend((k, tuple(v)) for k, v in equal.items())
        return cls(tuple(sorted(groups, key=lambda g: (g[0], [str(c) for c in g[1]]))))

    @classmethod
    def clauses(cls, clauses: Sequence[Sequence[Condition]]) -> Filter:
        """An AND of ORs, kept as given: each clause is conditions on one key, any of which may hold.

        Unlike :meth:`parse`, two clauses on the same key are ANDed (``date>=A`` and ``date<=B``).
        """
        groups: list[tuple[str, tuple[Condition, ...]]] = []
        for clause in clauses:
            keys = {c.key for c in clause}
            if len(keys) != 1:
                raise InputError(
                    f"a filter clause ORs conditions on one key, got {sorted(keys) or 'none'}: "
                    "split it into one clause per key"
                )
            groups.append((clause[0].key, tuple(clause)))
        return cls(tuple(groups))

    def __and__(self, other: Filter) -> Filter:
        """Both filters hold: a key in each is checked against each (the groups are not merged)."""
        return Filter(self.groups + other.groups)

    def __bool__(self) -> bool:
        return bool(self.groups)

    def passes(self, fields: Mapping[str, MetaValue]) -> bool:
        """Whether a document with these fields (``doc`` included) passes."""
        return all(any(c.holds(fields.get(key)) for c in conds) for key, conds in self.groups)

    def __str__(self) -> str:
        return " AND ".join("(" + " OR ".join(map(str, conds)) + ")" for _, conds in self.groups)


def _members(value: MetaValue) -> list[MetaValue] | None:
    """The members of a list metadata value (JSON text of scalars, as :func:`~chunkdedup.parse.base.
    meta_value` stores a list), else None."""
    if not (isinstance(value, str) and value.startswith("[") and value.endswith("]")):
        return None
    try:
        found = json.loads(value)
    except ValueError:
        return None
    scalar = (str, int, float, bool, type(None))
    return found if isinstance(found, list) and all(isinstance(v, scalar) for v in found) else None


def _text(value: MetaValue) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _number(text: str) -> float | None:
    text = text.strip()
    return float(text) if _DECIMAL.fullmatch(text) else None
