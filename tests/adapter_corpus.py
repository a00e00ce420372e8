"""What the three framework adapters' tests share: a small corpus whose documents share a chunk,
the sync lifecycle of issue 14, and the check that a vector store equals a fresh export."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from chunkdedup import ChunkConfig, Config, Index, ingest, remove_documents

SHARED = "Refunds are paid within thirty days of the request, by the original means of payment."
CONFIG = Config(chunk=ChunkConfig(target_words=8, max_words=20))
#: One stored record as the tests compare it: text and the ``sources`` metadata.
View = dict[str, tuple[str, list[dict[str, Any]]]]


def small_corpus(root: Path) -> Path:
    corpus = root / "corpus"
    corpus.mkdir()
    for name, intro in [("alpha", "Alpha"), ("bravo", "Bravo"), ("charlie", "Charlie")]:
        body = f"{intro} policy covers the {name} product line in full.\n\n"
        body += f"{SHARED}\n\n" if name != "charlie" else ""
        body += f"Questions about {name} go to the {name} support desk by email.\n"
        (corpus / f"{name}.txt").write_text(body, encoding="utf-8")
    return corpus


def ingest_small(corpus: Path, index: Path) -> int:
    return ingest([corpus], index, config=CONFIG).run_id


def fresh_export(index: Path) -> View:
    """What a store synced to ``index`` must hold: every canonical's text and sources, by id."""
    with Index.open(index) as ix:
        return {r.id: (r.text or "", [s.to_json() for s in r.sources]) for r in ix.records()}


def lifecycle(tmp_path: Path, sync: Callable[[Path], Any], view: Callable[[], View]) -> None:
    """Ingest, sync; edit a document, re-ingest, sync; remove a document whose chunk another still
    holds, sync: after each sync the store equals a fresh export."""
    corpus = small_corpus(tmp_path)
    index = tmp_path / "index.sqlite"
    ingest_small(corpus, index)
    first = sync(index)
    assert first.since is None and first.upserts == len(fresh_export(index)) and first.deletes == 0
    assert view() == fresh_export(index)

    (corpus / "charlie.txt").write_text(
        "Charlie policy was rewritten for the new charlie product line.\n", encoding="utf-8"
    )
    ingest_small(corpus, index)
    edited = sync(index)
    assert edited.since == first.applied_run and edited.deletes >= 1 and edited.upserts >= 1
    assert view() == fresh_export(index)

    shared = [cid for cid, (text, _) in view().items() if text == SHARED]
    assert len(shared) == 1 and [s["doc"] for s in view()[shared[0]][1]] == ["alpha.txt", "bravo.txt"]
    remove_documents(index, ["alpha.txt"])
    removed = sync(index)
    assert removed.deletes >= 1
    assert view() == fresh_export(index)
    # the shared chunk survives with the source that still holds it
    assert [s["doc"] for s in view()[shared[0]][1]] == ["bravo.txt"]
    assert not any("Alpha" in text for text, _ in view().values())
    again = sync(index)
    assert (again.upserts, again.deletes) == (0, 0)


def interrupted(
    tmp_path: Path, sync: Callable[..., Any], view: Callable[[], View], fail: Callable[[bool], None]
) -> None:
    """A store that fails mid-batch: the failed batch is not marked done, the next sync resumes and
    resends it (and not the batches already confirmed); the store then equals a fresh export.

    ``fail(True)`` arms the store: its first write succeeds, its second writes only its first record
    and raises ``ConnectionError``; ``fail(False)`` disarms it.
    """
    corpus = small_corpus(tmp_path)
    index = tmp_path / "index.sqlite"
    run = ingest_small(corpus, index)
    total = len(fresh_export(index))
    assert total >= 5
    state = tmp_path / "state.json"
    fail(True)
    try:
        sync(index, state=state, batch_size=2)
    except ConnectionError:
        pass
    else:
        raise AssertionError("the armed store did not fail")
    saved = json.loads(state.read_text(encoding="utf-8"))
    assert saved["applied_run"] is None and saved["target_run"] == run  # not marked done
    partial = view()
    assert 0 < len(partial) < total
    fail(False)
    report = sync(index, state=state, batch_size=2)
    assert report.resumed and report.applied_run == run
    assert report.upserts < total  # the confirmed batches were not sent again
    assert view() == fresh_export(index)
    assert json.loads(state.read_text(encoding="utf-8"))["applied_run"] == run
