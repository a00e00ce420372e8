"""``chunkdedup serve``: every page and its JSON over a real index, pagination, errors, the CLI.

The index (``tests/web_corpus.py``) holds the site-policy corpus (with its manifest: merges and
versions), the NTSB reports (corpus chrome: a "Page N of M" block) and two files that fail or are
skipped.
"""

from __future__ import annotations

import builtins
import json
import re
import shutil
from collections.abc import Iterator
from html import unescape
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

from chunkdedup import Index
from chunkdedup.cli import main
from chunkdedup.query import search
from chunkdedup.report import render_html
from chunkdedup.web import create_app
from web_corpus import served

__all__ = ["served"]  # the session fixture (tests/web_corpus.py), used by name


@pytest.fixture(scope="module")
def client(served: tuple[Path, Path]) -> Iterator[TestClient]:
    with TestClient(base_url="http://localhost", app=create_app(*served)) as c:
        yield c


@pytest.fixture(scope="module")
def ix(served: tuple[Path, Path]) -> Iterator[Index]:
    with Index.open(served[0]) as index:
        yield index


def text_of(html: str) -> str:
    """The page's text as a reader sees it: tags dropped, entities decoded."""
    return unescape(re.sub(r"<[^>]+>", "", html))


def get_json(client: TestClient, url: str, status: int = 200) -> Any:
    sep = "&" if "?" in url else "?"
    r = client.get(f"{url}{sep}format=json")
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/json")
    return r.json()


# -- overview -------------------------------------------------------------------------------------


def test_overview_shows_the_funnel_statuses_and_problems(client: TestClient, ix: Index) -> None:
    stats = ix.stats()
    r = client.get("/")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    page = text_of(r.text)
    for figure in ("raw_chunks", "after_exact", "canonical_chunks", "exact_merged", "near_merged"):
        assert str(stats[figure]) in page
    assert "fts5" in page and "failed" in page and "skipped" in page
    assert "the file is damaged or not a PDF" in page and "empty file" in page
    data = get_json(client, "/")
    assert data["funnel"] == {k: stats[k] for k in ("raw_chunks", "after_exact", "canonical_chunks",
                                                     "exact_merged", "near_merged", "variant_pairs")}
    assert data["documents"] == stats["documents"] == 206
    assert data["text_engine"]["name"] == "fts5" and data["index_bytes"] == stats["index_bytes"]
    assert {s["status"]: s["count"] for s in data["files"]} == {"ingested": 206, "failed": 1, "skipped": 1}
    problems = data["problems"]["items"]
    assert [(p["status"], Path(p["path"]).name) for p in problems] == [("failed", "broken.pdf"),
                                                                       ("skipped", "empty.md")]
    assert data["lines_stripped"] == stats["lines_stripped"] and stats["lines_stripped"]["chrome"] > 0


def test_overview_problems_paginate(client: TestClient) -> None:
    first = get_json(client, "/?limit=1")["problems"]
    second = get_json(client, "/?limit=1&offset=1")["problems"]
    assert first["total"] == second["total"] == 2
    assert first["items"][0]["status"] == "failed" and second["items"][0]["status"] == "skipped"
    assert 'href="?limit=1&amp;offset=1"' in client.get("/?limit=1").text


# -- documents ------------------------------------------------------------------------------------


def test_documents_paginate_over_every_document(client: TestClient, ix: Index) -> None:
    seen: list[str] = []
    offset = 0
    while True:
        data = get_json(client, f"/documents?limit=37&offset={offset}")["documents"]
        assert data["total"] == 206 and len(data["items"]) <= 37
        seen += [d["doc"] for d in data["items"]]
        if offset + 37 >= data["total"]:
            break
        offset += 37
    assert seen == [d["doc"] for d in ix.documents()]
    html = client.get("/documents?limit=37&offset=37").text
    assert 'rel="prev" href="?limit=37&amp;offset=0"' in html
    assert 'rel="next" href="?limit=37&amp;offset=74"' in html
    assert get_json(client, "/documents?state=pending")["documents"]["total"] == 0


