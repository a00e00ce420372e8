"""A large JSON Lines or Parquet file read a slice of records at a time: the documents of one slice are
held at once, never the file's, and what decides the file as a whole (its notes, a repeated id, whether any
record was usable) is kept by a :class:`~chunkdedup.parse.jsonl.RecordLedger` across its slices.

The slices give the documents, notes and ids that :func:`~chunkdedup.parse.registry.parse_file` gives
for the same file, in the same order: the writer stores them a slice at a time in one transaction,
so the file is still stored whole or not at all. A JSON Lines file is read as a whole read reads it
whatever its bytes (:func:`~chunkdedup.parse.text.decoding_of` decides over the whole file a block at
a time, then :func:`~chunkdedup.parse.text.text_lines` decodes it a block at a time): CRLF line ends,
a BOM, UTF-16 or UTF-32, cp1252 or another guessed encoding, a few damaged bytes in UTF-8. What a
JSON Lines read holds is a block's text and a slice's records, not the file's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial

from chunkdedup.config import ParseConfig
from chunkdedup.parse import parquet
from chunkdedup.parse.base import Keep
from chunkdedup.parse.discover import InputFile
from chunkdedup.parse.jsonl import Item, RecordLedger, byte_item, line_item
from chunkdedup.parse.registry import record_document, split_long_pages
from chunkdedup.parse.text import FileBytes, decoding_of, text_lines
from chunkdedup.types import Document

#: a JSON Lines or Parquet file larger than this (bytes) is read a slice at a time
SLICED_BYTES = 16 * 1024 * 1024
#: records a slice holds at most
SLICE_RECORDS = 16_384
#: bytes read from the file at a time
_BLOCK_BYTES = 1 << 20
_SUFFIXES = (".jsonl", ".ndjson", ".json-lines")
_PARQUET = ".parquet"


@dataclass(frozen=True, slots=True)
class RecordSlice:
    """The records of one slice built, in file order (those the index holds as they are, see
    :class:`~chunkdedup.parse.base.RecordParser`, are not: the ledger counts their ids), and the notes of
    pages split for their length (a file's notes give them after its records')."""

    documents: tuple[Document, ...]
    split_notes: tuple[str, ...] = ()


def sliceable(inp: InputFile, config: ParseConfig, over: int | None = None) -> bool:
    """Whether ``inp`` is a file of more than ``over`` bytes (``None``: :data:`SLICED_BYTES`; within
    ``max_file_bytes``) that is a Parquet file pyarrow reads, or a JSON Lines file that holds more than
    blank lines (a file of blanks is an empty file, as a whole read says). Any JSON Lines file is read
    a block at a time as a whole read reads it (:func:`record_slices`): in any encoding, with any line
    ends, or as bytes that are not text (which fail it as they fail a whole read)."""
    suffix = inp.path.suffix.lower()
    if suffix not in _SUFFIXES and suffix != _PARQUET:
        return False
    over = SLICED_BYTES if over is None else over
    try:
        size = inp.path.stat().st_size
        if not over < size <= config.max_file_bytes:
            return False
        if suffix == _PARQUET:
            return parquet.readable(inp.path)
        return not all(block.isspace() for block in _source(inp).blocks())
    except OSError:
        return False


def _source(inp: InputFile) -> FileBytes:
    """The file's bytes, read :data:`_BLOCK_BYTES` at a time."""
    return FileBytes(inp.path, _BLOCK_BYTES)


def _blocks(read: Callable[[int], bytes]) -> Iterator[bytes]:
    """The file's bytes as blocks of whole lines (the last one as it ends). A line longer than a block
    is gathered in parts and joined once (joined at each block, a 100 MB line copied ~5 GB)."""
    rest: list[bytes] = []
    while block := read(_BLOCK_BYTES):
        cut = block.rfind(b"\n") + 1
        if cut:
            yield b"".join([*rest, block[:cut]])
            rest = [block[cut:]]
        else:
            rest.append(block)
    yield b"".join(rest)


