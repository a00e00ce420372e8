"""Query: filters through sources (an access-control boundary), versions, the safety net, the CLI."""

from __future__ import annotations

import json
import re
import sqlite3
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunkdedup import ChunkConfig, Config, Index, ingest
from chunkdedup.cli import main
from chunkdedup.config import NearConfig, QueryConfig
from chunkdedup.errors import ConfigError, InputError
from chunkdedup.normalize import exact_key
from chunkdedup.query import (
    Citation,
    Filter,
    ReciprocalRankFusion,
    Scored,
    content_terms,
    dedup_chunks,
    fts_query,
    query,
    search,
)
from chunkdedup.query.records import Candidate
from chunkdedup.query.retrieve import STOP_WORDS
from chunkdedup.query.safety import ShingleJaccard, cap_step, dedup_step, mmr_step
from chunkdedup.store.schema import CLEAN_TEXT

# -- dedup_chunks: exactly the contract ---------------------------------------------------------


def test_dedup_chunks_contract_on_hand_examples() -> None:
    assert dedup_chunks([]) == []
    chunks = ["Refunds  in 30 days.", "Other.", "refunds in\n30 days. ", " REFUNDS IN 30 DAYS.", "other."]
    assert dedup_chunks(chunks) == ["Refunds  in 30 days.", "Other."]
    # the original strings come back, in the original order, first occurrence kept
    assert dedup_chunks(["b", "a", "B ", "c", "A"]) == ["b", "a", "c"]
    # digits and punctuation are part of the key: versions stay apart
    assert dedup_chunks(["30 days.", "45 days.", "30 days"]) == ["30 days.", "45 days.", "30 days"]
    # every whitespace run (tabs, newlines, non-breaking space) collapses to one space
    assert dedup_chunks(["a\tb", "a \u00a0\n b", "a  b"]) == ["a\tb"]
    assert dedup_chunks(["", "  ", "x"]) == ["", "x"]


@given(st.lists(st.text(alphabet="aAbB \t\n1", max_size=6), max_size=12))
def test_dedup_chunks_properties(chunks: list[str]) -> None:
    out = dedup_chunks(chunks)
    assert dedup_chunks(out) == out  # idempotent
    keys = [" ".join(c.lower().split()) for c in out]
    assert len(keys) == len(set(keys))
    it = iter(chunks)
    assert all(any(c is o for c in it) for o in out)  # a subsequence of the input, same objects
    assert {" ".join(c.lower().split()) for c in chunks} == set(keys)


# -- the safety net on hand-built candidates ------------------------------------------------------


def cand(cid: str, score: float, text: str, *docs: str) -> Candidate:
    cites = tuple(Citation(d, 1, 0, len(text), "exact", 1.0) for d in docs)
    return Candidate(cid, score, text, cites)


def test_dedup_step_keeps_the_best_ranked_copy() -> None:
    kept, dropped = dedup_step([cand("a", 3.0, "Same  text", "d1"), cand("b", 2.0, "same text", "d2")])
    assert [c.id for c in kept] == ["a"]
    assert dropped[0].id == "b" and dropped[0].step == "dedup_chunks" and "a" in dropped[0].reason


def test_cap_per_source_document() -> None:
    cands = [
        cand("a", 5.0, "one", "d1"),
        cand("b", 4.0, "two", "d1"),
        cand("c", 3.0, "three", "d1"),  # d1 is full: dropped
        cand("d", 2.0, "four", "d1", "d2"),  # d2 has room: kept, charged to d2
        cand("e", 1.0, "five", "d2"),
        cand("f", 0.5, "six", "d2", "d1"),
    ]
    kept, dropped = cap_step(cands, 2)
    assert [c.id for c in kept] == ["a", "b", "d", "e"]
    assert [(d.id, d.step) for d in dropped] == [("c", "cap"), ("f", "cap")]
    assert "d1" in dropped[0].reason and "2" in dropped[0].reason
    assert [c.id for c in cap_step(cands, 10)[0]] == [c.id for c in cands]


def test_mmr_prefers_a_different_passage_over_a_near_copy() -> None:
    base = "the retention period for personal data is one year after the application is closed"
    cands = [
        cand("a", 10.0, base, "d1"),
        cand("b", 9.9, base + " unless the law says otherwise", "d2"),  # a near copy of a
        cand("c", 8.0, "security incidents are reported to the response team within a day", "d3"),
    ]
    sim = ShingleJaccard(5)
    chosen, dropped = mmr_step(cands, 2, 0.5, sim)
    assert [c.id for c in chosen] == ["a", "c"]
    assert dropped[0].id == "b" and dropped[0].step == "mmr" and "similarity" in dropped[0].reason
    # lambda 1 is pure relevance: the near copy comes back
    assert [c.id for c in mmr_step(cands, 2, 1.0, sim)[0]] == ["a", "b"]
    assert mmr_step(cands, 5, 0.5, sim)[1] == []  # k above the pool: nothing dropped
    m = sim.matrix([base, base, "other words entirely here now"])
    assert m[0][1] == 1.0 and m[0][2] == 0.0 and m[2][2] == 1.0


