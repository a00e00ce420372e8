"""report.html: self-contained, and rendered by headless Chromium without console errors.

Chromium is driven over the DevTools protocol on ``--remote-debugging-pipe`` (fds 3 and 4, JSON
messages ended by NUL): no extra package (no selenium, no chromedriver), and unlike scraping
``--enable-logging`` output it reports console messages, exceptions and every network request as
structured events. A negative control checks that the harness does catch an SVG error.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from chunkdedup import ingest
from chunkdedup.evaluate import evaluate
from chunkdedup.report import render_html, write_report

REPO = Path(__file__).resolve().parents[1]
ARTIFACTS = REPO / "test-artifacts"
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--remote-debugging-pipe")


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if path := shutil.which(name):
            return path
    pytest.fail("headless Chromium is missing: apt-get install -y chromium chromium-driver (.ci/run does)")


class Browser:
    """A minimal DevTools-protocol client over the pipe: send commands, collect events."""

    def __init__(self, profile: Path) -> None:
        to_child_r, self._w = os.pipe()
        self._r, from_child_w = os.pipe()

        def fds() -> None:  # runs in the child: the pipe ends become fds 3 (read) and 4 (write)
            a = fcntl.fcntl(to_child_r, fcntl.F_DUPFD, 10)
            b = fcntl.fcntl(from_child_w, fcntl.F_DUPFD, 10)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.proc = subprocess.Popen([_chromium(), *FLAGS, f"--user-data-dir={profile}", "about:blank"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     preexec_fn=fds, close_fds=False)
        os.close(to_child_r)
        os.close(from_child_w)
        self._buf = b""
        self._id = 0
        self.events: list[dict[str, Any]] = []

    def _read(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buf:
            ready, _, _ = select.select([self._r], [], [], max(0.0, deadline - time.monotonic()))
            chunk = os.read(self._r, 1 << 20) if ready else b""
            if not chunk:
                raise TimeoutError("Chromium did not answer in time")
            self._buf += chunk
        msg, self._buf = self._buf.split(b"\0", 1)
        data: dict[str, Any] = json.loads(msg)
        return data

    def send(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        self._id += 1
        msg: dict[str, Any] = {"id": self._id, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        os.write(self._w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + 30
        while True:
            data = self._read(deadline)
            if data.get("id") == self._id:
                if "error" in data:
                    raise RuntimeError(f"{method}: {data['error']}")
                result: dict[str, Any] = data.get("result", {})
                return result
            self.events.append(data)

    def wait_for(self, method: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while not any(e.get("method") == method for e in self.events):
            self.events.append(self._read(deadline))

    def close(self) -> None:
        with contextlib.suppress(OSError, TimeoutError, RuntimeError):
            self.send("Browser.close")
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        os.close(self._r)
        os.close(self._w)


def render(page: Path, profile: Path, screenshot: Path | None = None) -> dict[str, Any]:
    """Open ``page``; return console problems, non-file requests, found chart elements."""
    browser = Browser(profile)
    try:
        target = browser.send("Target.createTarget", url="about:blank")["targetId"]
        s = browser.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Runtime", "Log", "Page", "Network"):
            browser.send(f"{domain}.enable", s)
        browser.send("Emulation.setDeviceMetricsOverride", s, width=1200, height=900, deviceScaleFactor=1,
                     mobile=False)
        browser.send("Page.navigate", s, url=page.resolve().as_uri())
        browser.wait_for("Page.loadEventFired")
        probe = ("JSON.stringify({funnel: document.querySelectorAll('svg#funnel .funnel-bar').length,"
                 " metrics: document.querySelectorAll('#metrics svg.metric-chart').length,"
                 " winsLosses: document.querySelectorAll('svg#wins-losses rect').length,"
                 " clusters: document.querySelectorAll('svg#clusters .hist-bar').length,"
                 " boilerplate: document.querySelectorAll('table#boilerplate tr').length,"
                 " height: document.documentElement.scrollHeight})")
        found = json.loads(browser.send("Runtime.evaluate", s, expression=probe, returnByValue=True)
                           ["result"]["value"])
        if screenshot is not None:
            shot = browser.send("Page.captureScreenshot", s, format="png", captureBeyondViewport=True,
                                clip={"x": 0, "y": 0, "width": 1200, "height": found["height"], "scale": 1})
            screenshot.parent.mkdir(parents=True, exist_ok=True)
            screenshot.write_bytes(base64.b64decode(shot["data"]))
        events = browser.events
    finally:
        browser.close()
    problems = [e["params"] for e in events if e.get("method") == "Runtime.exceptionThrown"]
    problems += [e["params"] for e in events if e.get("method") == "Runtime.consoleAPICalled"
                 and e["params"]["type"] in ("error", "warning", "assert")]
    problems += [e["params"]["entry"] for e in events if e.get("method") == "Log.entryAdded"
                 and e["params"]["entry"]["level"] in ("error", "warning")]
    requests = [e["params"]["request"]["url"] for e in events
                if e.get("method") == "Network.requestWillBeSent"]
    return {"problems": problems, "remote": [u for u in requests if not u.startswith(("file:", "data:"))],
            "found": found}


@pytest.fixture(scope="module")
def report_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from conftest import POLICY, POLICY_MANIFEST

    work = tmp_path_factory.mktemp("report")
    index = work / "policy.sqlite"
    ingest([POLICY], index, manifest=POLICY_MANIFEST)
    ev = evaluate(REPO / "benchmarks" / "golden" / "site-policy.jsonl", index, k=5)
    write_report(ev.to_json(), work / "out")
    return work / "out"


def test_report_html_is_self_contained(report_dir: Path) -> None:
    html = (report_dir / "report.html").read_text(encoding="utf-8")
    for marker in ("<script", "<link", "src=", "href=", "url(", "@import"):
        assert marker not in html
    data = json.loads((report_dir / "report.json").read_text(encoding="utf-8"))
    assert render_html(data) == html  # drawn from report.json alone, deterministically


def test_report_renders_in_headless_chromium(report_dir: Path, tmp_path: Path) -> None:
    shot = ARTIFACTS / "report.png"
    result = render(report_dir / "report.html", tmp_path / "profile", shot)
    assert result["problems"] == []
    assert result["remote"] == []
    found = result["found"]
    assert found["funnel"] == 5 and found["metrics"] >= 7 and found["clusters"] == 7
    assert found["winsLosses"] >= 25 and found["boilerplate"] >= 1
    assert shot.stat().st_size > 10_000


def test_harness_catches_console_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.html"
    bad.write_text('<!DOCTYPE html><html><body><svg><rect width="-5" height="oops"/></svg></body></html>')
    assert render(bad, tmp_path / "profile")["problems"]
