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

from chunkdedup.outfile import out_folder, text_out
from chunkdedup.report.html import render_html


def write_report(data: dict[str, Any], out: str | Path) -> tuple[Path, Path]:
    """Write ``report.json`` and ``report.html`` into ``out`` (created); return both paths.

    Each file is replaced whole (see :mod:`chunkdedup.outfile`): a failed write (a read-only folder, a full
    disk) is an :class:`~chunkdedup.errors.InputError` naming the file, and leaves an older report as it was.
    """
    folder = out_folder(out, "the report")
    json_path, html_path = folder / "report.json", folder / "report.html"
    texts = {json_path: json.dumps(data, indent=1, ensure_ascii=False) + "\n", html_path: render_html(data)}
    for path, text in texts.items():
        with text_out(path, "the report") as fh:
            fh.write(text)
    return json_path, html_path


__all__ = ["render_html", "write_report"]
