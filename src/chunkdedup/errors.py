"""The one exception tree of chunkdedup.

    ChunkdedupError
    ├── ConfigError          a config value is out of range or a config file is malformed
    ├── InputError           an input path, manifest or golden file cannot be used
    │   └── DuplicateDocumentError   two inputs give the same document id
    ├── ParseError           one file cannot be parsed (reported per file, never stops a run)
    ├── QuestionError        a question is longer than the ``[query]`` bounds allow
    ├── IndexError_          the index file cannot be used
    │   ├── IndexBusyError   another process is writing to the index
    │   ├── SchemaError      the index was written by a newer chunkdedup or is not an index
    │   │   └── MigrationPendingError  an older index opened read-only
    │   ├── IndexDamagedError    the file's pages or text are corrupt
    │   ├── IndexFullError       the disk (or a size limit) is full while writing
    │   └── IndexIOError         the operating system failed a read or write, or denied it
    ├── MissingExtraError    an optional dependency is not installed
    ├── SyncError            a vector store did not confirm a write of ``sync``
    └── EngineError          a distributed engine broke an invariant the result depends on

Every message names the input and says how to fix it.
"""

from __future__ import annotations


class ChunkdedupError(Exception):
    """Base class of every error chunkdedup raises on purpose."""


class ConfigError(ChunkdedupError):
    """A configuration value is invalid."""


class InputError(ChunkdedupError):
    """An input path, manifest or golden file cannot be used."""


class DuplicateDocumentError(InputError):
    """Two inputs map to the same document id."""


class ParseError(ChunkdedupError):
    """One file cannot be parsed; the pipeline reports it and goes on."""

    def __init__(self, reason: str, *, skipped: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        #: True when the file is unusable by nature (empty, binary), False when parsing broke.
        self.skipped = skipped


class QuestionError(ChunkdedupError):
    """A question has more characters or terms than ``[query] max_question_chars`` /
    ``max_question_terms`` allow (a usage error: the CLI exits 2, ``serve`` answers 400)."""


class IndexError_(ChunkdedupError):
    """The index file cannot be used."""


class IndexBusyError(IndexError_):
    """Another process holds the index's write lock."""


class SchemaError(IndexError_):
    """The file is not a chunkdedup index, or its schema is newer than this version."""


class MigrationPendingError(SchemaError):
    """An index written by an older chunkdedup was opened read-only: its schema needs a writer."""


class IndexDamagedError(IndexError_):
    """The index file is corrupt (SQLite found a malformed page, or stored text is not UTF-8)."""


class IndexFullError(IndexError_):
    """A write to the index failed because the disk (or a file size limit) is full."""


class IndexIOError(IndexError_):
    """The operating system failed or refused a read or write of the index file."""


class MissingExtraError(ChunkdedupError):
    """An optional dependency is missing."""

    def __init__(self, feature: str, extra: str, module: str) -> None:
        super().__init__(f"{feature} needs the optional module {module!r}: pip install 'chunkdedup[{extra}]'")
        self.extra = extra


class SyncError(ChunkdedupError):
    """A vector store did not confirm a write: the records stay unapplied, the next sync resends them."""


class EngineError(ChunkdedupError):
    """A distributed engine broke an invariant (e.g. a hash partition reached its reduce in pieces)."""
