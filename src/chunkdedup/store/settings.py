"""What an index records it was built with (rows of the ``meta`` table), typed: one read and one write
each, and the one rule every stage of an ingest follows: the setting a stage was last done under
differs from this run's, so the stage is done again for everything (:class:`Stamp`).

A stage stamps its work with a fingerprint of the settings it ran under (a hash of the config
section, a format number, the threshold): :meth:`SettingsTables.stamp` pairs the stored fingerprint
with this run's, the stage does everything again where it changed (else only what is new), and
:meth:`SettingsTables.done` writes the new one in the transaction of the stage's last write, so a
run killed before it leaves the old stamp and the next run does the stage again.

Example:
    >>> from chunkdedup.store.settings import Stamp
    >>> Stamp("context_config", "a1", "b2").changed
    True
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from chunkdedup.errors import ConfigError
from chunkdedup.store.batches import Tables
from chunkdedup.store.connection import Connection

#: the meta rows that stamp a stage's work with the settings it was done under
StageKey = Literal[
    "context_config",  # the documents' contexts: the retrieval settings and the context format
    "doc_keys_format",  # the boilerplate keys of every document: the format of their rows
    "near_hashing",  # the groups' signatures and band rows: the MinHash settings
    "near_settings",  # every cluster: the near tier's decision settings
    "near_edge_settings",  # the kept near edges: the threshold and bands that verified them
    "semantic_settings",  # every cluster: whether the semantic tier runs, and its threshold
    "semantic_edges_for",  # the semantic edges: the threshold they were found at
]


@dataclass(frozen=True, slots=True)
class Stamp:
    """A stage's settings: ``stored`` (what its work was last done under, ``None`` if never) and
    ``wanted`` (this run's), under meta ``key``."""

    key: StageKey
    stored: str | None
    wanted: str

    @property
    def changed(self) -> bool:
        """Whether the stage's work was done under other settings (or never): do it all again."""
        return self.stored != self.wanted


@dataclass(frozen=True, slots=True)
class StoredEmbedder:
    """The embedder whose vectors an index holds: its recorded ``name`` (as
    :func:`chunkdedup.embed.get_embedder` takes it) and the vectors' dimension."""

    name: str
    dim: int

    def check(self, name: str, dim: int | None, *, index: Path, spec: str, use: str) -> None:
        """The one embedder-identity check: an embedder named ``name`` (of ``dim``, when known) may
        add to or search this index's vectors only if it is the one that made them; else a
        ConfigError that says ``use`` (the caller's way to take the index's own) or how to re-embed
        everything with ``spec``."""
        if name == self.name and (dim is None or dim == self.dim):
            return
        shown = name if dim is None else f"{name} (dim {dim})"
        raise ConfigError(
            f"index {index} is embedded with {self.name} (dim {self.dim}), not {shown}: {use}, or re-embed "
            f"everything with chunkdedup ingest ... --index {index} --embedder {spec} --reembed"
        )


class SettingsTables(Tables):
    """The index's recorded settings: the stages' stamps and the embedder. ``db``: the index's
    connection (its meta rows)."""

    def __init__(self, db: Connection) -> None:
        super().__init__(db.conn)
        self.db = db

    def stamp(self, key: StageKey, wanted: str) -> Stamp:
        """The stage's stored settings beside this run's ``wanted``."""
        return Stamp(key, self.db.meta(key), wanted)

    def done(self, *stamps: Stamp) -> None:
        """Record that each stage's work is done under its ``wanted`` settings (within the caller's
        transaction: the one of the stage's last write)."""
        for stamp in stamps:
            if stamp.changed:
                self.db.set_meta(stamp.key, stamp.wanted)

    def forget(self, key: StageKey) -> None:
        """The stage's work is to be done again for everything (its stamp goes; within the caller's
        transaction)."""
        self.db.delete_meta(key)

    def embedder(self) -> StoredEmbedder | None:
        """The embedder the index records (every vector it holds is that model's), whether or not it
        holds a vector yet; ``None`` for an index ingested without one."""
        name, dim = self.db.meta("embedder_name"), self.db.meta("embedder_dim")
        return None if name is None or dim is None else StoredEmbedder(name, int(dim))

    def set_embedder(self, embedder: StoredEmbedder) -> None:
        """Record the embedder whose vectors the index holds (within the caller's transaction)."""
        self.db.set_meta("embedder_name", embedder.name)
        self.db.set_meta("embedder_dim", str(embedder.dim))
