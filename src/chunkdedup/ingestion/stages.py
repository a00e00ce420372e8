"""The ingest's per-item stages: pure functions that an
:class:`~chunkdedup.ingestion.executors.Executor` maps.

Each takes plain records and returns plain records (picklable, so a process pool or a Ray task can
run it) and touches no index: the ingest sequence (:mod:`chunkdedup.ingestion.sequence`) reads what they need
from the store and writes what they return.

* :func:`parse_inputs`: hash, parse and key a few files (unchanged ones are only hashed);
* :func:`chunk_documents`: strip, chunk and exact-key a batch of documents, and sign each group the
  batch holds (MinHash signature and band keys, once per group).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from chunkdedup.config import Config
from chunkdedup.dedup.exact import KeyedChunk, KeyedDocument, key_chunk
from chunkdedup.normalize import canonical_id, document_hash
from chunkdedup.parse import InputFile, input_fingerprint, parse_file
from chunkdedup.parse.base import Keep
from chunkdedup.parse.jsonl import NUMBER_MARK, line_numbered
from chunkdedup.parse.registry import input_context, record_prefix
from chunkdedup.text import boilerplate
from chunkdedup.text.chunk import chunk_document
from chunkdedup.types import FileStatus, KnownFile, Page, ParsedFile

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


@dataclass(frozen=True, slots=True)
class ParseJob:
    """Files to parse, each with what the index knows of it; ``compiled``: lay pages out for their
    boilerplate keys with the compiled walk (else the str path, the same keys: a small run never loads
    numba; see :mod:`chunkdedup.text.boilerplate_kernel`)."""

    files: tuple[tuple[InputFile, KnownFile], ...]
    config: Config
    #: each file's input fingerprint, when the caller hashed the files already (``None`` or none
    #: given: hashed here)
    fingerprints: tuple[str | None, ...] = ()
    compiled: bool = True


@dataclass(frozen=True, slots=True)
class ParsedInput:
    """One input file after parsing: its hash, its parse (``None``: unchanged), and each document's
    candidate keys (``None`` for a document whose content hash the index holds already)."""

    input: InputFile
    content_hash: str | None
    parsed: ParsedFile | None
    keys: tuple[boilerplate.DocumentKeys | None, ...] = ()


@dataclass(frozen=True, slots=True)
class ChunkJob:
    """Documents to chunk, ``(doc_id, pages)``, each with the corpus chrome keys it holds (its
    strippable keys that are chrome: the only ones :func:`~chunkdedup.text.boilerplate.strip` can match in
    it, so a document holding none is stripped of running lines alone, or left as it is); ``compiled``:
    chunk and sign with the numba kernels (else the regex chunker and the NumPy paths, the same chunks
    and band keys: a small run never loads numba; see :class:`~chunkdedup.dedup.minhash.MinHasher`)."""

    documents: tuple[tuple[str, tuple[Page, ...]], ...]
    chrome: tuple[frozenset[int], ...]
    config: Config
    compiled: bool = True
    #: per document, whether its text may come from printed pages
    #: (:func:`~chunkdedup.parse.registry.from_print`); empty: every one may
    printed: tuple[bool, ...] = ()


@dataclass(frozen=True, slots=True)
class ChunkedBatch:
    """A chunked batch: each document's clean pages, keyed chunks and stripped lines, and the MinHash
    band keys of every group it holds: ``band_keys[i]`` (int64, one per band, as stored) are those of
    group ``band_ids[i]`` (none when the near tier is off). One array, not a list per group: it
    crosses a process boundary and is written in bulk."""

    documents: tuple[KeyedDocument, ...]
    band_ids: tuple[str, ...] = ()
    band_keys: npt.NDArray[np.int64] | None = None


def fingerprint_inputs(files: tuple[InputFile, ...]) -> tuple[str | None, ...]:
    """Each file's input fingerprint (``None``: it cannot be read; its parse will say why)."""
    out: list[str | None] = []
    for inp in files:
        try:
            out.append(input_fingerprint(inp))
        except OSError:
            out.append(None)
    return tuple(out)


def is_unchanged(fingerprint: str | None, known_hash: str | None) -> bool:
    """Whether a file whose input fingerprint is ``fingerprint`` is the one the index holds (its
    ``KnownFile.content_hash``): an index written before fingerprints had their id-and-metadata part
    holds the first part alone."""
    return fingerprint is not None and known_hash in (fingerprint, fingerprint.partition(".")[0])


def parse_input(
    inp: InputFile,
    known: KnownFile,
    config: Config,
    fingerprint: str | None = None,
    *,
    compiled: bool = False,
) -> ParsedInput:
    """Hash (unless ``fingerprint`` is given), parse and key one file (unchanged when its hash is the
    known one; a document whose content hash is known gets no keys; ``compiled``: key with the compiled
    walk, the same keys)."""
    h: str | None = fingerprint
    if h is None:
        try:
            h = input_fingerprint(inp)
        except OSError as e:
            failed = ParsedFile(str(inp.path), (), FileStatus.FAILED, f"cannot read: {e}")
            return ParsedInput(inp, None, failed)
    if is_unchanged(h, known.content_hash):
        return ParsedInput(inp, h, None)
    pf = parse_file(inp, config.parse, known_records(inp, known, h))
    stored = known.document_hashes()
    keys = tuple(
        None
        if d.content_hash in stored
        else boilerplate.document_keys(d.pages, config.boilerplate, compiled=compiled)
        for d in pf.documents
    )
    return ParsedInput(inp, h, pf, keys)


