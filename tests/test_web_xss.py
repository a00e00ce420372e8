"""Document text, titles, metadata, file names and the query are attacker-controlled: every page of
``chunkdedup serve`` shows them escaped, and no tag from them reaches the browser."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import quote

import pytest
from starlette.testclient import TestClient

from chunkdedup import Index, ingest
from chunkdedup.web import create_app

SCRIPT = "<script>alert(1)</script>"
IMG = "<img src=x onerror=alert(2)>"
NAME = "<img src=x onerror=alert(3)>.md"
FOOTER = f"Footer {SCRIPT} shared on every page of this site {IMG} legal notice"
#: One paragraph in three documents: as written, with one word changed (a near copy), with one
#: number changed (a version the guard keeps apart). Others hold text of their own.
BODY = (
    "Personal data is retained for {days} days after the account closes {img} and then deleted from "
    "every backup system we operate, unless a legal hold applies to the account {script} or the user "
    "asks for an earlier deletion through the privacy {word} form on the settings page, which we answer "
    "within a reasonable time and confirm by email to the address that the account holds on file, "
    "together with a short note that lists each category of data removed and any that must be kept."
)
OWN = ("Section {n} covers {topic} {script} for members of the {topic} programme {img}, what they may "
       "expect from the {topic} team, and where the {topic} rules are published.")
TOPICS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot")


def _write(folder: Path) -> Path:
    """Six documents sharing a chrome footer; near copies and versions of one paragraph."""
    folder.mkdir()
    manifest = []
    for i, topic in enumerate(TOPICS):
        name = NAME if i == 0 else f"doc{i}.md"
        if i < 3:
            body = BODY.format(days=45 if i == 2 else 30, img=IMG, script=SCRIPT,
                               word="contact" if i == 1 else "request")
        else:
            body = OWN.format(n=i, topic=topic, script=SCRIPT, img=IMG)
        topic = "alpha" if i < 3 else topic  # the copies and the version share all but one word
        own = OWN.format(n=i if i >= 3 else 0, topic=topic, script=SCRIPT, img=IMG)
        text = f"# Policy {SCRIPT} {topic}\n\n{body}\n\n{own}\n\n{FOOTER}\n"
        (folder / name).write_text(text, encoding="utf-8")
        manifest.append({"path": name, "department": SCRIPT, "note": IMG, f"{IMG}key": "v"})
    path = folder / "manifest.jsonl"
    path.write_text("".join(json.dumps(m) + "\n" for m in manifest), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("xss")
    manifest = _write(work / "docs")
    index = work / "hostile.sqlite"
    ingest([work / "docs"], index, manifest=manifest)
    return index


@pytest.fixture(scope="module")
def client(hostile: Path) -> Iterator[TestClient]:
    with TestClient(base_url="http://localhost", app=create_app(hostile)) as c:
        yield c


class _Tags(HTMLParser):
    """Every start tag with its attributes, as a browser's tokenizer reads them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def assert_escaped(html: str, url: str, *, page: bool = True) -> None:
    """No tag or attribute from the text: the one script is the vendored htmx, no <img>, no on*."""
    parser = _Tags()
    parser.feed(html)
    scripts = [attrs for tag, attrs in parser.tags if tag == "script"]
    assert scripts == ([{"src": "/static/htmx.min.js", "defer": None}] if page else []), url
    assert not [t for t, _ in parser.tags if t in ("img", "svg", "iframe", "object")], url
    assert not [a for _, attrs in parser.tags for a in attrs if a.startswith("on")], url
    hrefs = [attrs.get("href") or "" for _, attrs in parser.tags]
    assert not [h for h in hrefs if h.lower().startswith("javascript:")], url


def urls(hostile: Path, client: TestClient) -> list[str]:
    with Index.open(hostile) as ix:
        docs = [d["doc"] for d in ix.documents()]
        chunks = [r.id for r in ix.records()]
        keys = client.get("/boilerplate?format=json").json()["keys"]["items"]
    assert NAME in docs and len(keys) >= 1
    out = ["/", "/documents", "/boilerplate",
           f"/query?q={quote(SCRIPT)}&where={quote('department=' + SCRIPT)}",
           f"/query?q={quote(IMG)}&safety_net=off&versions=all", f"/documents/{quote(SCRIPT)}",
           f"/chunks/{quote(IMG)}", f"/boilerplate/{quote(SCRIPT)}", f"/{quote(IMG)}",
           f"/query?q=x&retriever={quote(SCRIPT)}"]
    out += [f"/documents/{quote(d)}" for d in docs]
    out += [f"/chunks/{c}" for c in chunks]
    out += [f"/boilerplate/{k['khash']}" for k in keys]
    return out


def test_every_page_escapes_untrusted_text(hostile: Path, client: TestClient) -> None:
    seen_escaped = 0
    for url in urls(hostile, client):
        r = client.get(url)
        assert r.status_code in (200, 400, 404), url
        assert_escaped(r.text, url)
        seen_escaped += "&lt;script&gt;alert(1)&lt;/script&gt;" in r.text
    assert seen_escaped >= 10  # the text is shown (escaped), not dropped


