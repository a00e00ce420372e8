"""Framework filters mapped to ``--where`` semantics (see :mod:`chunkdedup.query.where`).

Every framework's filter becomes an AND of clauses, each clause ORing conditions on one key:

============================  =====================  ==========================================
``--where``                   LangChain ``filter``   LlamaIndex ``MetadataFilter`` / Haystack
============================  =====================  ==========================================
``KEY=V``                     ``{KEY: V}``,           ``EQ`` / ``"=="``
                              ``{KEY: {"$eq": V}}``
``KEY=V1`` ``KEY=V2`` (OR)    ``{KEY: [V1, V2]}``,    ``IN`` / ``"in"``; an ``OR`` whose
                              ``{KEY: {"$in": [..]}}`` branches all test one key
``KEY>=V``                    ``{KEY: {"$gte": V}}``  ``GTE`` / ``">="``
``KEY<=V``                    ``{KEY: {"$lte": V}}``  ``LTE`` / ``"<="``
AND across keys               several keys, ``$and``  ``AND``
============================  =====================  ==========================================

Keys are chunkdedup's: ``doc``, ``department``, ``family``, ``effective_date`` or a metadata key
(Haystack's ``meta.KEY`` is ``KEY``). A source passes or fails as with ``--where``, and a hit cites
only passing sources. Anything else (``!=``, ``<``, ``>``, ``NOT``, ``OR`` across keys) has no
``--where`` form and raises :class:`~chunkdedup.errors.InputError`, rather than being widened or
silently dropped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date, datetime, time
from typing import Any

from chunkdedup.errors import InputError
from chunkdedup.query.where import Condition, Filter

Clause = tuple[Condition, ...]
_OPS = {
    "=": "=",
    "==": "=",
    "eq": "=",
    "$eq": "=",
    ">=": ">=",
    "gte": ">=",
    "$gte": ">=",
    "<=": "<=",
    "lte": "<=",
    "$lte": "<=",
}
_IN = {"in", "$in"}


def leaf(key: str, op: str, value: Any, *, framework: str) -> Clause:
    """One condition (or, for ``in``, an OR of equalities) on ``key``."""
    name = op.lower() if isinstance(op, str) else str(op)
    if name in _IN:
        if not isinstance(value, list | tuple | set) or not value:
            raise InputError(f"{framework} filter {key} in {value!r}: give a non-empty list of values")
        return tuple(Condition(key, "=", _text(v)) for v in value)
    if name not in _OPS:
        raise InputError(
            f"{framework} filter operator {op!r} on {key!r} has no --where form: use ==, in, >= or <= "
            "(README: Use it from LangChain / LlamaIndex / Haystack)"
        )
    if isinstance(value, list | tuple | set | Mapping):
        raise InputError(f"{framework} filter {key} {op} {value!r}: compare with one value, or use 'in'")
    return (Condition(key, _OPS[name], _text(value)),)  # type: ignore[arg-type]


def any_of(clauses: Sequence[Sequence[Clause]], *, framework: str) -> list[Clause]:
    """An OR of conjunctions: allowed when every branch is one clause and all test one key."""
    flat = [c for branch in clauses for c in branch]
    if any(len(branch) != 1 for branch in clauses) or len({cond.key for c in flat for cond in c}) > 1:
        raise InputError(
            f"{framework} filter: OR across different keys (or over AND-ed branches) has no --where form; "
            "OR only values of one key, or run one query per branch"
        )
    return [tuple(cond for c in flat for cond in c)] if flat else []


def langchain_filter(flt: Mapping[str, Any] | None) -> Filter:
    """``{"department": "legal", "effective_date": {"$gte": "2024-01-01"}, "$and": [...], "$or": [...]}``."""
    return Filter.clauses(_lc(flt or {}))


def _lc(flt: Mapping[str, Any]) -> list[Clause]:
    out: list[Clause] = []
    for key, value in flt.items():
        if key == "$and":
            out.extend(c for sub in _branches(key, value) for c in _lc(sub))
        elif key == "$or":
            out.extend(any_of([_lc(sub) for sub in _branches(key, value)], framework="LangChain"))
        elif key.startswith("$"):
            raise InputError(
                f"LangChain filter {key!r} has no --where form: use $and, $or, $eq, $in, $gte, $lte"
            )
        elif isinstance(value, Mapping):
            out.extend(leaf(key, op, v, framework="LangChain") for op, v in value.items())
        elif isinstance(value, list | tuple):
            out.append(leaf(key, "$in", value, framework="LangChain"))
        else:
            out.append(leaf(key, "$eq", value, framework="LangChain"))
    return out


def _branches(key: str, value: Any) -> list[Mapping[str, Any]]:
    if not isinstance(value, list | tuple) or not all(isinstance(v, Mapping) for v in value):
        raise InputError(f"LangChain filter {key}: give a list of filter dicts, got {value!r}")
    return list(value)


def llamaindex_filter(flt: Any) -> Filter:
    """A ``MetadataFilters`` (nested allowed), read by its ``filters``/``condition`` attributes."""
    return Filter.clauses(_li(flt)) if flt is not None else Filter()


def _li(flt: Any) -> list[Clause]:
    if hasattr(flt, "filters"):  # MetadataFilters
        condition = str(getattr(getattr(flt, "condition", None), "value", "and") or "and").lower()
        parts = [_li(f) for f in flt.filters]
        if condition == "and":
            return [c for p in parts for c in p]
        if condition == "or":
            return any_of(parts, framework="LlamaIndex")
        raise InputError(f"LlamaIndex filter condition {condition!r} has no --where form: use AND or OR")
    op = getattr(flt.operator, "value", flt.operator)
    return [leaf(str(flt.key), str(op), flt.value, framework="LlamaIndex")]


def haystack_filter(flt: Mapping[str, Any] | None) -> Filter:
    """Haystack 2/3 filters: ``{"field": "meta.department", "operator": "==", "value": "legal"}`` or
    ``{"operator": "AND", "conditions": [...]}``."""
    return Filter.clauses(_hs(flt)) if flt else Filter()


def _hs(flt: Mapping[str, Any]) -> list[Clause]:
    op = str(flt.get("operator", ""))
    if "conditions" in flt:
        parts = [_hs(c) for c in flt["conditions"]]
        if op.upper() == "AND":
            return [c for p in parts for c in p]
        if op.upper() == "OR":
            return any_of(parts, framework="Haystack")
        raise InputError(f"Haystack filter operator {op!r} has no --where form: use AND or OR")
    if "field" not in flt:
        raise InputError(f"Haystack filter {dict(flt)!r}: a condition needs 'field', 'operator' and 'value'")
    field = str(flt["field"])
    key = field.removeprefix("meta.")
    if key == field and field not in ("doc",):
        raise InputError(
            f"Haystack filter field {field!r}: chunkdedup filters on document metadata, write 'meta.{field}'"
        )
    return [leaf(key, op, flt.get("value"), framework="Haystack")]


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime) and value.time() == time() and value.tzinfo is None:
        return value.date().isoformat()  # effective dates are stored as YYYY-MM-DD
    if isinstance(value, datetime | date):
        return value.isoformat()
    if value is None:
        raise InputError("a filter value is None: chunkdedup filters match present values only")
    return str(value)
