"""The number/date guard: versions differ in numbers or dates, copies do not."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunkdedup.dedup.guard import guard_diff, guard_fingerprints, numeric_tokens, token_diff
from chunkdedup.normalize import exact_key


def diff(a: str, b: str) -> tuple[str, ...]:
    return guard_diff(exact_key(a), exact_key(b))


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("Refunds are issued within 30 days.", "Refunds are issued within 45 days.", ("-30", "+45")),
        ("This policy is effective March 1, 2024.", "This policy is effective March 1, 2025.",
         ("-2024-03-01", "+2025-03-01")),
        ("The fee is $750.00 per seat.", "The fee is $1,000.00 per seat.", ("+$1000", "-$750")),
        ("Interest accrues at 3.5% a year.", "Interest accrues at 4% a year.", ("-3.5%", "+4%")),
        ("Notice on 17 March 2026.", "Notice on 18 March 2026.", ("-2026-03-17", "+2026-03-18")),
        ("Effective March 1, 2024.", "Effective April 1, 2024.", ("-2024-03-01", "+2024-04-01")),
        ("Updated 2024-03-17.", "Updated 2024-03-18.", ("-2024-03-17", "+2024-03-18")),
        ("See the 1st clause.", "See the 2nd clause.", ("-1st", "+2nd")),
        ("Valid in 2021.", "Valid in 2022.", ("-2021", "+2022")),
        ("Opens at 10:30 a.m.", "Opens at 11:30 a.m.", ("-10:30am", "+11:30am")),
        ("Open until 9 a.m. daily.", "Open until 9 p.m. daily.", ("-9am", "+9pm")),  # an audit's merge
        ("Open until 9 AM daily.", "Open until 9pm daily.", ("-9am", "+9pm")),
        ("Sales changed by -5% this year.", "Sales changed by 5% this year.", ("--5%", "+5%")),
        ("A margin of (−0.3) points.", "A margin of (0.3) points.", ("--0.3", "+0.3")),
        ("Use SHA256 hashes.", "Use SHA512 hashes.", ("-sha256", "+sha512")),
    ],
)  # fmt: skip
def test_a_number_or_date_change_is_caught(a: str, b: str, expected: tuple[str, ...]) -> None:
    assert diff(a, b) == expected


def test_an_added_or_removed_number_is_caught() -> None:
    assert diff("within 30 days", "within 30 or 60 days") == ("+60",)
    assert diff("pay 5, 5 and 6", "pay 5 and 6") == ("-5",)  # a multiset: a repeat counts


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Refunds are issued within 30 days.", "Refunds are granted within 30 days."),
        ("We may update this policy.", "We can change this policy at any time."),
        ("Effective March 1, 2024 for all users.", "Effective March 1, 2024 for every user."),
        ("Fees of $1,250.00 apply.", "Fees of $1250 apply."),  # the same amount, formatted twice
        ("Fees of $1.2 million apply.", "Fees of $1,200,000 apply."),
        ("Rates of 3.50% apply.", "Rates of 3.5 percent apply."),
        ("Since March 17, 2026.", "Since 17 March 2026."),
        ("Since mar. 17th, 2026.", "Since March 17, 2026."),
        ("Open 9am to 5pm.", "Open 9 a.m. to 5 p.m."),
        ("The COVID-19 rules of 2020-2021.", "The covid-19 rules of 2020-2021."),  # hyphens, no signs
    ],
)
def test_word_and_format_edits_pass(a: str, b: str) -> None:
    assert diff(a, b) == ()


def test_rewrapping_and_case_do_not_matter() -> None:
    a = "Refunds are issued WITHIN 30 days of\nMarch 1, 2024, up to $1,000."
    b = "refunds are issued within 30 days\n  of march 1, 2024,   up to $1,000."
    assert diff(a, b) == ()
    assert numeric_tokens(exact_key(a)) == ("$1000", "2024-03-01", "30")


def test_tokens_are_canonical() -> None:
    key = exact_key("On 17 March 2026, mar. 17 and March 2026 we paid $1,250.00, 3.50% and 1,000 units (v2).")
    assert numeric_tokens(key) == ("$1250", "03-17", "1000", "2026-03", "2026-03-17", "3.5%", "v2")


def test_may_after_a_number_is_a_verb_unless_a_year_follows() -> None:
    assert numeric_tokens("section 5 may apply") == ("5",)
    assert numeric_tokens("from 5 may 2024") == ("2024-05-05",)


def test_every_digit_lands_in_a_token() -> None:
    key = "x $1,2345 -5 (1,250) a1b2 ٣ apples"
    digits = sum(c.isdigit() for c in key)
    assert sum(c.isdigit() for t in numeric_tokens(key) for c in t) >= digits - 1  # "1,2345" keeps "1"


_WORDS = st.sampled_from(
    ["the", "of", "fee", "march", "june", "mar.", "may", "17", "17th", "2024", "$", "$5", "5", "1,250.00",
     "3.5%", "per", "cent", "percent", "million", "a.m.", "10:30", "2024-03-17", "3/17/24", "v2", ","]
)  # fmt: skip
_KEYS = st.lists(_WORDS, max_size=25).map(" ".join)


@given(_KEYS)
def test_a_key_passes_against_itself(a: str) -> None:
    assert guard_diff(a, a) == ()


@given(_KEYS, _KEYS)
def test_the_diff_mirrors(a: str, b: str) -> None:
    flipped = tuple(sorted((("+" if t[0] == "-" else "-") + t[1:] for t in guard_diff(a, b)), key=_by_token))
    assert guard_diff(b, a) == flipped
    assert token_diff(numeric_tokens(a), numeric_tokens(b)) == guard_diff(a, b)


def _by_token(t: str) -> tuple[str, int]:
    return (t[1:], 0 if t[0] == "-" else 1)


@settings(max_examples=1000, deadline=None)
@given(st.lists(_WORDS, min_size=1, max_size=12), st.data())
def test_equal_fingerprints_imply_the_guard_passes(words: list[str], data: st.DataObject) -> None:
    edited = list(words)
    for _ in range(data.draw(st.integers(1, 3))):
        edited[data.draw(st.integers(0, len(edited) - 1))] = data.draw(_WORDS)
    a, b = " ".join(words), " ".join(edited)
    fa, fb = guard_fingerprints([a, b])
    if fa == fb:
        assert guard_diff(a, b) == ()


def test_fingerprints_see_number_changes_but_not_far_word_edits() -> None:
    base = "we refund within 30 days of purchase and we never charge any hidden fee to anyone at all"
    far = base.replace("hidden", "secret")
    changed = base.replace("30", "45")
    f = guard_fingerprints([base, far, changed])
    assert f[0] == f[1]
    assert f[0] != f[2]


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("paid on the 17th of march for it", "paid on the 17th of june for it"),  # two words right
        ("a rate of 3.5 per cent for it", "a rate of 3.5 per unit for it"),
        ("due on march 17 for it", "due on june 17 for it"),  # one word left
        ("a fee of $ 5 for it", "a fee of # 5 for it"),
        ("open 10:30 a.m. for it", "open 10:30 p.m. for it"),
        ("open until 9 a.m. for it", "open until 9 p.m. for it"),
        ("changed by -5% for it", "changed by 5% for it"),
    ],
)
def test_fingerprints_cover_every_word_a_token_reaches(a: str, b: str) -> None:
    assert guard_diff(a, b) != ()
    fa, fb = guard_fingerprints([a, b])
    assert fa != fb
