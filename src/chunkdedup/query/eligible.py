"""Filters and versions: which retrieved chunks the caller may see, and with which citations.

Everything here looks only at documents that pass the filter. "Latest" is decided among the
family's versions *within the filter*, so ``--where effective_date<=2023-06-30`` returns the
policies in force on that date, and no date of a document outside the filter ever reaches a label.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from chunkdedup.query.records import Candidate, Citation, Dropped, VersionPolicy
from chunkdedup.query.retrieve import Scored
from chunkdedup.query.where import Filter
from chunkdedup.types import MetaValue

_CHUNK = 500  # ids per IN (...) list, well under SQLite's variable limit


@dataclass(frozen=True, slots=True)
class DocInfo:
    doc_id: str
    metadata: dict[str, Any]
    fields: dict[str, MetaValue]
    family: str | None
    effective_date: str | None


@dataclass(slots=True)
class Eligibility:
    """Per-query caches over one connection: documents, what passes, and version status."""

    conn: sqlite3.Connection
    filter: Filter
    policy: VersionPolicy
    docs: dict[str, DocInfo] = field(default_factory=dict)
    superseded: dict[str, str | None] = field(default_factory=dict)
    _families: set[str] = field(default_factory=set)
    _variants: bool | None = None
    _grouped: bool = False

    # -- documents ---------------------------------------------------------------------------
    def _load_docs(self, doc_ids: Iterable[str]) -> None:
        missing = sorted(set(doc_ids) - self.docs.keys())
        for part in _chunks(missing):
            rows = self.conn.execute(
                "SELECT doc_id, metadata, department, family, effective_date FROM documents"
                f" WHERE doc_id IN ({_marks(part)})",
                part,
            )
            self._add_docs(rows)

    def _add_docs(self, rows: Iterable[Sequence[Any]]) -> None:
        for doc_id, meta, department, family, date in rows:
            metadata = dict(json.loads(meta))
            fields: dict[str, MetaValue] = dict(metadata)
            fields.update(doc=doc_id, department=department, family=family, effective_date=date)
            self.docs[doc_id] = DocInfo(doc_id, metadata, fields, family, date)

    def passes(self, doc_id: str) -> bool:
        return self.filter.passes(self.docs[doc_id].fields)

    def _load_versions(self, doc_ids: Iterable[str]) -> None:
        """``superseded[doc]``: the next newer effective date in its family among passing documents."""
        families = {
            d.family for i in doc_ids if (d := self.docs[i]).family and d.effective_date
        } - self._families
        for part in _chunks(sorted(families)):
            rows = self.conn.execute(
                "SELECT doc_id, metadata, department, family, effective_date FROM documents"
                f" WHERE family IN ({_marks(part)})",
                part,
            ).fetchall()
            self._add_docs(rows)
            members: dict[str, list[str]] = {}
            for r in rows:
                if r[4] and self.passes(r[0]):
                    members.setdefault(r[3], []).append(r[4])
            for r in rows:
                newer = [d for d in members.get(r[3], []) if r[4] and d > r[4]]
                self.superseded[r[0]] = min(newer) if newer else None
        self._families |= families

    # -- variants (written by the near-duplicate tier when it exists) ------------------------
    def _variants_of(self, ids: Sequence[str]) -> dict[str, set[str]]:
        """Canonical ids recorded as variants (versions) of each id; empty when the index has none.

        ``variants`` pairs exact-key groups when a ``groups`` table exists (mapped to their
        canonicals here), else canonical ids.
        """
        if self._variants is None:
            tables = {
                r[0]
                for r in self.conn.execute(
                    "SELECT name FROM sqlite_master WHERE type='table' AND name IN ('variants', 'groups')"
                )
            }
            self._variants = "variants" in tables
            self._grouped = "groups" in tables
        out: dict[str, set[str]] = {}
        if not self._variants:
            return out
        if self._grouped:
            pair = (
                "SELECT ga.canonical_id, gb.canonical_id FROM groups ga JOIN variants v ON v.{x} = ga.id"
                " JOIN groups gb ON gb.id = v.{y} WHERE ga.canonical_id IN ({marks})"
            )
        else:
            pair = "SELECT v.{x}, v.{y} FROM variants v WHERE v.{x} IN ({marks})"
        for part in _chunks(list(ids)):
            marks = _marks(part)
            sql = pair.format(x="a", y="b", marks=marks) + " UNION " + pair.format(x="b", y="a", marks=marks)
            for a, b in self.conn.execute(sql, [*part, *part]):
                if a != b:
                    out.setdefault(a, set()).add(b)
        return out

    # -- the step ----------------------------------------------------------------------------
    def apply(self, scored: Sequence[Scored]) -> list[Candidate | Dropped]:
        """In retrieval order: candidates with their passing citations, or the version policy's drops.

        A chunk none of whose sources passes the filter vanishes without a trace. When some sources
        are not cited, the text shown is the first cited source's own span of its page: the
        canonical text may be the copy of an uncited document (a near duplicate, or an exact one
        differing in case, whitespace or a generated id), and that copy must not be shown.
        """
        ids = [s.id for s in scored]
        texts = _texts(self.conn, ids)
        refs = _sources(self.conn, ids)
        self._load_docs(r[0] for rs in refs.values() for r in rs)
        passing = {cid: [r for r in rs if self.passes(r[0])] for cid, rs in refs.items()}
        visible = [s for s in scored if passing.get(s.id) and s.id in texts]
        self._load_versions(r[0] for s in visible for r in passing[s.id])
        newest_variant = self._newest_variants([s.id for s in visible])
        out: list[Candidate | Dropped] = []
        for s in visible:
            cites = tuple(self._cite(r) for r in passing[s.id])
            n = len(refs[s.id])
            cand, reason = _versioned(s, texts[s.id], cites, newest_variant.get(s.id), self.policy)
            if cand is None:
                text = texts[s.id] if len(cites) == n else self._span(cites[0])
                out.append(Dropped(s.id, s.score, text, "versions", reason))
            elif len(cand.citations) < n:
                out.append(replace(cand, text=self._span(cand.citations[0])))
            else:
                out.append(cand)
        return out

    def _span(self, c: Citation) -> str:
        # substr counts characters, as Python slicing does (offsets are 0-based, substr 1-based)
        row = self.conn.execute(
            "SELECT substr(clean_text, ?, ?) FROM pages WHERE doc_id=? AND page=?",
            (c.start + 1, c.end - c.start, c.doc, c.page),
        ).fetchone()
        return str(row[0] or "") if row else ""

    def _cite(self, r: Sequence[Any]) -> Citation:
        d = self.docs[r[0]]
        return Citation(
            r[0], r[1], r[2], r[3], r[4], r[5], d.metadata, d.effective_date, self.superseded.get(r[0])
        )

    def _newest_variants(self, ids: Sequence[str]) -> dict[str, tuple[str, str]]:
        """For each id, its variant with the newest passing effective date: (date, variant id)."""
        variants = self._variants_of(ids)
        if not variants:
            return {}
        others = sorted({v for vs in variants.values() for v in vs})
        refs = _sources(self.conn, others)
        self._load_docs(r[0] for rs in refs.values() for r in rs)
        newest: dict[str, tuple[str, str]] = {}
        for v, rs in refs.items():
            dates = [d for r in rs if self.passes(r[0]) and (d := self.docs[r[0]].effective_date)]
            if dates:
                newest[v] = (max(dates), v)
        out: dict[str, tuple[str, str]] = {}
        for cid, vs in variants.items():
            best = max((newest[v] for v in vs if v in newest), default=None)
            if best is not None:
                out[cid] = best
        return out


def _versioned(
    s: Scored,
    text: str,
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
    return Candidate(s.id, s.score, text, cites, date, superseded_by), ""


def _texts(conn: sqlite3.Connection, ids: Sequence[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in _chunks(list(ids)):
        out.update(conn.execute(f"SELECT id, text FROM canonicals WHERE id IN ({_marks(part)})", part))
    return out


def _sources(conn: sqlite3.Connection, ids: Sequence[str]) -> dict[str, list[tuple[Any, ...]]]:
    out: dict[str, list[tuple[Any, ...]]] = {}
    for part in _chunks(list(ids)):
        rows = conn.execute(
            'SELECT canonical_id, doc_id, page, start, "end", relation, similarity FROM sources'
            f" WHERE canonical_id IN ({_marks(part)}) ORDER BY canonical_id, doc_id, page, start",
            part,
        )
        for r in rows:
            out.setdefault(r[0], []).append(tuple(r[1:]))
    return out


def _chunks(items: list[str]) -> Iterable[list[str]]:
    for i in range(0, len(items), _CHUNK):
        yield items[i : i + _CHUNK]


def _marks(part: Sequence[str]) -> str:
    return ",".join("?" * len(part))
