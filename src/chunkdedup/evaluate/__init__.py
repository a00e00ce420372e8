"""Evaluation: golden sets, retrieval metrics before and after dedup, the duplication audit, and diffs
between two runs' reports.

Example:
    >>> from chunkdedup.evaluate import evaluate
    >>> ev = evaluate("golden.jsonl", "policies.sqlite", k=5)  # doctest: +SKIP
    >>> ev.summary_json()["runs"]["index"]["recall@5"]  # doctest: +SKIP
"""

from chunkdedup.evaluate.audit import Audit, audit
from chunkdedup.evaluate.baseline import Baseline, corpus_fingerprint, ensure_baseline
from chunkdedup.evaluate.diff import diff_reports
from chunkdedup.evaluate.golden import DocResolver, Question, Relevant, convert_docugami, load_golden
from chunkdedup.evaluate.run import Evaluation, evaluate

__all__ = [
    "Audit",
    "Baseline",
    "DocResolver",
    "Evaluation",
    "Question",
    "Relevant",
    "audit",
    "convert_docugami",
    "corpus_fingerprint",
    "diff_reports",
    "ensure_baseline",
    "evaluate",
    "load_golden",
]
