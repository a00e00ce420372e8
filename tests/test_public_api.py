"""The public API is exactly the names below: each in ``__all__``, each bound, nothing else public."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import chunkdedup

#: The public API, name by name: a name added to or taken from ``chunkdedup`` is a decision made here.
PUBLIC = {
    "BoilerplateConfig", "BoilerplateKey", "CanonicalChunk", "Chunk", "ChunkConfig", "ChunkRef",
    "ChunkdedupError", "Citation", "Config", "ConfigError", "DedupConfig", "Document", "DocumentRow",
    "DuplicateDocumentError", "Executor", "ExportRecord", "FamilyCounts", "FileResult", "FileStatus", "Hit",
    "Index", "IndexBusyError", "IndexDamagedError", "IndexError_", "IndexFullError", "IndexIOError",
    "IndexStats", "IngestOptions", "IngestReport", "InputError", "InputRecord", "LocalExecutor", "MergeRow",
    "MissingExtraError", "NearConfig", "Page", "ParseConfig", "ParseError", "ParsedFile", "QueryConfig",
    "QueryResult", "QuestionError", "RetrievalConfig", "SchemaError", "SemanticConfig", "StripResult",
    "StrippedLine", "SyncError", "TextEngine", "VariantRow", "boilerplate_key", "candidate_keys",
    "chunk_document", "chunk_page", "dedup_chunks", "dedup_exact", "exact_key", "ingest", "ingest_records",
    "ingest_with", "remove_documents", "running_keys", "search", "sentence_spans", "strip",
}


def test_the_public_names_are_exactly_these() -> None:
    assert chunkdedup.__all__ == sorted(PUBLIC)


def test_every_public_name_resolves_and_nothing_else_is_public() -> None:
    for name in chunkdedup.__all__:
        value = getattr(chunkdedup, name)
        assert getattr(value, "__module__", "").startswith("chunkdedup"), name
    # every name above is now bound in the package; any other public name there is one too many
    # (its submodules aside: ``chunkdedup.index`` is a module of the package, not a name of its API)
    names = list(vars(chunkdedup).items())
    bound = {n for n, v in names if not n.startswith("_") and not isinstance(v, ModuleType)}
    assert bound == PUBLIC


def test_in_memory_documents_are_ingested_through_the_public_names(tmp_path: Path) -> None:
    """``ingest_records`` and ``InputRecord`` are public: the in-memory twin of ``ingest``."""
    from chunkdedup.ingestion.memory import ingest_records
    from chunkdedup.parse.memory import InputRecord

    assert {"InputRecord", "ingest_records"} <= set(chunkdedup.__all__)
    assert chunkdedup.ingest_records is ingest_records and chunkdedup.InputRecord is InputRecord
    docs = [chunkdedup.InputRecord.of("refunds.md", "Refunds are paid within thirty days.", {"family": "r"})]
    report = chunkdedup.ingest_records(docs, tmp_path / "i.sqlite", source="crm")
    assert report.files[0].doc_ids == ("refunds.md",)
    with chunkdedup.Index.open(tmp_path / "i.sqlite") as ix:
        assert [d["path"] for d in ix.documents()] == ["memory:crm"]
        stats, (doc,) = ix.stats(), ix.documents()
    # Index's reads are typed rows that read as the mapping of their JSON (what they returned as dicts)
    assert isinstance(stats, chunkdedup.IndexStats) and isinstance(doc, chunkdedup.DocumentRow)
    assert stats.canonical_chunks == stats["canonical_chunks"] == 1 and stats.documents == 1
    assert dict(stats) == stats.to_json() and stats["lines_stripped"] == {"running": 0, "chrome": 0}
    assert (doc.doc_id, doc.family, dict(doc)) == ("refunds.md", "r", doc.to_json())
