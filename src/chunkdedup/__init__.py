"""chunkdedup: make RAG corpora clean before they are indexed.

The library logs through the ``chunkdedup`` logger (each module through its child,
``logging.getLogger(__name__)``) and is quiet until the application configures logging: INFO says
when each phase of an ingest starts and ends, DEBUG adds cheap detail, WARNING repeats the report's
notes.

Example:
    >>> from chunkdedup import ingest, Index
    >>> report = ingest(["docs/"], "corpus.sqlite")  # doctest: +SKIP
    >>> Index.open("corpus.sqlite").stats().canonical_chunks  # doctest: +SKIP
    >>> import logging
    >>> logging.basicConfig(level=logging.INFO)  # doctest: +SKIP
"""

# Names are imported on first use (PEP 562), so `chunkdedup --help` and `import chunkdedup.errors` do
# not load numpy, numba and every stage: 0.2 s instead of 1.3 s before anything runs.
import logging as _logging
import typing as _typing
from importlib import import_module as _import_module

# the library idiom: no output unless the application adds a handler (the CLI does with -v)
_logging.getLogger(__name__).addHandler(_logging.NullHandler())

if _typing.TYPE_CHECKING:
    from chunkdedup.config import (
        BoilerplateConfig,
        ChunkConfig,
        Config,
        DedupConfig,
        NearConfig,
        ParseConfig,
        QueryConfig,
        RetrievalConfig,
        SemanticConfig,
    )
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
        QuestionError,
        SchemaError,
        SyncError,
    )
    from chunkdedup.index import (
        DocumentRow,
        FamilyCounts,
        Index,
        IndexStats,
        MergeRow,
        TextEngine,
        VariantRow,
    )
    from chunkdedup.ingestion.executors import Executor, LocalExecutor
    from chunkdedup.ingestion.memory import ingest_records
    from chunkdedup.ingestion.remove import remove_documents
    from chunkdedup.ingestion.report import IngestReport
    from chunkdedup.ingestion.sequence import IngestOptions, ingest, ingest_with
    from chunkdedup.normalize import boilerplate_key, exact_key
    from chunkdedup.parse.memory import InputRecord
    from chunkdedup.query import Citation, ExportRecord, Hit, QueryResult, dedup_chunks, search
    from chunkdedup.text.boilerplate import StripResult, candidate_keys, running_keys, strip
    from chunkdedup.text.chunk import chunk_document, chunk_page, sentence_spans
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

_MODULES = {
    "chunkdedup.text.boilerplate": "StripResult candidate_keys running_keys strip",
    "chunkdedup.text.chunk": "chunk_document chunk_page sentence_spans",
    "chunkdedup.config": "BoilerplateConfig ChunkConfig Config DedupConfig NearConfig ParseConfig "
    "QueryConfig RetrievalConfig SemanticConfig",
    "chunkdedup.dedup.exact": "dedup_exact",
    "chunkdedup.errors": "ChunkdedupError ConfigError DuplicateDocumentError IndexBusyError "
    "IndexDamagedError IndexError_ IndexFullError IndexIOError InputError MissingExtraError ParseError "
    "QuestionError SchemaError SyncError",
    "chunkdedup.index": "DocumentRow FamilyCounts Index IndexStats MergeRow TextEngine VariantRow",
    "chunkdedup.ingestion.memory": "ingest_records",
    "chunkdedup.parse.memory": "InputRecord",
    "chunkdedup.normalize": "boilerplate_key exact_key",
    "chunkdedup.ingestion.executors": "Executor LocalExecutor",
    "chunkdedup.ingestion.remove": "remove_documents",
    "chunkdedup.ingestion.report": "IngestReport",
    "chunkdedup.ingestion.sequence": "IngestOptions ingest ingest_with",
    "chunkdedup.query": "Citation ExportRecord Hit QueryResult dedup_chunks search",
    "chunkdedup.types": "BoilerplateKey CanonicalChunk Chunk ChunkRef Document "
    "FileResult FileStatus Page ParsedFile StrippedLine",
}
_WHERE = {name: module for module, names in _MODULES.items() for name in names.split()}


def __getattr__(name: str) -> _typing.Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'chunkdedup' has no attribute {name!r}")
    value = getattr(_import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


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
    "DocumentRow",
    "DuplicateDocumentError",
    "Executor",
    "ExportRecord",
    "FamilyCounts",
    "FileResult",
    "FileStatus",
    "Hit",
    "Index",
    "IndexBusyError",
    "IndexDamagedError",
    "IndexError_",
    "IndexFullError",
    "IndexIOError",
    "IndexStats",
    "IngestOptions",
    "IngestReport",
    "InputError",
    "InputRecord",
    "LocalExecutor",
    "MergeRow",
    "MissingExtraError",
    "NearConfig",
    "Page",
    "ParseConfig",
    "ParseError",
    "ParsedFile",
    "QueryConfig",
    "QueryResult",
    "QuestionError",
    "RetrievalConfig",
    "SchemaError",
    "SemanticConfig",
    "StripResult",
    "StrippedLine",
    "SyncError",
    "TextEngine",
    "VariantRow",
    "boilerplate_key",
    "candidate_keys",
    "chunk_document",
    "chunk_page",
    "dedup_chunks",
    "dedup_exact",
    "exact_key",
    "ingest",
    "ingest_records",
    "ingest_with",
    "remove_documents",
    "running_keys",
    "search",
    "sentence_spans",
    "strip",
]
