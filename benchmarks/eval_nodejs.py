"""Golden-set evaluation on a documentation site: the Node.js API docs a Debian ``nodejs`` install
puts in ``/usr/share/doc/nodejs/api`` (one HTML page per module; ``all.html``, every page
concatenated, is left out), with the hand-made golden set ``benchmarks/golden/nodejs.jsonl``
(short code-intent questions, each with the API page(s) a developer needs and an answer copied from
them; see benchmarks/README.md). Copy the pages into a work folder, ingest, evaluate the index
against its baseline and ablation, print the tables (the three runs, then each retrieval lever in
turn), write the JSON summary and the HTML report.

Example:
    python benchmarks/eval_nodejs.py -k 5 --out benchmarks/results/eval_nodejs
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from chunkdedup.evaluate import load_golden
from eval_sec10q import REPO, run_eval

#: where Debian's nodejs package installs the HTML API docs
NODE_DOCS = Path("/usr/share/doc/nodejs/api")
#: every page in one: the same text as all the others, not a page of the site
CONCATENATED = "all.html"


def copy_pages(source: Path, folder: Path) -> int:
    """Copy the site's HTML pages (without ``all.html``) into ``folder``; return how many."""
    folder.mkdir(parents=True, exist_ok=True)
    pages = sorted(p for p in source.glob("*.html") if p.name != CONCATENATED)
    if not pages:
        raise SystemExit(f"no HTML pages in {source}: install the Debian nodejs docs or pass --data")
    for page in pages:
        shutil.copyfile(page, folder / page.name)
    return len(pages)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, default=NODE_DOCS, help="the folder of the API's HTML pages")
    parser.add_argument("--golden", type=Path, default=REPO / "benchmarks" / "golden" / "nodejs.jsonl")
    parser.add_argument("-k", type=int, default=5)
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "eval_nodejs")
    parser.add_argument("--work", type=Path, help="keep the pages, index and baseline here (default: temp)")
    args = parser.parse_args(argv)
    questions = load_golden(args.golden)
    with tempfile.TemporaryDirectory(prefix="eval-nodejs-pages-") as tmp:
        work = args.work or Path(tmp)
        pages = work / "api"
        print(f"copied {copy_pages(args.data, pages)} pages from {args.data} to {pages}")
        run_eval("nodejs", [pages], questions, args.out, k=args.k, work=args.work)


if __name__ == "__main__":
    main()
