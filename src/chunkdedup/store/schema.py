"""What the store's SQL shares: the keys of the ``meta`` table, the expressions reads use over the
layout of ``schema.sql`` (a page's text, a canonical's text, a document's unit ...) and the helpers that
name clusters. The migrations that bring an older file to that layout are in
:mod:`chunkdedup.store.migrations`.
"""

from __future__ import annotations

from typing import Literal

from chunkdedup.store.batches import numbered

#: Every key of the ``meta`` table: the settings an index's derived state was made under, and its
#: watermarks. :meth:`Connection.meta` takes only these, so a misspelt key is a type error, not a
#: setting read as missing.
MetaKey = Literal[
    "chrome_settings", "chrome_stale", "chunked_config", "context_config", "counts", "deferred_indexes",
    "deferred_triggers", "doc_keys_format", "embedder_dim", "embedder_name", "fts_deferred",
    "key_units_settings", "logged", "near_edge_settings", "near_hashing", "near_settings",
    "semantic_edges_for", "semantic_settings", "text_built", "text_engine",
]
#: A page's text as parsed: stored as a zstd frame or a plain string (migration 0014), read through
#: the ``page_text()`` function every connection registers (:mod:`chunkdedup.store.pagetext`).
RAW_TEXT = "page_text(raw_text)"
#: A page's text after boilerplate stripping: ``clean_text`` is stored only where stripping changed
#: the page (migration 0009), else it reads as the raw text.
CLEAN_TEXT = "page_text(COALESCE(clean_text, raw_text))"
#: A canonical's text (the table aliased ``c``): ``text`` is stored only where it is not its leader
#: group's text (migration 0010), which is every consistent canonical's: its first source is the
#: leader's first source.
CANONICAL_TEXT = "COALESCE(c.text, (SELECT g.text FROM groups g WHERE g.id = c.id))"
#: A document's unit (the table aliased ``d``): stored as '' where it is the document's own, ``doc:``
#: and its id (migration 0024), which is every document's without a family.
DOC_UNIT = "(CASE WHEN d.unit = '' THEN 'doc:' || d.doc_id ELSE d.unit END)"
#: Documents not chunked yet (``ckey`` NULL, through the partial index that holds only them).
PENDING_DOCUMENTS = "document_rows WHERE ckey IS NULL"
#: The text of the group a page's first source (the one at offset 0) belongs to (the page row aliased
#: ``p``): what a page whose ``raw_text`` is NULL reads as (migration 0036).
PAGE_GROUP_TEXT = (
    "(SELECT g.text FROM source_rows s JOIN groups g ON g.gid = s.gid"
    " WHERE s.dkey = p.dkey AND s.page = p.page AND s.start = 0)"
)
#: A document's content hash as the ``documents`` view gives it (the row aliased ``d``): hex digits.
DOC_CONTENT_HASH = (
    "(CASE WHEN typeof(d.content_hash) = 'blob' THEN lower(hex(d.content_hash)) ELSE d.content_hash END)"
)
#: The keys of the documents of a file (parameter 1: its path), sorted, through the ranges of keys its
#: documents were written in (``file_docs``, migration 0043): a range may hold other files' documents
#: and removed keys, so each row's file is checked; no index of the documents by file is kept.
FILE_DKEYS = (
    "(SELECT d.dkey FROM paths p JOIN file_docs r ON r.fkey = p.fkey"
    " JOIN document_rows d ON d.dkey BETWEEN r.lo AND r.hi AND d.fkey = r.fkey WHERE p.path = ?1)"
)
#: A one-page document whose page holds nothing of its own (the table aliased ``d``; migration 0040):
#: its page has no row. Such a page has text, no clean text, OCR confidence or links, and its words are
#: the text of the group its one source belongs to, so all a row would hold is its document's key.
ROWLESS_PAGE = "d.n_pages = 1 AND NOT EXISTS (SELECT 1 FROM page_rows r WHERE r.dkey = d.dkey)"
#: The words of a rowless page (the document aliased ``d``): its group's text.
ROWLESS_PAGE_TEXT = (
    "(SELECT g.text FROM source_rows s JOIN groups g ON g.gid = s.gid"
    " WHERE s.dkey = d.dkey AND s.page = 1 AND s.start = 0)"
)
_HEX = frozenset("0123456789abcdef")
#: The bytes of a canonical's change signature kept (migration 0035): the signature is compared only
#: with the same canonical's last one, so 64 bits leave a change unseen once in 2**64.
SIGNATURE_BYTES = 8


def holds(column: str) -> str:
    """A test that ``column``'s text holds the next parameter, ASCII case aside (``instr`` over
    ``lower``: no pattern characters to escape, unlike ``LIKE``)."""
    return f"instr(lower({column}), lower(?)) > 0"


def in_clusters(alias: str, count: int, first: int = 1) -> str:
    """SQL true for the groups (the table aliased ``alias``) of the ``count`` clusters bound as the
    numbered parameters from ``?first`` (the list is read twice, so its values are bound once)."""
    return _of_clusters(alias, f"IN ({numbered(count, first)})")


def in_cluster(alias: str, value: str) -> str:
    """SQL true for the groups (the table aliased ``alias``) of the cluster whose id is the SQL value
    ``value`` (a numbered parameter or another table's column)."""
    return _of_clusters(alias, f"= {value}")


def _of_clusters(alias: str, test: str) -> str:
    """The groups whose cluster id passes ``test``: those another group leads, through the index by
    cluster, and the ones leading themselves (``canon`` NULL), through the index by id (migration 0030)."""
    return f"({alias}.canon {test} OR ({alias}.canon IS NULL AND {alias}.id {test}))"


def stored_hash(value: str) -> str | bytes:
    """A hash as the store keeps it: its bytes for a 32- or 16-digit hex digest, not its characters;
    any other value as it is. A document's config hash (migration 0024), its content hash (0025; 16
    digits since 0042) and a canonical's signature (0025)."""
    if len(value) in (16, 32) and _HEX.issuperset(value):
        return bytes.fromhex(value)
    return value


