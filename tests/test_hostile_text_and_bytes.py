"""Hostile text and bytes: escapes no UTF-8 text holds, bytes that are not UTF-8, huge values
echoed in notes, repeated record ids, an empty Host header and full-width questions."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from chunkdedup import ingest
from chunkdedup.cli import main
from chunkdedup.parse.jsonl import JsonlParser
from chunkdedup.types import FileStatus

TEXT = "Refunds are paid within thirty days of the request. The customer keeps the receipt."


def _by_name(report: object) -> dict[str, tuple[str, str | None]]:
    return {Path(f.path).name: (str(f.status), f.reason) for f in report.files}  # type: ignore[attr-defined]


def _runs(index: Path) -> list[str]:
    with sqlite3.connect(index) as c:
        return [r[0] for r in c.execute("SELECT status FROM runs ORDER BY id")]


def _documents(index: Path) -> dict[str, tuple[str, str | None]]:
    with sqlite3.connect(index) as c:
        return {r[0]: (r[1], r[2]) for r in c.execute("SELECT doc_id, metadata, title FROM documents")}


# -- 1. a lone surrogate escape (JSON or YAML) -------------------------------------------------------
def test_a_lone_surrogate_escape_in_jsonl_is_replaced_and_noted_not_a_crash(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    # Written as the escapes a JSON writer emits: json.dumps would write "\\ud800" the same way.
    lines = [
        '{"id": "a", "text": "Refunds are paid \\ud800 within thirty days of the request."}',
        '{"id": "b\\udc00", "text": "Badges go back at the desk on the last day.", "k\\ud800": ["\\udfff"]}',
        '{"id": "c", "text": "Emoji pairs stay whole \\ud83d\\ude00 in the text of a record."}',
    ]
    (docs / "s.jsonl").write_text("\n".join(lines) + "\n")
    (docs / "fine.txt").write_text(TEXT + "\n")
    index = tmp_path / "i.sqlite"
    report = ingest([docs], index)
    status, reason = _by_name(report)["s.jsonl"]
    assert status == "ingested" and reason is not None
    assert "line 1: 1 lone surrogate escape(s)" in reason and "line 2: 3 lone surrogate escape(s)" in reason
    assert "U+FFFD" in reason and "line 3" not in reason  # a valid pair is no lone surrogate
    assert _by_name(report)["fine.txt"][0] == "ingested"
    assert _runs(index) == ["done"]
    stored = _documents(index)
    assert set(stored) == {"s.jsonl#a", "s.jsonl#b\ufffd", "s.jsonl#c", "fine.txt"}
    assert json.loads(stored["s.jsonl#b\ufffd"][0]) == {"k\ufffd": '["\ufffd"]'}


def test_a_lone_surrogate_escape_in_front_matter_is_replaced_and_noted(tmp_path: Path) -> None:
    md = tmp_path / "m.md"
    md.write_text('---\ntitle: "\\ud800 Refunds"\nok: "\\ud83d\\ude00"\n---\n\n' + TEXT + "\n")
    index = tmp_path / "i.sqlite"
    (result,) = ingest([md], index).files
    assert result.status == FileStatus.INGESTED
    assert (result.reason or "").startswith("front matter line 2: 1 lone surrogate escape(s)")
    metadata, title = _documents(index)["m.md"]
    assert title == "\ufffd Refunds"
    assert json.loads(metadata) == {"title": "\ufffd Refunds", "ok": "\U0001f600"}  # the pair joined


def test_a_lone_surrogate_escape_in_the_manifest_is_a_clear_error(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text(TEXT + "\n")
    manifest = tmp_path / "manifest.jsonl"
    manifest.write_text('{"path": "docs/a.txt", "family": "f\\udc00"}\n')
    result = CliRunner().invoke(
        main, ["ingest", str(docs), "--manifest", str(manifest), "--index", "i.sqlite"]
    )
    assert result.exit_code != 0 and not isinstance(result.exception, UnicodeError), result.exc_info
    assert "line 1: a lone surrogate escape" in result.output


# -- 2. bytes that are not UTF-8 -----------------------------------------------------------------
def test_jsonl_bytes_that_are_not_utf8_get_the_text_files_note(tmp_path: Path) -> None:
    data = '{"id": "a", "text": "Le café est servi à midi, près du hall."}\n'.encode("cp1252")
    parsed = JsonlParser().parse(data)
    assert parsed.documents[0].pages[0].text == "Le café est servi à midi, près du hall."
    assert parsed.notes == ("not UTF-8: decoded as cp1252 (a guess; save the file as UTF-8 to be sure)",)
    known = JsonlParser().parse_known(data, lambda h, n: None)
    assert known.notes == parsed.notes
    (tmp_path / "r.jsonl").write_bytes(data)
    (result,) = ingest([tmp_path / "r.jsonl"], tmp_path / "i.sqlite").files
    assert result.status == FileStatus.INGESTED and "not UTF-8" in (result.reason or "")


# -- 3. untrusted values in notes -------------------------------------------------------------------
def test_notes_echo_only_the_start_of_a_huge_value(tmp_path: Path) -> None:
    big = {"k": "x" * 200_000}
    lines = [
        json.dumps({"id": big, "text": TEXT}),
        json.dumps({"id": "d", "text": TEXT, "effective_date": "y" * 5_000}),
        json.dumps({"id": "ok", "text": TEXT}),
    ]
    (tmp_path / "r.jsonl").write_text("\n".join(lines) + "\n")
    (result,) = ingest([tmp_path / "r.jsonl"], tmp_path / "i.sqlite").files
    reason = result.reason or ""
    assert result.status == FileStatus.INGESTED and len(reason) < 400, len(reason)
    assert "line 1: 'id' must be a string or an integer, got {'k': 'xxx" in reason
    assert "(200,009 characters as a dict)" in reason and "(5,000 characters) is not a date" in reason


# -- 4. repeated record ids -------------------------------------------------------------------------
def test_a_file_with_repeated_ids_fails_naming_every_repeat(tmp_path: Path) -> None:
    lines = [
        json.dumps({"id": 5, "text": "five as an integer"}),
        json.dumps({"id": "5", "text": "five as a string"}),
        json.dumps({"id": "q", "text": "q once"}),
        json.dumps({"id": "q", "text": "q twice"}),
        json.dumps({"id": "q", "text": "q three times"}),
        json.dumps({"id": "unique", "text": "only once"}),
    ]
    (tmp_path / "r.jsonl").write_text("\n".join(lines) + "\n")
    (tmp_path / "fine.txt").write_text(TEXT + "\n")
    report = ingest([tmp_path], tmp_path / "i.sqlite")
    status, reason = _by_name(report)["r.jsonl"]
    assert status == "failed"
    assert reason == (
        "record id '5' is used on lines 1 and 2; 'q' on lines 3, 4 and 5 (an integer id and the same "
        "digits as a string are one id): give each record a unique 'id'"
    )
    assert _by_name(report)["fine.txt"][0] == "ingested"


def test_repeated_string_ids_say_nothing_of_integers() -> None:
    data = b'{"id": "a", "text": "one"}\n{"id": "a", "text": "two"}\n'
    with pytest.raises(Exception, match=r"^record id 'a' is used on lines 1 and 2: give each record"):
        JsonlParser().parse(data)


# -- 5. an empty Host header ------------------------------------------------------------------------
def test_a_request_with_an_empty_or_missing_host_is_refused(tmp_path: Path) -> None:
    pytest.importorskip("starlette")
    import asyncio

    from starlette.testclient import TestClient

    from chunkdedup.web import create_app

    (tmp_path / "a.txt").write_text(TEXT + "\n")
    index = tmp_path / "i.sqlite"
    ingest([tmp_path / "a.txt"], index)
    app = create_app(index)
    with TestClient(base_url="http://localhost", app=app) as c:
        assert c.get("/documents", headers={"host": "localhost"}).status_code == 200
        for host in ("", " ", ":8765"):
            assert c.get("/documents", headers={"host": host}).status_code == 400, repr(host)

    sent: list[dict[str, object]] = []

    async def receive() -> dict[str, object]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, object]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "http_version": "1.0",
        "method": "GET",
        "scheme": "http",
        "path": "/documents",
        "raw_path": b"/documents",
        "query_string": b"",
        "headers": [],
        "server": ("127.0.0.1", 8765),
    }
    asyncio.run(app(scope, receive, send))  # an HTTP/1.0 request carries no Host at all
    assert sent[0]["status"] == 400


# -- 6. full-width questions ------------------------------------------------------------------------
def test_a_full_width_question_finds_the_text_it_folds_to(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("Personal data kept for thirty days after the account closes.\n")
    (tmp_path / "b.txt").write_text("Ｂａｄｇｅｓ are returned at the front desk on the last day.\n")
    index = tmp_path / "i.sqlite"
    ingest([tmp_path], index)
    for question, found in (("ｄａｔａ ｋｅｐｔ", "Personal data kept"), ("ｂａｄｇｅｓ", "Ｂａｄｇｅｓ")):
        result = CliRunner().invoke(main, ["query", question, "--index", str(index)])
        assert result.exit_code == 0 and found in result.output, (question, result.output)