def test_mmr_never_drops_the_version_in_force_for_an_old_one() -> None:
    base = "the retention period for personal data is one year after the application is closed"
    old = replace(cand("old", 10.0, base, "v2025"), effective_date="2025-05-28", superseded_by="2026-03-17")
    newer = base + " unless the law says otherwise"
    new = replace(cand("new", 9.9, newer, "v2026"), effective_date="2026-03-17")
    other = cand("c", 8.0, "security incidents are reported to the response team within a day", "d3")
    chosen, _ = mmr_step([old, new, other], 2, 0.5, ShingleJaccard(5))
    assert [c.id for c in chosen] == ["old", "new"]  # beside it, not instead of it
    # the other way round the rule is MMR's own: an old wording is redundant next to the current one
    chosen, dropped = mmr_step([replace(new, score=10.1), old, other], 2, 0.5, ShingleJaccard(5))
    assert [c.id for c in chosen] == ["new", "c"] and dropped[0].id == "old"


def test_label_policy_keeps_the_current_wording_beside_an_old_one(policy_index: Path) -> None:
    """site-policy: the 2025 Sponsors wording outranks the 2026 one, which MMR dropped as 0.81-similar."""
    q = "GitHub Sponsors payout minimum threshold"
    with Index.open(policy_index) as ix:
        current = search(ix, q, k=4).hits[0]
        labelled = search(ix, q, k=4, versions="label").hits
    assert current.superseded_by is None
    assert any(h.superseded_by for h in labelled)  # old wording is shown, with its dates
    assert current.id in [h.id for h in labelled]


def test_reciprocal_rank_fusion() -> None:
    class Fixed:
        def __init__(self, ids: list[str]) -> None:
            self.ids = ids

        def retrieve(self, text: str, limit: int) -> list[Scored]:
            return [Scored(i, 1.0 / (n + 1)) for n, i in enumerate(self.ids[:limit])]

    fused = ReciprocalRankFusion([Fixed(["a", "b", "c"]), Fixed(["b", "c", "a"])]).retrieve("q", 2)
    assert [s.id for s in fused] == ["b", "a"]
    assert fused[0].score == 1 / 61 + 1 / 62


# -- query formulation and filter parsing ---------------------------------------------------------


def test_fts_query_quotes_user_text_and_drops_stop_words() -> None:
    assert fts_query("What is the refund policy?") == '"refund" OR "policy"'
    assert fts_query("the of and") == '"the" OR "of" OR "and"'  # all stop words: keep them
    assert fts_query("?!") is None
    hostile = 'text:secret OR "x" NEAR(a b) c* ^d -e AND NOT f'
    assert all(t.startswith('"') and t.endswith('"') for t in (fts_query(hostile) or "").split(" OR "))


def test_hostile_query_text_is_read_as_words(policy_index: Path) -> None:
    """FTS5's syntax in a question (a column filter, NEAR, a prefix star, AND/OR/NOT, stray quotes and
    parentheses) is no syntax: a question finds what its words find, and one without words finds nothing."""
    with Index.open(policy_index) as ix:
        for text in ['"', "text:privacy", "NEAR(a b)", "privacy*", "(", "AND OR NOT", "ß ü 漢字", ""]:
            words = re.sub(r"[^\w\s]", " ", text)
            hits = [h.id for h in search(ix, text).hits]
            assert hits == [h.id for h in search(ix, words).hits], text
            assert bool(hits) == bool(words.strip()), text


def test_filter_parsing_and_semantics() -> None:
    f = Filter.parse(["department=a", "department=b", "effective_date>=2024-01-01", "level<=10"])
    ok = {"department": "b", "effective_date": "2024-06-01", "level": 9}
    assert f.passes(ok)
    assert not f.passes({**ok, "department": "c"})  # no OR branch of department holds
    assert not f.passes({**ok, "effective_date": "2023-12-31"})  # a different key: AND
    assert not f.passes({**ok, "level": 11})  # numbers compare as numbers (9 < 10 < 11)
    assert not f.passes({"department": "a", "effective_date": "2024-06-01"})  # missing key fails
    assert Filter.parse({"department": ["a", "b"], "flag": True}).passes({"department": "a", "flag": True})
    assert not Filter.parse(None)
    for bad in ["department", "=x", "department=", ">=3", "a<b"]:
        with pytest.raises(InputError, match="KEY=VALUE"):
            Filter.parse([bad])


def test_filter_bounds_on_one_key_are_a_range() -> None:
    """Two bounds on one key AND (a range), while its equalities still OR; an OR of the bounds would
    pass every date (the audit's `--where effective_date>=2024-01-01 --where effective_date<=2024-12-31`
    returned 2023 and 2025 versions)."""
    year = Filter.parse(["effective_date>=2024-01-01", "effective_date<=2024-12-31"])
    assert year.passes({"effective_date": "2024-06-30"})
    assert not year.passes({"effective_date": "2023-12-27"})
    assert not year.passes({"effective_date": "2025-12-08"})
    mixed = Filter.parse(["level=1", "level=3", "level<=2"])  # (1 OR 3) AND <= 2
    assert mixed.passes({"level": 1}) and not mixed.passes({"level": 3}) and not mixed.passes({"level": 2})
    assert str(year) == "(effective_date<=2024-12-31) AND (effective_date>=2024-01-01)"


