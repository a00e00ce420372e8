"""``chunkdedup serve`` in headless Chromium: each page of a served site-policy index renders its
content, htmx loads a key's context on a click, and no page logs a console error or exception.

The server is the real command (``chunkdedup serve`` in a subprocess, on a free loopback port);
the browser is driven over the DevTools protocol (``tests/browser.py``). Screenshots go to the
test's tmp dir.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from browser import Browser, console_problems
from chunkdedup import Index
from chunkdedup.store.views import IndexViews
from web_corpus import served

__all__ = ["served"]  # the session fixture (tests/web_corpus.py), used by name


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def server(served: tuple[Path, Path]) -> Iterator[str]:
    """``chunkdedup serve`` on the served index and its report, on a free loopback port."""
    port = _free_port()
    src = Path(__file__).resolve().parents[1] / "src"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(src), os.environ.get("PYTHONPATH", "")])}
    cmd = [sys.executable, "-c", "from chunkdedup.cli import main; main()", "serve",
           "--index", str(served[0]), "--report", str(served[1]), "--port", str(port)]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(base + "/static/style.css", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    out = proc.stdout.read() if proc.stdout else ""
                    pytest.fail(f"chunkdedup serve did not start: {out}")
                time.sleep(0.2)
        yield base
    finally:
        proc.terminate()
        try:
            out, _ = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
    assert f"at http://127.0.0.1:{port}/ (bound to 127.0.0.1: this machine only" in out
    assert "it writes only the decisions made under /review" in out and "read-only" not in out
    assert "Traceback" not in out


class Tab:
    """One browser tab: visit a page, evaluate an expression, take a screenshot."""

    def __init__(self, browser: Browser, shots: Path) -> None:
        self.browser = browser
        self.shots = shots
        target = browser.send("Target.createTarget", url="about:blank")["targetId"]
        self.s = browser.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Runtime", "Log", "Page", "Network"):
            browser.send(f"{domain}.enable", self.s)
        browser.send("Emulation.setDeviceMetricsOverride", self.s, width=1200, height=900,
                     deviceScaleFactor=1, mobile=False)
        self.problems: list[tuple[str, dict[str, Any]]] = []

    def visit(self, url: str, name: str) -> None:
        self.browser.events.clear()
        self.browser.send("Page.navigate", self.s, url=url)
        self.browser.wait_for("Page.loadEventFired")
        self.settle()
        self.problems += [(url, p) for p in console_problems(self.browser.events)]
        self.screenshot(name)

    def settle(self) -> None:
        """Let deferred scripts and pending events arrive."""
        self.eval("document.readyState")
        time.sleep(0.2)
        self.eval("1")

    def eval(self, expression: str) -> Any:
        result = self.browser.send("Runtime.evaluate", self.s, expression=expression, returnByValue=True,
                                   awaitPromise=True)
        if "exceptionDetails" in result:
            raise AssertionError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def probe(self, **queries: str) -> dict[str, Any]:
        """Each query: a JS expression over ``document``; all evaluated at once."""
        body = ", ".join(f"{json.dumps(k)}: ({v})" for k, v in queries.items())
        return dict(json.loads(self.eval(f"JSON.stringify({{{body}}})")))

    def wait_until(self, expression: str, timeout: float = 10) -> None:
        deadline = time.monotonic() + timeout
        while not self.eval(expression):
            if time.monotonic() > deadline:
                raise AssertionError(f"never true: {expression}")
            time.sleep(0.1)

    def screenshot(self, name: str) -> Path:
        height = int(self.eval("document.documentElement.scrollHeight")) or 900
        clip = {"x": 0, "y": 0, "width": 1200, "height": min(height, 8000), "scale": 1}
        shot = self.browser.send("Page.captureScreenshot", self.s, format="png", captureBeyondViewport=True,
                                 clip=clip)
        path = self.shots / f"{name}.png"
        path.write_bytes(base64.b64decode(shot["data"]))
        return path


@pytest.fixture(scope="module")
def tab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tab]:
    work = tmp_path_factory.mktemp("browser")
    (work / "shots").mkdir()
    browser = Browser(work / "profile")
    try:
        yield Tab(browser, work / "shots")
    finally:
        browser.close()


def _count(selector: str) -> str:
    return f"document.querySelectorAll({json.dumps(selector)}).length"


def _texts(selector: str) -> str:
    return f"[...document.querySelectorAll({json.dumps(selector)})].map(e => e.textContent)"


def test_every_page_renders_its_content_without_console_errors(
    server: str, tab: Tab, served: tuple[Path, Path]
) -> None:
    with Index.open(served[0]) as ix:
        stats = ix.stats()
        ntsb = next(d["doc"] for d in ix.documents() if d["doc"].endswith(".pdf"))
        ntsb_lines = sum(s.lines for s in IndexViews(ix.store).stripped(ntsb))
        near = next(r for r in ix.records() if any(m["relation"] == "near" for m in ix.merges(r.id)))
        version = next(r.id for r in ix.records() if ix.variants(r.id))
    assert ntsb_lines

    tab.visit(server + "/", "overview")
    found = tab.probe(funnel=_count("#funnel tr"), meters=_count("#funnel meter"),
                      problems=_texts("#problems tr td:first-child"),
                      facts="document.querySelector('#facts').textContent", htmx="typeof window.htmx")
    assert found["funnel"] == 4 and found["meters"] == 3
    assert found["problems"] == ["failed", "skipped"]
    assert str(stats["canonical_chunks"]) in tab.eval("document.querySelector('#funnel').textContent")
    assert "fts5" in found["facts"] and found["htmx"] == "object"

    tab.visit(server + "/documents?limit=20", "documents")
    assert tab.probe(rows=_count("#documents tr"))["rows"] == 21

    tab.visit(server + "/documents/" + quote(ntsb), "document")
    found = tab.probe(
        struck=_texts("pre.page-text del.stripped"),
        through="getComputedStyle(document.querySelector('pre.page-text del.stripped')).textDecorationLine",
        boundaries=_count("pre.page-text a.cb"),
        links="[...document.querySelectorAll('pre.page-text a.cb')]"
              f".every(a => a.href.startsWith({json.dumps(server + '/chunks/')}))",
        pages=_count("section.page"),
    )
    assert found["struck"] and all(t.startswith("Page ") for t in found["struck"])
    assert found["through"] == "line-through"
    assert found["boundaries"] >= found["pages"] >= 1 and found["links"]

    tab.visit(server + f"/chunks/{near.id}", "chunk")
    found = tab.probe(sources=_count("#sources tr.source"), marks=_texts("#merged mark"),
                      text="document.querySelector('#canonical-text').textContent")
    assert found["sources"] == min(len(near.sources), 50) and found["marks"]
    assert found["text"] == near.text

    tab.visit(server + f"/chunks/{version}", "versions")
    found = tab.probe(variants=_count("#variants .variant"), marks=_texts("#variants .other mark"))
    assert found["variants"] >= 1 and found["marks"]

    tab.visit(server + "/query?q=" + quote("how long is personal data kept") + "&versions=label", "query")
    found = tab.probe(hits=_count("#hits li.hit"), cites=_count("#hits .citations a"),
                      dropped=_count("#dropped table.dropped tr"), steps=_texts("#dropped h3.step"),
                      chosen="document.querySelector('select[name=versions]').value")
    assert found["hits"] == 5 and found["cites"] >= 5 and found["dropped"] > 0 and found["steps"]
    assert found["chosen"] == "label"

    tab.visit(server + "/report/view", "report")
    found = tab.probe(funnel=_count("svg#funnel .funnel-bar"), metrics=_count("#metrics svg.metric-chart"))
    assert found["funnel"] == 5 and found["metrics"] >= 7
    tab.visit(server + "/report", "report-framed")
    assert tab.probe(frame=_count("iframe#report[sandbox]"))["frame"] == 1

    assert tab.problems == []
    shots = sorted(p.name for p in tab.shots.iterdir())
    assert len(shots) == 8 and all((tab.shots / s).stat().st_size > 5_000 for s in shots)


def test_a_click_shows_a_keys_lines_in_context_through_htmx(server: str, tab: Tab) -> None:
    tab.visit(server + "/boilerplate", "boilerplate")
    assert tab.probe(keys=_count("#boilerplate tr.key"))["keys"] >= 1
    assert tab.probe(ctx=_count("#ctx-1 del.stripped"))["ctx"] == 0
    tab.eval("document.querySelector('#boilerplate tr.key a[hx-get]').click()")
    tab.wait_until("document.querySelectorAll('#ctx-1 del.stripped').length > 0")
    found = tab.probe(where="location.pathname", struck=_texts("#ctx-1 del.stripped"),
                      figures=_count("#ctx-1 figure.key-context"))
    assert found["where"] == "/boilerplate"  # swapped in place, no navigation
    assert found["figures"] >= 1 and all(t.startswith("Page ") for t in found["struck"])
    tab.screenshot("boilerplate-context")
    tab.problems += [("/boilerplate (click)", p) for p in console_problems(tab.browser.events)]
    assert tab.problems == []


def test_a_missing_page_is_a_page_not_a_crash(server: str, tab: Tab) -> None:
    tab.visit(server + "/chunks/c-no-such-chunk", "missing")
    assert "c-no-such-chunk" in tab.eval("document.querySelector('h1').textContent")
    # the one problem Chromium reports is the 404 status of the page itself
    assert all("404" in str(p.get("text", "")) for _, p in tab.problems)
    assert tab.problems
