"""The documents table of the web view sorts by any of its columns, searches ids and titles, keeps one
family or department (with the facets to pick them from), and a document's page shows each manifest
field once."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

from starlette.testclient import TestClient

from chunkdedup import Index
from chunkdedup.web import create_app


def _json(client: TestClient, url: str) -> dict:  # type: ignore[type-arg]
    answer = client.get(url + ("&" if "?" in url else "?") + "format=json")
    assert answer.status_code == 200, answer.text
    return answer.json()  # type: ignore[no-any-return]


def test_the_documents_table_sorts_searches_and_facets(policy_index: Path) -> None:
    with Index.open(policy_index) as ix:
        every = list(ix.views.documents().items)
    with TestClient(create_app(policy_index), base_url="http://localhost") as client:
        newest = _json(client, "/documents?sort=effective&desc=1&limit=500")["documents"]["items"]
        by_pages = _json(client, "/documents?sort=pages&limit=500")["documents"]["items"]
        data = _json(client, "/documents?limit=5")
        family = data["facets"]["families"][0]
        kin = _json(client, f"/documents?family={quote(family['value'])}&limit=500")["documents"]
        department = data["facets"]["departments"][0]
        dept = _json(client, f"/documents?department={quote(department['value'])}&limit=500")["documents"]
        found = _json(client, "/documents?q=PRIVACY&limit=500")["documents"]
        html = client.get("/documents?sort=title").text
        refused = client.get("/documents?sort=colour")
    dates = [d["effective_date"] for d in newest]
    dated = [d for d in dates if d]
    assert dates == dated + [None] * (len(dates) - len(dated))  # the undated last
    assert dated == sorted(dated, reverse=True) and len(newest) == len(every)
    pages = [d["pages"] for d in by_pages]
    assert pages == sorted(pages)
    assert family["count"] == kin["total"] > 1 and all(d["family"] == family["value"] for d in kin["items"])
    assert department["count"] == dept["total"]
    assert all(d["department"] == department["value"] for d in dept["items"])
    held = [d for d in every if "privacy" in d.doc_id.lower() or "privacy" in (d.title or "").lower()]
    assert found["total"] == len(held) > 0
    assert 'aria-sort="ascending"' in html and "id=\"facets\"" in html
    assert refused.status_code == 400


def test_a_documents_manifest_fields_are_shown_once(policy_index: Path) -> None:
    with Index.open(policy_index) as ix:
        doc = next(d for d in ix.views.documents().items if d.family and d.metadata.get("family"))
    with TestClient(create_app(policy_index), base_url="http://localhost") as client:
        html = client.get(f"/documents/{quote(doc.doc_id)}").text
    meta = html[html.index('id="document-meta"') : html.index("</dl>")]
    assert meta.count("<dt>family</dt>") == 1 and meta.count(f"<dd>{doc.family}</dd>") == 1
    assert meta.count("<dt>department</dt>") == 1 and meta.count("<dt>effective</dt>") == 1
    assert "<dt>effective_date</dt>" not in meta
