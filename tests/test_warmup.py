"""The first run after an install: the twins while numba's cache is cold, the kernels once compiled.

A run that finds the cache cold takes the NumPy and CPython twins and compiles the kernels in a
process of its own (:class:`chunkdedup.ingestion.warmup.Warmup`); the index is the same either way.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from chunkdedup.ingestion import warmup
from chunkdedup.ingestion.warm import warm_corpus
from chunkdedup.ingestion.warmup import Warmup

SRC = str(Path(__file__).resolve().parents[1] / "src")

#: ingest a folder in a process of its own (NUMBA_CACHE_DIR as given), print the export's digests and
#: whether numba was imported
_INGEST = """
import json, sys
from pathlib import Path
sys.path.insert(0, {tests!r})
from export_reference import digests
from chunkdedup import ingest
kernels = json.loads(sys.argv[3])
ingest([Path(sys.argv[1])], Path(sys.argv[2]), kernels=kernels)
print(json.dumps({{"digests": digests(Path(sys.argv[2])), "numba": "numba" in sys.modules}}))
"""


def _ingest(corpus: Path, index: Path, cache: Path, kernels: bool | None) -> dict[str, object]:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "PYTHONPATH": SRC}
    code = _INGEST.format(tests=str(Path(__file__).parent))
    done = subprocess.run(
        [sys.executable, "-c", code, str(corpus), str(index), json.dumps(kernels)],
        check=True, capture_output=True, text=True, env=env,
    )
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "corpus"
    folder.mkdir()
    warm_corpus(folder)
    return folder


def _never(*_: object) -> bool:
    raise AssertionError("the cache was asked about")


def test_small_stage_never_asks_the_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(warmup, "kernels_cached", _never)
    warm = Warmup()
    assert warm.compiled(False) is False
    assert warm.cluster_pass() is None
    assert not warm.started


@pytest.mark.parametrize("kernels", [True, False])
def test_the_run_s_choice_wins(monkeypatch: pytest.MonkeyPatch, kernels: bool) -> None:
    monkeypatch.setattr(warmup, "kernels_cached", _never)
    warm = Warmup(kernels)
    assert warm.compiled(True) is kernels
    assert warm.compiled(False) is kernels
    assert warm.cluster_pass() is kernels
    assert not warm.started


def test_a_warm_cache_takes_the_kernels(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(warmup, "kernels_cached", lambda *_: True)
    warm = Warmup(command=[sys.executable, "-c", "raise SystemExit(3)"])
    assert warm.compiled(True) is True
    assert not warm.started
    assert warm.cluster_pass() is None


def test_a_cold_cache_takes_the_twins_until_the_kernels_are_compiled(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(warmup, "kernels_cached", lambda *_: False)
    gate = tmp_path / "go"
    # the warming process stands in for the compiler: it ends once the test lets it
    wait = f"import pathlib, time\nwhile not pathlib.Path({str(gate)!r}).exists(): time.sleep(0.02)"
    warm = Warmup(command=[sys.executable, "-c", wait])
    assert warm.compiled(True) is False  # the twins while the process compiles
    assert warm.started and warm.warming
    assert warm.cluster_pass() is False
    assert warm.compiled(False) is False
    gate.touch()
    assert warm.wait(timeout=30) == 0
    assert warm.compiled(True) is True  # compiled: the kernels for the next job
    assert warm.cluster_pass() is None


def test_a_stage_takes_its_kernels_once_the_cache_holds_them(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """While the warming process compiles, a chunk job takes the kernels once the text walks and the
    signing are cached; the cluster pass waits for every kernel."""
    cached: set[str] = set()

    def kernels_cached(modules: tuple[str, ...] = warmup.KERNEL_MODULES) -> bool:
        return all(m in cached for m in modules)

    monkeypatch.setattr(warmup, "kernels_cached", kernels_cached)
    monkeypatch.setattr(warmup, "_LOOK_EVERY", 0.0)
    gate = tmp_path / "go"
    wait = f"import pathlib, time\nwhile not pathlib.Path({str(gate)!r}).exists(): time.sleep(0.02)"
    warm = Warmup(command=[sys.executable, "-c", wait])
    assert warm.compiled(True, warmup.CHUNK_KERNELS) is False
    cached.update(warmup.CHUNK_KERNELS)
    assert warm.compiled(True, warmup.PARSE_KERNELS) is True
    assert warm.compiled(True, warmup.CHUNK_KERNELS) is True
    assert warm.compiled(True) is False  # the cluster pass's kernels are still compiling
    assert warm.cluster_pass() is False
    gate.touch()
    assert warm.wait(timeout=30) == 0
    assert warm.compiled(True) is True
    assert warm.cluster_pass() is None


def test_no_process_can_start_then_the_kernels_compile_inline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(warmup, "kernels_cached", lambda *_: False)
    warm = Warmup(command=["/nonexistent/python-for-chunkdedup"])
    assert warm.compiled(True) is True
    assert not warm.started


def test_a_cold_cache_run_on_the_twins_imports_no_numba_and_writes_the_same_index(
    corpus: Path, tmp_path: Path
) -> None:
    """In a process of its own over an empty NUMBA_CACHE_DIR: ``kernels=False`` (what a cold run takes
    while the kernels compile) and the default give the same export."""
    cold = tmp_path / "numba-cache"
    cold.mkdir()
    twins = _ingest(corpus, tmp_path / "twins.sqlite", cold, False)
    assert twins["numba"] is False
    assert not any(cold.rglob("*.nbi"))  # nothing compiled, nothing cached
    default = _ingest(corpus, tmp_path / "default.sqlite", cold, None)
    assert twins["digests"] == default["digests"]


@pytest.mark.slow
def test_the_warming_process_caches_every_kernel_and_the_kernels_write_the_same_index(
    corpus: Path, tmp_path: Path
) -> None:
    """``python -m chunkdedup.ingestion.warm`` into an empty cache leaves every kernel cached (so a run
    after it finds the cache warm), and a run on the kernels writes the index the twins write."""
    cache = tmp_path / "numba-cache"
    cache.mkdir()
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "PYTHONPATH": SRC}
    subprocess.run(warmup.warm_command(), check=True, env=env, capture_output=True)
    check = "from chunkdedup.ingestion.warmup import kernels_cached; print(kernels_cached())"
    done = subprocess.run([sys.executable, "-c", check], check=True, env=env, capture_output=True, text=True)
    assert done.stdout.strip() == "True"
    compiled = _ingest(corpus, tmp_path / "kernels.sqlite", cache, True)
    twins = _ingest(corpus, tmp_path / "twins.sqlite", cache, False)
    assert compiled["numba"] is True
    assert compiled["digests"] == twins["digests"]


@pytest.mark.parametrize("cached", [True, False])
def test_cli_warm(monkeypatch: pytest.MonkeyPatch, cached: bool) -> None:
    from click.testing import CliRunner

    from chunkdedup import cli
    from chunkdedup.ingestion import warm

    monkeypatch.setattr(warm, "warm_kernels", lambda: 1.25)
    monkeypatch.setattr(warmup, "kernels_cached", lambda *_: cached)
    done = CliRunner().invoke(cli.main, ["warm", "--json"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.output) == {"seconds": 1.25, "cached": cached}
    text = CliRunner().invoke(cli.main, ["warm"]).output
    assert ("cached in 1.2 s" in text) is cached
