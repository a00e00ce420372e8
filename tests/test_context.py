"""Document context: what it is made of, how it ranks, how an older index gets it, and that it never
leaks across a filter (the property itself runs in test_query's ``assert_no_leak``)."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from pathlib import Path

import pytest

from chunkdedup import Index, ingest
from chunkdedup.config import ChunkConfig, Config, QueryConfig, RetrievalConfig
from chunkdedup.ingestion.context import ContextSource, document_context, document_contexts, filename_words
from chunkdedup.normalize import with_word_parts, word_parts
from chunkdedup.parse.markdown import title as markdown_title
from chunkdedup.query import search
from chunkdedup.query.retrieve import content_terms, fts_query
from conftest import BEFORE_0025, BEFORE_0038, CONTEXTS_BY_DOC

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
SMALL = Config(chunk=ChunkConfig(target_words=12, max_words=30))

# -- the letter-digit split -----------------------------------------------------------------------


def test_letter_digit_runs_add_their_parts() -> None:
    assert word_parts("fy2018") == ["2018"]
    assert word_parts("q3") == ["3"]
    assert word_parts("covid19") == ["covid", "19"]
    assert word_parts("2018") == [] and word_parts("policy") == [] and word_parts("") == []
    assert content_terms("What is 3M's FY2018 capital expenditure?") == [
        "3m", "3", "fy2018", "2018", "capital", "expenditure",
    ]
    assert content_terms("FY2018", parts=False) == ["fy2018"]
    assert fts_query("Q3 results") == '"q3" OR "3" OR "results"'
    assert with_word_parts("Annual Report FY2018") == "Annual Report FY2018 2018"


def test_a_question_year_written_fy2018_finds_a_text_that_writes_2018(tmp_path: Path) -> None:
    corpus = tmp_path / "c"
    corpus.mkdir()
    (corpus / "a.txt").write_text("Capital expenditure in fiscal 2018 was 1,577 million.\n", encoding="utf-8")
    (corpus / "b.txt").write_text("Capital expenditure in fiscal 2017 was 1,373 million.\n", encoding="utf-8")
    index = tmp_path / "i.sqlite"
    ingest([corpus], index)
    with Index.open(index) as ix:
        split = search(ix, "FY2018 capital expenditure").hits
        plain = search(ix, "FY2018 capital expenditure", config=QueryConfig(word_parts=False)).hits
    assert split[0].citations[0].doc == "a.txt"
    assert split[0].score > split[1].score  # the year decides, not the tie-break
    assert plain[0].score == plain[1].score  # without the split "fy2018" matches neither


# -- what a context is made of --------------------------------------------------------------------


def test_context_holds_metadata_title_file_name_and_running_lines_each_word_once() -> None:
    src = ContextSource(
        "filings/PepsiCo_FY2019_10K.pdf",
        "/data/filings/PepsiCo_FY2019_10K.pdf",
        {"company": "PepsiCo, Inc.", "fiscal_year": 2019, "audited": True, "tags": '["a", "b"]'},
        "PepsiCo 10-K",
        ("PepsiCo, Inc. and Subsidiaries",),
    )
    text = document_context(src, RetrievalConfig())
    assert text.split("\n") == ["PepsiCo, Inc.", "2019", "10-K", "Pepsi Co FY2019 10", "and Subsidiaries"]
    assert "True" not in text and "[" not in text  # flags and JSON lists only when named
    only = document_context(src, RetrievalConfig(context=("metadata",), context_fields=("tags",)))
    assert only == '["a", "b"]'
    assert document_context(src, RetrievalConfig(context=())) == ""
    assert filename_words("x/AnnualReport-2018_final.md") == "AnnualReport Annual Report 2018 final"


def test_contexts_of_a_batch_are_each_documents_context() -> None:
    """The batch form makes a file's name words once for the records sharing it: the same texts."""
    sources = [
        ContextSource(f"shard.jsonl#{i}", path, {"team": f"t{i % 2}"}, f"Record {i}", running)
        for i, (path, running) in enumerate(
            [("/in/Shard_A-2019.jsonl", ()), ("/in/Shard_A-2019.jsonl", ("Acme Corp",)),
             ("C:\\in\\OtherFile.jsonl", ()), (".hidden", ()), ("/in/Shard_A-2019.jsonl", ())]
        )
    ]
    for config in (RetrievalConfig(), RetrievalConfig(context=("filename", "title"))):
        assert document_contexts(sources, config) == [document_context(s, config) for s in sources]
    assert document_contexts([], RetrievalConfig()) == []


def test_titles_come_from_headings_pdf_metadata_or_the_manifest() -> None:
    assert markdown_title("Intro\n\n## 1. Scope\n\n# Refund policy #\n\n# Later\n") == "Refund policy"
    assert markdown_title("no heading here") is None


