"""A headless Chromium driven over the DevTools protocol on ``--remote-debugging-pipe``.

Shared by the browser tests (report.html, ``chunkdedup serve``). The pipe is fds 3 and 4, JSON
messages ended by NUL: no extra package (no selenium, no chromedriver), and unlike scraping
``--enable-logging`` output it reports console messages, exceptions and every network request as
structured events.
"""

from __future__ import annotations

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


def console_problems(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Exceptions, console errors/warnings/asserts and error/warning log entries among ``events``."""
    problems = [e["params"] for e in events if e.get("method") == "Runtime.exceptionThrown"]
    problems += [e["params"] for e in events if e.get("method") == "Runtime.consoleAPICalled"
                 and e["params"]["type"] in ("error", "warning", "assert")]
    problems += [e["params"]["entry"] for e in events if e.get("method") == "Log.entryAdded"
                 and e["params"]["entry"]["level"] in ("error", "warning")]
    return problems
