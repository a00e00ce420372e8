"""Filters and versions: which retrieved chunks the caller may see, and with which citations.

Everything here looks only at documents that pass the filter. "Latest" is decided among the
family's versions *within the filter*, so ``--where effective_date<=2023-06-30`` returns the
policies in force on that date, and no date of a document outside the filter ever reaches a label.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from chunkdedup.dedup.near import word_diff
from chunkdedup.normalize import exact_key
from chunkdedup.query.records import Candidate, Citation, Dropped, VersionPolicy, Words
from chunkdedup.query.retrieve import Scored
from chunkdedup.query.where import Filter
from chunkdedup.store import Store, reads
from chunkdedup.store.reads import DocumentFields
from chunkdedup.store.rows import SourceRow
from chunkdedup.types import DOCUMENT_FIELDS, MetaValue


@dataclass(frozen=True, slots=True)
class DocInfo:
    doc_id: str
    metadata: dict[str, Any]
    fields: dict[str, MetaValue]
    family: str | None
    effective_date: str | None


@dataclass(slots=True)
class Eligibility:
    """Per-query caches over one open index: documents, what passes, and version status."""

    store: Store
    filter: Filter
    policy: VersionPolicy
    words: Words = "source"
    docs: dict[str, DocInfo] = field(default_factory=dict)
    superseded: dict[str, str | None] = field(default_factory=dict)
    done: set[str] = field(default_factory=set)
    _families: set[str] = field(default_factory=set)
    _passing: dict[str, bool] = field(default_factory=dict)  # per document, as screened by visible()
    _named: frozenset[str] | Literal[False] | None = None  # visible groups, when the filter names documents
    _variants: bool | None = None
    _grouped: bool = False

    # -- documents ---------------------------------------------------------------------------
    def load_docs(self, doc_ids: Iterable[str]) -> None:
        """Read these documents' fields into the cache (so :meth:`passes` can answer for them)."""
        missing = sorted(set(doc_ids) - self.docs.keys())
        if not missing:
            return
        # without a filter every document passes: its next version is the index's, read with it
        rows = reads.documents(self.store, missing, next_versions=not self.filter)
        self._add_docs(rows)
        if not self.filter:
            self.superseded.update((r.doc_id, r.next_version) for r in rows if r.family and r.effective_date)

    def _add_docs(self, rows: Iterable[DocumentFields]) -> None:
        # what a filter reads of a document (none without a filter: every document passes)
        for r in rows:
            fields = _fields(r) if self.filter else {}
            self.docs[r.doc_id] = DocInfo(r.doc_id, r.metadata, fields, r.family, r.effective_date)

    def passes(self, doc_id: str) -> bool:
        return not self.filter or self.filter.passes(self.docs[doc_id].fields)

    def _load_versions(self, doc_ids: Iterable[str]) -> None:
        """``superseded[doc]``: the next newer effective date in its family among passing documents.

        Without a filter every document passes: :meth:`load_docs` read it with the document, for
        that document alone, not its family's every version."""
        if not self.filter:
            return
        families = {
            d.family for i in doc_ids if (d := self.docs[i]).family and d.effective_date
        } - self._families
        # families partition the documents: one pass over all of them decides as one per family would
        rows = reads.family_documents(self.store, sorted(families)) if families else ()
        self._add_docs(rows)
        members: dict[str | None, list[str]] = {}
        for r in rows:
            if r.effective_date and self.passes(r.doc_id):
                members.setdefault(r.family, []).append(r.effective_date)
        for r in rows:
            newer = [d for d in members.get(r.family, []) if r.effective_date and d > r.effective_date]
            self.superseded[r.doc_id] = min(newer) if newer else None
        self._families |= families

    def _named_groups(self) -> frozenset[str] | Literal[False]:
        """Every group with a source in a passing document, when the filter names its documents by
        ``doc``, ``family`` or ``department`` equality (indexed: a passing document is among those read
        here) and one such key names at most :data:`MAX_NAMED_DOCUMENTS`; else False (the caller
        screens each group)."""
        for key, conds in self.filter.groups:
            if key not in reads.NAMING_COLUMNS or any(c.op != "=" for c in conds):
                continue
            values = sorted({c.value for c in conds})
            rows = reads.documents_by(self.store, key, values, MAX_NAMED_DOCUMENTS + 1)
            if len(rows) > MAX_NAMED_DOCUMENTS:
                continue  # another key may name fewer
            self._add_docs(rows)
            return reads.document_groups(self.store, [r.doc_id for r in rows if self.passes(r.doc_id)])
        return False

    # -- variants (written by the near-duplicate tier when it exists) ------------------------
    def _variants_of(self, ids: Sequence[str]) -> dict[str, set[str]]:
        """Canonical ids recorded as variants (versions) of each id; empty when the index has none.

        ``variants`` pairs exact-key groups when a ``groups`` table exists (mapped to their
        canonicals here), else canonical ids.
        """
        if self._variants is None:
            tables = reads.variant_tables(self.store)
            self._variants = tables.variants
            self._grouped = tables.grouped
        out: dict[str, set[str]] = {}
        if not self._variants:
            return out
        for a, b in reads.variant_pairs(self.store, list(ids), grouped=self._grouped):
            if a != b:
                out.setdefault(a, set()).add(b)
        return out

    # -- the step ----------------------------------------------------------------------------
    def named(self) -> frozenset[str] | None:
        """Every group :meth:`visible` can let through, when the filter names its documents (``doc``,
        ``family`` or ``department`` equality, at most :data:`MAX_NAMED_DOCUMENTS`); else None (groups
        are screened one by one)."""
        if not self.filter:
            return None
        if self._named is None:
            self._named = self._named_groups()
        return None if self._named is False else self._named

    def visible(self, scored: Sequence[Scored]) -> list[Scored]:
        """The groups of ``scored`` holding a source in a passing document, in order: the only ones
        :meth:`apply` can place or drop (it skips a group without one and changes nothing), so the
        rest need not reach it. Read through the groups' own sources and documents, far less than
        :meth:`apply` reads per group: a selective filter skips thousands of groups this way."""
        if not self.filter:
            return list(scored)
        named = self.named()
        if named is not None:
            return [s for s in scored if s.id in named]
        keys = {key for key, _ in self.filter.groups}
        rows = reads.group_documents(self.store, [s.id for s in scored], metadata=not keys <= _COLUMNS)
        shown: set[str] = set()
        for r in rows:
            ok = self._passing.get(r.document.doc_id)
            if ok is None:
                ok = self._passing[r.document.doc_id] = self.filter.passes(_fields(r.document))
            if ok:
                shown.add(r.group_id)
        return [s for s in scored if s.id in shown]

    def apply(self, scored: Sequence[Scored]) -> list[Candidate | Dropped]:
        """In retrieval order: candidates with their passing citations, or the version policy's drops.

        ``scored`` holds exact-key groups; each candidate is a cluster (canonical id), placed at its
        best-scoring group that the caller may see. A group counts only through its own sources: a
        group none of whose sources passes the filter vanishes without a trace, so a word only a copy
        outside the filter holds neither finds nor ranks its cluster. Under ``latest`` a group only
        in superseded versions does not place its cluster either (its text is not the current one).

        The words shown are the placing group's (``words="source"``: the copy the question and the
        filter picked), or the cluster's canonical text when its leader group has a cited source
        (``words="canonical"``; the placing group's when the leader is not visible). Shown as the
        group's text when every source of that group is cited, else as the group's first cited
        source's own span of its page: a group's text is its smallest source's copy (exact keys
        ignore case, whitespace and generated ids), and an uncited copy is never shown. Citations
        list every passing (and, under ``latest``, current) source of the cluster, the shown
        group's first (the per-document cap charges a hit to its first cited document); each one of
        another group carries its own words and the words that differ (:meth:`_own_words`), so no
        citation vouches for another source's words. A cluster is decided once per query
        (:attr:`done`), at its first placing group.
        """
        groups = {g.id: (g.canonical_id, g.text) for g in reads.groups(self.store, [s.id for s in scored])}
        canon_ids = sorted({g[0] for g in groups.values()} - self.done)
        refs = _sources(self.store, canon_ids)
        self.load_docs(r.doc_id for rs in refs.values() for r in rs)
        passing = {cid: [r for r in rs if self.passes(r.doc_id)] for cid, rs in refs.items()}
        self._load_versions(r.doc_id for rs in passing.values() for r in rs)
        newest_variant = self._newest_variants([c for c in canon_ids if passing.get(c)])
        out: list[Candidate | Dropped] = []
        for s in scored:
            if s.id not in groups:
                continue  # removed since retrieval
            cid, gtext = groups[s.id]
            mine = [r for r in passing.get(cid, []) if r.group_id == s.id]
            if cid in self.done or not mine:
                continue
            cites = tuple(self._cite(r) for r in passing[cid])
            variant = self._superseding(cites, newest_variant.get(cid))
            cand, reason = _versioned(Scored(cid, s.score), cites, variant, self.policy)
            n_group = sum(1 for r in refs[cid] if r.group_id == s.id)
            if cand is None:
                text = gtext if len(mine) == n_group else self._span(self._cite(mine[0]))
                out.append(Dropped(cid, s.score, text, "versions", reason))
                self.done.add(cid)
                continue
            cited = {(c.doc, c.page, c.start) for c in cand.citations}
            if not any((r.doc_id, r.page, r.start) in cited for r in mine):
                continue  # this copy is only in superseded versions: a current copy may place it
            leader: list[SourceRow] = []
            if self.words == "canonical":
                leader = [
                    r for r in passing[cid] if r.group_id == cid and (r.doc_id, r.page, r.start) in cited
                ]
            shown_id = cid if leader else s.id
            shown = leader or [r for r in mine if (r.doc_id, r.page, r.start) in cited]
            if len(shown) == sum(1 for r in refs[cid] if r.group_id == shown_id):
                text = gtext if shown_id == s.id else self._group_text(cid)
            else:
                text = self._span(self._cite(shown[0]))
            first = {(r.doc_id, r.page, r.start) for r in shown}
            order = sorted(cand.citations, key=lambda c: (c.doc, c.page, c.start) not in first)
            cites = self._own_words(order, refs[cid], shown_id, text)
            out.append(replace(cand, text=text, citations=cites))
            self.done.add(cid)
        return out

    def _own_words(
        self, cites: Sequence[Citation], refs: Sequence[SourceRow], shown_id: str, shown_text: str
    ) -> tuple[Citation, ...]:
        """``cites`` with each source of another group than the shown one given its own words and
        the words that differ from ``shown_text``. A group's text is its first source's copy (refs
        are in (doc, page, start) order); a later copy in the group is read from its page."""
        where = {(r.doc_id, r.page, r.start): r for r in refs}
        others = {where[(c.doc, c.page, c.start)].group_id for c in cites} - {shown_id}
        if not others:
            return tuple(cites)
        texts = {g.id: g.text for g in reads.groups(self.store, sorted(others))}
        first: dict[str, tuple[str, int, int]] = {}
        for r in refs:
            first.setdefault(r.group_id, (r.doc_id, r.page, r.start))
        shown_key = exact_key(shown_text)
        out = []
        for c in cites:
            gid = where[(c.doc, c.page, c.start)].group_id
            if gid == shown_id:
                out.append(c)
                continue
            own = texts.get(gid, "") if first[gid] == (c.doc, c.page, c.start) else self._span(c)
            out.append(replace(c, text=own, differs=word_diff(exact_key(own), shown_key)))
        return tuple(out)

    def _group_text(self, gid: str) -> str:
        return reads.group_text(self.store, gid)

    def _span(self, c: Citation) -> str:
        return reads.page_span(self.store, c.doc, c.page, c.start, c.end)

    def _cite(self, r: SourceRow) -> Citation:
        """A citation from a source row."""
        d = self.docs[r.doc_id]
        return Citation(
            r.doc_id, r.page, r.start, r.end, r.relation, r.similarity, d.metadata, d.effective_date,
            self.superseded.get(r.doc_id),
        )

    def _newest_variants(self, ids: Sequence[str]) -> dict[str, dict[str, tuple[str, str]]]:
        """For each id, per family: its variant with the newest passing effective date there,
        ``(date, variant id)``. Versions supersede within a family only: a variant in another family
        is another policy's wording, a label, never a newer version of this text. Documents without a
        family form one family of their own ("")."""
        variants = self._variants_of(ids)
        if not variants:
            return {}
        others = sorted({v for vs in variants.values() for v in vs})
        refs = _sources(self.store, others)
        self.load_docs(r.doc_id for rs in refs.values() for r in rs)
        newest: dict[str, dict[str, tuple[str, str]]] = {}
        for v, rs in refs.items():
            for r in rs:
                d = self.docs[r.doc_id]
                if d.effective_date and self.passes(r.doc_id):
                    mine = newest.setdefault(v, {})
                    family = d.family or ""
                    mine[family] = max(mine.get(family, ("", v)), (d.effective_date, v))
        out: dict[str, dict[str, tuple[str, str]]] = {}
        for cid, vs in variants.items():
            for v in vs:
                for family, when in newest.get(v, {}).items():
                    best = out.setdefault(cid, {})
                    best[family] = max(best.get(family, when), when)
        return out

    def _superseding(
        self, cites: tuple[Citation, ...], by_family: dict[str, tuple[str, str]] | None
    ) -> tuple[str, str] | None:
        """The variant that makes this text an old version: one newer than its current copies in
        every family they stand in (a copy without a date is no version); else None."""
        if not by_family:
            return None
        current = [c for c in cites if c.superseded_by is None] or list(cites)
        dates: dict[str, str] = {}
        for c in current:
            family = self.docs[c.doc].family or ""
            if not c.effective_date:
                return None
            dates[family] = max(dates.get(family, ""), c.effective_date)
        newer = [by_family[f] for f, when in dates.items() if f in by_family and by_family[f][0] > when]
        return max(newer) if newer and len(newer) == len(dates) else None


