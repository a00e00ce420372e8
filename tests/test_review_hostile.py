"""The review queue under hostile input: a form with a non-ASCII token, ids the index does not hold,
the same id twice; `overrides` rows written by hand with ids that are not text; and decisions whose
groups are gone. None is a server error or a crash, none is kept, none is printed as config."""

from __future__ import annotations

import json
import logging
import re
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

from chunkdedup import Config, ingest
from chunkdedup.cli import main
from chunkdedup.store import Store
from chunkdedup.store.review import ReviewQueue
from chunkdedup.web import create_app
from review_corpus import CLAUSE, groups, review_corpus

#: a well-formed group id that no group of the fixture has
GONE = "c0123456789abcdef01234567"


@pytest.fixture()
def corpus(tmp_path: Path) -> Path:
    return review_corpus(tmp_path / "c")


@pytest.fixture()
def index(corpus: Path, tmp_path: Path) -> Path:
    path = tmp_path / "i.sqlite"
    ingest([corpus], path)
    return path


def _rows(index: Path) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(index)
    try:
        return list(conn.execute("SELECT a, b, decision FROM overrides ORDER BY a, b"))
    finally:
        conn.close()


def _write(index: Path, *rows: tuple[object, object, object], untyped: bool = False) -> None:
    """Insert ``rows`` into ``overrides`` by hand; ``untyped``: first rebuild the table without column
    types (as a hand-made or foreign table may be), so a number stays a number."""
    conn = sqlite3.connect(index)
    try:
        if untyped:
            conn.executescript(
                "CREATE TABLE o2(a, b, decision, decided_at, decided_by, PRIMARY KEY(a, b)) WITHOUT ROWID;"
                "INSERT INTO o2 SELECT * FROM overrides; DROP TABLE overrides;"
                "ALTER TABLE o2 RENAME TO overrides;"
            )
        conn.executemany("INSERT INTO overrides(a, b, decision) VALUES (?, ?, ?)", rows)
        conn.commit()
    finally:
        conn.close()


def _token(client: TestClient) -> str:
    found = re.search(r'name="token" value="([^"]+)"', client.get("/review?kind=merges").text)
    assert found is not None
    return found.group(1)


# --- bug 7: POST /review/decide


@pytest.mark.parametrize("token", ["%C3%A9", "%C3%A9" * 22, "%FF%FE", "caf%C3%A9"])
def test_a_token_that_is_not_ascii_is_refused_not_a_server_error(index: Path, token: str) -> None:
    g = groups(index)
    body = f"a={g['a.txt']}&b={g['c.txt']}&decision=apart&token={token}".encode()
    with TestClient(create_app(index), base_url="http://localhost", raise_server_exceptions=False) as client:
        answer = client.post(
            "/review/decide", content=body, follow_redirects=False,
            headers={"content-type": "application/x-www-form-urlencoded"},
        )
    assert answer.status_code == 403, answer.text
    assert _rows(index) == []


def _post(client: TestClient, a: str, b: str, decision: str) -> tuple[int, str]:
    form = {"a": a, "b": b, "decision": decision, "token": _token(client), "back": "/review"}
    answer = client.post("/review/decide?format=json", data=form, follow_redirects=False)
    message = answer.json()["message"] if answer.status_code >= 400 else ""
    return answer.status_code, message


