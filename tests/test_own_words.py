"""A source keeps its own words: no citation vouches for words its source does not hold.

Near merges join texts that differ in a few words (on sec-10q, Amazon's Exhibit 31 certification
joins Apple's at Jaccard 0.878). Whatever is merged, a hit's text is the words of every citation
that carries no text of its own, and a citation with its own text (``Citation.text``) holds exactly
those words: checked against each source's own span of its page, in every hit of real questions
and in every export record.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path

import pytest

from chunkdedup import Config, Index, ingest
from chunkdedup.config import NearConfig
from chunkdedup.normalize import exact_key
from chunkdedup.query import search
from chunkdedup.query.records import Citation
from chunkdedup.store.reads import page_span
from conftest import SEC

QUESTIONS = Path(__file__).resolve().parents[2] / "shared" / "data" / "sec-10q" / "qna_data.csv"
JASSY = "I, Andrew R. Jassy, certify that: I have reviewed this Form 10-Q of Amazon.com, Inc."
#: the meaning guard off: Amazon's certification joins Apple's as a near copy (Jaccard 0.878), as
#: every near merge did before the guard; the citations must still hold their own words
NO_MEANING = Config(near=NearConfig(meaning=(), numbering=False))


@pytest.fixture(scope="module")
def merged_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("merged") / "sec.sqlite"
    ingest([SEC], path, config=NO_MEANING)
    return path


def _span(ix: Index, c: Citation) -> str:
    return page_span(ix.store, c.doc, c.page, c.start, c.end)


def _doc(ix: Index, name: str) -> str:
    """The id of the filing named ``name`` (ids are relative to the folder ingested)."""
    return next(d["doc"] for d in ix.documents() if d["doc"].endswith(name))


def _questions(n: int) -> list[str]:
    with QUESTIONS.open(encoding="utf-8-sig", newline="") as fh:
        return [row["Question"] for row in csv.DictReader(fh)][:n]


def _vouched(ix: Index, text: str, citations: tuple[Citation, ...]) -> Iterator[tuple[Citation, str, str]]:
    """(citation, the words shown for it, its source's own words), keyed as exact copies are."""
    for c in citations:
        shown = c.text if c.text is not None else text
        yield c, exact_key(shown), exact_key(_span(ix, c))


def test_the_amazon_certification_is_its_own_canonical(sec_index: Path) -> None:
    """The meaning guard keeps Amazon's certification apart from Apple's (the officers' names
    differ): the hit citing Amazon shows Jassy's words and no Apple citation, the export holds the
    Jassy certification, and `show` names Apple's as a version kept apart for a name."""
    with Index.open(sec_index) as ix:
        hits = search(ix, JASSY, k=5).hits
        amazon = [h for h in hits if "Andrew R. Jassy, certify" in h.text]
        assert amazon
        for h in amazon:
            assert all("AMZN" in c.doc and c.text is None for c in h.citations)
            assert "Cook" not in h.text
        for h in hits:  # no hit anywhere shows Apple's officer under Amazon's citation
            for c in h.citations:
                words = c.text if c.text is not None else h.text
                assert not ("AMZN" in c.doc and "Timothy D. Cook" in words)
        exported = [r for r in ix.records() if "I, Andrew R. Jassy, certify" in (r.text or "")]
        assert exported and all(all("AMZN" in c.doc for c in r.sources) for r in exported)
        reasons = {v["reason"] for r in exported for v in ix.variants(r.id)}
        assert "name" in reasons


def test_the_amazon_certification_is_shown_in_amazons_words(merged_index: Path) -> None:
    with Index.open(merged_index) as ix:
        hits = search(ix, JASSY, k=5).hits
        amazon = [h for h in hits if any("AMZN" in c.doc and "31.1" in h.text for c in h.citations)]
        assert amazon, [h.text[:60] for h in hits]
        for h in amazon:
            assert "AMZN" in h.citations[0].doc
            assert "Andrew R. Jassy" in h.text and "Cook" not in h.text
            for c in h.citations:
                if "AAPL" in c.doc:  # merged with Apple's: Apple's words ride with Apple's citation
                    assert c.text is not None and "Timothy D. Cook" in c.text
                    assert {"+timothy", "-jassy,"} <= set(c.differs)
                    assert "is its near copy" in c.note(h.citations[0])
        # asked for the canonical's words, the hit shows Apple's only with Apple's citation first
        for h in search(ix, JASSY, k=5, words="canonical").hits:
            first = h.citations[0]
            assert exact_key(h.text) == exact_key(_span(ix, first))


@pytest.mark.parametrize("fixture", ["sec_index", "merged_index"])
def test_the_cfo_signature_block_is_shown_in_the_cfos_words(
    fixture: str, request: pytest.FixtureRequest
) -> None:
    """Inside one filing the CFO's certification is near the CEO's (Huang/Kress): asked about Kress
    within that filing, the hit shows Kress's block and names Huang only with Huang's citation (the
    meaning guard keeps the two apart; without it, Huang's words ride with Huang's citation)."""
    index: Path = request.getfixturevalue(fixture)
    with Index.open(index) as ix:
        where = {"doc": _doc(ix, "2023 Q2 NVDA.pdf")}
        hits = search(ix, "I, Colette M. Kress, certify that", k=5, where=where).hits
        kress = [h for h in hits if "Colette M. Kress" in h.text]
        assert kress
        for h in kress:
            assert "Jen-Hsun Huang" not in h.text
            for c, shown, own in _vouched(ix, h.text, h.citations):
                assert shown == own, (h.id, c)


@pytest.mark.parametrize("words", ["source", "canonical"])
def test_every_citation_of_real_questions_holds_the_words_shown_for_it(
    merged_index: Path, words: str
) -> None:
    with Index.open(merged_index) as ix:
        checked = own = 0
        for q in [*_questions(40), JASSY, "Chief Financial Officer certify"]:
            for where in (None, {"doc": _doc(ix, "2023 Q1 AMZN.pdf")}):
                for h in search(ix, q, k=5, where=where, words=words).hits:  # type: ignore[arg-type]
                    for c, shown, mine in _vouched(ix, h.text, h.citations):
                        assert shown == mine, (q, h.id, c.doc, c.page)
                        checked += 1
                        own += c.text is not None
        assert checked > 400 and own > 0  # the questions reach near-merged clusters


@pytest.mark.parametrize("fixture", ["sec_index", "merged_index", "policy_index"])
def test_every_exported_source_holds_the_words_it_is_exported_with(
    fixture: str, request: pytest.FixtureRequest
) -> None:
    index: Path = request.getfixturevalue(fixture)
    with Index.open(index) as ix:
        near = 0
        for rec in ix.records():
            assert rec.text is not None
            for c, shown, mine in _vouched(ix, rec.text, rec.sources):
                assert shown == mine, (rec.id, c.doc, c.page, c.start)
                assert (c.text is None) == (c.relation == "exact")
                near += c.text is not None
        assert near > 0
        # `record` is one line of the export, whole
        first = next(ix.records())
        assert ix.record(first.id) == first
        assert ix.record("c" + "0" * 24) is None


def test_show_names_each_near_copy_and_its_own_words(merged_index: Path) -> None:
    from click.testing import CliRunner

    from chunkdedup.cli import main

    sec_index = merged_index
    with Index.open(sec_index) as ix:
        hit = next(h for h in search(ix, JASSY, k=5).hits if "Andrew R. Jassy, certify" in h.text)
    out = CliRunner().invoke(main, ["show", hit.id, "--index", str(sec_index)])
    assert out.exit_code == 0, out.output
    assert "near copy (0.878) of the text shown" in out.output
    assert "its own words: Exhibit 31.1 CERTIFICATIONS I, Andrew R. Jassy, certify" in out.output
    q = CliRunner().invoke(main, ["query", JASSY, "--index", str(sec_index), "-k", "5"])
    assert "the text shown is its near copy (0.878)" in q.output and "+timothy" in q.output


def test_query_words_option_picks_whose_words_are_shown(merged_index: Path) -> None:
    """``--words canonical`` shows Apple's canonical text for the Amazon question, cited to Apple
    first; the default shows Amazon's own words. Either way every citation holds its words."""
    import json

    from click.testing import CliRunner

    from chunkdedup.cli import main

    sec_index = merged_index
    texts = {}
    for words in ("source", "canonical"):
        out = CliRunner().invoke(
            main, ["query", JASSY, "--index", str(sec_index), "-k", "5", "--words", words, "--json"]
        )
        assert out.exit_code == 0, out.output
        hits = json.loads(out.output)["hits"]
        amazon = [h for h in hits if any("AMZN" in c["doc"] for c in h["citations"])]
        cert = next(h for h in amazon if "certify that" in h["text"])
        texts[words] = cert["text"]
        with Index.open(sec_index) as ix:
            for h in hits:
                for c in h["citations"]:
                    cite = Citation(c["doc"], c["page"], c["start"], c["end"], c["relation"], c["similarity"])
                    assert exact_key(c.get("text", h["text"])) == exact_key(_span(ix, cite))
    assert "Andrew R. Jassy" in texts["source"]
    assert "Timothy D. Cook" in texts["canonical"]