def known_records(inp: InputFile, known: KnownFile, fingerprint: str | None) -> Keep | None:
    """Which records of a changed multi-record file the index holds exactly as they would be built:
    the same bytes (content hash) at a place giving the same id (any line for a given id, the same
    line for a line-numbered one), in a file whose id and manifest metadata are unchanged (else
    ``None``: every record is built and compared)."""
    context = input_context(fingerprint)
    if context is None or context != input_context(known.content_hash):
        return None
    prefix = record_prefix(inp)
    cut = len(prefix)
    # content hash -> the record id of the file's single-page stored record with it (a record split
    # into pages left notes: it is built again to give them), when the first in doc id order is a
    # given id: that one, whatever the line (most records); else the ids to try, in that order (a
    # line-numbered one is the record on its own line only)
    given: dict[str, str] = {}
    tried: dict[str, list[str]] = {}
    single = False
    for h, doc_id, n_pages in known.documents:
        if n_pages != 1:
            continue
        single = True
        if h in given or not doc_id.startswith(prefix):
            continue
        rid = doc_id[cut:]
        if h in tried:
            tried[h].append(rid)
        elif line_numbered(rid):
            tried[h] = [rid]
        else:
            given[h] = rid
    if not single:
        return None

    def keep(content_hash: str, number: int) -> str | None:
        stored = document_hash(content_hash)  # the record's hash as its document keeps it
        rid = given.get(stored)
        if rid is not None:
            return rid
        for rid in tried.get(stored, ()):
            if not line_numbered(rid) or rid == f"{NUMBER_MARK}{number}":
                return rid
        return None

    return keep


def parse_inputs(job: ParseJob) -> tuple[ParsedInput, ...]:
    """:func:`parse_input` over a job's files, in order."""
    hashed = job.fingerprints or (None,) * len(job.files)
    return tuple(
        parse_input(inp, known, job.config, h, compiled=job.compiled)
        for (inp, known), h in zip(job.files, hashed, strict=True)
    )


def chunk_pages(
    doc_id: str,
    pages: Sequence[Page],
    chrome: Collection[int],
    cfg: Config,
    *,
    compiled: bool = False,
    printed: bool = True,
) -> KeyedDocument:
    """Strip, chunk and key one document (``compiled``: strip and chunk with the compiled walks, the
    same pages and chunks; ``printed``: its text may come from printed pages, so running lines are
    looked for inside a page without page breaks too)."""
    if cfg.boilerplate.enabled:
        result = boilerplate.strip(pages, chrome, cfg.boilerplate, compiled=compiled, unpaged=printed)
        clean, stripped = result.pages, result.stripped
    else:
        clean, stripped = tuple(pages), ()
    chunks = chunk_document(doc_id, clean, cfg.chunk, compiled=compiled)
    keyed = [k for k in map(key_chunk, chunks) if k is not None]
    if not cfg.dedup.exact:
        keyed = [_unique(k) for k in keyed]
    return KeyedDocument(doc_id, clean, tuple(keyed), stripped)


def _unique(k: KeyedChunk) -> KeyedChunk:
    """With exact dedup off (a baseline index), every chunk is its own canonical."""
    c = k.chunk
    return KeyedChunk(c, k.key, canonical_id(f"{c.doc_id}\x00{c.page}\x00{c.start}\x00{k.key}"))


def chunk_documents(job: ChunkJob) -> ChunkedBatch:
    """:func:`chunk_pages` over a job's documents, then the band keys of each group they hold."""
    cfg = job.config
    printed = job.printed or (True,) * len(job.documents)
    docs = tuple(
        chunk_pages(doc_id, pages, chrome, cfg, compiled=job.compiled, printed=from_paper)
        for (doc_id, pages), chrome, from_paper in zip(job.documents, job.chrome, printed, strict=True)
    )
    if not cfg.near.enabled:
        return ChunkedBatch(docs)
    first: dict[str, str] = {}
    for doc in docs:
        for k in doc.keyed:
            first.setdefault(k.canonical_id, k.key)
    gids = list(first)
    from chunkdedup.dedup.minhash import MinHasher  # the array stack, only for a batch to sign
    from chunkdedup.dedup.near import sign_keys

    hasher = MinHasher.from_config(cfg.near, compiled=job.compiled)
    bands = sign_keys(hasher, [first[g] for g in gids], cfg.near)
    return ChunkedBatch(docs, tuple(gids), bands)


__all__ = [
    "ChunkJob",
    "ChunkedBatch",
    "ParseJob",
    "ParsedInput",
    "chunk_documents",
    "chunk_pages",
    "fingerprint_inputs",
    "is_unchanged",
    "known_records",
    "parse_input",
    "parse_inputs",
]
