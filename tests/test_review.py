"""The review queue: near pairs listed for a person, decisions kept in the index, honoured by the next
ingest, posted from `chunkdedup serve` only with its own form, and printed as a config section."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

from chunkdedup import Config, Index, ingest
from chunkdedup.cli import main
from chunkdedup.store import Store
from chunkdedup.store.review import ReviewQueue
from chunkdedup.web import create_app
from review_corpus import groups, review_corpus


@pytest.fixture()
def corpus(tmp_path: Path) -> Path:
    return review_corpus(tmp_path / "c")


def _canonicals(index: Path) -> list[list[str]]:
    with Index.open(index) as ix:
        return sorted([s.doc for s in r.sources] for r in ix.records())


def test_the_queue_lists_merges_and_versions_with_their_reasons(corpus: Path, tmp_path: Path) -> None:
    index = tmp_path / "i.sqlite"
    ingest([corpus], index)
    g = groups(index)
    with Store.open(index, readonly=True) as store:
        merges = ReviewQueue(store).pairs("merges")
        variants = ReviewQueue(store).pairs("variants", reason="ordinal")
        assert ReviewQueue(store).pairs("variants", reason="name").total == 0
    assert [(p.a, p.b, p.relation) for p in merges.items] == [(g["a.txt"], g["c.txt"], "near")]
    assert merges.items[0].a_text.startswith("The customer") and "retains" in merges.items[0].b_text
    assert merges.items[0].cluster_groups == 2 and merges.items[0].decision is None
    [v] = variants.items
    assert {v.a, v.b} == {g["a.txt"], g["b.txt"]} and v.differing == ("-first", "+third")
    # each side says where it was first found: a person tells the documents (and their dates) apart
    m = merges.items[0]
    assert (m.a_side.doc, m.a_side.page, m.b_side.doc, m.b_side.page) == ("a.txt", 1, "c.txt", 1)
    assert m.a_side.sources == m.b_side.sources == 1 and m.a_side.effective_date is None
    assert {v.a_side.doc, v.b_side.doc} == {"a.txt", "b.txt"}
    with TestClient(create_app(index), base_url="http://localhost") as client:
        page = client.get("/review?kind=merges").text
        data = client.get("/review?kind=merges&format=json").json()
    assert ">a.txt</a> p.1" in page and ">c.txt</a> p.1" in page
    assert data["pairs"]["items"][0]["b_side"]["doc"] == "c.txt"


def test_decisions_are_honoured_by_the_next_ingest_and_can_be_cleared(corpus: Path, tmp_path: Path) -> None:
    index = tmp_path / "i.sqlite"
    ingest([corpus], index)
    g = groups(index)
    assert _canonicals(index) == [["a.txt", "c.txt"], ["b.txt"]]
    with Store.open(index) as store:
        ReviewQueue(store).decide(g["c.txt"], g["a.txt"], "apart")
        ReviewQueue(store).decide(g["a.txt"], g["b.txt"], "merge")
        assert [(o.a, o.b, o.decision) for o in ReviewQueue(store).overrides()] == sorted(
            [(*sorted((g["a.txt"], g["c.txt"])), "apart"), (*sorted((g["a.txt"], g["b.txt"])), "merge")]
        )
    ingest([corpus], index)  # no file changed: the decided groups are re-decided all the same
    assert _canonicals(index) == [["a.txt", "b.txt"], ["c.txt"]]
    with Index.open(index) as ix:
        reasons = {v["reason"] for r in ix.records() for v in ix.variants(r.id)}
    assert reasons == {"override"}
    # the same decisions as config, on a fresh index, give the same clusters
    out = CliRunner().invoke(main, ["review", "--index", str(index)])
    assert out.exit_code == 0, out.output
    config = tmp_path / "cfg.toml"
    config.write_text(out.output, encoding="utf-8")
    fresh = tmp_path / "fresh.sqlite"
    ingest([corpus], fresh, config=Config.load(config))
    assert _canonicals(fresh) == _canonicals(index)
    as_json = json.loads(CliRunner().invoke(main, ["review", "--index", str(index), "--json"]).output)
    assert sorted(d["decision"] for d in as_json) == ["apart", "merge"]
    with Store.open(index) as store:
        for o in ReviewQueue(store).overrides():
            ReviewQueue(store).forget(o.a, o.b)
    ingest([corpus], index)
    assert _canonicals(index) == [["a.txt", "c.txt"], ["b.txt"]]


def test_serve_lists_pairs_and_keeps_a_decision_posted_with_its_own_form(
    corpus: Path, tmp_path: Path
) -> None:
    index = tmp_path / "i.sqlite"
    ingest([corpus], index)
    g = groups(index)
    with TestClient(create_app(index), base_url="http://localhost") as client:
        page = client.get("/review?kind=variants")
        assert page.status_code == 200
        assert g["b.txt"] in page.text and "ordinal" in page.text and "<mark>third</mark>" in page.text
        data = client.get("/review?kind=merges&format=json").json()
        assert [(p["a"], p["b"]) for p in data["pairs"]["items"]] == [(g["a.txt"], g["c.txt"])]
        token = re.search(r'name="token" value="([^"]+)"', page.text)
        assert token is not None
        form = {"a": g["a.txt"], "b": g["c.txt"], "decision": "apart", "back": "/review?kind=merges"}
        refused = client.post("/review/decide", data={**form, "token": "forged"}, follow_redirects=False)
        assert refused.status_code == 403
        with Store.open(index, readonly=True) as store:
            assert ReviewQueue(store).overrides() == ()
        kept = client.post("/review/decide", data={**form, "token": token.group(1)}, follow_redirects=False)
        assert kept.status_code == 303 and kept.headers["location"] == "/review?kind=merges"
        assert "decided: apart" in client.get("/review?kind=merges").text
        bad = client.post("/review/decide", data={**form, "decision": "maybe", "token": token.group(1)})
        assert bad.status_code == 400
        assert client.get("/review?kind=everything").status_code == 400
    ingest([corpus], index)
    assert _canonicals(index) == [["a.txt"], ["b.txt"], ["c.txt"]]


def test_pairs_of_dated_versions_show_each_side_s_date_and_family(policy_index: Path) -> None:
    """On site-policy (a manifest of families and effective dates) a pair of versions shows which is the
    older: each side's document, date and family."""
    with Store.open(policy_index, readonly=True) as store:
        pairs = ReviewQueue(store).pairs("variants", limit=500).items
    dated = [p for p in pairs if p.a_side.effective_date and p.b_side.effective_date]
    assert dated, "site-policy's version pairs carry the manifest's dates"
    assert all(p.a_side.doc and p.b_side.doc and p.a_side.doc != p.b_side.doc for p in dated)
    assert any(p.a_side.family is not None and p.a_side.family == p.b_side.family for p in dated)


