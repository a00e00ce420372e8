"""The ingest stages on Ray (``pip install 'chunkdedup[ray]'``), writing the same index as local ingest.

Example:
    >>> from chunkdedup.ingestion.distributed import ingest_ray
    >>> report = ingest_ray(["docs/"], "index.sqlite", address="auto")  # doctest: +SKIP
"""

from __future__ import annotations

from chunkdedup.ingestion.distributed.ingest import RayExecutor, ingest_ray

__all__ = ["RayExecutor", "ingest_ray"]