def test_unknown_context_part_is_a_config_error() -> None:
    from chunkdedup.errors import ConfigError

    with pytest.raises(ConfigError, match="unknown part"):
        RetrievalConfig(context=("metadata", "cover"))
    with pytest.raises(ConfigError, match="context_weight"):
        QueryConfig(context_weight=-1)


# -- ranking --------------------------------------------------------------------------------------


def _filings(folder: Path) -> Path:
    """Two companies' cash-flow pages that name neither company; the manifest does."""
    folder.mkdir()
    body = "Capital expenditures for the year were {} million, mainly for new plants and equipment.\n"
    (folder / "r1.txt").write_text(body.format("1,577"), encoding="utf-8")
    (folder / "r2.txt").write_text(body.format("2,210"), encoding="utf-8")
    # a third document that shares body words with the question and is about the year, but no company
    (folder / "r3.txt").write_text(
        "Capital expenditures of peers in fiscal 2018: an industry overview of plants.\n", encoding="utf-8"
    )
    rows = [
        {"path": "r1.txt", "company": "Contoso Holdings", "fiscal_year": "2018", "form": "10-K"},
        {"path": "r2.txt", "company": "Fabrikam Group", "fiscal_year": "2018", "form": "10-K"},
        {"path": "r3.txt", "form": "industry note"},
    ]
    (folder / "manifest.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return folder


def test_metadata_naming_the_entity_outranks_shared_body_words(tmp_path: Path) -> None:
    corpus = _filings(tmp_path / "c")
    index = tmp_path / "i.sqlite"
    ingest([corpus], index, manifest=corpus / "manifest.jsonl")
    q = "What were Fabrikam's FY2018 capital expenditures?"
    with Index.open(index) as ix:
        on = search(ix, q)
        off = search(ix, q, config=QueryConfig(context_weight=0))
        explained = on.to_json(explain=True)
        shown = {h.id: h.text for h in off.hits}
    assert on.hits[0].citations[0].doc == "r2.txt"
    assert off.hits[0].citations[0].doc != "r2.txt"  # on body words alone another page wins
    assert explained["context"][0]["doc"] == "r2.txt"  # --explain says which context matched
    # the shown text stays the clean chunk text: context ranks, it is never shown
    assert all(shown.get(h.id, h.text) == h.text and "Fabrikam" not in h.text for h in on.hits)


def test_context_only_ranks_documents_the_filter_lets_through(tmp_path: Path) -> None:
    corpus = _filings(tmp_path / "c")
    index = tmp_path / "i.sqlite"
    ingest([corpus], index, manifest=corpus / "manifest.jsonl")
    with Index.open(index) as ix:
        limited = search(ix, "Fabrikam capital expenditures", where=["company=Contoso Holdings"])
        same = search(ix, "capital expenditures", where=["company=Contoso Holdings"])
        alone = search(ix, "Fabrikam", where=["company=Contoso Holdings"])
    assert [(h.id, h.score) for h in limited.hits] == [(h.id, h.score) for h in same.hits]
    assert limited.context == () and alone.hits == ()


def test_an_alias_file_lets_a_short_name_find_the_long_one(tmp_path: Path) -> None:
    from chunkdedup.errors import ConfigError
    from chunkdedup.query.aliases import parse_aliases

    corpus = _filings(tmp_path / "c")
    index = tmp_path / "i.sqlite"
    ingest([corpus], index, manifest=corpus / "manifest.jsonl")
    aliases = tmp_path / "aliases.txt"
    aliases.write_text("# short names\nFab = Fabrikam Group\nCTSO = Contoso Holdings\n", encoding="utf-8")
    q = "What were Fab's capital expenditures?"
    with Index.open(index) as ix:
        plain = search(ix, q)
        aliased = search(ix, q, config=QueryConfig(aliases=str(aliases)))
    assert plain.context == ()  # "Fab" is in no context
    assert aliased.context[0].doc == "r2.txt" and aliased.hits[0].citations[0].doc == "r2.txt"
    assert aliased.query == q  # the question stays as asked
    with pytest.raises(ConfigError, match="line 1"):
        parse_aliases("JnJ Johnson\n", "a.txt")
    with pytest.raises(ConfigError, match="cannot be read"), Index.open(index) as ix:
        search(ix, q, config=QueryConfig(aliases=str(tmp_path / "missing.txt")))


# -- an index written before contexts existed -----------------------------------------------------


def _downgrade(index: Path) -> None:
    """Make ``index`` look written before migration 0007: no contexts, no title column."""
    conn = sqlite3.connect(index)
    conn.executescript(BEFORE_0025)
    with conn:
        for name in ("contexts_ai", "contexts_ad", "contexts_au"):
            conn.execute(f"DROP TRIGGER {name}")
        conn.execute("DROP TABLE contexts_fts")
        conn.execute("DROP TABLE contexts")
        conn.execute("ALTER TABLE documents DROP COLUMN title")
        conn.execute("DELETE FROM migrations WHERE name = '0007_document_context'")
        conn.execute("DELETE FROM meta WHERE key = 'context_config'")
    conn.close()


def test_an_older_index_migrates_to_contexts_and_the_next_ingest_recomputes_them(tmp_path: Path) -> None:
    corpus = _filings(tmp_path / "c")
    index = tmp_path / "i.sqlite"
    ingest([corpus], index, manifest=corpus / "manifest.jsonl")
    with Index.open(index) as ix:
        fresh = dict(ix.store.conn.execute(CONTEXTS_BY_DOC))
    _downgrade(index)
    with Index.open(index) as ix:  # migrates: a first context from metadata values and the id
        migrated = dict(ix.store.conn.execute(CONTEXTS_BY_DOC))
        hits = search(ix, "What were Fabrikam's FY2018 capital expenditures?").hits
    assert set(migrated) == set(fresh)
    assert "Fabrikam Group" in migrated["r2.txt"] and "r2.txt" in migrated["r2.txt"]
    assert hits[0].citations[0].doc == "r2.txt"
    ingest([corpus], index, manifest=corpus / "manifest.jsonl")  # nothing changed but the context rule
    with Index.open(index) as ix:
        again = dict(ix.store.conn.execute(CONTEXTS_BY_DOC))
    assert again == fresh


def test_contexts_follow_documents_through_changes_and_removal(tmp_path: Path) -> None:
    corpus = _filings(tmp_path / "c")
    index = tmp_path / "i.sqlite"
    manifest = corpus / "manifest.jsonl"
    ingest([corpus], index, manifest=manifest)
    rows = [json.loads(line) for line in manifest.read_text(encoding="utf-8").splitlines()]
    rows[0]["company"] = "Northwind Traders"
    manifest.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    ingest([corpus], index, manifest=manifest)
    from chunkdedup.ingestion.remove import remove_documents

    remove_documents(index, ["r3.txt"])
    with Index.open(index) as ix:
        ctx = dict(ix.store.conn.execute(CONTEXTS_BY_DOC))
        hits = search(ix, "Northwind capital expenditures").hits
    assert set(ctx) == {"r1.txt", "r2.txt"}
    assert "Northwind" in ctx["r1.txt"] and "Contoso" not in ctx["r1.txt"]
    assert hits[0].citations[0].doc == "r1.txt"


def test_context_settings_change_recomputes_every_context(tmp_path: Path) -> None:
    corpus = _filings(tmp_path / "c")
    index = tmp_path / "i.sqlite"
    ingest([corpus], index, manifest=corpus / "manifest.jsonl")
    only_files = Config(retrieval=RetrievalConfig(context=("filename",)))
    ingest([corpus], index, manifest=corpus / "manifest.jsonl", config=only_files)
    with Index.open(index) as ix:
        ctx = dict(ix.store.conn.execute(CONTEXTS_BY_DOC))
    assert ctx == {"r1.txt": "r1 1", "r2.txt": "r2 2", "r3.txt": "r3 3"}


# -- eval says when the index cannot know what the questions name ---------------------------------


def test_eval_warns_when_question_names_and_years_are_nowhere_in_the_index(tmp_path: Path) -> None:
    from chunkdedup.evaluate import evaluate
    from chunkdedup.evaluate.coverage import identity_terms
    from chunkdedup.evaluate.golden import Question, Relevant

    assert identity_terms("What were Fabrikam's FY2018 capex and Q3 numbers?") == ["Fabrikam", "2018", "Q3"]
    corpus = _filings(tmp_path / "c")
    golden = [
        Question("1", "What were Fabrikam's FY2018 capital expenditures?", (Relevant("r2.txt"),)),
        Question("2", "What were Initech's FY2021 capital expenditures?", (Relevant("r1.txt"),)),
    ]
    with_manifest = tmp_path / "m.sqlite"
    ingest([corpus], with_manifest, manifest=corpus / "manifest.jsonl")
    without = tmp_path / "n.sqlite"
    ingest([corpus], without)
    named = evaluate(golden[:1], with_manifest, baseline=tmp_path / "mb.sqlite")
    assert named.meta["warnings"] == [] and named.meta["identity_gaps"] == []
    bare = evaluate(golden, without, baseline=tmp_path / "nb.sqlite")
    gaps = {g["term"]: g["questions"] for g in bare.meta["identity_gaps"]}
    assert gaps == {"Fabrikam": 1, "Initech": 1, "2021": 1}  # 2018 is in a text; the names nowhere
    assert "Initech" in bare.meta["warnings"][0] and "manifest" in bare.meta["warnings"][0]
    # the baseline ranks on text alone (no context, no word parts); the index with context
    assert named.runs["index"]["mrr"] == 1.0 and named.runs["baseline"]["mrr"] < 1.0


# -- real data ------------------------------------------------------------------------------------


@pytest.mark.slow
def test_sec_filings_get_their_identity_from_the_manifest_and_the_running_footer(tmp_path: Path) -> None:
    docs = DATA / "sec-10q" / "docs"
    index = tmp_path / "sec.sqlite"
    ingest([docs], index, manifest=DATA / "sec-10q" / "manifest.jsonl")
    with Index.open(index) as ix:
        ctx = dict(ix.store.conn.execute(CONTEXTS_BY_DOC))
        q = "What percentage of Apple's total revenue did the Services segment contribute in Q3 2023?"
        best = search(ix, q).context[0].doc
        off = search(ix, q, config=dataclasses.replace(QueryConfig(), context_weight=0)).hits
    assert len(ctx) == 20
    apple = ctx["docs/2023 Q3 AAPL.pdf"]
    assert "Apple Inc." in apple and "AAPL" in apple and "2023" in apple and "Q3" in apple
    assert "Form" in apple  # the stripped running footer "Apple Inc. | Q3 2023 Form 10-Q | n"
    assert best == "docs/2023 Q3 AAPL.pdf"
    assert off  # the question has hits without context too; the golden-set gain is in the benchmark


def test_contexts_made_once_per_input_are_those_of_each_document() -> None:
    # document_contexts makes a context once per distinct (file, title, running lines, metadata):
    # equal values of other types (1, 1.0, True, "1") are other inputs, with other contexts
    config = RetrievalConfig()
    inputs = [
        ({"year": 1}, None, ()),
        ({"year": True}, None, ()),
        ({"year": 1.0}, None, ()),
        ({"year": "1"}, "Annual Report", ("Acme | 2018",)),
        ({}, None, ()),
    ]
    sources = [
        ContextSource(f"d{i}", f"/in/acme_{i % 2}.jsonl", meta, title, running)
        for i, (meta, title, running) in enumerate(inputs * 3)
    ]
    got = document_contexts(sources, config)
    assert got == [document_context(s, config) for s in sources]
    assert len(set(got[:5])) == 5  # the five inputs differ, so do their contexts


# -- the contexts' full-text index keeps no per-row sizes (migration 0038) -----------------------


def test_contexts_keep_no_token_counts_and_rank_as_an_index_that_kept_them(tmp_path: Path) -> None:
    """Context scores count the contexts holding a term and read lengths from ``contexts``: the FTS5
    table's per-row token counts (``_docsize``, 10 bytes a record of 100k tiny records) are not kept,
    and an index that kept them ranks the same once migrated, and after an edit."""
    corpus = _filings(tmp_path / "c")
    index = tmp_path / "i.sqlite"
    ingest([corpus], index, manifest=corpus / "manifest.jsonl")
    questions = ["What were Fabrikam's FY2018 capital expenditures?", "Contoso 10-K plants", "industry note"]

    def ranked() -> list[object]:
        with Index.open(index) as ix:
            return [search(ix, q).to_json(explain=True) for q in questions]

    def tables() -> set[str]:
        conn = sqlite3.connect(index)
        try:
            rows = conn.execute("SELECT name FROM sqlite_master WHERE name LIKE 'contexts_fts%'")
            return {r[0] for r in rows}
        finally:
            conn.close()

    fresh = ranked()
    assert "contexts_fts_docsize" not in tables() and "contexts_fts_data" in tables()
    assert fresh[0]["context"][0]["doc"] == "r2.txt"
    conn = sqlite3.connect(index)
    conn.executescript(BEFORE_0038)
    conn.close()
    assert "contexts_fts_docsize" in tables()
    assert ranked() == fresh  # opening migrates it
    assert "contexts_fts_docsize" not in tables()
    (corpus / "r1.txt").write_text("Capital expenditures were 1,600 million for plants.\n", encoding="utf-8")
    ingest([corpus], index, manifest=corpus / "manifest.jsonl")
    conn = sqlite3.connect(index)
    conn.execute("INSERT INTO contexts_fts(contexts_fts, rank) VALUES('integrity-check', 1)")
    conn.close()
    with Index.open(index) as ix:
        assert search(ix, questions[0]).hits[0].citations[0].doc == "r2.txt"