def test_a_decision_keeps_who_made_it_and_when(corpus: Path, tmp_path: Path) -> None:
    index = tmp_path / "i.sqlite"
    ingest([corpus], index)
    g = groups(index)
    with Store.open(index) as store:
        queue = ReviewQueue(store)
        queue.decide(g["a.txt"], g["c.txt"], "apart", by="  Ana Ruiz ")
        queue.decide(g["a.txt"], g["b.txt"], "merge")
        for bad in ("x" * 81, "Ana\nRuiz", "Ana\x1b[31m"):
            with pytest.raises(ValueError, match="reviewer's name"):
                queue.decide(g["b.txt"], g["c.txt"], "merge", by=bad)
        kept = {(o.decision, o.decided_by): o.decided_at for o in queue.overrides()}
    assert set(kept) == {("apart", "Ana Ruiz"), ("merge", None)}
    assert all(at is not None and at.endswith("+00:00") and at[:4].isdigit() for at in kept.values())
    with TestClient(create_app(index), base_url="http://localhost") as client:
        page = client.get("/review?kind=merges")
        token = re.search(r'name="token" value="([^"]+)"', page.text)
        assert token is not None
        form = {"a": g["a.txt"], "b": g["c.txt"], "decision": "merge", "token": token.group(1),
                "back": "/review?kind=merges", "by": "Bo"}
        answer = client.post("/review/decide", data=form, follow_redirects=False)
        assert answer.status_code == 303 and answer.headers["location"].endswith("by=Bo")
        shown = client.get(answer.headers["location"]).text
        assert "decided: merge</strong> by Bo on " in shown and 'name="by" value="Bo"' in shown
    runner = CliRunner()
    toml = runner.invoke(main, ["review", "--index", str(index)])
    assert toml.exit_code == 0 and f"# merge {min(g['a.txt'], g['c.txt'])}" in toml.output
    assert "by Bo on " in toml.output
    rows = json.loads(runner.invoke(main, ["review", "--index", str(index), "--json"]).output)
    assert {r["decided_by"] for r in rows} == {"Bo", None} and all(r["decided_at"] for r in rows)


