"""report.html: self-contained, and rendered by headless Chromium without console errors.

Chromium is driven over the DevTools protocol (``tests/browser.py``); a negative control checks
that the harness does catch an SVG error.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from browser import Browser, console_problems
from chunkdedup import ingest
from chunkdedup.evaluate import evaluate
from chunkdedup.report import render_html, write_report

REPO = Path(__file__).resolve().parents[1]
ARTIFACTS = REPO / "test-artifacts"


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
    problems = console_problems(events)
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
