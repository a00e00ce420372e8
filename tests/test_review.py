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