def test_escaped_where_it_matters(hostile: Path, client: TestClient) -> None:
    doc = client.get(f"/documents/{quote(NAME)}").text
    assert "&lt;img src=x onerror=alert(3)&gt;.md" in doc  # the file name
    assert "Policy &lt;script&gt;alert(1)&lt;/script&gt; alpha" in doc  # the title
    assert "&lt;img src=x onerror=alert(2)&gt;key" in doc  # a metadata key
    assert '<del class="stripped scope-chrome"' in doc and "Footer &lt;script&gt;" in doc
    # links to the document quote its id
    listing = client.get("/documents").text
    assert f'href="/documents/{quote(NAME)}"' in listing
    q = client.get(f"/query?q={quote(SCRIPT)}").text
    assert f'value="{SCRIPT.replace("<", "&lt;").replace(">", "&gt;")}"' in q
    fragment = client.get(client.get("/boilerplate").text.split('hx-get="')[1].split('"')[0],
                          headers={"HX-Request": "true"}).text
    assert_escaped(fragment, "fragment", page=False)
    assert "&lt;script&gt;" in fragment and "<del" in fragment


def test_differing_words_are_marked_from_escaped_pieces(hostile: Path, client: TestClient) -> None:
    with Index.open(hostile) as ix:
        near = [r.id for r in ix.records() if any(m["relation"] == "near" for m in ix.merges(r.id))]
        versions = [r.id for r in ix.records() if ix.variants(r.id)]
    assert near and versions
    html = client.get(f"/chunks/{near[0]}").text
    assert_escaped(html, "near")
    assert re.search(r"<mark>(contact|request)</mark>", html)
    marked = re.findall(r"<mark>(.*?)</mark>", html)
    assert all("<" not in m for m in marked)
    html = client.get(f"/chunks/{versions[0]}").text
    assert re.search(r"<mark>(30|45)</mark>", html)
    assert_escaped(html, "version")


def test_json_carries_the_text_unchanged(hostile: Path, client: TestClient) -> None:
    data = client.get(f"/documents/{quote(NAME)}?format=json").json()
    assert data["document"]["doc"] == NAME and data["document"]["metadata"]["department"] == SCRIPT
    assert client.get(f"/documents/{quote(NAME)}?format=json").headers["content-type"].startswith(
        "application/json")


def test_control_characters_and_bidi_overrides_are_shown_escaped(tmp_path: Path) -> None:
    """HTML escaping stops markup, not U+202E: `cabc\u202edcba.exe.md` was shown with its extension
    reversed, and ESC/BEL reached the page; the report's tables and tooltips alike. JSON stays exact."""
    from chunkdedup.evaluate.run import evaluate
    from chunkdedup.report import render_html

    docs = tmp_path / "docs"
    docs.mkdir()
    name = "cabc\u202edcba.exe.md"
    text = ("# Title \x1b[31m red\n\nRetention \u202eof\u202c personal data is thirty days after closing."
            "\x07\n")
    (docs / name).write_text(text, encoding="utf-8")
    (docs / "other.md").write_text("# Other\n\nSomething else entirely about cookies and consent.\n")
    index = tmp_path / "i.sqlite"
    ingest([docs], index)
    with TestClient(base_url="http://localhost", app=create_app(index)) as c:
        pages = [c.get("/documents").text, c.get(f"/documents/{quote(name)}").text,
                 c.get("/query", params={"q": "retention personal data"}).text]
        with Index.open(index) as ix:
            pages.append(c.get(f"/chunks/{next(iter(ix.export()))['id']}").text)
        raw = c.get("/documents", params={"format": "json"}).text
    for html in pages:
        assert not re.search("[\u202a-\u202e\u2066-\u2069\x00-\x08\x0b-\x1f]", html), html[:300]
    assert "cabc\\u202edcba.exe.md" in pages[0] and "\\x1b[31m" in pages[1]
    assert name in json.dumps(json.loads(raw), ensure_ascii=False)  # JSON: exact
    golden = tmp_path / "golden.jsonl"
    golden.write_text(json.dumps({"id": "q\u202e1", "question": "retention \u202eof personal data",
                                  "relevant": [name]}) + "\n", encoding="utf-8")
    report = render_html(evaluate(golden, index, baseline=tmp_path / "b.sqlite", k=1).to_json())
    assert not re.search("[\u202a-\u202e\x00-\x08\x0b-\x1f]", report)
    assert "q\\u202e1" in report


def test_a_record_id_with_dot_segments_links_to_itself(tmp_path: Path) -> None:
    """`recs.jsonl#/../a.txt` linked to /documents/recs.jsonl%23/../a.txt, which a browser (and httpx)
    resolves to /documents/a.txt: the link labelled with the record opened another document."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("The plain text file about travel bookings made ahead of time.\n")
    record = {"id": "/../a.txt", "text": "A record about refunds paid within thirty days of the request."}
    (docs / "recs.jsonl").write_text(json.dumps(record) + "\n")
    index = tmp_path / "i.sqlite"
    ingest([docs], index)
    with TestClient(base_url="http://localhost", app=create_app(index)) as c:
        listing = c.get("/documents").text
        found = re.findall(r'<a href="(/documents/[^"]*)">([^<]*)</a>', listing)
        href = next(h for h, label in found if "recs.jsonl" in label)
        page = c.get(href)
    assert page.status_code == 200 and "refunds paid within thirty days" in page.text
    assert "travel bookings" not in page.text