def test_filter_refuses_not_equal_and_compares_only_decimals_as_numbers() -> None:
    with pytest.raises(InputError, match="no !="):
        Filter.parse(["department!=privacy-policies"])
    with pytest.raises(InputError, match="no !="):
        Filter.parse(["department != legal"])
    # a hex version is a string: float() read "480e3063" as infinity and "nan" as unordered
    assert Filter.parse(["version<=5"]).passes({"version": "480e3063"})  # "4" < "5" as strings
    assert not Filter.parse(["version>=5"]).passes({"version": "480e3063"})
    assert Filter.parse(["level>=10"]).passes({"level": " 12 "})  # 12 >= 10, not " 12" < "10"
    assert Filter.parse(["level>=-2.5"]).passes({"level": -1})
    assert not Filter.parse(["size<=1_000"]).passes({"size": 999})  # "999" > "1_000" as strings


def test_query_config_validates() -> None:
    with pytest.raises(ConfigError, match=r"query\.versions"):
        QueryConfig(versions="newest")
    with pytest.raises(ConfigError, match=r"query\.pool"):
        QueryConfig(k=10, pool=5)
    assert Config.from_dict({"query": {"k": 3, "cap_per_doc": 1}}).query.k == 3


# -- the site-policy corpus: departments, versions, labels ----------------------------------------


def _docs(index: Path) -> dict[str, dict[str, Any]]:
    with Index.open(index) as ix:
        return {d["doc"]: d["metadata"] for d in ix.documents()}


