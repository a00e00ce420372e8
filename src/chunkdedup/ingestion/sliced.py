"""A large JSON Lines or Parquet file stored a slice of records at a time
(:mod:`chunkdedup.parse.slices`), in one transaction: the parse phase holds one slice's documents, not
the file's, and the file is stored whole or not at all, with the outcome a whole read gives (a
repeated id, an id another file holds or no usable record fails it, its notes in file order). Also
:class:`AtHand`, the pages the parse phase hands to the chunk phase."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from chunkdedup.config import Config
from chunkdedup.errors import ParseError
from chunkdedup.ingestion.files import store_file, taken_reason
from chunkdedup.ingestion.stages import known_records
from chunkdedup.parse import InputFile, input_fingerprint
from chunkdedup.parse.registry import record_prefix
from chunkdedup.parse.slices import RecordSlice, ledger_for, record_slices
from chunkdedup.store import Store
from chunkdedup.text import boilerplate
from chunkdedup.types import Document, FileResult, FileStatus, KnownFile, Page, ParsedFile


@dataclass(slots=True)
class AtHand:
    """Pages of documents the parse phase stored, by doc id, for the chunk phase to take instead of
    reading them back: at most ``chars`` characters of page text and ``docs`` documents."""

    pages: dict[str, tuple[Page, ...]]
    chars: int
    docs: int

    def offer(self, documents: Iterable[Document]) -> list[str]:
        """Hold the pages of those of ``documents`` that fit; returns their ids."""
        held: list[str] = []
        for doc in documents:
            size = sum(len(pg.text) for pg in doc.pages)
            if size <= self.chars and self.docs > 0:
                self.pages[doc.doc_id] = doc.pages
                self.chars -= size
                self.docs -= 1
                held.append(doc.doc_id)
        return held

    def drop(self, doc_ids: Iterable[str]) -> None:
        """Give back what :meth:`offer` held of ``doc_ids`` (their file was not stored)."""
        for doc_id in doc_ids:
            pages = self.pages.pop(doc_id, None)
            if pages is not None:
                self.chars += sum(len(pg.text) for pg in pages)
                self.docs += 1


class _Failed(Exception):
    """The file is not stored: ``status`` and ``reason`` as a whole read's."""

    def __init__(self, status: FileStatus, reason: str, taken: bool = False) -> None:
        super().__init__(reason)
        self.status, self.reason, self.taken = status, reason, taken


def store_sliced(
    store: Store,
    inp: InputFile,
    fingerprint: str | None,
    known: KnownFile,
    cfg: Config,
    run_id: int,
    *,
    keep_unchanged: bool = True,
    stored: Sequence[str] | None = None,
    at_hand: AtHand | None = None,
    compiled: bool = False,
    size: int | None = None,
) -> FileResult:
    """Parse, key and store a :func:`~chunkdedup.parse.slices.sliceable` file ``size`` records at a
    time, in one transaction of its own: what :func:`~chunkdedup.ingestion.stages.parse_input` then
    :func:`~chunkdedup.ingestion.files.store_file` do for it, with the same result. The arguments are
    theirs (``known``: what the index holds of the file, not unchanged; ``stored``: its stored doc ids)."""
    path = str(inp.path)
    held: list[str] = []
    try:
        h = fingerprint if fingerprint is not None else input_fingerprint(inp)
    except OSError as e:
        failed = ParsedFile(path, (), FileStatus.FAILED, f"cannot read: {e}")
        with store.transaction():
            return store_file(store, inp, None, failed, cfg, run_id)
    ledger = ledger_for(inp)
    bp = cfg.boilerplate
    try:
        with store.transaction():
            split_notes: list[str] = []
            parts = record_slices(inp, cfg.parse, ledger, known_records(inp, known, h), size)
            for part in _read(parts):
                _refuse_taken(store, path, part.documents)
                # a repeated id fails the file (ledger.check, once every line is read and named); until
                # then a slice's repeat is stored once (a later slice's repeat replaces the row)
                docs = _first_of_each(part.documents)
                changed = (
                    store.documents.changed_documents(docs) if keep_unchanged else {d.doc_id for d in docs}
                )
                new = [(d, boilerplate.document_keys(d.pages, bp, compiled=compiled))
                       for d in docs if d.doc_id in changed]
                store.documents.put_documents(new, run_id)
                if at_hand is not None:
                    held += at_hand.offer(docs)
                split_notes.extend(part.split_notes)
            try:
                ledger.check()
            except ParseError as e:
                raise _Failed(FileStatus.SKIPPED if e.skipped else FileStatus.FAILED, e.reason) from None
            prefix = record_prefix(inp)
            ids = tuple(prefix + rid for rid in ledger.order())
            now = set(ids)
            was = stored if stored is not None else store.documents.docs_of_file(path)
            store.documents.remove_documents([old for old in was if old not in now], run_id)
            notes = "; ".join(ledger.notes() + tuple(split_notes)) or None
            store.documents.put_file(path, h, str(FileStatus.INGESTED), notes, run_id)
        return FileResult(path, FileStatus.INGESTED, ids, notes)
    except _Failed as e:
        if at_hand is not None:
            at_hand.drop(held)
        with store.transaction():
            if e.taken:
                store.documents.put_file(path, None, str(FileStatus.FAILED), e.reason, run_id)
                return FileResult(path, FileStatus.FAILED, (), e.reason)
            return store_file(store, inp, h, ParsedFile(path, (), e.status, e.reason), cfg, run_id)


def _refuse_taken(store: Store, path: str, documents: Sequence[Document]) -> None:
    """Raise :class:`_Failed` when another file holds one of the ids of ``documents``."""
    owners = store.documents.doc_owners([d.doc_id for d in documents])
    for doc in documents:
        owner = owners.get(doc.doc_id)
        if owner is not None and owner != path:
            raise _Failed(FileStatus.FAILED, taken_reason(doc.doc_id, owner), taken=True)


def _first_of_each(documents: Sequence[Document]) -> list[Document]:
    """The documents in order, each id's first only."""
    firsts: dict[str, Document] = {}
    for doc in documents:
        firsts.setdefault(doc.doc_id, doc)
    return list(firsts.values())


def _read(parts: Iterator[RecordSlice]) -> Iterator[RecordSlice]:
    """The slices, an error of the parse turned into the file's outcome as ``parse_file`` words it."""
    while True:
        try:
            part = next(parts)
        except StopIteration:
            return
        except ParseError as e:
            raise _Failed(FileStatus.SKIPPED if e.skipped else FileStatus.FAILED, e.reason) from None
        except RecursionError:
            raise _Failed(FileStatus.FAILED, "the file is nested too deeply to parse") from None
        except OSError as e:
            raise _Failed(FileStatus.FAILED, f"cannot read the file: {e}") from None
        except Exception as e:  # as parse_file: one odd file must not stop a run
            reason = f"unexpected {type(e).__name__} while parsing: {e} (please report)"
            raise _Failed(FileStatus.FAILED, reason) from None
        yield part


__all__ = ["AtHand", "store_sliced"]
