"""One input file's outcome written to the index: its new and changed documents queued for the
transaction, an id another file holds refused, a file gone from the inputs removed (``--prune``)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from chunkdedup.config import Config
from chunkdedup.ingestion.report import RemovedFile
from chunkdedup.parse import InputFile
from chunkdedup.parse.memory import MEMORY_PREFIX
from chunkdedup.store import Store
from chunkdedup.text import boilerplate
from chunkdedup.types import Document, FileResult, FileStatus, ParsedFile

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class StoreQueue:
    """The documents of one transaction's files, stored together once every file is decided
    (:func:`store_file`): a statement set for the batch, not for each file (10k one-page files paid
    ~15 statements each). ``owners``: the file of each queued file's documents, so a later file of
    the same transaction is told one of its ids is taken as if the earlier file were stored."""

    documents: list[tuple[Document, boilerplate.DocumentKeys]] = field(default_factory=list)
    owners: dict[str, str] = field(default_factory=dict)


def store_file(
    store: Store,
    inp: InputFile,
    h: str | None,
    pf: ParsedFile | None,
    cfg: Config,
    run_id: int,
    keys: Sequence[boilerplate.DocumentKeys | None] = (),
    keep_unchanged: bool = True,
    stored: Sequence[str] | None = None,
    queue: StoreQueue | None = None,
) -> FileResult:
    """Write one file's outcome; its new and changed documents go in pending chunking, with their
    boilerplate candidate keys (``keys[i]`` for ``pf.documents[i]`` when the parse stage computed them,
    else computed here). ``stored``: the file's stored doc ids (``DocumentTables.docs_of_file``), when
    the caller has them. ``queue``: the documents are added to it, for the caller to store with those of
    the other files of its transaction (``DocumentTables.put_documents``), instead of being stored here."""
    path = str(inp.path)
    if pf is None:
        return FileResult(path, FileStatus.UNCHANGED, tuple(store.documents.docs_of_file(path)))
    if pf.status != FileStatus.INGESTED:
        kept = store.documents.docs_of_file(path)
        reason: str = pf.reason or "unknown reason"
        if kept:
            reason += "; the previous version stays in the index"
        store.documents.put_file(path, None, str(pf.status), reason, run_id)
        return FileResult(path, pf.status, tuple(kept), reason)
    owners = store.documents.doc_owners([d.doc_id for d in pf.documents])
    claimed = queue.owners if queue is not None else {}
    for doc in pf.documents:
        # the file queued before it that holds the id, else the index's
        owner = claimed.get(doc.doc_id, owners.get(doc.doc_id))
        if owner is not None and owner != path:
            taken = taken_reason(doc.doc_id, owner)
            store.documents.put_file(path, None, str(FileStatus.FAILED), taken, run_id)
            return FileResult(path, FileStatus.FAILED, (), taken)
    new_ids = {d.doc_id for d in pf.documents} | set(pf.kept)
    was = stored if stored is not None else store.documents.docs_of_file(path)
    store.documents.remove_documents([old for old in was if old not in new_ids], run_id)
    # a record stored exactly as it is parsed now (of a JSONL or Parquet file changed elsewhere) is
    # left as it is, with its pages, keys and chunks (unless ``keep_unchanged`` is off: the parse
    # settings changed); the ``kept`` ones were known by their bytes and place before being built
    every = {d.doc_id for d in pf.documents}
    changed = store.documents.changed_documents(pf.documents) if keep_unchanged else every
    items = [
        (doc, (keys[i] if keys else None) or boilerplate.document_keys(doc.pages, cfg.boilerplate))
        for i, doc in enumerate(pf.documents)
        if doc.doc_id in changed
    ]
    if queue is None:
        store.documents.put_documents(items, run_id)
    else:
        queue.documents.extend(items)
        claimed.update((doc.doc_id, path) for doc in pf.documents)
    notes = "; ".join(pf.notes) or None
    store.documents.put_file(path, h, str(FileStatus.INGESTED), notes, run_id)
    return FileResult(path, FileStatus.INGESTED, pf.doc_ids, notes)


def taken_reason(doc_id: str, owner: str) -> str:
    """Why a file is refused: one of its document ids is held by file ``owner``."""
    return (
        f"document id {doc_id!r} is already taken by {owner}: rename one of them, "
        f"or remove the other with `chunkdedup remove` / --prune"
    )


def prune_missing(store: Store, inputs: Sequence[InputFile], run_id: int) -> list[RemovedFile]:
    """Remove every indexed file that is not among ``inputs`` (``--prune``), one transaction each;
    documents given in memory (``memory:NAME``) are no file and stay. Returns the files removed, with
    the documents each held (for the run's report)."""
    keep = {str(i.path) for i in inputs}
    removed: list[RemovedFile] = []
    for path in store.documents.file_paths():
        if path not in keep and not path.startswith(MEMORY_PREFIX):
            with store.transaction():
                docs = store.documents.remove_file(path, run_id)
            logger.debug("pruned %s (%d documents): no longer among the inputs", path, len(docs))
            removed.append(RemovedFile(path, tuple(docs)))
    return removed


__all__ = ["StoreQueue", "prune_missing", "store_file", "taken_reason"]