def test_an_index_from_before_who_and_when_keeps_its_decisions(corpus: Path, tmp_path: Path) -> None:
    """An index whose decisions were kept before they recorded who and when: opened, it gains the two
    columns; its decisions stay, with neither."""
    import sqlite3

    index = tmp_path / "i.sqlite"
    ingest([corpus], index)
    g = groups(index)
    lo, hi = sorted((g["a.txt"], g["c.txt"]))
    conn = sqlite3.connect(index)
    conn.executescript(
        "ALTER TABLE overrides DROP COLUMN decided_by; ALTER TABLE overrides DROP COLUMN decided_at;"
        "DELETE FROM migrations WHERE name = '0044_decision_who_when';"
    )
    conn.execute("INSERT INTO overrides(a, b, decision) VALUES (?, ?, 'apart')", (lo, hi))
    conn.commit()
    conn.close()
    with Store.open(index) as store:
        [kept] = ReviewQueue(store).overrides()
        columns = [r[1] for r in store.conn.execute("PRAGMA table_info(overrides)")]
    assert (kept.a, kept.b, kept.decision, kept.decided_at, kept.decided_by) == (lo, hi, "apart", None, None)
    assert columns[-2:] == ["decided_at", "decided_by"]


def test_the_queue_filters_by_document_and_family(policy_index: Path) -> None:
    """A reviewer reads the pairs of one document, or of one family of versions, at a time."""
    with Store.open(policy_index, readonly=True) as store:
        queue = ReviewQueue(store)
        every = queue.pairs("variants", limit=1000).items
        doc = every[0].b_side.doc
        assert doc is not None
        mine = queue.pairs("variants", limit=1000, doc=doc)
        family = next(p.a_side.family for p in every if p.a_side.family)
        kin = queue.pairs("variants", limit=1000, family=family)
        nothing = queue.pairs("merges", doc="no such document")
        holds = [
            store.conn.execute(
                "SELECT 1 FROM source_rows s JOIN document_rows d ON d.dkey = s.dkey"
                " JOIN groups g ON g.gid = s.gid WHERE g.id IN (?, ?) AND d.doc_id = ?",
                (p.a, p.b, doc),
            ).fetchone() is not None
            for p in every
        ]
    assert 0 < mine.total == sum(holds) < len(every)  # the pairs with a text in that document, only
    assert {(p.a, p.b) for p in mine.items} == {(p.a, p.b) for p, h in zip(every, holds, strict=True) if h}
    assert kin.total and all(family in (p.a_side.family, p.b_side.family) for p in kin.items)
    assert nothing.total == 0
    with TestClient(create_app(policy_index), base_url="http://localhost") as client:
        data = client.get("/review", params={"kind": "variants", "family": family, "format": "json"}).json()
        page = client.get("/review", params={"kind": "variants", "doc": doc}).text
    assert data["family"] == family and data["pairs"]["total"] == kin.total
    assert 'id="review-filter"' in page and "all pairs" in page


