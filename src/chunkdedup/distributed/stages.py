"""What Ray workers run: the library's own stage functions over batches of rows.

Rows carry pickled records (``payload``) next to the plain columns Ray shuffles on. Every
function here is a loop over a batch that calls the same functions the local ingest calls
(``file_hash``, ``parse_file``, ``boilerplate.document_keys``, strip/chunk/key, ``MinHasher``,
``band_keys``); nothing is re-implemented.
"""

from __future__ import annotations

import pickle
from collections.abc import Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from chunkdedup import boilerplate
from chunkdedup.config import Config
from chunkdedup.dedup.exact import KeyedDocument
from chunkdedup.dedup.minhash import MinHasher
from chunkdedup.dedup.near import sign_keys
from chunkdedup.parse import InputFile, input_fingerprint, parse_file
from chunkdedup.pipeline import chunk_pages
from chunkdedup.types import FileStatus, Page, ParsedFile

if TYPE_CHECKING:
    import pyarrow as pa


@dataclass(frozen=True, slots=True)
class ParsedInput:
    """One input file after the parse map: its hash, its parse (``None``: unchanged), candidate keys."""

    input: InputFile
    content_hash: str | None
    parsed: ParsedFile | None
    keys: tuple[boilerplate.DocumentKeys, ...] = ()


@dataclass(frozen=True, slots=True)
class ChunkedDoc:
    """One document after the chunk map: cleaned pages, keyed chunks, stripped lines, and the
    signature rows (group id, signature bytes, band keys) of groups first seen in its batch."""

    doc: KeyedDocument
    signatures: tuple[tuple[str, bytes, list[int]], ...]


def _table(columns: dict[str, tuple[Any, list[Any]]]) -> pa.Table:
    import pyarrow as pa

    return pa.table({name: pa.array(values, type=kind) for name, (kind, values) in columns.items()})


def parse_input(inp: InputFile, known_hash: str | None, config: Config) -> ParsedInput:
    """Hash, parse and key one file, as the local parse phase does (unchanged when the hash is known)."""
    try:
        h: str | None = input_fingerprint(inp)
    except OSError as e:
        return ParsedInput(inp, None, ParsedFile(str(inp.path), (), FileStatus.FAILED, f"cannot read: {e}"))
    if h is not None and h == known_hash:
        return ParsedInput(inp, h, None)
    pf = parse_file(inp, config.parse)
    keys = tuple(boilerplate.document_keys(d.pages, config.boilerplate) for d in pf.documents)
    return ParsedInput(inp, h, pf, keys)


def parse_batch(batch: pa.Table, *, config: Config) -> pa.Table:
    """Map: rows ``(i, payload=(InputFile, known hash))`` -> rows ``(i, payload=ParsedInput)``."""
    import pyarrow as pa

    order = batch.column("i").to_pylist()
    out = []
    for blob in batch.column("payload").to_pylist():
        inp, known = pickle.loads(blob)
        out.append(pickle.dumps(parse_input(inp, known, config), protocol=pickle.HIGHEST_PROTOCOL))
    return _table({"i": (pa.int64(), order), "payload": (pa.large_binary(), out)})


def unit_keys_batch(batch: pa.Table) -> pa.Table:
    """Map: parsed files -> one row ``(khash, unit)`` per candidate key of each ingested document."""
    import pyarrow as pa

    khash: list[int] = []
    unit: list[str] = []
    for blob in batch.column("payload").to_pylist():
        p: ParsedInput = pickle.loads(blob)
        if p.parsed is None or p.parsed.status != FileStatus.INGESTED:
            continue
        for doc, keys in zip(p.parsed.documents, p.keys, strict=True):
            ids = {boilerplate.key_id(k) for k in keys.candidates}
            khash.extend(ids)
            unit.extend([doc.unit] * len(ids))
    return _table({"khash": (pa.int64(), khash), "unit": (pa.string(), unit)})


def count_units_batch(batch: pa.Table, *, min_units: int) -> pa.Table:
    """Reduce one hash partition (all rows of its keys): distinct units per key, kept if >= ``min_units``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    grouped = batch.group_by("khash").aggregate([("unit", "count_distinct")])
    per_key = pa.table({"khash": grouped.column("khash"), "units": grouped.column("unit_count_distinct")})
    return per_key.filter(pc.greater_equal(per_key.column("units"), min_units))


def documents_batch(batch: pa.Table, *, skip: Collection[str]) -> pa.Table:
    """Map: parsed files -> one row ``(doc_id, payload=pages)`` per ingested document not in ``skip``."""
    import pyarrow as pa

    ids: list[str] = []
    out: list[bytes] = []
    for blob in batch.column("payload").to_pylist():
        p: ParsedInput = pickle.loads(blob)
        if p.parsed is None or p.parsed.status != FileStatus.INGESTED:
            continue
        for doc in p.parsed.documents:
            if doc.doc_id not in skip:
                ids.append(doc.doc_id)
                out.append(pickle.dumps(doc.pages, protocol=pickle.HIGHEST_PROTOCOL))
    return _table({"doc_id": (pa.string(), ids), "payload": (pa.large_binary(), out)})


def chunk_batch(batch: pa.Table, *, chrome: Collection[int], config: Config) -> pa.Table:
    """Map: ``(doc_id, pages)`` -> ``(doc_id, payload=ChunkedDoc)``: strip, chunk, exact keys, and the
    MinHash signatures and band keys of each group (once per batch, on the first document holding it)."""
    import pyarrow as pa

    ids = batch.column("doc_id").to_pylist()
    docs = []
    for doc_id, blob in zip(ids, batch.column("payload").to_pylist(), strict=True):
        pages: tuple[Page, ...] = pickle.loads(blob)
        docs.append(chunk_pages(doc_id, pages, chrome, config))
    signatures: dict[str, tuple[bytes, list[int]]] = {}
    if config.near.enabled:
        first: dict[str, str] = {}
        for doc in docs:
            for k in doc.keyed:
                first.setdefault(k.canonical_id, k.key)
        gids = list(first)
        sigs, bands = sign_keys(MinHasher.from_config(config.near), [first[g] for g in gids], config.near)
        signatures = {g: (sigs[i].tobytes(), bands[i].tolist()) for i, g in enumerate(gids)}
    out = []
    for doc in docs:
        rows = []
        for k in doc.keyed:
            sig = signatures.pop(k.canonical_id, None)
            if sig is not None:
                rows.append((k.canonical_id, *sig))
        record = ChunkedDoc(doc, tuple(rows))
        out.append(pickle.dumps(record, protocol=pickle.HIGHEST_PROTOCOL))
    return _table({"doc_id": (pa.string(), ids), "payload": (pa.large_binary(), out)})