def _ntsb_doc(ix: Index) -> str:
    return next(d["doc"] for d in ix.documents() if d["doc"].endswith(".pdf"))


def test_document_page_strikes_stripped_lines_and_marks_chunks(client: TestClient, ix: Index) -> None:
    doc = _ntsb_doc(ix)
    data = get_json(client, f"/documents/{quote(doc)}")
    assert data["document"]["doc"] == doc
    from conftest import clean_pages

    clean = {page: text for d, page, text in clean_pages(ix.store.path) if d == doc}
    stripped_lines = sum(s["lines"] for s in data["stripped"])
    assert stripped_lines > 0
    shown_stripped = 0
    for p in data["pages"]:
        assert p["aligned"]
        kept = "".join(s["text"] for s in p["segments"] if s["role"] == "text")
        struck = [s["text"] for s in p["segments"] if s["role"] == "stripped"]
        shown_stripped += len(struck)
        # the kept pieces are the clean page exactly, and every chunk's span is one of its pieces
        starts = {c["start"] for c in p["chunks"]}
        offsets, at = set(), 0
        for s in p["segments"]:
            if s["role"] == "text":
                offsets.add(at)
                at += len(s["text"])
        assert starts <= offsets
        assert kept == clean[p["page"]]
        assert all(re.match(r"Page \d+ of \d+", line) for line in struck)
    assert shown_stripped == stripped_lines  # a 4-page report: every page shown
    html = client.get(f"/documents/{quote(doc)}").text
    assert html.count('<del class="stripped scope-') == stripped_lines
    n_chunks = sum(len(p["chunks"]) for p in data["pages"])
    assert html.count('<a class="cb"') == n_chunks
    for cid in {c["canonical"] for p in data["pages"] for c in p["chunks"]}:
        assert f'href="/chunks/{cid}"' in html


def test_document_pages_paginate(client: TestClient, ix: Index) -> None:
    doc = _ntsb_doc(ix)
    first = get_json(client, f"/documents/{quote(doc)}?limit=1")
    assert [p["page"] for p in first["pages"]] == [1] and first["next_first"] == 2
    second = get_json(client, f"/documents/{quote(doc)}?limit=1&page=2")
    assert [p["page"] for p in second["pages"]] == [2]
    assert 'href="?limit=1&amp;page=3"' in client.get(f"/documents/{quote(doc)}?limit=1&page=2").text


def test_document_with_slashes_and_metadata(client: TestClient, ix: Index) -> None:
    doc = "current/privacy-policies/github-general-privacy-statement.md"
    html = client.get(f"/documents/{doc}").text
    assert "github-general-privacy-statement" in html and "privacy" in text_of(html)
    data = get_json(client, f"/documents/{doc}")
    assert data["document"]["metadata"] == ix.metadata(doc)
    assert data["document"]["family"] == "github-general-privacy-statement"
    assert data["document"]["department"] == "privacy-policies"


# -- canonical chunks -----------------------------------------------------------------------------


def _find(ix: Index, want: str) -> str:
    for rec in ix.records():
        if want == "near" and any(m["relation"] == "near" for m in ix.merges(rec.id)):
            return rec.id
        if want == "variant" and ix.variants(rec.id):
            return rec.id
        if want == "many" and len(rec.sources) >= 5:
            return rec.id
    raise AssertionError(f"no canonical with {want} in the index")


def test_chunk_page_lists_sources_and_marks_differing_words(client: TestClient, ix: Index) -> None:
    cid = _find(ix, "near")
    chunk = ix.canonical(cid)
    assert chunk is not None
    data = get_json(client, f"/chunks/{cid}?limit=500")
    assert data["canonical"]["text"] == chunk.text and data["canonical"]["sources"] == chunk.copies
    assert [(s["doc"], s["page"], s["start"], s["end"], s["relation"], s["similarity"])
            for s in data["sources"]["items"]] == [
        (s.doc_id, s.page, s.start, s.end, s.relation, s.similarity) for s in chunk.sources]
    merges = ix.merges(cid)
    assert [m["group"] for m in data["merged"]["items"]] == [m["group"] for m in merges]
    near = [m for m in data["merged"]["items"] if m["relation"] == "near"]
    assert near and all(m["changed_words"] for m in near)
    html = client.get(f"/chunks/{cid}").text
    assert html.count('<tr class="source">') == min(chunk.copies, 50)
    marked = re.findall(r"<mark>(.*?)</mark>", html)
    assert marked and {unescape(w) for w in marked} >= {w for m in near for w in m["changed_words"]}


