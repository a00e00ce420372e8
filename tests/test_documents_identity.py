"""A Deduplicator call never loses or merges a user's documents silently: a call is an upsert (the
source's other documents stay), two documents under one name are refused with the fix named, and a
document a pipeline passes only part of is completed from the pipeline's docstore."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from chunkdedup import FileStatus, Index, InputError
from chunkdedup.ingestion.memory import InputRecord, ingest_records

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")

REFUNDS = "Refunds are paid within thirty days of the request, by the original means of payment."
SHIPPING = "Orders ship within five business days; tracking numbers are sent by email."
RETURNS = "Returns are accepted for sixty days when the item is unused and in its original box."


def _docs(index: Path) -> dict[str, int]:
    with Index.open(index) as ix:
        return {d["doc"]: d["pages"] for d in ix.documents()}


def test_an_upsert_keeps_the_source_and_removes_only_what_it_names(tmp_path: Path) -> None:
    index = tmp_path / "records.sqlite"
    a, b, c = (InputRecord.of(n, t) for n, t in (("a", REFUNDS), ("b", SHIPPING), ("c", RETURNS)))
    ingest_records([a, b], index, source="crm")
    report = ingest_records([c], index, source="crm", mode="upsert")
    assert report.files[0].status == FileStatus.INGESTED and set(_docs(index)) == {"a", "b", "c"}
    # the source as an upsert left it is the source a replace of the same documents gives: unchanged
    assert ingest_records([a, b, c], index, source="crm").files[0].status == FileStatus.UNCHANGED
    assert ingest_records([b], index, source="crm", mode="upsert").files[0].status == FileStatus.UNCHANGED
    ingest_records([], index, source="crm", mode="upsert", remove=["b"])
    assert set(_docs(index)) == {"a", "c"}
    with pytest.raises(InputError, match="no such document"):
        ingest_records([], index, source="crm", mode="upsert", remove=["b"])
    with pytest.raises(InputError, match="both given and to be removed"):
        ingest_records([a], index, source="crm", mode="upsert", remove=["a"])
    # a record given with no text is named: an upsert removes the document of its id
    ingest_records([InputRecord.of("c", "  ")], index, source="crm", mode="upsert")
    assert set(_docs(index)) == {"a"}


def test_haystack_base_names_are_refused_and_full_paths_kept_apart(tmp_path: Path) -> None:
    pytest.importorskip("haystack")
    from haystack.components.converters import TextFileToDocument

    from chunkdedup.integrations.haystack import Deduplicator

    for folder, text in (("sales", REFUNDS), ("support", SHIPPING)):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "policy.md").write_text(text, encoding="utf-8")
    files = [tmp_path / "sales" / "policy.md", tmp_path / "support" / "policy.md"]
    index = tmp_path / "policies.sqlite"
    converted = TextFileToDocument().run(sources=files)["documents"]
    assert {d.meta["file_path"] for d in converted} == {"policy.md"}  # the converter's default
    with pytest.raises(InputError, match=r"store_full_path=True") as caught:
        Deduplicator(index=str(index)).run(documents=converted)
    assert "'policy.md'" in str(caught.value) and "Nothing was ingested" in str(caught.value)
    assert not index.exists() or _docs(index) == {}
    full = TextFileToDocument(store_full_path=True).run(sources=files)["documents"]
    out = Deduplicator(index=str(index)).run(documents=full)["documents"]
    assert _docs(index) == {str(f): 1 for f in files}
    assert sorted(d.content for d in out) == sorted([REFUNDS, SHIPPING])


def test_one_framework_id_with_two_texts_is_refused(tmp_path: Path) -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.documents import Document

    from chunkdedup.integrations.langchain import Deduplicator

    index = tmp_path / "ids.sqlite"
    twice = [Document(page_content=REFUNDS, id="faq-1"), Document(page_content=SHIPPING, id="faq-1")]
    with pytest.raises(InputError, match="share the id 'faq-1' with different texts"):
        Deduplicator(index, id_key=None).transform_documents(twice)
    same = [Document(page_content=REFUNDS, id="faq-1"), Document(page_content=REFUNDS, id="faq-1")]
    out = Deduplicator(index, id_key=None).transform_documents(same)  # the same Document given twice
    assert _docs(index) == {"faq-1": 1} and len(out) == 1
    # the pages of one file (one `source`, numbered) stay one document
    pages = [
        Document(page_content=SHIPPING, metadata={"source": "terms.pdf", "page": 1}),
        Document(page_content=REFUNDS, metadata={"source": "terms.pdf", "page": 0}),
    ]
    Deduplicator(index).transform_documents(pages)
    assert _docs(index) == {"faq-1": 1, "terms.pdf": 2}


def test_llamaindex_completes_a_partly_passed_document_from_the_docstore(tmp_path: Path) -> None:
    """A pipeline with a docstore passes only the changed page of a PDF: the document keeps its
    other pages, and a page it no longer has is not kept."""
    pytest.importorskip("llama_index.core")
    from llama_index.core import Document
    from llama_index.core.ingestion import DocstoreStrategy, IngestionPipeline
    from llama_index.core.storage.docstore import SimpleDocumentStore
    from llama_index.core.vector_stores import SimpleVectorStore

    from chunkdedup.integrations.llamaindex import Deduplicator

    index = tmp_path / "pdf.sqlite"
    docstore = SimpleDocumentStore()
    pipeline = IngestionPipeline(
        transformations=[Deduplicator(index=index, docstore=docstore)],
        docstore=docstore,
        vector_store=SimpleVectorStore(),
        docstore_strategy=DocstoreStrategy.UPSERTS_AND_DELETE,
    )

    def page(i: int, text: str) -> Document:  # as SimpleDirectoryReader(filename_as_id=True) reads a PDF
        meta = {"file_path": "terms.pdf", "page_label": str(i + 1)}
        return Document(id_=f"terms.pdf_part_{i}", text=text, metadata=meta)

    pipeline.run(documents=[page(0, REFUNDS), page(1, SHIPPING), page(2, RETURNS)])
    assert _docs(index) == {"terms.pdf": 3}
    edited = SHIPPING.replace("five", "seven")
    pipeline.run(documents=[page(0, REFUNDS), page(1, edited), page(2, RETURNS)])
    assert _docs(index) == {"terms.pdf": 3}
    with Index.open(index) as ix:
        texts = [r.text for r in ix.records()]
    assert any("seven business days" in (t or "") for t in texts)
    assert not any("five business days" in (t or "") for t in texts)
    pipeline.run(documents=[page(0, REFUNDS), page(1, edited)])  # the last page is gone
    assert _docs(index) == {"terms.pdf": 2}
