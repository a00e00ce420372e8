"""Ranking levers over a small corpus that reproduces their failure modes: a document whose long,
generic file name wins the context boost on every question; a title that is a common word; file names
written with ``%20``; a passage dense in the names that identify its document; a statement table
against the narrative that repeats the question's words."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from chunkdedup import Index, ingest, search
from chunkdedup.cli import main
from chunkdedup.config import QueryConfig
from chunkdedup.errors import ConfigError
from chunkdedup.ingestion.context import filename_words
from chunkdedup.query.numbers import asks_amount, number_density
from conftest import CONTEXTS_BY_DOC

#: the ranking before the levers: context scored by IDF alone, every term counted fully, no figures
PLAIN = QueryConfig(identity_weight=1.0, context_specificity=0.0, context_b=0.0, number_weight=0.0)

_NDA = (
    "This Mutual Non-Disclosure Agreement is made between {party} and the Recipient. Confidential "
    "Information means any information disclosed by either party, including information security "
    "practices, trade secrets and business plans.\n\n"
    "{clause}\n\n"
    "The Recipient shall protect the Confidential Information with the same degree of care as its own "
    "confidential information, and shall use it only for the purpose of evaluating a business "
    "relationship between the parties.\n"
)
_CLAUSES = {
    "Acme Mutual NDA.txt": ("Acme Corporation", "The obligations of confidentiality survive for three "
                            "years after the termination of this agreement."),
    "Globex NDA.txt": ("Globex Limited", "Upon request the Recipient shall return or destroy all "
                       "copies of the disclosed materials within thirty days."),
    "Initech NDA.txt": ("Initech LLC", "This agreement is governed by the laws of the State of Delaware "
                        "and its courts have exclusive jurisdiction."),
    "DBT%20Mutual%20NDA.txt": ("DBT Partners", "Neither party may assign this agreement without the "
                               "prior written consent of the other party."),
    "NU Confidentiality Non-Disclosure Information Security Agreement.txt": (
        "Northern University", "Information security incidents involving Confidential Information "
        "shall be reported to the information security office within five business days."),
}
#: (question, the document that answers it)
_QUESTIONS = [
    ("In the Acme NDA, how long do the confidentiality obligations for confidential information survive?",
     "Acme Mutual NDA"),
    ("Under the Globex NDA, when must the recipient return the confidential information?", "Globex NDA"),
    ("Which law governs the Initech NDA on confidential information?", "Initech NDA"),
    ("May the DBT NDA on confidential information be assigned?", "DBT%20Mutual%20NDA"),
]


def _ndas(folder: Path) -> Path:
    folder.mkdir()
    for name, (party, clause) in _CLAUSES.items():
        (folder / name).write_text(_NDA.format(party=party, clause=clause), encoding="utf-8")
    return folder


def _top_docs(index: Path, config: QueryConfig) -> list[str]:
    with Index.open(index) as ix:
        return [search(ix, q, config=config).hits[0].citations[0].doc for q, _ in _QUESTIONS]


def test_a_generic_file_name_no_longer_wins_every_question(tmp_path: Path) -> None:
    index = tmp_path / "i.sqlite"
    ingest([_ndas(tmp_path / "c")], index)
    expected = [doc for _, doc in _QUESTIONS]
    plain = _top_docs(index, PLAIN)
    generic = "NU Confidentiality Non-Disclosure Information Security Agreement"
    # the failure: its file name's generic words match what every question carries
    assert sum(doc.startswith(generic) for doc in plain) >= 2
    shipped = _top_docs(index, QueryConfig())
    assert [Path(d).stem for d in shipped] == expected
    # the lever that does it: context terms weighted by how well they identify a document
    assert [Path(d).stem for d in _top_docs(index, QueryConfig(context_specificity=0.0))] != expected


def test_file_names_are_url_decoded(tmp_path: Path) -> None:
    assert filename_words("DBT%20Mutual%20NDA.txt") == "DBT Mutual NDA"
    index = tmp_path / "i.sqlite"
    ingest([_ndas(tmp_path / "c")], index)
    with Index.open(index) as ix:
        contexts = dict(ix.store.conn.execute(CONTEXTS_BY_DOC))
        result = search(ix, "the DBT agreement")
    (dbt,) = [text for doc, text in contexts.items() if doc.startswith("DBT")]
    assert dbt.split() == ["DBT", "Mutual", "NDA"]
    assert result.context[0].doc.startswith("DBT")


def _docs_site(folder: Path) -> Path:
    """A documentation site: a C-API page titled with the common word the questions use, and pages
    whose text uses it everywhere; the page that answers is titled otherwise."""
    folder.mkdir()
    pages = {
        "c-api-dict.md": "# Dictionary Objects\n\nPyDict_New returns a new empty dictionary object. "
        "PyDict_SetItem inserts a value into the dictionary p with a key of key.\n",
        "stdtypes.md": "# Built-in Types\n\nTo sort a dictionary by value, call sorted on its items "
        "with a key function: sorted(d.items(), key=lambda kv: kv[1]) returns the pairs ordered by "
        "value.\n",
        "json.md": "# json: JSON encoder and decoder\n\nA JSON object is decoded into a dictionary; "
        "a dictionary is encoded as a JSON object with its keys sorted when sort_keys is true.\n",
        "collections.md": "# collections: container datatypes\n\nOrderedDict is a dictionary that "
        "remembers insertion order; Counter is a dictionary subclass for counting hashable values.\n",
        "copy.md": "# copy: shallow and deep copy operations\n\nA shallow copy of a dictionary "
        "constructs a new dictionary holding references to the same values.\n",
        "pprint.md": "# pprint: data pretty printer\n\nA dictionary is printed with its keys sorted "
        "before display, each value on a line of its own.\n",
    }
    topics = ("shelve", "csv", "dataclasses", "argparse", "inspect", "types", "weakref", "ast", "gc",
              "sqlite3", "tomllib", "configparser")
    for topic in topics:  # the word is written all over the site
        pages[f"{topic}.md"] = (f"# {topic}\n\nThe {topic} module returns its results as a dictionary "
                                f"mapping each name to a value of its own.\n")
    for name, text in pages.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def test_a_title_that_is_a_common_word_does_not_outrank_the_answer(tmp_path: Path) -> None:
    index = tmp_path / "i.sqlite"
    ingest([_docs_site(tmp_path / "c")], index)
    q = "how do I sort a dictionary by value"
    with Index.open(index) as ix:
        plain = search(ix, q, config=PLAIN).hits[0].citations[0].doc
        shipped = search(ix, q).hits[0].citations[0].doc
    assert plain == "c-api-dict.md"
    assert shipped == "stdtypes.md"


_COMPANIES = ["Contoso", "Fabrikam", "Northwind", "Tailspin", "Litware", "Proseware"]


def test_identity_terms_pick_the_document_and_the_rest_of_the_question_the_passage(tmp_path: Path) -> None:
    """Two filings; in each a cover page dense in the company's name and a page answering the
    question that names it once. The question names the company: the context picks the filing, the
    passage is ranked on the rest of the question."""
    folder = tmp_path / "c"
    folder.mkdir()
    for company, other in zip(_COMPANIES, _COMPANIES[1:] + _COMPANIES[:1], strict=True):
        cover = (f"{company} Holdings annual report. {company} Holdings and its subsidiaries. "
                 f"{company} Holdings board of directors. {company} Holdings shareholders letter.")
        answer = (f"At {company} research spending rose in the year, driven by investment in process "
                  "technology, new product lines, the packaging of chips and the tools our engineers use "
                  "to design them, and by the hiring of staff in our laboratories across three continents.")
        filler = f"{other} Holdings is named here once as a competitor in the markets we serve."
        (folder / f"{company} Holdings annual report.txt").write_text(
            "\f".join([cover, answer, filler]), encoding="utf-8")
    index = tmp_path / "i.sqlite"
    ingest([folder], index)
    q = "What did Contoso Holdings say about research?"
    with Index.open(index) as ix:
        plain = search(ix, q, config=PLAIN)
        shipped = search(ix, q, config=QueryConfig(identity_weight=0.0, number_weight=0.0))
    assert plain.hits[0].text.startswith("Contoso Holdings annual report")
    assert shipped.hits[0].text.startswith("At Contoso research spending")
    assert shipped.hits[0].citations[0].doc == "Contoso Holdings annual report.txt"


def test_amount_questions_and_figure_density() -> None:
    assert asks_amount("What was Apple's capital expenditure in FY2018?")
    assert asks_amount("How much did NVIDIA allocate to R&D?")
    assert not asks_amount("Who may assign the agreement?")
    assert number_density("Purchases of property 1,234 (567) 12.5%") == pytest.approx(3 / 6)
    assert number_density("Käufe 1.234 $ FY2018") == pytest.approx(1 / 3)
    assert number_density("$ ---") == 0.0
    assert number_density("") == 0.0


def test_a_statement_table_competes_with_narrative_for_an_amount(tmp_path: Path) -> None:
    folder = tmp_path / "c"
    folder.mkdir()
    narrative = ("Capital expenditure remained a priority. Our capital expenditure plans support "
                 "capital expenditure in new plants; capital expenditure discipline continues.")
    table = ("Cash flows from investing activities\nPurchases of property, plant and equipment "
             "(1,577) (1,373) (1,420)\nProceeds from sale of assets 262 123 48\nAcquisitions, net "
             "(2,023) (13) (4,085)\nCapital expenditure total (1,577) (1,373)")
    (folder / "filing.txt").write_text("\f".join([narrative, table]), encoding="utf-8")
    index = tmp_path / "i.sqlite"
    ingest([folder], index)
    q = "What was the capital expenditure?"
    with Index.open(index) as ix:
        off = search(ix, q, config=QueryConfig(number_weight=0.0)).hits[0].text
        on = search(ix, q).hits[0].text
    assert off.startswith("Capital expenditure remained")
    assert on.startswith("Cash flows from investing")


@pytest.mark.parametrize(
    ("field", "value"),
    [("identity_weight", 1.5), ("identity_weight", -0.1), ("context_b", 2.0), ("context_k1", -1.0),
     ("context_specificity", -0.5), ("number_weight", -10.0)],
)
def test_ranking_knobs_are_checked(field: str, value: float) -> None:
    with pytest.raises(ConfigError, match=field):
        QueryConfig(**{field: value})  # type: ignore[arg-type]


@pytest.mark.parametrize("engine", [None, "tantivy"])
def test_a_question_score_is_the_sum_of_its_terms_scores(tmp_path: Path, engine: str | None) -> None:
    """What the identity lever relies on: each term scored alone within the candidates adds up to the
    question's BM25 score, on FTS5 and on tantivy."""
    from chunkdedup.query.retrieve import TermScored, content_terms
    from chunkdedup.query.run import bm25_retriever

    index = tmp_path / "i.sqlite"
    ingest([_ndas(tmp_path / "c")], index, text_engine=engine)
    q = "Acme confidential information return destroy"
    with Index.open(index) as ix:
        base = bm25_retriever(ix)
        assert isinstance(base, TermScored)
        whole = {s.id: s.score for s in base.retrieve(q, 50)}
        groups = sorted(whole)
        parts: dict[str, float] = {}
        for term in content_terms(q):
            for s in base.term_within(term, len(groups), groups):
                parts[s.id] = parts.get(s.id, 0.0) + s.score
    assert whole and set(parts) == set(whole)
    for g, score in whole.items():
        assert parts[g] == pytest.approx(score, rel=1e-5)