def test_chunk_page_shows_guard_variants(client: TestClient, ix: Index) -> None:
    cid = _find(ix, "variant")
    data = get_json(client, f"/chunks/{cid}")
    want = ix.variants(cid)
    assert [(v["other"], v["similarity"], v["differing"], v["reason"]) for v in data["variants"]] == [
        (v["other"], v["similarity"], v["differing"], v["reason"]) for v in want]
    assert all(v["changed_words"] or v["this_changed_words"] for v in data["variants"])
    html = client.get(f"/chunks/{cid}").text
    for v in want:
        assert f'href="/chunks/{v["other"]}"' in html
        assert ", ".join(v["differing"]) in unescape(html)


def test_chunk_sources_paginate(client: TestClient, ix: Index) -> None:
    cid = _find(ix, "many")
    chunk = ix.canonical(cid)
    assert chunk is not None
    got = []
    for offset in range(0, chunk.copies, 2):
        part = get_json(client, f"/chunks/{cid}?limit=2&offset={offset}")["sources"]
        assert part["total"] == chunk.copies and len(part["items"]) <= 2
        got += [(s["doc"], s["page"], s["start"]) for s in part["items"]]
    assert got == [s.order for s in chunk.sources]


# -- boilerplate ----------------------------------------------------------------------------------


def test_boilerplate_lists_every_key_and_shows_lines_in_context(client: TestClient, ix: Index) -> None:
    keys = ix.boilerplate()
    data = get_json(client, "/boilerplate")
    assert [(k["key"], k["scope"], k["documents"], k["pages"], k["example"]) for k in data["keys"]["items"]] \
        == [(k.key, k.scope, k.doc_count, k.page_count, k.example) for k in keys]
    assert data["keys"]["total"] == len(keys) >= 1
    html = client.get("/boilerplate").text
    khash = data["keys"]["items"][0]["khash"]
    assert f'hx-get="/boilerplate/{khash}"' in html and f'href="/boilerplate/{khash}"' in html
    fragment = client.get(f"/boilerplate/{khash}", headers={"HX-Request": "true"})
    assert fragment.status_code == 200 and "<html" not in fragment.text
    struck = re.findall(r'<del class="stripped">(.*?)</del>', fragment.text)
    assert struck and all(re.match(r"Page \d+ of \d+", s) for s in struck)
    full = client.get(f"/boilerplate/{khash}")
    assert "<html" in full.text and struck[0] in full.text
    detail = get_json(client, f"/boilerplate/{khash}")
    assert detail["documents"]["total"] == data["keys"]["items"][0]["documents"]
    assert all(any(ln["match"] for ln in c["lines"]) for c in detail["contexts"])
    few = get_json(client, f"/boilerplate/{khash}?limit=3&offset=3")["documents"]
    assert len(few["items"]) == 3 and few["offset"] == 3


# -- query ----------------------------------------------------------------------------------------


def test_query_page_matches_the_library(client: TestClient, ix: Index) -> None:
    q = "how long is personal data kept"
    data = get_json(client, f"/query?q={quote(q)}&k=3")
    want = search(ix, q, k=3).to_json(explain=True)
    assert data["result"] == want and len(want["hits"]) == 3
    html = client.get(f"/query?q={quote(q)}&k=3").text
    assert html.count('<li class="hit">') == 3
    for hit in want["hits"]:
        assert f'href="/chunks/{hit["id"]}"' in html
        cite = hit["citations"][0]
        assert f'href="/documents/{quote(cite["doc"])}?page={cite["page"]}#p{cite["page"]}"' in html
    steps = {s["step"] for s in data["steps"]}
    assert steps == {d["step"] for d in want["dropped"]} and steps
    for d in want["dropped"][:5]:
        assert d["reason"] in unescape(html)


