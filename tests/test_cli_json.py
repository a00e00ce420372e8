"""cli_support.json_text writes what json.dumps(indent=2, sort_keys=True) writes, character for character."""

from __future__ import annotations

import json
from enum import IntEnum
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from chunkdedup.cli_support import json_text

_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=8)
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4)
    | st.lists(st.text(max_size=6), max_size=4)
    | st.tuples(inner, inner)
    | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    | st.dictionaries(st.integers(), inner, max_size=3),
    max_leaves=30,
)


@given(_VALUES)
def test_json_text_is_json_dumps(value: Any) -> None:
    assert json_text(value) == json.dumps(value, indent=2, sort_keys=True)


class _Level(IntEnum):
    LOW = 1


def test_json_text_nested_fallbacks() -> None:
    value = {
        "b": [{"x": _Level.LOW}, {2: ["é\n", "\u2028"]}, [], {}],
        "a": ("t", None, 1.5),
        "c": {1: {"z": [1]}},
    }
    assert json_text(value) == json.dumps(value, indent=2, sort_keys=True)
