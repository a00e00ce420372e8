"""The index ``chunkdedup serve`` is tested on, built once per session from the real corpora.

The site-policy corpus (with its manifest: merges and versions), the NTSB reports (corpus chrome:
a "Page N of M" block) and two files that fail or are skipped; plus a report folder drawn from it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from chunkdedup import ingest
from chunkdedup.evaluate import evaluate
from chunkdedup.report import write_report

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def served(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The index and a report folder drawn from it."""
    from conftest import NTSB, POLICY, POLICY_MANIFEST

    work = tmp_path_factory.mktemp("web")
    index = work / "served.sqlite"
    extras = work / "extras"
    extras.mkdir()
    (extras / "broken.pdf").write_bytes(b"garbage, not a pdf")
    (extras / "empty.md").write_bytes(b"")
    ingest([POLICY], index, manifest=POLICY_MANIFEST)
    ingest([NTSB], index)
    ingest([extras], index)
    ev = evaluate(REPO / "benchmarks" / "golden" / "site-policy.jsonl", index, k=5)
    write_report(ev.to_json(), work / "report")
    return index, work / "report"