def test_query_options_filters_versions_and_safety_net(client: TestClient, ix: Index) -> None:
    q = "retention of personal information"
    url = f"/query?q={quote(q)}&where=department=privacy-policies&versions=label&safety_net=off&k=4"
    data = get_json(client, url)
    want = search(ix, q, k=4, where=["department=privacy-policies"], versions="label", safety_net=False)
    assert data["result"] == want.to_json(explain=True)
    assert data["form"] == {"q": q, "where": ["department=privacy-policies"], "versions": "label",
                            "retriever": "auto", "safety_net": False, "k": 4}
    assert all(c["metadata"]["department"] == "privacy-policies" for h in data["result"]["hits"]
               for c in h["citations"])
    assert "rank" in {s["step"] for s in data["steps"]}
    html = client.get(url).text
    assert '<option value="off" selected>' in html and 'value="department=privacy-policies"' in html
    assert '<option selected>label</option>' in html


def test_query_bad_options_say_what_is_wrong(client: TestClient) -> None:
    r = client.get("/query?q=logs&retriever=magic")
    assert r.status_code == 400 and "retriever must be one of" in unescape(r.text)
    assert get_json(client, "/query?q=logs&versions=newest", 400)["error"].startswith("versions must be")
    r = client.get("/query?q=logs&where=nonsense")
    assert r.status_code == 400 and "nonsense" in unescape(r.text) and 'value="nonsense"' in r.text
    r = client.get("/query?q=logs&retriever=vector")
    assert r.status_code == 400 and "has no embeddings" in unescape(r.text)
    empty = get_json(client, "/query")
    assert empty["form"]["q"] == "" and "result" not in empty


# -- report ---------------------------------------------------------------------------------------


def test_report_is_rendered_from_report_json(client: TestClient, served: tuple[Path, Path]) -> None:
    data = json.loads((served[1] / "report.json").read_text(encoding="utf-8"))
    assert get_json(client, "/report") == data
    page = client.get("/report")
    assert page.status_code == 200 and '<iframe id="report" src="/report/view" sandbox' in page.text
    view = client.get("/report/view")
    assert view.text == render_html(data)
    assert "'unsafe-inline'" in view.headers["content-security-policy"]
    assert "'unsafe-inline'" not in page.headers["content-security-policy"]


def test_report_without_report_dir_is_404(served: tuple[Path, Path]) -> None:
    with TestClient(base_url="http://localhost", app=create_app(served[0])) as c:
        r = c.get("/report")
        assert r.status_code == 404 and "--report DIR" in r.text
        assert '<a href="/report">' not in c.get("/").text


# -- errors ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "ident"),
    [
        ("/documents/no/such/doc.md", "no/such/doc.md"),
        ("/chunks/c000000000000000000000000", "c000000000000000000000000"),
        ("/boilerplate/12345", "12345"),
        ("/boilerplate/not-a-key", "not-a-key"),
        ("/boilerplate/99999999999999999999999", "99999999999999999999999"),  # was a 500 (OverflowError)
    ],
)
def test_unknown_ids_are_404_naming_the_id(client: TestClient, url: str, ident: str) -> None:
    r = client.get(url)
    assert r.status_code == 404 and f"&#39;{ident}&#39;" in r.text and "Traceback" not in r.text
    assert ident in get_json(client, url, 404)["message"]


def test_unknown_route_is_404_page(client: TestClient) -> None:
    r = client.get("/nowhere")
    assert r.status_code == 404 and "no page at" in unescape(r.text) and "<nav>" in r.text