#: A filter naming at most this many documents (``doc=``, ``family=``, ``department=``) has their
#: groups read up front
MAX_NAMED_DOCUMENTS = 2_000
#: The fields a document has as columns (every other filter key is a metadata key)
_COLUMNS = frozenset(DOCUMENT_FIELDS)


def _fields(r: DocumentFields) -> dict[str, MetaValue]:
    """What a filter sees of a document: its metadata, overridden by the recognised fields."""
    fields: dict[str, MetaValue] = dict(r.metadata)
    fields.update(doc=r.doc_id, department=r.department, family=r.family, effective_date=r.effective_date)
    return fields


def _versioned(
    s: Scored,
    cites: tuple[Citation, ...],
    variant: tuple[str, str] | None,
    policy: VersionPolicy,
) -> tuple[Candidate | None, str]:
    current = tuple(c for c in cites if c.superseded_by is None)
    pool = current or cites
    dates = [c.effective_date for c in pool if c.effective_date]
    date = max(dates) if dates else None
    superseded_by = None
    if not current:
        superseded_by = min(c.superseded_by for c in cites if c.effective_date == date and c.superseded_by)
    elif variant is not None and date is not None and variant[0] > date:
        superseded_by = variant[0]
    if policy == "latest":
        if not current:
            newest = max(cites, key=lambda c: (c.effective_date or "", c.doc))
            return None, (
                f"every cited source is a superseded version (newest: {newest.doc}, effective "
                f"{newest.effective_date}, superseded by {newest.superseded_by})"
            )
        if superseded_by is not None and variant is not None:
            return None, (
                f"its variant {variant[1]} is a newer version (effective {variant[0]}; this text's newest "
                f"source is effective {date})"
            )
        cites = current
    return Candidate(s.id, s.score, "", cites, date, superseded_by), ""


def _sources(store: Store, ids: Sequence[str]) -> dict[str, list[SourceRow]]:
    """Per canonical id: its sources, ordered by (doc, page, start)."""
    out: dict[str, list[SourceRow]] = {}
    for r in reads.canonical_sources(store, list(ids)):
        out.setdefault(r.canonical_id, []).append(r)
    return out