def test_the_queue_filters_by_similarity_and_words(policy_index: Path) -> None:
    """A reviewer reads the pairs in a band of similarity, or those whose texts hold some words."""
    with Store.open(policy_index, readonly=True) as store:
        queue = ReviewQueue(store)
        every = queue.pairs("merges", limit=1000).items
        sims = sorted(p.similarity for p in every)
        low, high = sims[len(sims) // 4], sims[3 * len(sims) // 4]
        band = queue.pairs("merges", limit=1000, similarity=(low, high))
        above = queue.pairs("merges", limit=1000, similarity=(high, None))
        word = next(w for w in every[0].a_text.split() if len(w) > 6 and w.isalpha() and w.isascii())
        holding = queue.pairs("merges", limit=1000, text=word.upper())
    assert 0 < band.total < len(every)
    assert {(p.a, p.b) for p in band.items} == {(p.a, p.b) for p in every if low <= p.similarity <= high}
    assert all(p.similarity >= high for p in above.items) and above.total
    expected = {(p.a, p.b) for p in every if word.lower() in (p.a_text + " " + p.b_text).lower()}
    assert {(p.a, p.b) for p in holding.items} == expected and (every[0].a, every[0].b) in expected
    with TestClient(create_app(policy_index), base_url="http://localhost") as client:
        data = client.get("/review", params={"min": str(low), "max": str(high), "format": "json"}).json()
        found = client.get("/review", params={"q": word, "format": "json"}).json()
        refused = client.get("/review", params={"min": "2"})
        page = client.get("/review", params={"q": "<script>", "min": "0.9"}).text
    assert data["pairs"]["total"] == band.total and data["min_similarity"] == low
    assert found["pairs"]["total"] == holding.total and found["q"] == word
    assert refused.status_code == 400
    assert "<script>" not in page and "&lt;script&gt;" in page  # the search is shown escaped


def test_the_pairs_checked_on_a_page_are_decided_together_or_not_at_all(corpus: Path, tmp_path: Path) -> None:
    """A bulk decision keeps the decision for every pair checked, in one transaction: a pair the index
    does not hold refuses the whole form, and nothing is kept; ``clear`` drops them all again."""
    index = tmp_path / "i.sqlite"
    ingest([corpus], index)
    g = groups(index)
    merge, version = f"{g['a.txt']} {g['c.txt']}", f"{g['a.txt']} {g['b.txt']}"
    with TestClient(create_app(index), base_url="http://localhost") as client:
        page = client.get("/review?kind=merges").text
        assert 'id="bulk"' in page and f'value="{merge}" form="bulk"' in page
        token = re.search(r'name="token" value="([^"]+)"', page)
        assert token is not None
        form = {"token": token.group(1), "back": "/review", "by": "Ana"}
        ghost = "f" * 25
        refused = client.post(
            "/review/decide-checked",
            data={**form, "decision": "apart", "pair": [merge, f"{g['b.txt']} {ghost}"]},
        )
        assert refused.status_code == 400 and "holds no group" in refused.text
        with Store.open(index, readonly=True) as store:
            assert ReviewQueue(store).overrides() == ()  # not one of the two was kept
        kept = client.post(
            "/review/decide-checked",
            data={**form, "decision": "merge", "pair": [merge, version]},
            follow_redirects=False,
        )
        assert kept.status_code == 303
        with Store.open(index, readonly=True) as store:
            decided = ReviewQueue(store).overrides()
        assert {(o.a, o.b, o.decision, o.decided_by) for o in decided} == {
            (*sorted((g["a.txt"], g["c.txt"])), "merge", "Ana"),
            (*sorted((g["a.txt"], g["b.txt"])), "merge", "Ana"),
        }
        none = client.post("/review/decide-checked", data={**form, "decision": "merge"})
        assert none.status_code == 400
        cleared = client.post(
            "/review/decide-checked", data={**form, "decision": "clear", "pair": [merge, version]},
            follow_redirects=False,
        )
        assert cleared.status_code == 303
    with Store.open(index, readonly=True) as store:
        assert ReviewQueue(store).overrides() == ()
    ingest([corpus], index)  # the guards decide again: a and c one canonical, b a version
    assert _canonicals(index) == [["a.txt", "c.txt"], ["b.txt"]]
