"""CLI commands for evaluation: ``eval``, ``audit``, ``diff`` and the ``golden`` group (``convert``).

Registered on the main group by ``cli.py`` (``main.add_command(eval_cmd)`` and so on); each command
calls one library function and turns the library's errors into a one-line CLI error.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape as markup_escape
from rich.table import Table

from chunkdedup.cli_support import cli_errors, json_text, progress_bar
from chunkdedup.config import read_toml, with_overrides
from chunkdedup.errors import ConfigError
from chunkdedup.evaluate.audit import NEIGHBOUR_SAMPLE, NO_EMBEDDINGS, audit
from chunkdedup.evaluate.diff import diff_reports, format_diff, load_report
from chunkdedup.evaluate.golden import convert_docugami, golden_line, write_golden
from chunkdedup.evaluate.run import RUNS, Lever, evaluate, recorded_query
from chunkdedup.outfile import out_folder
from chunkdedup.report import write_report
from chunkdedup.report.table import comparison_columns, comparison_rows, funnel_rows
from chunkdedup.visible import safe_text

_index = click.option("--index", "index_path", required=True,
                      type=click.Path(dir_okay=False, path_type=Path), help="The index file.")
#: the narrowest the comparison table is printed, even into a pipe (80 columns would cut its names)
TABLE_WIDTH = 100
_json = click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of tables.")


def _console() -> Console:
    return Console(highlight=False, soft_wrap=True)


@click.command("eval")
@click.argument("golden", type=click.Path(dir_okay=False, path_type=Path))
@_index
@click.option("--baseline", "baseline_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Baseline index; built from the index's last ingest run when missing or stale "
                   "(default: INDEX.baseline.sqlite beside the index, or in ~/.cache/chunkdedup/baselines "
                   "($XDG_CACHE_HOME) when the index's folder cannot be written).")
@click.option("-k", "k", type=click.IntRange(min=1), default=5, show_default=True,
              help="Results per question.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Write report.json and report.html into this folder.")
@click.option("--config", "config_path", type=click.Path(dir_okay=False, path_type=Path),
              help="A TOML file whose [query] section is tried in place of the query settings the index "
                   "recorded at ingest (only [query]: the other sections change what ingest builds).")
@click.option("--set", "overrides", multiple=True, metavar="query.KEY=VALUE",
              help="A query setting to try in place of the recorded one, the value as TOML writes it "
                   "(repeatable, after --config): --set query.context_weight=0.5 --set query.versions=all.")
@_json
def eval_cmd(golden: Path, index_path: Path, baseline_path: Path | None, k: int, out_dir: Path | None,
             config_path: Path | None, overrides: tuple[str, ...], as_json: bool) -> None:
    """Compare retrieval on a golden set: the index vs a baseline without stripping or dedup.

    Three runs: baseline (the corpus as it is, no safety net, every version, ranked on chunk text
    alone), ablation (the same chunks queried as the index is: its ranking, version policy and safety
    net) and index. The table shows what ranking gave (ablation - baseline: the query's settings) and
    what cleaning gave (index - ablation: stripping and dedup).

    GOLDEN is JSONL, one question a line: {"id", "question", "relevant": [{"doc", "page"?}],
    "answers"?: [...]}.

    With --config or --set, the runs use those query settings instead of the recorded ones (a lever,
    tried without a new ingest), and a table lists each question they moved.

    Example:

    \b
        chunkdedup eval golden.jsonl --index policies.sqlite -k 5 --out report/
        chunkdedup eval golden.jsonl --index policies.sqlite --set query.identity_weight=0.8
    """
    with cli_errors(index_path), progress_bar(not as_json) as tick:
        if out_dir is not None:  # an unwritable --out is found before the evaluation runs, not after
            out_folder(out_dir, "the report")
        query = None
        try:  # a setting the lever cannot take is a bad option (exit status 2)
            values = _query_values(config_path, overrides)
            if values:
                query = with_overrides(recorded_query(index_path), values, _where(config_path, overrides))
        except ConfigError as e:
            raise click.UsageError(safe_text(str(e))) from None
        ev = evaluate(golden, index_path, baseline=baseline_path, k=k, progress=tick, query=query)
        paths = write_report(ev.to_json(), out_dir) if out_dir else None
    for warning in ev.meta.get("warnings", []):
        click.echo(f"warning: {safe_text(warning)}", err=True)
    if as_json:
        click.echo(json.dumps(ev.summary_json(), indent=2))
        return
    out = _console()
    out.print(safe_text(f"baseline: {ev.meta['baseline']} ({ev.meta['baseline_status']})"), markup=False)
    table = Table(*comparison_columns(ev.runs), title=f"{len(ev.queries)} questions, k = {k}")
    for row in comparison_rows(ev.runs, ev.meta["ks"]):
        table.add_row(*row)
    out.width = max(out.width, TABLE_WIDTH)  # seven columns: never cut a metric's name
    out.print(table)
    funnel = Table("stage", "chunks", "of raw", title="funnel")
    for f in funnel_rows(ev.figures):
        funnel.add_row(*f)
    out.print(funnel)
    if ev.lever is not None:
        _print_lever(out, ev.lever)
    n = ev.runs["index"]
    out.print(f"answer_in_context counts {n.get('answer_in_context_questions', 0)} question(s) with answers "
              f"of at most 30 words; page_recall counts {n.get('page_recall_questions', 0)}")
    if paths:
        out.print(safe_text(f"wrote {paths[0]} and {paths[1]}"), markup=False)


def _query_values(config_path: Path | None, overrides: tuple[str, ...]) -> dict[str, Any]:
    """The [query] settings of ``--config`` and then of each ``--set query.KEY=VALUE``."""
    values: dict[str, Any] = {}
    if config_path is not None:
        data = read_toml(config_path)
        other = sorted(set(data) - {"query"})
        if other:
            raise ConfigError(
                f"config file {config_path}: eval tries [query] settings only; [{'], ['.join(other)}] change "
                "what ingest builds: ingest with them (--config) instead"
            )
        query = data.get("query", {})
        if not isinstance(query, dict):
            raise ConfigError(f"config file {config_path}: [query] must be a table of keys")
        values.update(query)
    for given in overrides:
        key, sep, text = given.partition("=")
        if not sep or not key.startswith("query.") or not key[len("query."):]:
            raise click.UsageError(f"--set {given!r}: write query.KEY=VALUE (e.g. query.context_weight=0.5)")
        try:
            value: Any = tomllib.loads(f"v = {text}")["v"]
        except tomllib.TOMLDecodeError:
            value = text  # a bare word: a string (versions=all)
        values[key[len("query."):]] = value
    return values


def _where(config_path: Path | None, overrides: tuple[str, ...]) -> str:
    return " and ".join(w for w in (f"--config {config_path} [query]" if config_path else "",
                                    "--set" if overrides else "") if w)


def _print_lever(out: Console, lever: Lever) -> None:
    changed = ", ".join(f"{key} {was!r} -> {now!r}" for key, was, now in lever.changed)
    out.print(safe_text(f"lever: {changed}"), markup=False)
    if not lever.moves:
        out.print("no question moved", markup=False)
        return
    table = Table("question", "metric", "recorded", "lever", title=f"{len(lever.moves)} moves")
    for m in lever.moves:
        table.add_row(safe_text(m.question), m.metric, f"{m.recorded:.3f}", f"{m.lever:.3f}")
    out.print(table)


@click.command("audit")
@_index
@click.option("--queries", "queries_path", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="Questions: a golden JSONL file or plain text, one question a line.")
@click.option("-k", "k", type=click.IntRange(min=1), default=10, show_default=True, help="Results per query.")
@click.option("--sample", "sample", type=click.IntRange(min=1), default=NEIGHBOUR_SAMPLE, show_default=True,
              help="Groups whose nearest unmerged neighbour enters the cosine calibration.")
@_json
def audit_cmd(index_path: Path, queries_path: Path, k: int, sample: int, as_json: bool) -> None:
    """Show each query's results with the pairs that say the same thing, and threshold calibrations.

    Pairs are compared by 5-word-shingle Jaccard and, when the index holds embeddings (ingest
    --embedder), by the cosine of their stored vectors; both are shown for every marked pair.

    Example:

    \b
        chunkdedup audit --index policies.sqlite --queries golden.jsonl -k 10
    """
    with cli_errors(index_path):
        result = audit(index_path, queries_path, k=k, sample=sample)
    if as_json:
        click.echo(json.dumps(result.to_json(), indent=2))
        return
    out = _console()
    sem = result.semantic
    for q in result.queries:
        title = markup_escape(safe_text(f"[{q['id']}] {q['question']}"))
        out.print(f"[bold]{title}[/bold]", markup=True)
        for h in q["hits"]:
            cites = safe_text(", ".join(f"{d} p.{p}" for d, p in h["citations"][:3]))
            text = safe_text(" ".join(h["text"].split())[:90])
            out.print(f"  {h['rank']:>2}. {text}  ({cites})", markup=False)
        for p in q["pairs"]:
            cosine = "" if sem is None else (
                ", cosine n/a" if p["cosine"] is None else f", cosine {p['cosine']:.3f}")
            out.print(f"  ≈ {p['a']} and {p['b']} say the same thing (Jaccard {p['jaccard']:.3f}{cosine};"
                      f" by {' and '.join(p['by'])})", markup=False)
    rate = result.duplication_rate
    rule = "5-word-shingle Jaccard >= 0.5" if sem is None else (
        f"5-word-shingle Jaccard >= 0.5 ({result.jaccard_pairs}) or cosine >= {sem['threshold']:g}"
        f" ({result.cosine_pairs})")
    out.print(f"duplication rate: {result.duplicate_pairs} of {result.pairs} pairs"
              f" ({'n/a' if rate is None else f'{rate:.1%}'}), {rule}", markup=False)
    _print_calibration(out, result.calibration)
    if sem is None:
        out.print(f"cosine: {NO_EMBEDDINGS}", markup=False)
    else:
        _print_semantic_calibration(out, sem)


def _print_calibration(out: Console, cal: dict[str, object]) -> None:
    out.print(f"calibration ({cal['measure']}; near threshold {cal['threshold']}):")
    series = [(name, cal[name]) for name in ("merged", "kept_apart_by_guard", "unmerged_band_neighbours")]
    bins = int(str(cal["bins"]))
    out.print("  similarity " + " ".join(f"{name[:22]:>24}" for name, _ in series))
    for i in range(bins):
        cells = " ".join(f"{s['histogram'][i]:>24}" for _, s in series)  # type: ignore[index]
        out.print(f"  {i / bins:.2f}-{(i + 1) / bins:.2f}  {cells}")


def semantic_calibration_lines(sem: dict[str, Any]) -> list[str]:
    """The cosine calibration as a table: per bin edge (highest first), each series' count in the bin,
    its count at or above the edge and that count's share; the current threshold's row is marked."""
    edges: list[float] = sem["edges"]
    series = [("merged", sem["merged"]), ("kept apart by guard", sem["kept_apart_by_guard"]),
              ("nearest unmerged", sem["unmerged_nearest"])]
    near = sem["unmerged_nearest"]
    labels = [f"{name} (n={s['n']})" for name, s in series]
    width = max(27, *(len(label) + 2 for label in labels))
    lines = [
        f"semantic calibration (cosine of the stored {sem['embedder']} vectors, dim {sem['dim']};"
        f" semantic threshold {sem['threshold']:g}):",
        "  merged: each semantically merged group to its leader; kept apart by guard: pairs that differ"
        " in a number or date;",
        f"  nearest unmerged: best cosine to another canonical, for {near['sampled']} of"
        f" {near['embedded_groups']} groups. At threshold t, merged >= t stay merged and nearest"
        " unmerged >= t would merge too.",
        "           " + "".join(f"{label:>{width}}" for label in labels),
        "  cosine >=" + f"{'in bin':>{width - 17}}{'>= t':>8}{'share':>9}" * len(series),
    ]
    threshold = float(sem["threshold"])
    marked = max((i for i, e in enumerate(edges[:-1]) if e <= threshold + 1e-9), default=None)
    for i in range(len(edges) - 2, -1, -1):
        cells = ""
        for _, s in series:
            share = s["share_at_or_above"][i]
            pct = "-" if share is None else f"{share:.1%}"
            cells += f"{s['histogram'][i]:>{width - 17}}{s['at_or_above'][i]:>8}{pct:>9}"
        mark = "  <- threshold" if i == marked else ""
        lines.append(f"  {edges[i]:>8.2f} {cells}{mark}")
    return lines


def _print_semantic_calibration(out: Console, sem: dict[str, Any]) -> None:
    for line in semantic_calibration_lines(sem):
        out.print(line, markup=False)


@click.command("diff")
@click.argument("report_a", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("report_b", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--run", type=click.Choice(list(RUNS)), default="index", show_default=True,
              help="Which run of the two reports to compare.")
@_json
def diff_cmd(report_a: Path, report_b: Path, run: str, as_json: bool) -> None:
    """Per question, what moved, entered or left between two eval reports, and the metric changes.

    Example:

    \b
        chunkdedup diff before/report.json after/report.json --run index
    """
    with cli_errors():
        diff = diff_reports(load_report(report_a), load_report(report_b), run)
    click.echo(json.dumps(diff, indent=2) if as_json else format_diff(diff))


@click.group("golden")
def golden_group() -> None:
    """Golden question sets: convert other formats to chunkdedup's JSONL (each subcommand takes --json).

    Example:

    \b
        chunkdedup golden convert qna_data.csv --format docugami --docs docs/ > golden.jsonl
    """


@golden_group.command("convert")
@click.argument("source", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["docugami"]), default="docugami", show_default=True,
              help="The source format (docugami: KG-RAG-datasets qna_data.csv).")
@click.option("--docs", "docs", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="The folder the documents were ingested from (patterns are matched against it).")
@click.option("--out", "out", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the golden JSONL to this file (replaced whole: a failed write leaves it as it "
                   "was; a FIFO or device is written through) instead of stdout.")
@click.option("--json", "as_json", is_flag=True,
              help='With --out: print one JSON object ({"path", "format", "questions"}). Without --out the '
                   "golden JSONL is the output: --json is refused (a usage error).")
def golden_convert_cmd(source: Path, fmt: str, docs: Path, out: Path | None, as_json: bool) -> None:
    """Convert a question file to golden JSONL on stdout (or --out FILE).

    Example:

    \b
        chunkdedup golden convert ../shared/data/sec-10q/qna_data.csv --format docugami
        --docs ../shared/data/sec-10q/docs --out golden.jsonl
    """
    if as_json and out is None:
        raise click.UsageError("--json needs --out FILE: without it the golden JSONL is the output on stdout")
    with cli_errors():  # an unwritable --out, a full disk: the one-line message, not a traceback
        questions = convert_docugami(source, docs)
        if out is not None:
            write_golden(questions, out)
            if as_json:
                click.echo(json_text({"path": str(out), "format": fmt, "questions": len(questions)}))
            return
        for q in questions:
            click.echo(golden_line(q))


#: the commands ``cli.py`` registers on ``main``
COMMANDS = (eval_cmd, audit_cmd, diff_cmd, golden_group)

__all__ = ["COMMANDS", "audit_cmd", "diff_cmd", "eval_cmd", "golden_convert_cmd", "golden_group"]
