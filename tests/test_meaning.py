"""The meaning guard and the numbering rule: what they keep apart, what they let merge, and the
figures on the labelled real pairs of the reference corpora."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from chunkdedup import Config, Index, ingest
from chunkdedup.config import MEANING_REASONS, NearConfig
from chunkdedup.dedup.meaning import judge_edges, meaning_diff, numbering_only
from chunkdedup.errors import ConfigError

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
CERT = "I, {name}, certify that: I have reviewed this Quarterly Report on Form 10-Q of {company}."
CLAUSE = (
    "The customer {verb} terminate this agreement by written notice to the supplier at any time during "
    "the {which} quarter of the term, and the supplier refunds the fees paid for the rest of the term."
)
#: a second sentence that makes a clause long enough for a one-word edit to stay a near copy
TAIL = (
    " Notices are sent by registered mail to the address on the order form, and each party keeps a copy "
    "of every notice it sends or receives for the whole time the agreement is in force."
)


def _reason(a: str, b: str) -> str | None:
    found = meaning_diff(a, b)
    return None if found is None else found.reason


@pytest.mark.parametrize(
    ("a", "b", "reason"),
    [
        # names: another officer, another company, another product
        (CERT.format(name="Timothy D. Cook", company="Apple Inc."),
         CERT.format(name="Andrew R. Jassy", company="Amazon.com, Inc."), "name"),
        ("Our products include Intel Xeon processors for the data center.",
         "Our products include Intel Optane processors for the data center.", "name"),
        ("Signed by the officer named Kress in this report.",
         "Signed by the officer named Krebs in this report.", "name"),
        # negation, modality, ordinal, reference, qualifier, content
        (CLAUSE.format(verb="may", which="first"), CLAUSE.format(verb="may not", which="first"), "negation"),
        (CLAUSE.format(verb="may", which="first"), CLAUSE.format(verb="must", which="first"), "modality"),
        (CLAUSE.format(verb="may", which="first"), CLAUSE.format(verb="may", which="third"), "ordinal"),
        ("The exceptions of Section 4(b) apply to every order placed by the customer.",
         "The exceptions of Section 4(d) apply to every order placed by the customer.", "reference"),
        ("Licensed under version 2 of the License.",
         "Licensed under version 2 of the License, or any later version.", "qualifier"),
        ("Members may use the data for research.",
         "Members may use the data for research only.", "qualifier"),
        ("Refund requests go to the billing team. Staff answer every request quickly.",
         "Refund requests go to the billing team. Requests made outside the contract period are refused "
         "outright by the team. Staff answer every request quickly.", "content"),
        # a party whose case cannot show a name: at a sentence's start, in text set in capitals
        ("Zorbly does not control the content of third-party sites.",
         "Quixotiq does not control the content of third-party sites.", "name"),
        ("THE SERVICE IS PROVIDED BY ZORBLY AND ITS AFFILIATES AS IS.",
         "THE SERVICE IS PROVIDED BY QUIXOTIQ AND ITS AFFILIATES AS IS.", "name"),
        # the scope of an enumeration or a quantifier
        ("We keep your searches for a year.",
         "We keep your searches, chats, or browsing history for a year.", "qualifier"),
        ("The waiver covers any claim or dispute with us.",
         "The waiver covers any claim, request for relief, or dispute with us.", "qualifier"),
        ("Notices for these services:\n\n* Payments\n* Maps\n* Fiber\n",
         "Notices for these services:\n\n* Payments\n* Fiber\n", "qualifier"),
        ("You control whether some information is shared.",
         "You control whether information is shared.", "qualifier"),
        # an item beside a joining word: added without a comma, or the first item dropped
        ("The websites, functionalities, and platforms created by Users.",
         "The websites, functionalities, designs and platforms created by Users.", "qualifier"),
        ("Other groups, such as [local chapters](https://example.org/chapters) and associations, may ask.",
         "Other groups, such as and associations, may ask.", "qualifier"),
        ("If you violate the Terms, or induce or facilitate others to do so, we may act.",
         "If you violate the Terms, or induce or knowingly facilitate others to do so, we may act.",
         "qualifier"),
        # a URL standing in the text that names another site
        ("To cancel, visit [http://www.tagged.com/account](http://www.tagged.com/account) and click.",
         "To cancel, visit [http://www.hi5.com/account](http://www.hi5.com/account) and click.", "name"),
        # the same figures in another order
        ("Notice takes 30 days and refunds take 60 days.", "Notice takes 60 days and refunds take 30 days.",
         "order"),
        # a compound or a path read part by part: a qualifier fused in, an edition, another page
        ("The work is licensed under the Creative Commons Attribution-NonCommercial-NoDerivs licence.",
         "The work is licensed under the Creative Commons Attribution licence.", "qualifier"),
        ("This feature is available in Widget/Pro for all users who sign in.",
         "This feature is available in Widget/Lite for all users who sign in.", "name"),
        ("Read the terms at https://example.com/terms/ABC-2 before you use the service.",
         "Read the terms at https://example.com/terms/XABC-2 before you use the service.", "reference"),
        # a hedge dropped; two items joined another way
        ("The software performs substantially in accordance with the documentation.",
         "The software performs in accordance with the documentation.", "qualifier"),
        ("You must keep records and invoices for as long as we ask.",
         "You must keep records or invoices for as long as we ask.", "qualifier"),
        # a link and its words on one side only: a pointer dropped, or a copy's artefact
        ("The list of providers can be found [on this page](https://example.org/providers). Read it.",
         "The list of providers can be found . Read it.", "doubt"),
        ("Follow the [Universal Code of Conduct](https://example.org/ucoc \"Policy:UCoC\") (UCoC) here.",
         "Follow the (UCoC) here.", "name"),  # a link went with the words: not the acronym's own
        # a lead-in or a statement in capitals is read, where a chunk's edge cannot explain it
        ("Disclaimer of warranties.\nIf you live outside the country, the following applies:\nWe give none.",
         "Disclaimer of warranties.\nWe give none.", "content"),
        ("WE DO NOT SELL YOUR PERSONAL INFORMATION.\nThe policy covers every site we run.",
         "The policy covers every site we run.", "negation"),
    ],
)
def test_a_change_of_meaning_is_a_version(a: str, b: str, reason: str) -> None:
    assert _reason(a, b) == reason
    assert _reason(b, a) == reason  # either order


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("The U.S. office follows the rule.", "The United States office follows the rule."),  # acronym
        ("Send it to 5 Main St and wait.", "Send it to 5 Main Street and wait."),  # abbreviation
        ("Apple Inc. reports quarterly.", "Apple reports quarterly."),  # legal form
        ("See the Acceptable Use Policies here.", "See the Acceptable Use Polices here."),  # misspelling
        ("You cannot share it.", "You can not share it."),
        ("The on-premises servers.", "The on\u00adpremises servers."),
        ("* Be respectful\n* Be kind", "- Be respectful\n- Be kind"),  # markup
        ("Read the [terms](/site-policy/terms) first.",
         "Read the [terms](/articles/terms-of-service) first."),
        ("<!-- localization update 2026-03-11 -->\nYou must not harm users.", "You must not harm users."),
        ("Costs arrive later.", "Costs arrive afterwards."),  # 'later' alone is no version scope
        ("The officer(s) signed.", "The officer signed."),
        # a heading that one chunk's edge caught, with its section's number too
        ("Pay within thirty days.\n## Third Party Subprocessors", "Pay within thirty days."),
        ("6\\. How We Process Personal Data\n---\nPay within thirty days.", "Pay within thirty days."),
        # a capitalised word ordinary English uses often is no name by its rarity
        ("Services may change at any time.", "Sites may change at any time."),
        # moved sentences say the same
        ("Travel is booked early. Refunds take a week. Laptops are encrypted without exception.",
         "Laptops are encrypted without exception. Travel is booked early. Refunds take a week."),
        # an acronym's words dropped where the acronym stays; a status said two ways
        ("Follow the Universal Code of Conduct (UCoC) here.", "Follow the (UCoC) here."),
        ("Any user who breaks the rules shall be subject to the consequences.",
         "Any user who breaks the rules is subject to the consequences."),
        # a link's title, an image, a table of contents' link, a hidden address, a www. address
        ("Read the [terms](https://a.example/t \"Terms v1\") first.",
         "Read the [terms](https://b.example/terms \"The terms, 2024\") first."),
        ("![Logo of the Ministry of Health](logo.png)\nRefunds take a week.", "Refunds take a week."),
        ("[Contact Us](#contact)\nRefunds take a week.", "Refunds take a week."),
        ("Write to [\\[email\u00a0protected\\]](/cdn-cgi/l/email-protection) today.",
         "Write to legal@example.com today."),
        # an address literal as Markdown escapes it, its user hidden on one side with the domain left
        ("Create an alias, e.g., \u201cTDReporting@\\[Company.com\\],\u201d for reports.",
         "Create an alias, e.g., \u201c[\\[email\u00a0protected\\]](/cdn-cgi/l/email-protection)"
         "\\[Company.com\\],\u201d for reports."),
        # a compound against its letters; a name's possessive cut at a page break, the name still named
        ("Send an e-mail to the team.", "Send an email to the team."),
        ("We hold a stake in Rivian through our investment, and one of us serves on Rivian\u2019s\n8",
         "We hold a stake in Rivian through our investment, and one of us serves on\n8"),
        # the same page moved: a language's part, another folder, a part added, another host of the site
        ("See https://support.apple.com/en-us/ht203093 for details.",
         "See https://support.apple.com/ht203093 for details."),
        ("See https://www.dataprivacyframework.gov/framework-article/ANNEX-I-introduction for more.",
         "See https://www.dataprivacyframework.gov/s/article/ANNEX-I-introduction-dpf?tab=2 for more."),
        ("Terms: https://powerplatform.microsoft.com/en-us/business-applications/legal apply.",
         "Terms: https://www.microsoft.com/en-gb/power-platform/business-applications/legal apply."),
        ("The addendum at [www.example.com/dpa](https://example.com/dpa) applies.",
         "The addendum at [https://www.example.com/legal/dpa/](https://example.com/dpa) applies."),
        # a heading, a lead-in or a question one chunk's edge caught; page chrome at the end
        ("### 6.2 No Effect on Other Terms\nThese terms do not change the others.",
         "These terms do not change the others."),
        ("The Platform uses cookies for the following purposes:\n\nSome cookies keep you signed in.",
         "Some cookies keep you signed in."),
        ("Refunds take a week.\n\n### Was this article helpful?\n\nYou might also be interested in:",
         "Refunds take a week."),
        # a function word beside a joining word is no item
        ("We keep the data and reports for a year.", "We keep the data and the reports for a year."),
    ],
)
def test_no_change_of_meaning_merges(a: str, b: str) -> None:
    assert meaning_diff(a, b) is None, meaning_diff(a, b)


def test_a_text_whose_case_is_noise_gives_no_names() -> None:
    """A re-cased copy (every fifth word capitalised) with a word put in: its capitals say nothing."""
    base = " ".join([
        "the finance team reviews each corporate card statement at the end of the month and flags every",
        "purchase without a receipt for the cardholder to answer within the next cycle",
    ]).split(" ")
    recased = [w.capitalize() if i % 5 == 2 else w for i, w in enumerate(base)]
    recased.insert(9, "Quarterly")
    assert meaning_diff(" ".join(base), " ".join(recased), ["name"]) is None
    assert meaning_diff(" ".join(base), " ".join(recased), ["content"]) is None


def test_reasons_are_chosen_by_config() -> None:
    a, b = CLAUSE.format(verb="may", which="first"), CLAUSE.format(verb="may", which="third")
    assert meaning_diff(a, b, ["name"]) is None
    assert meaning_diff(a, b, ["ordinal"]) is not None
    page, other = "See https://example.com/terms/ABC-2 now.", "See https://example.com/terms/XABC-2 now."
    assert meaning_diff(page, other, ["name"]) is None  # another page is a reference, not a name
    assert meaning_diff(page, other, ["reference"]) is not None
    with pytest.raises(ConfigError, match="unknown reasons"):
        NearConfig(meaning=("colour",))
    with pytest.raises(ConfigError, match="is a list"):
        NearConfig(always_merge="c0376ab3c2384d9b3c7b117fe")  # type: ignore[arg-type]
    assert NearConfig().meaning == MEANING_REASONS


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("12. Fees are due monthly.", "14. Fees are due monthly.", True),
        ("(c) Fees are due monthly.", "(e) Fees are due monthly.", True),
        ("Section 12. Fees are due monthly.", "Section 14. Fees are due monthly.", True),
        ("Fees are due monthly, never refunded.\n20", "Fees are due monthly, never refunded.\n19", True),
        ("Fees are due monthly.\nKey Information 41", "Fees are due monthly.\nKey Information 38", True),
        ("See [fees](/terms#fees-2024) monthly.", "See [fees](/terms#fees-2025) monthly.", True),
        ("Fees are due within 30 days.", "Fees are due within 45 days.", False),  # in the sentence
        ("12. Fees are due within 30 days.", "14. Fees are due within 45 days.", False),
        ("Fees rose by 12\n20", "Fees rose by 14\n20", False),  # the last line is a sentence's number
        # a year opening or closing a wrapped line, a short first or last line of a sentence
        ("for the quarter ended September 30,\n2023. The fees rose.",
         "for the quarter ended September 30,\n2024. The fees rose.", False),
        ("for the period ended December 31,\n2023", "for the period ended December 31,\n2024", False),
        ("30 days written notice is required\nbefore the term ends.",
         "60 days written notice is required\nbefore the term ends.", False),
        ("Rooms are cleaned daily.\nMaximum occupancy 4",
         "Rooms are cleaned daily.\nMaximum occupancy 6", False),
        # labels as HTML-to-Markdown converters write them
        ("10\\. CHANGES TO THIS POLICY\n\nWe may", "11\\. CHANGES TO THIS POLICY\n\nWe may", True),
        ("**14.2 Uninstalling the app**\nText", "**15.2 Uninstalling the app**\nText", True),
        ("Article 9: Ownership\nText", "Article 11: Ownership\nText", True),
        ("A17. Bookings\nText", "A18. Bookings\nText", True),
        ("Intro.\n3.5 percent of fees", "Intro.\n4.5 percent of fees", False),  # a figure, no label
    ],
)
def test_numbering_is_not_meaning(a: str, b: str, same: bool) -> None:
    assert numbering_only(a, b) is same


def test_judge_edges_releases_numbering_and_keeps_meaning_apart() -> None:
    texts = ["1. Pay in the first month.", "2. Pay in the first month.", "1. Pay in the third month."]
    edges = np.array([[0, 1], [0, 2]])
    passed = np.array([False, True])  # the number/date guard failed the labels, passed the ordinal
    ok, why = judge_edges(edges, np.arange(3), passed, texts.__getitem__)
    assert ok.tolist() == [True, False]
    assert why == {(0, 2): ("ordinal", ("-first", "+third"))}
    ok, why = judge_edges(edges, np.arange(3), passed, texts.__getitem__, reasons=(), numbering=False)
    assert ok.tolist() == passed.tolist() and why == {}


def test_an_ingest_keeps_meaning_apart_and_says_why(tmp_path: Path) -> None:
    folder = tmp_path / "c"
    folder.mkdir()
    texts = {
        "a.txt": CLAUSE.format(verb="may", which="first") + TAIL,
        "b.txt": CLAUSE.format(verb="may", which="third") + TAIL,
        "c.txt": (CLAUSE.format(verb="may", which="first") + TAIL).replace("party keeps", "party retains"),
    }
    for name, text in texts.items():
        (folder / name).write_text(text, encoding="utf-8")
    index = tmp_path / "i.sqlite"
    ingest([folder], index)
    with Index.open(index) as ix:
        records = {r.sources[0].doc: r for r in ix.records()}
        assert sorted(records) == ["a.txt", "b.txt"]  # c.txt is a near copy of a.txt
        sources = [(s.doc, s.relation) for s in records["a.txt"].sources]
        assert sources == [("a.txt", "exact"), ("c.txt", "near")]
        [variant] = ix.variants(records["a.txt"].id)
        assert variant["reason"] == "ordinal" and variant["differing"] == ["-first", "+third"]
    off = tmp_path / "off.sqlite"
    ingest([folder], off, config=Config(near=NearConfig(meaning=())))
    with Index.open(off) as ix:
        assert len(list(ix.records())) == 1  # without the guard, all three are one canonical


def test_the_labelled_real_pairs_meet_the_targets(real_candidate_pairs) -> None:  # type: ignore[no-untyped-def]
    """Every labelled pair of sec-10q, site-policy, ntsb and terms is still a candidate pair, and on
    each half of the split (the pairs rules were read against, and the held-out ones, measured only)
    the default guards keep >= 90% of the meaning-changing ones apart (the target) while merging >= 91%
    of the same-meaning ones (the figure reached, a floor against regressions: the target is 95%;
    benchmarks/README gives the figures)."""
    rp, by_corpus = real_candidate_pairs
    pairs = [p for c in rp.CORPORA for p in by_corpus[c]]
    labels = list(rp.read_jsonl(rp.LABELS))
    assert len(labels) >= 450 and sum(lab["corpus"] == "terms" for lab in labels) >= 200
    result = rp.evaluate(pairs, labels, list(rp.read_jsonl(rp.SECOND_READER)))
    second = result["second_reader"]
    assert second["matched"] == second["labelled"] >= 79  # a reader who saw no verdict agrees
    assert second["after"]["changed_kept_apart"]["share"] >= 0.95
    assert second["after"]["same_merged"]["share"] >= 0.95
    for half in ("tune", "held_out"):
        part = result[half]
        assert part["matched"] == part["labelled"] > 200
        after, before = part["after"], part["before"]
        assert after["changed_kept_apart"]["share"] >= 0.90, half
        assert after["same_merged"]["share"] >= 0.91, half
        assert after["changed_kept_apart"]["hit"] > before["changed_kept_apart"]["hit"]
        assert after["same_merged"]["hit"] > before["same_merged"]["hit"]


def test_overrides_keep_apart_or_merge_what_a_person_decided(tmp_path: Path) -> None:
    """``keep_apart`` makes a near copy a variant (reason ``override``), ``always_merge`` merges a pair
    the guards kept apart; by text, by id, or as a pair; ``keep_apart`` wins; both load from TOML."""
    folder = tmp_path / "c"
    folder.mkdir()
    a = CLAUSE.format(verb="may", which="first") + TAIL
    b = CLAUSE.format(verb="may", which="third") + TAIL
    c = a.replace("party keeps", "party retains")
    for name, text in {"a.txt": a, "b.txt": b, "c.txt": c}.items():
        (folder / name).write_text(text, encoding="utf-8")

    def canonicals(near: NearConfig, name: str) -> dict[str, list[str]]:
        index = tmp_path / f"{name}.sqlite"
        ingest([folder], index, config=Config(near=near))
        with Index.open(index) as ix:
            return {r.id: [s.doc for s in r.sources] for r in ix.records()}

    default = canonicals(NearConfig(), "default")
    assert sorted(default.values()) == [["a.txt", "c.txt"], ["b.txt"]]
    b_id = next(cid for cid, docs in default.items() if docs == ["b.txt"])
    apart = canonicals(NearConfig(keep_apart=(c,)), "apart")
    assert sorted(apart.values()) == [["a.txt"], ["b.txt"], ["c.txt"]]
    with Index.open(tmp_path / "apart.sqlite") as ix:
        a_id = next(cid for cid, docs in apart.items() if docs == ["a.txt"])
        assert {v["reason"] for v in ix.variants(a_id)} == {"override", "ordinal"}
    for merge in ((b_id,), ((a, b_id),)):  # the variant's id alone, or the pair (a text, an id)
        merged = canonicals(NearConfig(always_merge=merge), "merged")
        assert sorted(merged.values()) == [["a.txt", "b.txt", "c.txt"]]
    both = canonicals(NearConfig(always_merge=(b_id,), keep_apart=((a, b),)), "both")
    assert sorted(both.values()) == [["a.txt", "c.txt"], ["b.txt"]]
    toml = tmp_path / "cfg.toml"
    toml.write_text(f'[near]\nalways_merge = ["{b_id}", ["x", "y"]]\nkeep_apart = []\n', encoding="utf-8")
    assert Config.load(toml).near.always_merge == (b_id, ("x", "y"))
    with pytest.raises(ConfigError, match="a pair of two"):
        NearConfig(keep_apart=(("only one",),))  # type: ignore[arg-type]


def test_changing_the_guards_keeps_the_verified_edges(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An override or a reason edited re-decides every cluster over the edges already verified; a
    new threshold verifies them again."""
    from chunkdedup.store.band_tables import BandTables

    folder = tmp_path / "c"
    folder.mkdir()
    a = CLAUSE.format(verb="may", which="first") + TAIL
    for name, text in {"a.txt": a, "c.txt": a.replace("party keeps", "party retains")}.items():
        (folder / name).write_text(text, encoding="utf-8")
    index = tmp_path / "i.sqlite"
    ingest([folder], index)
    cleared: list[int] = []
    clear = BandTables.clear_near_edges
    monkeypatch.setattr(BandTables, "clear_near_edges", lambda self: (cleared.append(1), clear(self))[1])
    ingest([folder], index, config=Config(near=NearConfig(keep_apart=(a,))))
    with Index.open(index) as ix:
        assert len(list(ix.records())) == 2  # re-decided: kept apart now
    assert cleared == []
    ingest([folder], index, config=Config(near=NearConfig(meaning=("name",))))
    assert cleared == []
    ingest([folder], index, config=Config(near=NearConfig(threshold=0.8)))
    assert cleared == [1]
    with Index.open(index) as ix:
        assert len(list(ix.records())) == 1
