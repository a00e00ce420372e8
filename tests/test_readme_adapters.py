"""The README's framework snippets run as written, against the site-policy index."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
SECTION = "## Use it from LangChain / LlamaIndex / Haystack"
NEEDS = {"langchain": "langchain_core", "llamaindex": "llama_index.core", "haystack": "haystack"}


def _snippets() -> dict[str, str]:
    """Each framework's snippet by its name, and the one that starts from in-memory Documents (its
    ``Deduplicator``) as ``NAME-documents``."""
    text = README.read_text(encoding="utf-8")
    body = text[text.index(SECTION) + len(SECTION) :]
    body = body[: body.index("\n## ")]
    blocks = re.findall(r"```python\n(.*?)```", body, re.DOTALL)
    out = {}
    for block in blocks:
        name = re.search(r"chunkdedup\.integrations\.(\w+)", block)
        assert name, block
        out[name.group(1) + ("-documents" if "Deduplicator" in block else "")] = block
    return out


def test_the_section_has_one_snippet_per_framework() -> None:
    assert sorted(_snippets()) == sorted([*NEEDS, *(f"{name}-documents" for name in NEEDS)])


@pytest.mark.parametrize("snippet", sorted([*NEEDS, *(f"{name}-documents" for name in NEEDS)]))
def test_snippet_runs(
    snippet: str,
    policy_index: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    framework = snippet.removesuffix("-documents")
    pytest.importorskip(
        NEEDS[framework], reason=f"needs the [{framework}] extra: pip install 'chunkdedup[{framework}]'"
    )
    os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
    shutil.copy(policy_index, tmp_path / "policies.sqlite")
    monkeypatch.chdir(tmp_path)
    exec(compile(_snippets()[snippet], f"README:{snippet}", "exec"), {})  # the README's own code
    printed = capsys.readouterr().out.splitlines()
    assert printed, "the snippet printed no hit"
    if snippet == framework:
        assert list(tmp_path.glob(f"{framework}.sync.json")), "the snippet's sync recorded no state"
    else:  # one shared chunk, printed once with both documents
        assert len(printed) == 1 and "refunds.md" in printed[0] and "shop/terms.md" in printed[0]