def _newest(docs: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    newest: dict[str, str] = {}
    for meta in docs.values():
        fam, date = meta.get("family"), meta.get("effective_date")
        if fam and date:
            newest[fam] = max(newest.get(fam, ""), str(date))
    return newest


QUESTIONS = [
    "How long is personal data retained?",
    "What happens if I violate the acceptable use policy?",
    "How do I report a security vulnerability?",
    "Can GitHub remove content for copyright infringement?",
    "What are the rules for using GitHub Copilot?",
]


def test_department_filters(policy_index: Path) -> None:
    docs = _docs(policy_index)
    with Index.open(policy_index) as ix:
        for q in QUESTIONS:
            hits = query(ix, q, where={"department": "privacy-policies"})
            assert hits
            for h in hits:
                assert h.citations
                assert {docs[c.doc]["department"] for c in h.citations} == {"privacy-policies"}
                assert all(c.metadata["department"] == "privacy-policies" for c in h.citations)
            two = query(ix, q, where=["department=privacy-policies", "department=security-policies"], k=10)
            depts = {docs[c.doc]["department"] for h in two for c in h.citations}
            assert depts <= {"privacy-policies", "security-policies"}
        # different keys AND: a department and a family inside another department give nothing
        none = query(ix, "data", where=["department=security-policies", "family=github-privacy-statement"])
        assert none == []


def test_latest_version_policy_cites_only_current_versions(policy_index: Path) -> None:
    docs = _docs(policy_index)
    newest = _newest(docs)
    superseded_seen = False
    with Index.open(policy_index) as ix:
        for q in QUESTIONS:
            for h in query(ix, q, k=8):  # latest is the default
                for c in h.citations:
                    meta = docs[c.doc]
                    if meta.get("family"):
                        assert meta["effective_date"] == newest[meta["family"]], (q, c.doc)
                    assert c.superseded_by is None
                    assert h.superseded_by is None
            result = search(ix, q, k=8, versions="all")
            superseded_seen |= any(c.superseded_by for h in result.hits for c in h.citations)
            latest = search(ix, q, k=8)
            for d in latest.dropped:
                if d.step == "versions":
                    assert "superseded" in d.reason
    assert superseded_seen, "the corpus holds old versions: `all` must be able to show them"


def test_a_documents_next_version_read_alone_is_its_familys(policy_index: Path) -> None:
    """Without a filter the next newer date is read with the candidates' documents alone
    (``reads.documents(next_versions=True)``): the same date as over their families' every version."""
    from chunkdedup.store import reads

    with Index.open(policy_index) as ix:
        ids = [r[0] for r in ix.store.conn.execute("SELECT doc_id FROM documents")]
        docs = reads.documents(ix.store, ids)
        rows = reads.family_documents(ix.store, sorted({d.family for d in docs if d.family}))
        expect: dict[str, str | None] = {}
        for r in rows:
            if r.family and r.effective_date:
                newer = [
                    o.effective_date for o in rows
                    if o.family == r.family and o.effective_date and o.effective_date > r.effective_date
                ]
                expect[r.doc_id] = min(newer) if newer else None
        read = reads.documents(ix.store, ids, next_versions=True)
        assert {r.doc_id: r.next_version for r in read if r.family and r.effective_date} == expect
        assert all(r.next_version is None for r in read if not (r.family and r.effective_date))
        assert sum(v is not None for v in expect.values()) > 50 and None in expect.values()


def test_latest_within_the_filter_answers_as_of_a_date(policy_index: Path) -> None:
    docs = _docs(policy_index)
    cutoff = "2023-01-01"
    as_of = _newest({d: m for d, m in docs.items() if str(m.get("effective_date", "9")) <= cutoff})
    with Index.open(policy_index) as ix:
        hits = query(ix, QUESTIONS[0], where=[f"effective_date<={cutoff}"], k=8)
    assert hits
    for h in hits:
        for c in h.citations:
            meta = docs[c.doc]
            assert meta["effective_date"] <= cutoff
            assert meta["effective_date"] == as_of[meta["family"]]


def test_a_list_value_passes_when_one_of_its_members_does(policy_index: Path) -> None:
    """site-policy's front matter `topics: [Policy, Legal]` is stored as JSON text: `topics=Legal`
    matched nothing (only the literal `topics=["Policy", "Legal"]` did)."""
    assert Filter.parse(["topics=Legal"]).passes({"topics": '["Policy", "Legal"]'})
    assert not Filter.parse(["topics=Leg"]).passes({"topics": '["Policy", "Legal"]'})
    assert Filter.parse(["level>=3"]).passes({"level": "[1, 4]"})
    assert not Filter.parse(["topics=a"]).passes({"topics": '[{"a": 1}]'})  # not a list of scalars
    assert Filter.parse(["note=[draft]"]).passes({"note": "[draft]"})  # not JSON: the text itself
    docs = _docs(policy_index)
    with Index.open(policy_index) as ix:
        hits = search(ix, "legal requests for user data", where=["topics=Legal"], k=5).hits
    cited = {c.doc for h in hits for c in h.citations}
    assert cited and all("Legal" in json.loads(str(docs[d]["topics"])) for d in cited)


def test_a_date_range_on_the_command_line_keeps_only_that_range(policy_index: Path) -> None:
    """The audit's command: two bounds on effective_date are the year 2024, not an OR of all dates."""
    docs = _docs(policy_index)
    args = ["query", "terms of service", "--index", str(policy_index), "--versions", "all", "-k", "10",
            "--where", "effective_date>=2024-01-01", "--where", "effective_date<=2024-12-31", "--json"]
    out = CliRunner().invoke(main, args)
    assert out.exit_code == 0, out.output
    cited = [c["doc"] for hit in json.loads(out.output)["hits"] for c in hit["citations"]]
    assert cited, "site-policy has 2024 versions of its terms"
    assert all("2024-01-01" <= str(docs[d]["effective_date"]) <= "2024-12-31" for d in cited), cited
    outside = [d for d, m in docs.items() if not str(m.get("effective_date", "")).startswith("2024")]
    assert outside, "the corpus holds other years: the bounds must exclude them"


def test_label_policy_puts_dates_next_to_the_text(policy_index: Path) -> None:
    with Index.open(policy_index) as ix:
        result = search(ix, "How long do you retain candidate personal information?", k=8, versions="label")
    old = [h for h in result.hits if h.superseded_by]
    assert old, "an old clause on candidate data retention should be labelled"
    for h in old:
        assert h.effective_date is not None and h.effective_date < h.superseded_by  # type: ignore[operator]
    out = result.to_json()
    assert all({"effective_date", "superseded_by"} <= set(hit) for hit in out["hits"])
    runner = CliRunner()
    args = ["query", "How long do you retain candidate personal information?", "--index", str(policy_index)]
    text = runner.invoke(main, [*args, "-k", "8", "--versions", "label"]).output
    assert f"[effective {old[0].effective_date}, superseded by {old[0].superseded_by}]" in text
    assert "superseded by" not in runner.invoke(main, [*args, "-k", "8"]).output


def test_scores_full_precision_and_no_safety_net(policy_index: Path) -> None:
    with Index.open(policy_index) as ix:
        text_only = QueryConfig(context_weight=0)  # with context the score adds its context score
        raw = search(ix, QUESTIONS[1], k=5, safety_net=False, config=text_only, versions="all")
        net = search(ix, QUESTIONS[1], k=5, config=text_only)
        # a cluster is placed by its best-scoring copy (no filter and every version: every copy may
        # place it; under "latest" a copy only in a superseded version does not)
        bm25 = min(
            r[0]
            for r in ix.store.conn.execute(
                "SELECT bm25(groups_fts), g.canonical_id FROM groups_fts"
                " JOIN groups g ON g.gid=groups_fts.rowid WHERE groups_fts MATCH ?",
                (fts_query(QUESTIONS[1]),),
            )
            if r[1] == raw.hits[0].id
        )
    assert raw.hits[0].score == -bm25  # not rounded anywhere
    assert [h.score for h in raw.hits] == sorted((h.score for h in raw.hits), reverse=True)
    assert [h.rank for h in net.hits] == [1, 2, 3, 4, 5]
    assert {d.step for d in raw.dropped} <= {"versions", "rank"}


# -- variants recorded by the near tier are versions ----------------------------------------------


def test_variants_are_treated_as_versions(tmp_path: Path) -> None:
    corpus = tmp_path / "c"
    corpus.mkdir()
    (corpus / "old.txt").write_text("Refunds are paid within 30 days of the request.\n", encoding="utf-8")
    (corpus / "new.txt").write_text("Refunds are paid within 45 days of the request.\n", encoding="utf-8")
    (corpus / "manifest.jsonl").write_text(
        '{"path": "old.txt", "effective_date": "2023-01-01"}\n'
        '{"path": "new.txt", "effective_date": "2024-01-01"}\n',
        encoding="utf-8",
    )
    index = tmp_path / "i.sqlite"
    ingest([corpus], index, manifest=corpus / "manifest.jsonl")
    with Index.open(index) as ix:
        ids = {r["sources"][0]["doc"]: r["id"] for r in ix.export()}
    conn = sqlite3.connect(index)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if "variants" in tables:
        conn.execute("DELETE FROM variants")
    else:
        conn.execute("CREATE TABLE variants(a TEXT, b TEXT, similarity REAL, differing TEXT)")
    if "groups" in tables:
        group = dict(conn.execute("SELECT canonical_id, id FROM groups").fetchall())
        a, b = group[ids["old.txt"]], group[ids["new.txt"]]
    else:
        a, b = ids["old.txt"], ids["new.txt"]
    conn.execute(
        'INSERT INTO variants(a, b, similarity, differing) VALUES (?, ?, 0.9, \'["30", "45"]\')', (a, b)
    )
    conn.commit()
    conn.close()
    with Index.open(index) as ix:
        latest = search(ix, "refunds paid request", k=5)
        label = search(ix, "refunds paid request", k=5, versions="label")
        only_old = query(ix, "refunds paid request", where={"doc": "old.txt"})
    assert [h.id for h in latest.hits] == [ids["new.txt"]]
    assert latest.dropped[0].step == "versions" and ids["new.txt"] in latest.dropped[0].reason
    old = next(h for h in label.hits if h.id == ids["old.txt"])
    assert (old.effective_date, old.superseded_by) == ("2023-01-01", "2024-01-01")
    assert [h.id for h in only_old] == [ids["old.txt"]]  # the newer variant is outside the filter


# -- the no-leak property: random corpora, random filters -----------------------------------------

SENTENCES = [
    "Refunds are paid within 30 days of the request.",
    "Refunds are paid within 45 days of the request.",
    "Laptops must be encrypted and locked when unattended.",
    "Visitors sign in at the front desk and wear a badge.",
    "Personal data is retained for one year after the account closes.",
    "Security incidents are reported to the response team at once.",
    "Expenses above the limit need approval from a director.",
    "Travel is booked through the approved agency only.",
]
WORDS = sorted({w.strip(".").lower() for s in SENTENCES for w in s.split()})
KEYS = {
    "department": ["legal", "hr", "it"],
    "family": ["f1", "f2"],
    "effective_date": ["2022-01-01", "2023-06-30", "2024-02-29"],
    "level": ["1", "2", "10"],
}

doc_meta = st.fixed_dictionaries(
    {"department": st.sampled_from(KEYS["department"])},
    optional={
        "family": st.sampled_from(KEYS["family"]),
        "effective_date": st.sampled_from(KEYS["effective_date"]),
        "level": st.sampled_from([1, 2, 10]),
    },
)
doc_strategy = st.tuples(st.lists(st.sampled_from(SENTENCES), min_size=1, max_size=4), doc_meta)
condition = st.one_of(
    st.builds(
        lambda k, op, v: f"{k}{op}{v}",
        st.sampled_from(sorted(KEYS)),
        st.sampled_from(["=", ">=", "<="]),
        st.sampled_from(sorted({v for vs in KEYS.values() for v in vs})),
    ),
    st.builds(lambda i: f"doc=d{i}.txt", st.integers(0, 5)),
)
query_strategy = st.tuples(
    st.one_of(
        st.sampled_from(SENTENCES), st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join)
    ),
    st.lists(condition, max_size=3),
    st.sampled_from(["latest", "label", "all"]),
    st.booleans(),
)


