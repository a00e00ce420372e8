"""The evaluation report: ``report.json`` (every figure, metric and per-result log line) and a
self-contained ``report.html`` drawn from it.

Example:
    >>> from chunkdedup.evaluate import evaluate
    >>> from chunkdedup.report import write_report
    >>> write_report(evaluate("golden.jsonl", "corpus.sqlite").to_json(), "out/")  # doctest: +SKIP
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from chunkdedup.report.html import render_html


def write_report(data: dict[str, Any], out: str | Path) -> tuple[Path, Path]:
    """Write ``report.json`` and ``report.html`` into ``out`` (created); return both paths."""
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    json_path, html_path = folder / "report.json", folder / "report.html"
    json_path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    html_path.write_text(render_html(data), encoding="utf-8")
    return json_path, html_path


__all__ = ["render_html", "write_report"]