def ledger_for(inp: InputFile) -> RecordLedger:
    """The ledger of a :func:`sliceable` file, naming its records as a whole read's notes do."""
    noun, unit = parquet.NAMES if inp.path.suffix.lower() == _PARQUET else ("record", "line")
    return RecordLedger(noun, unit)


def record_slices(
    inp: InputFile,
    config: ParseConfig,
    ledger: RecordLedger,
    keep: Keep | None = None,
    size: int | None = None,
) -> Iterator[RecordSlice]:
    """The records of a :func:`sliceable` file, at most ``size`` records (``None``: :data:`SLICE_RECORDS`)
    a slice, built as a whole read builds them: JSON Lines as
    :class:`~chunkdedup.parse.jsonl.JsonlParser` (``keep``: as its ``parse_known``), Parquet as
    :class:`~chunkdedup.parse.parquet.ParquetParser` (every row built: ``keep`` is not read);
    ``ledger`` (:func:`ledger_for`) takes each slice's records, after the note on how a JSON Lines
    file's bytes were decoded. ``ledger.check()`` then says whether the file holds. Raises
    ``ParseError`` (``skipped``) where the bytes are not text, as a whole read does."""
    size = SLICE_RECORDS if size is None else size
    if inp.path.suffix.lower() == _PARQUET:
        found: Iterator[Item] = (
            (n, partial(parquet.row_record, row, n)) for n, row in parquet.rows(inp.path, size)
        )
    else:
        found = _lines(inp, ledger, keep)
    items: list[Item] = []
    for item in found:
        items.append(item)
        if len(items) >= size:
            yield _slice(inp, config, ledger, items)
            items = []
    if items:
        yield _slice(inp, config, ledger, items)


def _lines(inp: InputFile, ledger: RecordLedger, keep: Keep | None) -> Iterator[Item]:
    """A JSON Lines file's items, line by line, as the whole-file parse makes them: its bytes read as
    :func:`~chunkdedup.parse.text.decode_noted` reads them (the decision over the whole file, its note
    the ledger's first), a plain UTF-8 file's lines as the bytes they are."""
    source = _source(inp)
    decoding = decoding_of(source)
    if decoding.note is not None:
        ledger.note(decoding.note)
    if decoding.plain:
        yield from _plain_lines(inp, keep)
        return
    found = (line_item(line, n, keep) for n, line in enumerate(text_lines(source.blocks(), decoding), 1))
    yield from (item for item in found if item is not None)


def _plain_lines(inp: InputFile, keep: Keep | None) -> Iterator[Item]:
    """A plain UTF-8 file's items (:func:`~chunkdedup.parse.text.plain_utf8`), from its byte lines."""
    number = 0
    with inp.path.open("rb") as f:
        for block in _blocks(f.read):
            lines = block.split(b"\n")
            if block.endswith(b"\n"):
                lines.pop()  # the next block's first line (or the file's last, empty one) follows
            for line in lines:
                number += 1
                item = _item(line, number, keep)
                if item is not None:
                    yield item


def _item(line: bytes, number: int, keep: Keep | None) -> Item | None:
    """What the whole-file parse makes of a plain UTF-8 line (``None``: a blank line, skipped)."""
    return line_item(line.decode("utf-8"), number) if keep is None else byte_item(line, number, keep)


def _slice(
    inp: InputFile,
    config: ParseConfig,
    ledger: RecordLedger,
    items: list[Item],
) -> RecordSlice:
    records, _ = ledger.take(items)
    notes: list[str] = []
    # a record always has its own content hash (its line's): the file's is never needed
    documents = tuple(
        record_document(inp, split_long_pages(ex, config.max_page_chars, notes), "") for ex in records
    )
    return RecordSlice(documents, tuple(notes))


__all__ = ["SLICED_BYTES", "SLICE_RECORDS", "RecordSlice", "ledger_for", "record_slices", "sliceable"]
