"""Dump the real near-duplicate pairs of the three shared corpora, and check the hand labels against them.

Ingests ``../shared/data/{sec-10q,site-policy,ntsb}`` (one at a time, the near tier with the
number/date guard alone: ``CANDIDATES``, so the pairs do not depend on the meaning guard measured on
them) into ``--work`` (reusing an index already there), then lists every candidate pair the near tier
decided:

* ``merge``: an exact-key group that joined a canonical with relation ``near`` (member = that group,
  leader = the canonical's own group);
* ``variant``: a pair above the near threshold that the number/date guard kept apart (member = the
  later group, leader = the earlier one it could have joined).

Each side is ``{doc, page, key}``: the group's representative source and ``sha1(exact_key(text))[:16]``.
Pairs with the same (member key, leader key) are one pair (the same certification copied into four
quarterly filings): the first by (member doc, page, leader doc, page) is kept and ``copies`` counts them.
The dump (JSON lines, sorted by corpus, kind, member key, leader key) holds both texts, case preserved,
the word diff of their exact keys and, for variants, the guard's differing tokens. It holds corpus text,
so it goes to a scratch file outside the repository.

``benchmarks/data/real_pairs_labels.jsonl`` labels these pairs by hand ("same" / "changed" with a reason
and a one-line note; no corpus text): every distinct merge of the three corpora, and for variants a
deterministic sample, read side by side: of each corpus's variants sorted by (member key, leader key),
the 0th, 5th, 10th, ... of sec-10q (54 of 268), the 0th, 2nd, 4th, ... of site-policy (30 of 60) and
ntsb's one. ``--labels`` checks that every labelled pair is still a pair of the dump (by corpus, kind,
member key and leader key) and prints how many match; with an existing ``--dump`` it only checks,
otherwise it writes the dump first.

``--evaluate`` measures the guards on the labelled pairs (:func:`evaluate`): before (the number/date
guard alone) and after (with ``near.numbering`` and the meaning guard, the defaults), as a table and
as JSON (``--out``); ``benchmarks/near_dup.py`` prints the same beside the synthetic set's figures.

Example:
    python benchmarks/real_pairs.py --work WORK_DIR --dump DUMP.jsonl
    python benchmarks/real_pairs.py --evaluate --out benchmarks/results/real_pairs.json
    python benchmarks/real_pairs.py --work WORK_DIR --dump DUMP.jsonl \\
        --labels benchmarks/data/real_pairs_labels.jsonl
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sqlite3
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from chunkdedup import Config, Index, ingest
from chunkdedup.config import NearConfig
from chunkdedup.dedup.meaning import meaning_diff, numbering_only
from chunkdedup.dedup.near import word_diff
from chunkdedup.normalize import exact_key

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"
LABELS = REPO / "benchmarks" / "data" / "real_pairs_labels.jsonl"
#: pairs a second reader labelled without seeing any verdict: the candidate pairs outside the held-out
#: half whose verdict a round of rules changed (read while the rules were written: not held out)
SECOND_READER = REPO / "benchmarks" / "data" / "real_pairs_second_reader.jsonl"

# corpus -> (folders to ingest, manifest or None), relative to --data
CORPORA: dict[str, tuple[tuple[str, ...], str | None]] = {
    "sec-10q": (("sec-10q/docs",), "sec-10q/manifest.jsonl"),
    "site-policy": (("site-policy",), "site-policy/manifest.jsonl"),
    "ntsb": (("ntsb/docs",), None),
    "terms": (("terms",), "terms/manifest.jsonl"),
}

#: the candidate pairs: the near tier with the number/date guard alone
CANDIDATES = Config(near=NearConfig(meaning=(), numbering=False))

#: a group's first document (groups name it by the document row's key)
_DOC = "(SELECT d.doc_id FROM document_rows d WHERE d.dkey = {}.rep_dkey)"

_MERGES = f"""
SELECT m.text, {_DOC.format("m")}, m.rep_page, l.text, {_DOC.format("l")}, l.rep_page, m.similarity, NULL
FROM groups m JOIN groups l ON l.id = m.canonical_id
WHERE m.relation = 'near'
"""
# variants(a, b): a ranks first (the leader b could have joined), b is the member
_VARIANTS = f"""
SELECT m.text, {_DOC.format("m")}, m.rep_page, l.text, {_DOC.format("l")}, l.rep_page, v.similarity,
    v.differing