def test_a_busy_writer_is_a_409_that_says_to_decide_again(
    index: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While an ingest holds the writer lock the decision is refused with the lock's own reason, not a
    hint to serve another file."""
    from chunkdedup.errors import IndexBusyError
    from chunkdedup.web import app as web_app

    def busy(path: Path, pairs: object, decision: str | None, by: str | None = None) -> None:
        raise IndexBusyError(f"index {path} is being written by another process (waited 30 s)")

    monkeypatch.setattr(web_app, "keep_decisions", busy)
    g = groups(index)
    with TestClient(create_app(index), base_url="http://localhost", raise_server_exceptions=False) as client:
        status, message = _post(client, g["a.txt"], g["c.txt"], "apart")
    assert status == 409
    assert "being written by another process" in message and "make the decision again" in message
    assert "writable index file" not in message
    assert _rows(index) == []


@pytest.mark.parametrize("decision", ["merge", "apart", "clear"])
@pytest.mark.parametrize(
    ("a", "b", "said"),
    [
        ("x", "c.txt", "no group 'x'"),
        (GONE, "c.txt", f"no group '{GONE}'"),
        ("a.txt", GONE, f"no group '{GONE}'"),
        ("a.txt", "a.txt", "twice"),
    ],
)
def test_a_decision_on_ids_the_index_does_not_hold_is_a_400_and_keeps_nothing(
    index: Path, a: str, b: str, said: str, decision: str
) -> None:
    g = groups(index)
    a, b = g.get(a, a), g.get(b, b)
    with TestClient(create_app(index), base_url="http://localhost", raise_server_exceptions=False) as client:
        status, message = _post(client, a, b, decision)
    assert status == 400
    assert said in message and "\n" not in message
    assert _rows(index) == []


def test_an_unknown_decision_is_a_400_and_a_valid_one_is_still_kept(index: Path) -> None:
    g = groups(index)
    with TestClient(create_app(index), base_url="http://localhost", raise_server_exceptions=False) as client:
        assert _post(client, g["a.txt"], g["c.txt"], "maybe")[0] == 400
        assert _rows(index) == []
        assert _post(client, g["c.txt"], g["a.txt"], "apart") == (303, "")
        assert _rows(index) == [(*sorted((g["a.txt"], g["c.txt"])), "apart")]
        assert _post(client, g["a.txt"], g["c.txt"], "clear") == (303, "")
    assert _rows(index) == []


def test_the_library_refuses_a_decision_on_groups_it_does_not_hold(index: Path) -> None:
    g = groups(index)
    with Store.open(index) as store:
        queue = ReviewQueue(store)
        for a, b in ((g["a.txt"], "x"), (GONE, g["a.txt"]), (g["b.txt"], g["b.txt"])):
            with pytest.raises(ValueError, match=r"no group|twice"):
                queue.decide(a, b, "merge")
            with pytest.raises(ValueError, match=r"no group|twice"):
                queue.forget(a, b)
        with pytest.raises(ValueError, match="'merge' or 'apart'"):
            queue.decide(g["a.txt"], g["b.txt"], "maybe")  # type: ignore[arg-type]
        assert queue.overrides() == ()
        assert store.conn.execute("SELECT COUNT(*) FROM dirty").fetchone()[0] == 0


def test_review_prints_only_held_groups_and_counts_stale_decisions(index: Path, tmp_path: Path) -> None:
    g = groups(index)
    held = tuple(sorted((g["a.txt"], g["b.txt"])))
    _write(index, (*held, "merge"), (GONE, g["c.txt"], "apart"), ("refunds", "x", "merge"))
    out = CliRunner().invoke(main, ["review", "--index", str(index)])
    assert out.exit_code == 0, out.output
    assert "2 stale" in out.output
    assert GONE not in out.output and "refunds" not in out.output
    config = tmp_path / "cfg.toml"
    config.write_text(out.output, encoding="utf-8")
    near = Config.load(config).near
    assert near.always_merge == (held,) and near.keep_apart == ()
    as_json = CliRunner().invoke(main, ["review", "--index", str(index), "--json"])
    assert as_json.exit_code == 0
    assert json.loads(as_json.stdout) == [
        {"a": held[0], "b": held[1], "decision": "merge", "decided_at": None, "decided_by": None}
    ]
    assert "2 stale" in as_json.stderr
    with Store.open(index) as store:  # a stale decision can still be dropped
        ReviewQueue(store).forget(GONE, g["c.txt"])
    assert len(_rows(index)) == 2


# --- bug 8: `overrides` rows whose ids are not text


def test_a_blob_id_is_skipped_by_review_and_reported_by_check(index: Path) -> None:
    g = groups(index)
    held = tuple(sorted((g["a.txt"], g["b.txt"])))
    _write(index, (b"\x01\x02", g["c.txt"], "apart"), (*held, "merge"))
    out = CliRunner().invoke(main, ["review", "--index", str(index)])
    assert out.exit_code == 0, out.output
    assert "1 damaged" in out.output and f'always_merge = [["{held[0]}", "{held[1]}"]]' in out.output
    check = CliRunner().invoke(main, ["check", "--index", str(index)])
    assert check.exit_code == 1, check.output
    assert "1 review decision(s)" in check.output and "(blob)" in check.output
    assert "is damaged" in check.output


def test_float_and_blob_ids_do_not_crash_ingest_or_review(
    index: Path, corpus: Path, caplog: pytest.LogCaptureFixture
) -> None:
    g = groups(index)
    _write(index, (2.5, g["a.txt"], "merge"), (b"\xff", g["b.txt"], "apart"), untyped=True)
    with Store.open(index) as store:  # a valid decision too: ingest re-decides (and reads every override)
        ReviewQueue(store).decide(g["a.txt"], g["c.txt"], "apart")
    edited = CLAUSE.format(which="first", keeps="retains") + " Amended."
    (corpus / "c.txt").write_text(edited, encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="chunkdedup"):
        ingest([corpus], index)
    assert "skipped 2 damaged review decision(s)" in caplog.text and "2.5" in caplog.text
    out = CliRunner().invoke(main, ["review", "--index", str(index)])
    assert out.exit_code == 0, out.output
    assert "2 damaged" in out.output and "2.5" not in out.output
    check = CliRunner().invoke(main, ["check", "--index", str(index), "--json"])
    assert check.exit_code == 1
    report = json.loads(check.stdout)
    assert report["ok"] is False
    [line] = report["found"]
    assert "table overrides: 2 review decision(s)" in line and "a=2.5 (real)" in line


def test_check_finds_nothing_in_sound_decisions(index: Path) -> None:
    g = groups(index)
    with Store.open(index) as store:
        ReviewQueue(store).decide(g["a.txt"], g["c.txt"], "apart")
    check = CliRunner().invoke(main, ["check", "--index", str(index)])
    assert check.exit_code == 0, check.output
    assert ": ok" in check.output