def test_a_bug_is_an_error_page_not_a_traceback(
    served: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from chunkdedup.web import pages

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise KeyError("boom")

    monkeypatch.setattr(pages, "documents_page", broken)
    app = create_app(served[0])
    with TestClient(base_url="http://localhost", app=app, raise_server_exceptions=False) as c:
        r = c.get("/documents")
        assert r.status_code == 500 and "KeyError while answering &#39;/documents&#39;" in r.text
        assert "Traceback" not in r.text and "<nav>" in r.text


PAGES = ("/", "/documents", "/boilerplate", "/documents/a.md", "/chunks/c1", "/query?q=logs")


def _damaged(tmp_path: Path, served: Path, kind: str) -> Path:
    path = tmp_path / f"{kind}.sqlite"
    if kind == "garbage":
        path.write_bytes(b"\x00\xffnot sqlite at all" * 300)
    elif kind == "truncated":
        data = served.read_bytes()
        path.write_bytes(data[: len(data) // 3])
    elif kind == "empty-sqlite":
        import sqlite3

        sqlite3.connect(path).execute("CREATE TABLE t(x)").connection.close()
    return path


@pytest.mark.parametrize(
    ("kind", "said"),
    [
        ("garbage", "is not a chunkdedup index"),
        ("truncated", "is damaged"),
        ("empty-sqlite", "not a chunkdedup index"),
        ("missing", "does not exist"),
    ],
)
def test_damaged_or_missing_index_gives_a_clear_error(
    tmp_path: Path, served: tuple[Path, Path], kind: str, said: str
) -> None:
    path = _damaged(tmp_path, served[0], kind)
    with TestClient(base_url="http://localhost", app=create_app(path), raise_server_exceptions=False) as c:
        for url in PAGES:
            r = c.get(url)
            assert r.status_code == 503, (url, r.status_code)
            assert said in unescape(r.text) and "Traceback" not in r.text, (url, r.text)
            assert str(path) in unescape(r.text)
        assert said in get_json(c, "/", 503)["message"]
        assert c.get("/static/style.css").status_code == 200


def test_every_response_carries_the_security_headers(client: TestClient) -> None:
    for url in ("/", "/static/htmx.min.js", "/nowhere"):
        h = client.get(url).headers
        assert "script-src 'self'" in h["content-security-policy"]
        assert h["x-content-type-options"] == "nosniff"


def test_browsing_leaves_the_index_file_as_it_was(served: tuple[Path, Path], tmp_path: Path) -> None:
    import hashlib

    copy = tmp_path / "ro.sqlite"
    shutil.copy(served[0], copy)
    before = hashlib.sha256(copy.read_bytes()).hexdigest()
    with TestClient(base_url="http://localhost", app=create_app(copy)) as c:
        doc = get_json(c, "/documents?limit=1")["documents"]["items"][0]["doc"]
        hit = get_json(c, "/query?q=logs")["result"]["hits"][0]["id"]
        for url in ("/", "/documents", f"/documents/{quote(doc)}", "/boilerplate", f"/chunks/{hit}"):
            assert c.get(url).status_code == 200
    assert hashlib.sha256(copy.read_bytes()).hexdigest() == before
    assert not (tmp_path / "ro.sqlite-wal").exists() or (tmp_path / "ro.sqlite-wal").stat().st_size == 0


def test_pages_answer_while_a_writer_holds_the_index(served: tuple[Path, Path], tmp_path: Path) -> None:
    """An ingest's open transaction neither blocks the view nor shows in it before it commits."""
    from chunkdedup.store import Store

    copy = tmp_path / "busy.sqlite"
    shutil.copy(served[0], copy)
    with TestClient(base_url="http://localhost", app=create_app(copy)) as c:
        before = get_json(c, "/")
        keys = get_json(c, "/boilerplate")["keys"]["total"]
        # a write transaction as an ingest's (Store.transaction: it also deletes the stored counts)
        with Store.open(copy) as writer, writer.transaction() as conn:
            conn.execute("INSERT INTO files(path, content_hash, status, reason, run_id)"
                         " VALUES ('/new.pdf', 'h', 'failed', 'half written', 1)")
            conn.execute("INSERT INTO page_rows(dkey, page, has_text, raw_text) VALUES (-1, 1, 0, '')")
            conn.execute("INSERT INTO bp_keys(khash, key) VALUES (7, 'new key')")
            conn.execute("INSERT INTO stripped(doc_id, khash, scope, pages, lines, example)"
                         " VALUES ('new', 7, 'running', 1, 1, 'New key')")
            assert get_json(c, "/") == before  # not committed: not shown, not blocked
            assert c.get("/query?q=logs").status_code == 200
        after = get_json(c, "/")
        assert {s["status"]: s["count"] for s in after["files"]}["failed"] == 2
        assert "half written" in c.get("/").text
        # the whole-index counts the app keeps are read again after the commit
        assert after["pages"] == before["pages"] + 1
        assert after["pages_without_text"] == before["pages_without_text"] + 1
        assert get_json(c, "/boilerplate")["keys"]["total"] == keys + 1


def test_htmx_is_vendored_with_its_license() -> None:
    from chunkdedup.web.app import HERE, HTMX_VERSION

    head = (HERE / "static" / "htmx.min.js").read_text(encoding="utf-8")[:300]
    assert f"htmx.org {HTMX_VERSION}" in head and "Zero-Clause BSD" in head
    assert "Zero-Clause BSD" in (HERE / "static" / "htmx.LICENSE").read_text(encoding="utf-8")


# -- the CLI --------------------------------------------------------------------------------------


def test_serve_help_has_an_example() -> None:
    r = CliRunner().invoke(main, ["serve", "--help"])
    assert r.exit_code == 0 and "Example:" in r.output and "chunkdedup serve --index" in r.output
    assert "127.0.0.1" in r.output


def test_serve_binds_to_loopback_and_warns_otherwise(
    served: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    import uvicorn

    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: calls.append(kw))
    r = CliRunner().invoke(main, ["serve", "--index", str(served[0])])
    assert r.exit_code == 0, r.output
    assert calls[-1]["host"] == "127.0.0.1" and calls[-1]["port"] == 8765
    assert "http://127.0.0.1:8765/" in r.output and "this machine only" in r.output
    r = CliRunner().invoke(main, ["serve", "--index", str(served[0]), "--host", "0.0.0.0", "--port", "9"])
    assert r.exit_code == 0 and calls[-1]["host"] == "0.0.0.0" and calls[-1]["port"] == 9
    assert "warning: --host 0.0.0.0 is not a loopback address" in r.output


def test_serve_on_a_missing_index_fails_clearly(tmp_path: Path) -> None:
    r = CliRunner().invoke(main, ["serve", "--index", str(tmp_path / "none.sqlite")])
    assert r.exit_code == 1 and "does not exist" in r.output and "Traceback" not in r.output


def test_serve_without_the_web_extra_names_the_install(
    served: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    real = builtins.__import__

    def no_starlette(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.split(".")[0] == "starlette":
            raise ImportError(f"No module named {name!r}")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_starlette)
    r = CliRunner().invoke(main, ["serve", "--index", str(served[0])])
    assert r.exit_code == 1 and "pip install 'chunkdedup[web]'" in r.output


def test_a_request_naming_another_host_is_refused(served: tuple[Path, Path]) -> None:
    """DNS rebinding: a page of another site points its name at 127.0.0.1 and reads the loopback-bound
    server through the user's browser; its requests carry that site's name (an audit read a whole
    document with `curl -H 'Host: attacker.example.com' http://127.0.0.1:PORT/documents/...`)."""
    doc = "current/privacy-policies/github-cookies.md"
    with TestClient(base_url="http://localhost", app=create_app(served[0])) as c:
        for host in ("localhost:8765", "127.0.0.1:8765", "[::1]:8765", "LOCALHOST"):
            assert c.get("/documents", headers={"host": host}).status_code == 200, host
        for host in ("attacker.example.com", "attacker.example.com:8765", "127.0.0.1.nip.io"):
            r = c.get(f"/documents/{doc}?format=json", headers={"host": host})
            assert r.status_code == 400 and "github" not in r.text.lower(), host
    with TestClient(base_url="http://anything.example", app=create_app(served[0], allowed_hosts=["*"])) as c:
        assert c.get("/documents").status_code == 200  # bound to a public address on purpose
