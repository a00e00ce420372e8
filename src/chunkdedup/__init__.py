"""chunkdedup: make RAG corpora clean before they are indexed.

Example:
    >>> from chunkdedup import ingest, Index
    >>> report = ingest(["docs/"], "corpus.sqlite")  # doctest: +SKIP
    >>> Index.open("corpus.sqlite").stats()["canonical_chunks"]  # doctest: +SKIP
"""

from chunkdedup.boilerplate import StripResult, candidate_keys, running_keys, strip
from chunkdedup.chunk import chunk_document, chunk_page, sentence_spans
from chunkdedup.config import BoilerplateConfig, ChunkConfig, Config, DedupConfig, ParseConfig, QueryConfig
from chunkdedup.dedup.exact import dedup_exact
from chunkdedup.errors import (
    ChunkdedupError,
    ConfigError,
    DuplicateDocumentError,
    IndexBusyError,
    IndexDamagedError,
    IndexError_,
    IndexFullError,
    IndexIOError,
    InputError,
    MissingExtraError,
    ParseError,
    SchemaError,
)
from chunkdedup.index import Index
from chunkdedup.normalize import boilerplate_key, exact_key
from chunkdedup.pipeline import IngestReport, ingest, remove_documents
from chunkdedup.query import Citation, Hit, QueryResult, dedup_chunks, search
from chunkdedup.types import (
    BoilerplateKey,
    CanonicalChunk,
    Chunk,
    ChunkRef,
    Document,
    FileResult,
    FileStatus,
    Page,
    ParsedFile,
    StrippedLine,
)

__all__ = [
    "BoilerplateConfig",
    "BoilerplateKey",
    "CanonicalChunk",
    "Chunk",
    "ChunkConfig",
    "ChunkRef",
    "ChunkdedupError",
    "Citation",
    "Config",
    "ConfigError",
    "DedupConfig",
    "Document",
    "DuplicateDocumentError",
    "FileResult",
    "FileStatus",
    "Hit",
    "Index",
    "IndexBusyError",
    "IndexDamagedError",
    "IndexError_",
    "IndexFullError",
    "IndexIOError",
    "IngestReport",
    "InputError",
    "MissingExtraError",
    "Page",
    "ParseConfig",
    "ParseError",
    "ParsedFile",
    "QueryConfig",
    "QueryResult",
    "SchemaError",
    "StripResult",
    "StrippedLine",
    "boilerplate_key",
    "candidate_keys",
    "chunk_document",
    "chunk_page",
    "dedup_chunks",
    "dedup_exact",
    "exact_key",
    "ingest",
    "remove_documents",
    "running_keys",
    "search",
    "sentence_spans",
    "strip",
]
