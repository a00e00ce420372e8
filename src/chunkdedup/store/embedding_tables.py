"""The semantic tier's tables: each group's embedding and the semantic edges between groups."""

from __future__ import annotations

from collections.abc import Iterable

from chunkdedup.store.batches import Tables


class EmbeddingTables(Tables):
    """The groups' vectors and the semantic edges decided from them."""

    def unembedded_count(self) -> int:
        sql = "SELECT COUNT(*) FROM groups WHERE id NOT IN (SELECT group_id FROM embeddings)"
        return int(self.conn.execute(sql).fetchone()[0])

    def unembedded_groups(self, limit: int) -> list[tuple[str, str]]:
        rows = self.conn.execute(
            "SELECT id, text FROM groups WHERE id NOT IN (SELECT group_id FROM embeddings)"
            " ORDER BY id LIMIT ?",
            (limit,),
        )
        return [(r[0], r[1]) for r in rows]

    def set_embeddings(self, rows: Iterable[tuple[str, bytes]]) -> None:
        self.conn.executemany("INSERT OR REPLACE INTO embeddings(group_id, vector) VALUES (?, ?)", rows)

    def embeddings(self) -> tuple[list[str], list[bytes]]:
        """Every stored vector, ordered by group id."""
        rows = self.conn.execute("SELECT group_id, vector FROM embeddings ORDER BY group_id").fetchall()
        return [r[0] for r in rows], [r[1] for r in rows]

    def put_semantic_edges(self, edges: Iterable[tuple[str, str, float]]) -> None:
        self.conn.executemany("INSERT OR REPLACE INTO semantic_edges(a, b, cosine) VALUES (?, ?, ?)", edges)

    def semantic_neighbours(self, gid: str) -> list[tuple[str, float]]:
        rows = self.conn.execute(
            "SELECT b, cosine FROM semantic_edges WHERE a=?1 UNION SELECT a, cosine FROM semantic_edges"
            " WHERE b=?1 ORDER BY 1",
            (gid,),
        )
        return [(r[0], r[1]) for r in rows]

    def clear_embeddings(self) -> None:
        """Drop every vector and semantic edge (another embedder or threshold); every group becomes dirty."""
        self.conn.execute("DELETE FROM embeddings")
        self.conn.execute("DELETE FROM semantic_edges")
        self.conn.execute("INSERT OR IGNORE INTO dirty(group_id) SELECT id FROM groups")

    def clear_semantic_edges(self) -> None:
        self.conn.execute("DELETE FROM semantic_edges")