def _readme_query(index: Path, question: str, *options: str) -> list[tuple[str, int, str]]:
    """``chunkdedup query QUESTION --index INDEX`` as the README runs it: (doc, page, text) of each hit."""
    result = CliRunner().invoke(main, ["query", question, "--index", str(index), "--json", *options])
    assert result.exit_code == 0, result.output
    hits = json.loads(result.output)["hits"]
    return [(h["citations"][0]["doc"], h["citations"][0]["page"], h["text"]) for h in hits]


def test_the_readmes_headline_questions_find_the_income_statement(sec_index: Path) -> None:
    """The README's headline, over sec-10q ingested without its manifest (``sec_index``, as the README's
    ``chunkdedup ingest ../shared/data/sec-10q/docs``): asked in the filing's words the income statement
    of the Q3 2023 filing comes first; asked for "revenue", a word the statement never uses, it stays in
    the top 5 the README shows (5th after MMR, 2nd by score)."""
    statement = ("2023 Q3 AAPL.pdf", 4)
    hits = _readme_query(sec_index, "What were Apple's total net sales in Q3 2023?")
    assert len(hits) == 5 and hits[0][:2] == statement and "Total net sales 81,797" in hits[0][2]
    hits = _readme_query(sec_index, "What was Apple's Q3 2023 revenue?")
    found = [text for doc, page, text in hits if (doc, page) == statement]
    assert found and "revenue" not in found[0].lower()  # found on identity and figures, not on the word
    by_score = _readme_query(sec_index, "What was Apple's Q3 2023 revenue?", "--no-safety-net")
    assert statement in [h[:2] for h in by_score[:2]]


_SCORES = """
import sys
from chunkdedup import Index, search
with Index.open(sys.argv[1]) as ix:
    for q in sys.argv[2:]:
        print(" ".join(repr(h.score) for h in search(ix, q, k=8, versions="label").hits))
"""


def test_scores_do_not_depend_on_the_processs_string_hashing(policy_index: Path) -> None:
    """The same question on the same index scores the same in every process: a sum over a set of
    terms would follow Python's per-process string hashing (PYTHONHASHSEED) in its last digits."""
    import os
    import subprocess
    import sys

    questions = ["what happens if I violate the acceptable use policy", "github privacy statement cookies",
                 "how do I appeal a suspended account", "export controls and sanctions for users"]
    outs = set()
    for seed in ("1", "2", "3", "4", "5"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run([sys.executable, "-c", _SCORES, str(policy_index), *questions],
                              capture_output=True, text=True, env=env, check=True)
        outs.add(done.stdout)
    assert len(outs) == 1, outs