FROM variants v JOIN groups m ON m.id = v.b JOIN groups l ON l.id = v.a
"""


def held_out(label: dict[str, Any]) -> bool:
    """Whether a labelled pair is in the held-out half, measured only (never read to tune a rule): a
    fixed hash of its corpus, kind and keys, so the split does not move as labels are added."""
    ident = "\x00".join((label["corpus"], label["kind"], label["member"]["key"], label["leader"]["key"]))
    return int(hashlib.sha1(ident.encode()).hexdigest()[:8], 16) % 2 == 1


def text_key(text: str) -> str:
    """The pair key of a text: the first 16 hex digits of the SHA-1 of its exact key."""
    return hashlib.sha1(exact_key(text).encode()).hexdigest()[:16]


def index_for(corpus: str, data: Path, work: Path) -> Path:
    """The corpus's candidate index in ``work`` (the near tier with the number/date guard alone, so
    the pairs do not depend on the meaning guard that is measured on them), ingested unless one is
    already there."""
    path = work / f"{corpus}-candidates.sqlite"
    if path.exists():
        return path
    folders, manifest = CORPORA[corpus]
    print(f"ingesting {corpus} into {path}", file=sys.stderr)
    where = data / manifest if manifest else None
    ingest([data / f for f in folders], path, manifest=where, config=CANDIDATES)
    return path


def evaluate(
    pairs: Sequence[dict[str, Any]],
    labels: Sequence[dict[str, Any]],
    second: Sequence[dict[str, Any]] = (),
) -> dict[str, Any]:
    """The guards on the labelled pairs, each half of the split (:func:`held_out`) on its own:
    ``tune`` and ``held_out``, each as :func:`evaluate_part` gives it; with ``second`` (the second
    reader's labels, :data:`SECOND_READER`), ``second_reader`` too."""
    tune = [lab for lab in labels if not held_out(lab)]
    kept = [lab for lab in labels if held_out(lab)]
    out = {"tune": evaluate_part(pairs, tune), "held_out": evaluate_part(pairs, kept)}
    if second:
        out["second_reader"] = evaluate_part(pairs, second)
    return out


def evaluate_part(pairs: Sequence[dict[str, Any]], labels: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The guards on the labelled pairs, before (the number/date guard alone) and after (with
    ``near.numbering`` and the meaning guard, the defaults): how many meaning-changing pairs each keeps
    apart and how many same-meaning pairs it still merges, by corpus and kind, and the misses."""
    known = {(p["corpus"], p["kind"], p["member"]["key"], p["leader"]["key"]): p for p in pairs}
    near = NearConfig()
    rows: list[dict[str, Any]] = []
    for lab in labels:
        pair = known.get((lab["corpus"], lab["kind"], lab["member"]["key"], lab["leader"]["key"]))
        if pair is None:
            continue
        leader, member = pair["leader_text"], pair["member_text"]
        before = pair["kind"] == "variant"  # the number/date guard kept it apart
        after, why = before, None
        if before and near.numbering and numbering_only(leader, member):
            after = False
        if not after:
            found = meaning_diff(leader, member, near.meaning)
            after, why = found is not None, found
        rows.append({
            "corpus": lab["corpus"], "kind": lab["kind"], "label": lab["label"], "reason": lab["reason"],
            "note": lab["note"], "before": before, "after": after,
            "guard_reason": why.reason if why else ("number" if after else None),
            "words": list(why.words) if why else [],
        })

    def share(sel: list[dict[str, Any]], field: str, apart: bool) -> dict[str, Any]:
        hit = sum(r[field] == apart for r in sel)
        return {"n": len(sel), "hit": hit, "share": hit / len(sel) if sel else 1.0}

    out: dict[str, Any] = {"labelled": len(labels), "matched": len(rows)}
    for field in ("before", "after"):
        changed = [r for r in rows if r["label"] == "changed"]
        same = [r for r in rows if r["label"] == "same"]
        out[field] = {
            "changed_kept_apart": share(changed, field, True),
            "same_merged": share(same, field, False),
            "by_corpus_kind": {
                f"{c}/{k}": {
                    "changed_kept_apart": share([r for r in changed if _ck(r) == ck], field, True),
                    "same_merged": share([r for r in same if _ck(r) == ck], field, False),
                }
                for ck in sorted({_ck(r) for r in rows})
                for c, k in [ck]
            },
            "changed_kept_apart_by_label_reason": {
                reason: share([r for r in changed if r["reason"] == reason], field, True)
                for reason in sorted({r["reason"] for r in changed})
            },
        }
    out["guard_reasons"] = dict(Counter(r["guard_reason"] for r in rows if r["after"]))
    out["misses"] = [
        {k: r[k] for k in ("corpus", "kind", "label", "reason", "note", "guard_reason", "words")}
        for r in rows if (r["label"] == "changed") != r["after"]
    ]
    return out


def corpus_pairs(corpus: str, index: Path) -> list[dict[str, Any]]:
    """The distinct merge and variant pairs of one index, each with its number of copies."""
    with Index.open(index) as ix:  # checks the index opens with this version's schema
        ix.stats()
    conn = sqlite3.connect(f"file:{index}?mode=ro", uri=True)
    try:
        rows = [("merge", r) for r in conn.execute(_MERGES)]
        rows += [("variant", r) for r in conn.execute(_VARIANTS)]
    finally:
        conn.close()
    pairs: dict[tuple[str, str, str], dict[str, Any]] = {}
    copies: Counter[tuple[str, str, str]] = Counter()
    for kind, (m_text, m_doc, m_page, l_text, l_doc, l_page, sim, guard) in rows:
        member = {"doc": m_doc, "page": m_page, "key": text_key(m_text)}
        leader = {"doc": l_doc, "page": l_page, "key": text_key(l_text)}
        ident = (kind, member["key"], leader["key"])
        copies[ident] += 1
        pair = {
            "corpus": corpus,
            "kind": kind,
            "similarity": round(float(sim), 4),
            "member": member,
            "leader": leader,
            "diff": list(word_diff(exact_key(m_text), exact_key(l_text))),
            "guard": json.loads(guard) if guard is not None else None,
            "member_text": m_text,
            "leader_text": l_text,
        }
        old = pairs.get(ident)
        if old is None or _where(pair) < _where(old):
            pairs[ident] = pair
    for ident, pair in pairs.items():
        pair["copies"] = copies[ident]
    return sorted(pairs.values(), key=lambda p: (p["kind"], p["member"]["key"], p["leader"]["key"]))


def _ck(row: dict[str, Any]) -> tuple[str, str]:
    return (row["corpus"], row["kind"])


def print_evaluation(result: dict[str, Any], *, held_out_misses: bool = False) -> None:
    """Both halves of :func:`evaluate`; the held-out half's misses only when asked for."""
    print("== tune (rules are read against these pairs)")
    print_part(result["tune"])
    print("== held out (measured only)")
    print_part(result["held_out"], misses=held_out_misses)
    if "second_reader" in result:
        print("== second reader (pairs whose verdict a round of rules changed, labelled blind)")
        print_part(result["second_reader"])


def print_part(result: dict[str, Any], *, misses: bool = True) -> None:
    """The figures of :func:`evaluate_part` as a table: before and after, side by side."""
    print(f"{result['matched']} of {result['labelled']} labelled pairs found among the candidate pairs")
    print(f"{'':28} {'changed kept apart':>24} {'same merged':>24}")
    for field in ("before", "after"):
        f = result[field]
        c, s = f["changed_kept_apart"], f["same_merged"]
        label = "number/date guard" if field == "before" else "+ numbering + meaning guard"
        print(
            f"{label:28} {c['hit']:>5}/{c['n']:<4} {c['share']:>8.3f}"
            f"      {s['hit']:>5}/{s['n']:<4} {s['share']:>8.3f}"
        )
    for name, part in result["after"]["by_corpus_kind"].items():
        b = result["before"]["by_corpus_kind"][name]
        cells = [
            f"{x[k]['hit']}/{x[k]['n']}" for k in ("changed_kept_apart", "same_merged") for x in (b, part)
        ]
        print(f"  {name:26} changed apart {cells[0]:>7} -> {cells[1]:<7}", end="")
        print(f"  same merged {cells[2]:>7} -> {cells[3]}")
    print("kept apart after, by the guard's reason:", dict(sorted(result["guard_reasons"].items())))
    if not misses:
        print(f"  ({len(result['misses'])} misses not shown: --held-out-misses shows them)")
        return
    for miss in result["misses"]:
        words = " ".join(miss["words"][:8])
        where = f"{miss['corpus']}/{miss['kind']}"
        print(f"  miss: {miss['label']:7} {where} {miss['note'][:60]} [{miss['guard_reason']}] {words}")


def _where(pair: dict[str, Any]) -> tuple[str, int, str, int]:
    m, ld = pair["member"], pair["leader"]
    return (m["doc"], m["page"], ld["doc"], ld["page"])


def read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


def check_labels(labels: Path, dump: Path) -> int:
    """Print how many labelled pairs match a dumped pair; 1 if any is missing."""
    known = {(p["corpus"], p["kind"], p["member"]["key"], p["leader"]["key"]): p for p in read_jsonl(dump)}
    matched, moved, missing = 0, 0, []
    counts: Counter[tuple[str, str, str]] = Counter()
    for lab in read_jsonl(labels):
        ident = (lab["corpus"], lab["kind"], lab["member"]["key"], lab["leader"]["key"])
        pair = known.get(ident)
        if pair is None:
            missing.append(ident)
            continue
        matched += 1
        counts[(lab["corpus"], lab["kind"], lab["label"])] += 1
        if _where(pair) != _where(lab):
            moved += 1
    for (corpus, kind, label), n in sorted(counts.items()):
        print(f"  {corpus:12} {kind:8} {label:8} {n}")
    print(
        f"{matched} labelled pairs match the dump ({moved} of them at another representative source), "
        f"{len(missing)} missing"
    )
    for ident in missing:
        print("  missing:", *ident)
    return 1 if missing else 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, default=DATA, help="the shared data folder")
    parser.add_argument("--work", type=Path, help="keep (and reuse) the indexes here (default: a temp dir)")
    parser.add_argument(
        "--dump",
        type=Path,
        default=Path(tempfile.gettempdir()) / "real_pairs_dump.jsonl",
        help="the dump with the texts (outside the repository)",
    )
    parser.add_argument("--corpus", action="append", choices=sorted(CORPORA), help="default: all three")
    parser.add_argument(
        "--labels",
        type=Path,
        nargs="?",
        const=LABELS,
        help="check this labels file (default benchmarks/data/real_pairs_labels.jsonl) against the dump",
    )
    parser.add_argument("--evaluate", action="store_true", help="measure the guards on the labelled pairs")
    parser.add_argument("--out", type=Path, help="with --evaluate: write the figures here as JSON")
    parser.add_argument(
        "--held-out-misses", action="store_true", help="with --evaluate: print the held-out half's misses too"
    )
    args = parser.parse_args(argv)
    if args.evaluate:
        with tempfile.TemporaryDirectory() as tmp:
            work = args.work or Path(tmp)
            work.mkdir(parents=True, exist_ok=True)
            corpora = args.corpus or list(CORPORA)
            pairs = [p for c in corpora for p in corpus_pairs(c, index_for(c, args.data, work))]
        result = evaluate(pairs, list(read_jsonl(LABELS)), list(read_jsonl(SECOND_READER)))
        print_evaluation(result, held_out_misses=args.held_out_misses)
        if args.out is not None:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        return 0
    if args.labels is not None and args.dump.exists():
        return check_labels(args.labels, args.dump)
    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        summary: Counter[tuple[str, str]] = Counter()
        with args.dump.open("w", encoding="utf-8") as out:
            for corpus in args.corpus or list(CORPORA):
                for pair in corpus_pairs(corpus, index_for(corpus, args.data, work)):
                    summary[(corpus, pair["kind"])] += 1
                    out.write(json.dumps(pair, ensure_ascii=False) + "\n")
    for (corpus, kind), n in sorted(summary.items()):
        print(f"{corpus:12} {kind:8} {n} distinct pairs")
    print(f"wrote {args.dump}")
    return check_labels(args.labels, args.dump) if args.labels is not None else 0


if __name__ == "__main__":
    sys.exit(main())
