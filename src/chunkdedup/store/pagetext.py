"""Page text at rest: zstd frames, with a dictionary the index trains on its first pages.

A page's raw text (and its clean text, where stripping changed it) is stored as a zstd frame
(``zstandard``). Pages are short: a one-chunk JSONL record is a 1-2 KB page, on which plain zstd saves
about half; a dictionary trained on the index's own first pages saves three quarters (50k records of
the synthetic corpus: 67.4 MB of text, 36.9 MB as plain frames, 20.2 MB with a 64 KiB dictionary).

Each frame names the dictionary it was made with (zstd writes the dictionary id into the frame
header), so a frame always decodes with what the index holds in ``text_dicts``; text stored as a
plain string (a short page, a page that zstd would not shrink, every page of an index written before
migration 0014) reads as it is. SQL reads page text through the ``page_text()`` function each
connection registers (:data:`~chunkdedup.store.schema.RAW_TEXT`, ``CLEAN_TEXT``).

The dictionary is trained once per index, from the first :data:`TRAIN_BYTES` of page text it stores
(deterministic: the same pages give the same dictionary); pages stored before it exist are plain frames.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import zstandard

#: Texts shorter than this (UTF-8 bytes) are stored as they are: a frame's header costs more than it saves.
MIN_COMPRESS_BYTES = 64
#: zstd's compression level (3 is its default: ~300 MB/s here, within 10% of level 9's size on prose).
LEVEL = 3
#: How much page text (UTF-8 bytes) the dictionary is trained on, and its size. Trained on 2 MiB of a
#: 50k-record corpus it compresses the whole corpus as well as one trained on 4 MiB (20.2 vs 20.2 MB).
TRAIN_BYTES = 2 << 20
DICT_BYTES = 64 << 10
#: A page longer than this gives the trainer several samples of this length.
SAMPLE_BYTES = 16 << 10

#: Reads a stored dictionary by id (None when the index has none of that id).
DictLoader = Callable[[int], bytes | None]


class PageCodec:
    """Encodes page text for storage and decodes what is stored; one per connection.

    ``dicts`` are the index's dictionaries by id; ``load`` reads one the index gained after this codec
    was made (a reader opened before the writer trained it).
    """

    def __init__(self, dicts: dict[int, bytes], load: DictLoader) -> None:
        self._load = load
        self._decoders: dict[int, zstandard.ZstdDecompressor] = {0: zstandard.ZstdDecompressor()}
        self._plain = zstandard.ZstdCompressor(level=LEVEL)
        self._encoder: zstandard.ZstdCompressor | None = None
        self._active: tuple[int, bytes] | None = None
        self._samples: list[bytes | bytearray | memoryview] = []
        self._sampled = 0
        for dict_id, data in sorted(dicts.items()):
            self._use(dict_id, data)

    @property
    def active(self) -> tuple[int, bytes] | None:
        """The dictionary new text is compressed with ``(id, bytes)``, or None before one is trained."""
        return self._active

    def _use(self, dict_id: int, data: bytes) -> None:
        d = zstandard.ZstdCompressionDict(data)
        self._decoders[dict_id] = zstandard.ZstdDecompressor(dict_data=d)
        if self._active is None:
            self._active = (dict_id, data)
            self._encoder = zstandard.ZstdCompressor(level=LEVEL, dict_data=d)

    def learn(self, texts: Iterable[str]) -> bool:
        """Offer page texts as training samples; trains the dictionary once :data:`TRAIN_BYTES` are
        gathered. Returns True when this call trained it (the caller stores :attr:`active`)."""
        if self._active is not None or self._sampled >= TRAIN_BYTES:
            return False
        for text in texts:
            raw = text.encode("utf-8")
            for at in range(0, len(raw), SAMPLE_BYTES):  # a long page gives several samples
                sample = raw[at : at + SAMPLE_BYTES]
                if len(sample) >= MIN_COMPRESS_BYTES and self._sampled < TRAIN_BYTES:
                    self._samples.append(sample)
                    self._sampled += len(sample)
            if self._sampled >= TRAIN_BYTES:
                break
        if self._sampled < TRAIN_BYTES:
            return False
        samples, self._samples = self._samples, []
        try:
            trained = zstandard.train_dictionary(DICT_BYTES, samples, k=200, d=8, threads=1)
        except zstandard.ZstdError:
            return False  # too little variety to learn from: plain frames are kept
        self._use(trained.dict_id(), trained.as_bytes())
        return True

    def encode(self, text: str) -> str | bytes:
        """What to store for ``text``: a zstd frame, or the text itself where a frame is no smaller."""
        raw = text.encode("utf-8")
        if len(raw) < MIN_COMPRESS_BYTES:
            return text
        frame = (self._encoder or self._plain).compress(raw)
        return frame if len(frame) < len(raw) else text

    def decode(self, value: str | bytes | None) -> str | None:
        """The text of a stored value (the ``page_text()`` SQL function)."""
        if value is None or isinstance(value, str):
            return value
        dict_id = zstandard.get_frame_parameters(value).dict_id
        decoder = self._decoders.get(dict_id)
        if decoder is None:
            data = self._load(dict_id)
            if data is None:
                raise ValueError(f"page text needs zstd dictionary {dict_id}, which the index does not hold")
            self._use(dict_id, data)
            decoder = self._decoders[dict_id]
        return decoder.decompress(value).decode("utf-8")


__all__ = ["DICT_BYTES", "LEVEL", "TRAIN_BYTES", "PageCodec"]
