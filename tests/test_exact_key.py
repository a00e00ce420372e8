"""``exact_key`` is a hot path (every chunk, every group): its fast form must give the key the plain
form below gives (the regexes it had at 9e73e8e), on any text."""

from __future__ import annotations

import re
import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from chunkdedup import exact_key

_UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
_HEX_ID = re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{16,}\b")
_WS = re.compile(r"\s+")


def plain_exact_key(text: str) -> str:
    t = unicodedata.normalize("NFKC", text).casefold()
    t = _UUID.sub(" ", t)
    t = _HEX_ID.sub(" ", t)
    return _WS.sub(" ", t).strip()


_hex = st.text(alphabet="0123456789abcdefABCDEF", min_size=1, max_size=24)
_uuid = st.uuids().map(str)
_pieces = st.one_of(
    _hex,
    _uuid,
    _uuid.map(str.upper),
    st.sampled_from([" ", "  ", "\n", "\t", "\u00a0", "\u2003", "\x1c", "-", "_", ".", "g", "٣", "Ａ", "ß"]),
    st.text(max_size=6),
)


@settings(max_examples=3000, deadline=None)
@given(st.lists(_pieces, max_size=14).map("".join))
def test_the_fast_key_is_the_plain_key(text: str) -> None:
    assert exact_key(text) == plain_exact_key(text)


def test_identifier_tokens_go_and_words_stay() -> None:
    text = "Ref 123e4567-e89b-12d3-a456-426614174000 id 0123456789abcdef0 and deadbeefdeadbeefcafe\u00a0x"
    assert exact_key(text) == plain_exact_key(text) == "ref id and deadbeefdeadbeefcafe x"
