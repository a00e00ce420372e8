"""Reference digests of what an index holds, per corpus: the guard that a faster write path writes the
same index.

Each digest is a sha256 of what a user sees: the ``export`` JSONL bytes (canonical ids, texts,
sources, metadata), the stripped boilerplate, every exact-key group (text, cluster, relation,
similarity, differing words), the variants and every page's clean text. ``export_shared`` is the
export without each near copy's own words (a source's ``text`` and ``differs``): what the export held
before sources carried them, so a change to the own words alone shows as that digest unchanged.
The reference in ``tests/data/export_reference.json`` is rewritten deliberately, when a change of what
an index holds is meant (say which digests moved, and why, in the commit)::

    PYTHONPATH=src python tests/export_reference.py --write

Run without ``--write`` it prints the digests of the code on ``PYTHONPATH`` and whether they match.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import io
import json
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from chunkdedup import Index, ingest
from chunkdedup.export import write_export

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"
REFERENCE = REPO / "tests" / "data" / "export_reference.json"
SYNTHETIC_CHUNKS = 3000
SYNTHETIC_SEED = 12


def scale_module() -> ModuleType:
    """``benchmarks/scale.py`` (its seeded corpus generator), loaded by path."""
    spec = importlib.util.spec_from_file_location("_chunkdedup_scale", REPO / "benchmarks" / "scale.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_synthetic(folder: Path) -> Path:
    """The synthetic corpus (families of versions, chrome, exact and near copies, variants) in ``folder``."""
    scale_module().write_corpus(folder, SYNTHETIC_CHUNKS, seed=SYNTHETIC_SEED)
    return folder


def digests(index: Path) -> dict[str, str]:
    """sha256 of the export bytes and of the other tables a user reads, of one index."""
    out: dict[str, str] = {}
    with Index.open(index) as ix:
        buf = io.StringIO()
        write_export(ix, buf, "jsonl", None)
        out["export"] = hashlib.sha256(buf.getvalue().encode()).hexdigest()
        out["export_shared"] = hashlib.sha256(_without_own_words(buf.getvalue()).encode()).hexdigest()
        bp = sorted(
            (b.key, b.example, b.scope, b.doc_count, b.page_count) for b in ix.boilerplate(limit=None)
        )
        out["boilerplate"] = _sha(bp)
        conn = ix.store.conn
        groups = conn.execute(
            "SELECT g.id, g.text, g.n_sources, d.doc_id, g.rep_page, g.rep_start, g.canonical_id,"
            " g.relation, g.similarity, g.differing"
            " FROM groups g JOIN document_rows d ON d.dkey = g.rep_dkey ORDER BY g.id"
        ).fetchall()
        out["groups"] = _sha(groups)
        out["variants"] = _sha(conn.execute("SELECT * FROM variants ORDER BY a, b").fetchall())
        docs = [d["doc"] for d in ix.documents()]
        out["clean_pages"] = _sha(
            [(d, [(p.number, p.text) for p in ix.store.documents.load_pages(d, clean=True)]) for d in docs]
        )
    return out


def _without_own_words(jsonl: str) -> str:
    """The export JSONL with every source's ``text`` and ``differs`` left out, written as export writes."""
    lines = []
    for line in jsonl.splitlines():
        rec = json.loads(line)
        for s in rec.get("sources", ()):
            s.pop("text", None)
            s.pop("differs", None)
        lines.append(json.dumps(rec, ensure_ascii=False, sort_keys=True) + "\n")
    return "".join(lines)


def _sha(rows: object) -> str:
    return hashlib.sha256(json.dumps(rows, ensure_ascii=False).encode()).hexdigest()


def corpora() -> dict[str, Callable[[Path], Path]]:
    """Name -> ingest the corpus into the given index path (a fresh one)."""

    def folder(sub: str, manifest: str | None = None) -> Callable[[Path], Path]:
        def run(index: Path) -> Path:
            m = DATA / sub.split("/")[0] / manifest if manifest else None
            ingest([DATA / sub], index, manifest=m)
            return index

        return run

    def synthetic(index: Path) -> Path:
        with tempfile.TemporaryDirectory() as tmp:
            ingest([write_synthetic(Path(tmp) / "corpus")], index)
        return index

    return {
        "sec-10q": folder("sec-10q/docs"),
        "ntsb": folder("ntsb/docs"),
        "site-policy": folder("site-policy", "manifest.jsonl"),
        "synthetic": synthetic,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--write", action="store_true", help=f"write the digests to {REFERENCE}")
    args = ap.parse_args(argv)
    found: dict[str, dict[str, str]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, run in corpora().items():
            found[name] = digests(run(Path(tmp) / f"{name}.sqlite"))
            print(name, found[name]["export"])
    if args.write:
        REFERENCE.parent.mkdir(parents=True, exist_ok=True)
        REFERENCE.write_text(json.dumps(found, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        return 0
    same = REFERENCE.exists() and json.loads(REFERENCE.read_text(encoding="utf-8")) == found
    print("matches the reference" if same else "DIFFERS from the reference")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