def oracle_passes(conditions: Sequence[str], fields: Mapping[str, Any]) -> bool:
    """An independent reading of the filter rules, for the property test."""
    groups: dict[str, list[tuple[str, str]]] = {}
    for c in conditions:
        for op in (">=", "<=", "="):
            if op in c:
                key, value = c.split(op, 1)
                groups.setdefault(key, []).append((op, value))
                break
    for key, conds in groups.items():
        if key not in fields or fields[key] is None:
            return False
        actual = str(fields[key])

        def holds(op: str, value: str, actual: str = actual) -> bool:
            if op == "=":
                return actual == value
            try:
                a, b = float(actual), float(value)
            except ValueError:
                a, b = actual, value  # type: ignore[assignment]
            return a >= b if op == ">=" else a <= b

        if not any(holds(op, v) for op, v in conds):
            return False
    return True


#: one word per document, in its metadata only (so in its context, never in any text)
TAGS = ("zircon", "quartz", "garnet", "beryl", "topaz", "jasper", "opal", "onyx")


def build_corpus(folder: Path, docs: Sequence[tuple[list[str], dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    folder.mkdir()
    lines, fields = [], {}
    for i, (sentences, meta) in enumerate(docs):
        name = f"d{i}.txt"
        (folder / name).write_text("\n\n".join(sentences) + "\n", encoding="utf-8")
        tagged = {**meta, "tag": TAGS[i]}
        lines.append(json.dumps({"path": name, **tagged}))
        fields[name] = {"doc": name, **tagged}
    (folder / "manifest.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return fields


def assert_no_leak(
    ix: Index,
    text: str,
    conditions: list[str],
    policy: str,
    net: bool,
    fields: Any,
    retriever: str = "auto",
    config: QueryConfig | None = None,
) -> None:
    allowed = {d for d, f in fields.items() if oracle_passes(conditions, f)}
    page_sql = f"SELECT group_concat({CLEAN_TEXT}, ' ') FROM pages WHERE doc_id=?"
    content = {d: exact_key(ix.store.conn.execute(page_sql, (d,)).fetchone()[0] or "") for d in allowed}
    sources = {r["id"]: {s["doc"] for s in r["sources"]} for r in ix.export()}
    result = search(
        ix,
        text,
        where=conditions,
        versions=policy,  # type: ignore[arg-type]
        safety_net=net,
        retriever=retriever,
        config=config,
    )
    for h in result.hits:
        assert h.citations, h
        assert {c.doc for c in h.citations} <= allowed, (conditions, h)
        assert sources[h.id] & allowed
        assert any(exact_key(h.text) in body for body in content.values())
    for d in result.dropped:  # --explain shows nothing from outside the filter either
        assert sources[d.id] & allowed
    assert {m.doc for m in result.context} <= allowed
    if not allowed:
        assert result.hits == () and result.dropped == ()
    if retriever != "bm25":
        return  # a vector retriever embeds the whole question: another word moves every cosine
    # a word only in the context of documents outside the filter neither finds nor ranks anything
    outside = [f["tag"] for d, f in sorted(fields.items()) if d not in allowed and "tag" in f]
    if outside:
        options: dict[str, Any] = {"where": conditions, "versions": policy, "safety_net": net}
        alone = search(ix, " ".join(outside), retriever=retriever, **options)
        assert alone.hits == () and alone.dropped == () and alone.context == ()
        if not any(t not in STOP_WORDS for t in content_terms(text)):
            return  # a question of stop words only is asked by them; one more word would drop them
        probed = search(ix, f"{text} {outside[0]}", retriever=retriever, **options)
        assert probed.to_json(explain=True)["hits"] == result.to_json(explain=True)["hits"]
        assert probed.dropped == result.dropped and probed.context == result.context


def check_no_leak(
    docs: list[tuple[list[str], dict[str, Any]]], queries: list[Any], text_engine: str | None = None
) -> None:
    """Ingest ``docs`` (with ``text_engine``) and check every query with :func:`assert_no_leak`."""
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "c"
        fields = build_corpus(corpus, docs)
        index = Path(tmp) / "i.sqlite"
        ingest(
            [corpus],
            index,
            manifest=corpus / "manifest.jsonl",
            config=Config(chunk=ChunkConfig(target_words=8, max_words=20)),
            text_engine=text_engine,
        )
        with Index.open(index) as ix:
            assert (ix.text_handle() is not None) == (text_engine == "tantivy")  # the engine asked for
            for text, conditions, policy, net in queries:
                assert_no_leak(ix, text, conditions, policy, net, fields, retriever="bm25")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(doc_strategy, min_size=1, max_size=6), st.lists(query_strategy, min_size=1, max_size=6))
def test_filters_never_leak(docs: list[tuple[list[str], dict[str, Any]]], queries: list[Any]) -> None:
    check_no_leak(docs, queries)


# -- the CLI ---------------------------------------------------------------------------------------


def cli(*args: str, ok: bool = True) -> str:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert (result.exit_code == 0) == ok, result.output
    return result.output


def test_cli_query_json_shape(policy_index: Path) -> None:
    out = json.loads(cli("query", QUESTIONS[0], "--index", str(policy_index), "--json", "-k", "3"))
    assert set(out) == {"query", "hits"} and out["query"] == QUESTIONS[0]
    assert [h["rank"] for h in out["hits"]] == [1, 2, 3]
    for h in out["hits"]:
        assert set(h) == {"rank", "score", "id", "text", "citations"}
        assert isinstance(h["score"], float)
        for c in h["citations"]:
            assert set(c) == {"doc", "page", "start", "end", "relation", "similarity", "metadata"}
    with Index.open(policy_index) as ix:
        exported = {r["id"]: r for r in ix.export()}
    first = out["hits"][0]
    assert exported[first["id"]]["text"] == first["text"]
    assert all(c in exported[first["id"]]["sources"] for c in first["citations"])


def test_cli_query_explain_and_human_output(policy_index: Path) -> None:
    args = ["query", QUESTIONS[0], "--index", str(policy_index), "-k", "2"]
    out = json.loads(cli(*args, "--json", "--explain"))
    assert set(out) == {"query", "hits", "dropped", "context"}
    assert all(set(m) == {"doc", "score"} for m in out["context"])
    assert out["dropped"] and all(
        set(d) == {"id", "score", "text", "step", "reason"} and d["step"] in ("versions", "cap", "mmr")
        for d in out["dropped"]
    )
    human = cli(*args, "--explain")
    assert human.lstrip().startswith("1 ") and " p.1" in human and "dropped (" in human
    assert ("context matched" in human) == bool(out["context"])
    assert "not among the top 2 by MMR" in human
    no_net = json.loads(cli(*args, "--json", "--explain", "--no-safety-net"))
    assert {d["step"] for d in no_net["dropped"]} <= {"versions", "rank"}


def test_cli_query_where_errors_are_one_line(policy_index: Path) -> None:
    for bad in ["department", "=privacy", "effective_date>"]:
        out = cli("query", "data", "--index", str(policy_index), "--where", bad, ok=False)
        lines = [ln for ln in out.splitlines() if ln.strip()]
        assert len(lines) == 1 and lines[0].startswith("Error:") and "KEY=VALUE" in lines[0]
    out = cli("query", "data", "--index", str(policy_index), "--where", "department=nope")
    assert "no hits" in out


@pytest.mark.parametrize(
    "conditions",
    [
        ["department=privacy-policies"],
        ["department=privacy-policies", "department=github-terms", "effective_date>=2024-01-01"],
        ["effective_date<=2022-12-31"],
        ["family=github-general-privacy-statement", "version=current"],
        ["doc=LICENSE.md"],
    ],
)
def test_no_leak_on_the_policy_corpus(policy_index: Path, conditions: list[str]) -> None:
    fields = {d: {"doc": d, **m} for d, m in _docs(policy_index).items()}
    hits = 0
    with Index.open(policy_index) as ix:
        for q in QUESTIONS:
            for policy in ("latest", "label", "all"):
                assert_no_leak(ix, q, conditions, policy, True, fields)
                hits += len(search(ix, q, where=conditions, versions=policy).hits)  # type: ignore[arg-type]
    assert hits, "the property must not hold vacuously"


# -- near-merged copies: every copy is searchable, and only through its own sources ---------------

BASES = (
    "Every employee who handles customer records must complete the privacy training before access is"
    " granted and must repeat it each year so that the handling of personal information stays consistent"
    " with the obligations described in this policy and in the data protection addendum",
    "Contractors working on site must wear the identification badge issued by reception at all times and"
    " must return it at the end of the engagement so that the security team can keep an accurate record"
    " of who holds access to the premises",
)
MARKERS = ("alpaca", "bison", "cobra", "dingo", "egret", "ferret")  # one per document, in no base text
NEAR_TEST = Config(
    chunk=ChunkConfig(target_words=80, max_words=120),
    near=NearConfig(threshold=0.7, bands=32, rows=4),
)


def _marked(base: int, doc: int) -> str:
    words = BASES[base].split()
    words[20] = MARKERS[doc]  # a one-word edit: near copies of one another, not exact ones
    return " ".join(words) + ".\n"


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.tuples(st.integers(0, 1), st.sampled_from(KEYS["department"])), min_size=2, max_size=6),
    st.lists(
        st.tuples(st.sets(st.sampled_from(KEYS["department"])), st.integers(0, 5)), min_size=1, max_size=5
    ),
)
def test_near_copies_are_found_only_through_sources_that_pass(
    docs: list[tuple[int, str]], queries: list[tuple[set[str], int]]
) -> None:
    """A word only one near-merged copy holds finds its cluster exactly when that copy's document
    passes the filter; outside the filter it finds nothing (no probing another department's wording
    through a shared cluster). The words shown are the placing copy's (its own words, first cited);
    with ``words="canonical"`` the leader's where the caller may see it, else the placing copy's.
    Every other cited copy carries its own words and the words that differ."""
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "c"
        corpus.mkdir()
        lines, fields = [], {}
        for i, (base, dept) in enumerate(docs):
            (corpus / f"d{i}.txt").write_text(_marked(base, i), encoding="utf-8")
            lines.append(json.dumps({"path": f"d{i}.txt", "department": dept}))
            fields[f"d{i}.txt"] = {"doc": f"d{i}.txt", "department": dept}
        (corpus / "manifest.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
        index = Path(tmp) / "i.sqlite"
        ingest([corpus], index, manifest=corpus / "manifest.jsonl", config=NEAR_TEST)
        with Index.open(index) as ix:
            conn = ix.store.conn
            n_groups = conn.execute("SELECT COUNT(*) FROM groups").fetchone()[0]
            n_canon = conn.execute("SELECT COUNT(*) FROM canonicals").fetchone()[0]
            assert (n_groups, n_canon) == (len(docs), len({b for b, _ in docs}))  # copies merged
            # the leader of each base is its first document (order: doc, page, start)
            leader = {b: f"d{min(i for i, (bb, _) in enumerate(docs) if bb == b)}.txt" for b, _ in docs}
            for depts, marked in queries:
                conditions = [f"department={d}" for d in sorted(depts)]
                allowed = {d for d, f in fields.items() if not depts or f["department"] in depts}
                holder = marked < len(docs) and f"d{marked}.txt" in allowed
                for text in (MARKERS[marked], f"{MARKERS[marked]} policy"):
                    hits = search(ix, text, where=conditions, versions="all").hits
                    found = [h for h in hits if f"d{marked}.txt" in {c.doc for c in h.citations}]
                    assert len(found) == (1 if holder else 0), (text, depts, marked, hits)
                    if text == MARKERS[marked]:
                        assert len(hits) == len(found)  # the word is in no other text
                    if holder:
                        hit = found[0]
                        assert hit.rank == 1  # the copy holding the word places its cluster
                        base = docs[marked][0]
                        assert hit.citations[0].doc == f"d{marked}.txt"
                        assert hit.text == _marked(base, marked).strip()
                        for c in hit.citations[1:]:  # each other copy shows its own words
                            assert c.text == _marked(base, int(c.doc[1:-4])).strip()
                            assert f"+{MARKERS[int(c.doc[1:-4])]}" in c.differs
                            assert f"-{MARKERS[marked]}" in c.differs
                        canon = search(ix, text, where=conditions, versions="all", words="canonical").hits
                        hit = next(h for h in canon if f"d{marked}.txt" in {c.doc for c in h.citations})
                        expect = leader[base] if leader[base] in allowed else f"d{marked}.txt"
                        assert hit.citations[0].doc == expect
                        assert hit.text == _marked(base, int(expect[1:-4])).strip()
                        assert all(c.text is None for c in hit.citations if c.doc == expect)
                assert_no_leak(ix, MARKERS[marked], conditions, "all", True, fields)


# -- screening: skipping groups no passing document holds changes nothing ----------------------


@pytest.mark.parametrize(
    "conditions",
    [
        ["family=github-general-privacy-statement"],
        ["family=github-general-privacy-statement", "family=github-acceptable-use-policies"],
        ["family=github-acceptable-use-policies", "version=current"],
        ["doc=LICENSE.md"],
        ["department=privacy-policies", "effective_date>=2024-01-01"],
        ["version=current"],
        ["family=none-such"],
    ],
)
def test_screened_groups_answer_as_every_group_checked(
    policy_index: Path, conditions: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``Eligibility.visible`` (each group's own sources) only skips groups the full check would
    skip: every hit, score, citation and drop is what checking every retrieved group gives. The
    documents a ``family=``/``doc=`` filter names are ranked on their own (``Screening.among``), which
    answers the same while no depth cuts the scope short and no context boost applies (with one, the
    scope's ranking also boosts groups the whole-index passes never reach: tests/test_query_scope.py)."""
    from chunkdedup.config import QueryConfig
    from chunkdedup.query import eligible

    def answers(config: QueryConfig | None = None) -> list[str]:
        with Index.open(policy_index) as ix:
            return [
                repr(search(ix, q, where=conditions, versions=policy, safety_net=net, config=config))  # type: ignore[arg-type]
                for q in QUESTIONS
                for policy in ("latest", "label", "all")
                for net in (True, False)
            ]

    plain = QueryConfig(context_weight=0)
    named = answers(plain)
    monkeypatch.setattr(eligible, "MAX_NAMED_DOCUMENTS", 0)  # every group screened through its sources
    assert answers(plain) == named
    screened = answers()
    monkeypatch.setattr(eligible.Eligibility, "visible", lambda self, scored: list(scored))
    assert answers() == screened


def test_misuse_gets_a_chunkdedup_error_that_says_what_to_do(policy_index: Path) -> None:
    """The audit's misuses raised raw sqlite3/TypeError/AttributeError, or silently took k=1.5."""
    import numpy as np

    from chunkdedup.errors import IndexError_

    ix = Index.open(policy_index)
    assert [h.rank for h in search(ix, "personal data", k=np.int64(2)).hits] == [1, 2]
    for bad_k in (1.5, "3", True):
        with pytest.raises(ConfigError, match="k must be a whole number"):
            search(ix, "personal data", k=bad_k)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="is a tuple: give 'KEY=VALUE' strings"):
        search(ix, "personal data", where=[("department", "x")])  # type: ignore[list-item]
    with pytest.raises(ConfigError, match="takes an open Index"):
        search(str(policy_index), "personal data")  # type: ignore[arg-type]
    ix.close()
    ix.close()  # a second close does nothing
    for read in (lambda: search(ix, "personal data"), ix.stats, lambda: list(ix.records())):
        with pytest.raises(IndexError_, match="this Index is closed: open it again"):
            read()
