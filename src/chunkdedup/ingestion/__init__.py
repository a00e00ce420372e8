"""The one ingest sequence: parse, strip, chunk, deduplicate and store, for a local run and for Ray alike.

``sequence`` drives the phases (``ingest``, ``ingest_with``), ``stages`` holds the per-document work,
``executors`` the local executor (``distributed`` the Ray one), ``clusters`` the cluster pass over the
store, ``context`` the documents' context texts, ``memory`` documents given in memory as one source,
``report`` what a run says when it ends and ``remove`` the removal of documents by id.
"""
