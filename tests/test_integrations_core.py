"""What the three adapters share, without any framework: the filter mapping to ``--where``
semantics, the safety net over plain results, sync's edge cases, and the missing-extra message."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from adapter_corpus import fresh_export, ingest_small, small_corpus
from chunkdedup import ExportRecord
from chunkdedup.errors import ConfigError, InputError, MissingExtraError
from chunkdedup.integrations._core import Item, NetOptions, item_docs, safety_net
from chunkdedup.integrations._filters import haystack_filter, langchain_filter, llamaindex_filter
from chunkdedup.integrations._sync import run_sync
from chunkdedup.query.where import Filter


def _passes(flt: Filter, **fields: Any) -> bool:
    return flt.passes(fields)


def test_langchain_filters_are_an_and_of_ors_on_one_key() -> None:
    flt = langchain_filter(
        {
            "department": ["legal", "hr"],
            "$and": [{"date": {"$gte": "2024-01-01"}}, {"date": {"$lte": "2024-12-31"}}],
        }
    )
    assert _passes(flt, department="hr", date="2024-06-01")
    assert not _passes(flt, department="ops", date="2024-06-01")
    assert not _passes(flt, department="hr", date="2025-01-01")  # two bounds on one key both hold
    assert _passes(langchain_filter({"$or": [{"doc": "a"}, {"doc": "b"}]}), doc="b")
    assert _passes(langchain_filter({"n": {"$gte": 10}}), n=9) is False  # numbers compare as numbers
    assert _passes(langchain_filter({"flag": True}), flag=True)
    assert langchain_filter(None) == Filter()
    for bad in (
        {"k": {"$ne": 1}},
        {"$not": {}},
        {"k": {"$in": []}},
        {"$or": [{"a": 1}, {"b": 2}]},
        {"k": None},
    ):
        with pytest.raises(InputError):
            langchain_filter(bad)


def test_llamaindex_filters_are_read_by_their_attributes() -> None:
    def leaf(key: str, value: Any, op: str = "==") -> SimpleNamespace:
        return SimpleNamespace(key=key, value=value, operator=SimpleNamespace(value=op))

    def group(cond: str, *filters: Any) -> SimpleNamespace:
        return SimpleNamespace(filters=list(filters), condition=SimpleNamespace(value=cond))

    flt = llamaindex_filter(group("and", leaf("family", "tos"), group("or", leaf("v", "1"), leaf("v", "2"))))
    assert _passes(flt, family="tos", v="2") and not _passes(flt, family="tos", v="3")
    assert _passes(llamaindex_filter(group("and", leaf("d", "2024-01-01", ">="))), d="2024-02-01")
    with pytest.raises(InputError, match="OR across different keys"):
        llamaindex_filter(group("or", leaf("a", 1), leaf("b", 2)))
    with pytest.raises(InputError, match="no --where form"):
        llamaindex_filter(group("not", leaf("a", 1)))


def test_haystack_filters_use_meta_fields() -> None:
    flt = haystack_filter(
        {
            "operator": "AND",
            "conditions": [
                {"field": "meta.department", "operator": "in", "value": ["legal", "hr"]},
                {
                    "operator": "OR",
                    "conditions": [{"field": "meta.family", "operator": "==", "value": "tos"}],
                },
            ],
        }
    )
    assert _passes(flt, department="legal", family="tos") and not _passes(flt, department="legal", family="x")
    assert _passes(haystack_filter({"field": "doc", "operator": "==", "value": "a.md"}), doc="a.md")
    with pytest.raises(InputError, match="no --where form"):
        haystack_filter({"field": "meta.n", "operator": ">", "value": 1})


def test_safety_net_over_plain_results() -> None:
    items = [
        Item("a", "One text here.", None, ("d1",)),
        Item("b", "one  TEXT here.", None, ("d2",)),
        Item("c", "Another passage.", None, ("d1",)),
        Item("d", "A third passage of words.", None, ("d1",)),
        Item("", "No id and no document.", None, ()),
    ]
    kept, dropped = safety_net(items, NetOptions(cap_per_doc=2))
    assert sorted(kept) == [0, 2, 4]
    assert {(d.id, d.step) for d in dropped} == {("b", "dedup_chunks"), ("d", "cap")}
    assert safety_net([], NetOptions()) == ([], [])
    with pytest.raises(ConfigError, match="cap_per_doc"):
        NetOptions(cap_per_doc=-1)
    uncapped, _ = safety_net(items, NetOptions(cap_per_doc=0))  # 0: no cap
    assert sorted(uncapped) == [0, 2, 3, 4]
    assert item_docs({"sources": [{"doc": "x"}, {"doc": "y"}], "source": "z"}, None, ("source",)) == (
        "x",
        "y",
    )
    assert item_docs({"sources": [{"doc": "x"}], "source": "z"}, "source", ("source",)) == ("z",)
    assert item_docs({"team": ["a", "b"]}, "team", ()) == ("a", "b")


class ListSink:
    def __init__(self) -> None:
        self.rows: dict[str, str | None] = {}
        self.batches = 0

    def write(self, batch: list[ExportRecord]) -> None:
        self.batches += 1
        for rec in batch:
            if rec.op == "delete":
                self.rows.pop(rec.id, None)
            else:
                self.rows[rec.id] = rec.text


def test_sync_edge_cases(tmp_path: Path) -> None:
    index = tmp_path / "i.sqlite"
    run = ingest_small(small_corpus(tmp_path), index)
    sink = ListSink()
    with pytest.raises(InputError, match="past the last finished run"):
        run_sync(index, sink, since=run + 1)
    with pytest.raises(ConfigError):
        run_sync(index, sink, batch_size=0)
    report = run_sync(index, sink, batch_size=1)
    assert sink.batches == report.upserts == len(fresh_export(index))
    assert sink.rows == {k: v[0] for k, v in fresh_export(index).items()}
    state = Path(report.state)
    assert state == tmp_path / "i.sqlite.sync.json"
    assert json.loads(state.read_text(encoding="utf-8"))["applied_run"] == run
    assert run_sync(index, sink).upserts == 0  # nothing new
    again = run_sync(index, ListSink(), since=run - 1)  # an explicit watermark wins over the state
    assert again.upserts == report.upserts
    state.unlink()
    caught_up = run_sync(index, sink, since=run)  # told the store is current: recorded, nothing sent
    assert (caught_up.upserts, json.loads(state.read_text(encoding="utf-8"))["applied_run"]) == (0, run)
    state.write_text("{not json", encoding="utf-8")
    with pytest.raises(InputError, match="delete it"):
        run_sync(index, sink)


@pytest.mark.parametrize(
    ("module", "blocked", "extra"),
    [
        ("chunkdedup.integrations.langchain", "langchain_core", "langchain"),
        ("chunkdedup.integrations.llamaindex", "llama_index", "llamaindex"),
        ("chunkdedup.integrations.haystack", "haystack", "haystack"),
    ],
)
def test_a_missing_framework_names_its_extra(
    monkeypatch: pytest.MonkeyPatch, module: str, blocked: str, extra: str
) -> None:
    # the framework and every submodule an earlier test imported: `import a.b` finds a cached `a.b`
    for name in [m for m in sys.modules if m == blocked or m.startswith(blocked + ".")] or [blocked]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.delitem(sys.modules, module, raising=False)
    with pytest.raises(MissingExtraError, match=rf"pip install 'chunkdedup\[{extra}\]'"):
        importlib.import_module(module)
    assert "chunkdedup.integrations" in sys.modules  # the package itself imports no framework
