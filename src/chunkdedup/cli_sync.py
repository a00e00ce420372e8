"""CLI command ``sync``: mirror an index into a local vector store, over the LangChain adapter's
:func:`~chunkdedup.integrations.langchain.sync` (registered on the main group by ``cli.py``)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import click

from chunkdedup.cli_support import cli_errors, json_text
from chunkdedup.errors import ConfigError, SyncError
from chunkdedup.visible import safe_text

#: The store kinds (as :data:`chunkdedup.integrations._local_stores.KINDS`, named here so ``--help``
#: needs no framework).
STORES = ("chroma", "qdrant", "lancedb", "faiss", "memory")


@click.command("sync")
@click.option("--index", "index_path", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="The index file.")
@click.option("--store", "kind", required=True, type=click.Choice(STORES),
              help="chroma (a persistent folder), qdrant (local mode, a folder), lancedb (a folder), "
                   "faiss (a folder), memory (LangChain's in-memory store kept as a JSON file).")
@click.option("--path", "store_path", required=True, type=click.Path(path_type=Path),
              help="Where the store lives (created when missing).")
@click.option("--collection", default="chunkdedup", show_default=True,
              help="The collection (Qdrant, Chroma), table (LanceDB) or index name (FAISS) in the store.")
@click.option("--embeddings", "embeddings_spec", required=True,
              help="fake:DIM (deterministic fake vectors, for trials), embedder:NAME (chunkdedup's "
                   "embedder, as ingest --embedder names it: minilm, hash, a sentence-transformers "
                   "model) or MODULE:NAME, a LangChain Embeddings class called without arguments "
                   "(langchain_openai:OpenAIEmbeddings).")
@click.option("--state", "state_path", type=click.Path(dir_okay=False, path_type=Path),
              help="The sync state file (default: PATH.COLLECTION.sync.json beside the store; "
                   "memory: PATH.sync.json).")
@click.option("--full", is_flag=True,
              help="Resend every record and delete what the index does not hold (repairs a store "
                   "that no longer mirrors the index).")
@click.option("--reembed", is_flag=True,
              help="Empty the store's collection and embed every record again with these embeddings (a "
                   "store holds one model's vectors: after a change of model, a sync without it is refused).")
@click.option("--batch-size", type=click.IntRange(min=1), default=256, show_default=True,
              help="Records written per batch (each confirmed batch is recorded: an interrupted sync "
                   "resumes).")
@click.option("--index-vectors/--no-index-vectors", "index_vectors", default=None,
              help="Write the vectors the index holds (an index built with an embedder) instead of "
                   "embedding changed texts: by default when the embeddings' model_name names the "
                   "index's embedder; --index-vectors always, --no-index-vectors never.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of a summary.")
def sync_cmd(index_path: Path, kind: str, store_path: Path, collection: str, embeddings_spec: str,
             state_path: Path | None, full: bool, reembed: bool, batch_size: int,
             index_vectors: bool | None, as_json: bool) -> None:
    """Mirror an index into a local vector store: send what changed since the last sync.

    The first sync sends every canonical chunk (text, top-level source, page and manifest fields,
    every citation); later ones send the changes since the run the state file records, so an
    unchanged index sends nothing. The store is checked against the index after each sync. An index
    built with an embedder hands the store its own vectors when the embeddings are its model
    (--embeddings embedder:NAME with the index's embedder), so nothing is embedded again. The state
    records the embeddings' model and dimension: other embeddings are refused unless --reembed.

    Example:

    \b
        chunkdedup sync --index policies.sqlite --store chroma --path chroma/ --embeddings fake:384
        chunkdedup sync --index policies.sqlite --store qdrant --path qdrant/ --embeddings embedder:minilm
        chunkdedup sync --index policies.sqlite --store faiss --path faiss/ \\
            --embeddings langchain_openai:OpenAIEmbeddings --full
        chunkdedup sync --index policies.sqlite --store memory --path store.json --embeddings fake:64 \\
            --reembed
    """
    if not index_path.exists():
        raise click.ClickException(safe_text(f"no index at {index_path}: run chunkdedup ingest first"))
    with cli_errors(index_path):
        from chunkdedup.integrations._local_stores import LocalStore, embeddings_from, sync_local

        store = LocalStore(cast(Any, kind), store_path, collection)
        store.check_paths(state_path or store.state_path())  # before an embeddings class is made
        try:
            embeddings = embeddings_from(embeddings_spec)
        except ConfigError as e:  # the value as given cannot name embeddings: a usage error (exit status 2)
            raise click.BadParameter(safe_text(str(e)), param_hint="'--embeddings'") from None
        where = f"{kind} at {store_path}" + (f" (collection {collection})" if kind != "memory" else "")
        try:
            with _working(not as_json, f"syncing {index_path} into {where}") as tick:
                report = sync_local(index_path, store, embeddings, state=state_path, reembed=reembed,
                                    full=full, batch_size=batch_size, progress=tick,
                                    index_vectors=index_vectors)
        except SyncError as e:
            message = f"{e} (on the command line: sync again with --full)"
            raise click.ClickException(safe_text(message)) from None
    out = report.to_json()
    out["store"] = {"kind": kind, "path": str(store_path), "collection": collection}
    if as_json:
        click.echo(json_text(out))
        return
    since = "everything" if report.since is None else f"the changes since run {report.since}"
    click.echo(safe_text(f"synced {index_path} into {where}: {since}"))
    resumed = " (resumed an interrupted sync)" if report.resumed else ""
    click.echo(f"  upserted {report.upserts:,}, deleted {report.deletes:,}{resumed}")
    click.echo(f"  vectors: {report.embedded:,} embedded, {report.kept_vectors:,} kept from the store, "
               f"{report.index_vectors:,} from the index")
    click.echo(safe_text(f"  the store reflects run {report.applied_run}; state: {report.state}"))


@contextlib.contextmanager
def _working(enabled: bool, message: str) -> Iterator[Callable[[str, int, int], None] | None]:
    """On a terminal (stderr), a line with the records written so far and the elapsed time while the
    sync runs, and the tick that advances it (the delta's size is not known beforehand)."""
    if not enabled:
        yield None
        return
    from rich.console import Console
    from rich.markup import escape
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    err = Console(stderr=True)
    if not err.is_terminal:
        yield None
        return
    columns = (SpinnerColumn(), TextColumn("{task.description}"), TextColumn("{task.completed:,} records"),
               TimeElapsedColumn())
    with Progress(*columns, console=err, transient=True) as bar:
        task = bar.add_task(escape(safe_text(message)), total=None)

        def tick(stage: str, done: int, total: int) -> None:
            bar.update(task, completed=done)

        yield tick
