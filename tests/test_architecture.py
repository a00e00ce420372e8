"""The invariants ARCHITECTURE.md states, held against the code's own imports.

Every ``import`` of a chunkdedup module anywhere in a file counts (at the top, inside a function, or
under ``TYPE_CHECKING``): a lazy import is still a dependency.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src"
PACKAGE = SRC / "chunkdedup"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _imports(path: Path, known: set[str]) -> set[str]:
    """The chunkdedup modules a file imports (a name imported from a package that is itself a module
    counts as that module)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name in known}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and node.module in known:
            subs = {f"{node.module}.{a.name}" for a in node.names} & known
            out |= subs or {node.module}
            if len(subs) < len(node.names):
                out.add(node.module)
    return out


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {name: _imports(path, known) - {name} for name, path in modules.items()}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                    break
                if nxt in on:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    part = []
                    while True:
                        top = stack.pop()
                        on.discard(top)
                        part.append(top)
                        if top == node:
                            break
                    if len(part) > 1:
                        found.append(sorted(part))
    return found


def test_no_two_modules_import_each_other() -> None:
    assert circles(import_graph()) == []


def test_the_circle_finder_finds_a_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(graph) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_the_algorithms_and_the_parsers_import_no_store_no_ingest_no_query() -> None:
    """dedup/, parse/ and text/ are pure: records in, records out."""
    graph = import_graph()
    pure = [m for m in graph if m.startswith(("chunkdedup.dedup", "chunkdedup.parse", "chunkdedup.text"))] + [
        "chunkdedup.normalize", "chunkdedup.types", "chunkdedup.jit",
    ]
    assert "chunkdedup.text.chunk_kernel" in pure and "chunkdedup.text.lines" in pure
    upward = ("chunkdedup.store", "chunkdedup.ingestion", "chunkdedup.query", "chunkdedup.index",
              "chunkdedup.web", "chunkdedup.cli", "chunkdedup.integrations", "chunkdedup.evaluate")
    offenders = {m: sorted(d for d in graph[m] if d.startswith(upward)) for m in pure}
    assert {m: d for m, d in offenders.items() if d} == {}


#: The ground floor: records, errors, config and the pure text keys every other floor may use.
GROUND = frozenset({
    "chunkdedup.config", "chunkdedup.errors", "chunkdedup.figures", "chunkdedup.jit", "chunkdedup.normalize",
    "chunkdedup.outfile", "chunkdedup.types", "chunkdedup.visible",
})


def test_the_ground_floor_imports_only_the_ground_floor() -> None:
    graph = import_graph()
    assert {m: sorted(graph[m] - GROUND) for m in GROUND if graph[m] - GROUND} == {}


def test_the_store_imports_only_itself_and_the_ground_floor() -> None:
    """store/ persists the ground floor's records: it imports no algorithm, ingest, query or face."""
    graph = import_graph()
    store = {m for m in graph if m == "chunkdedup.store" or m.startswith("chunkdedup.store.")}
    assert {m: sorted(graph[m] - store - GROUND) for m in store if graph[m] - store - GROUND} == {}


#: The faces: thin layers over ``Index`` (and the ingest), never over the store's own modules.
FACES = ("chunkdedup.cli", "chunkdedup.web", "chunkdedup.integrations", "chunkdedup.evaluate",
         "chunkdedup.report", "chunkdedup.export", "chunkdedup.demo")
#: what a face may take from the store itself: its error mapping (a damaged file named with the way out)
FACE_STORE_ERRORS = frozenset({"chunkdedup.store.index_errors"})


def test_the_faces_read_through_the_index_not_the_store() -> None:
    graph = import_graph()
    faces = [m for m in graph if m.startswith(FACES)]
    assert "chunkdedup.web.app" in faces and "chunkdedup.evaluate.audit" in faces
    reach = {m: sorted(d for d in graph[m] if (d == "chunkdedup.store" or d.startswith("chunkdedup.store."))
                       and d not in FACE_STORE_ERRORS) for m in faces}
    assert {m: d for m, d in reach.items() if d} == {}


def _classes() -> dict[str, tuple[int, list[str]]]:
    """Every class of the package by its qualified name: its lines and its bases' qualified names (a base
    named by an import of the package's, or defined in the same module; others are left out)."""
    out: dict[str, tuple[int, list[str]]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        module = _module_name(path)
        names = {n.name: f"{module}.{n.name}" for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("chunkdedup"):
                names.update({a.asname or a.name: f"{node.module}.{a.name}" for a in node.names})
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and node.end_lineno:
                bases = [names[b.id] for b in node.bases if isinstance(b, ast.Name) and b.id in names]
                out[f"{module}.{node.name}"] = (node.end_lineno - node.lineno + 1, bases)
    return out


def test_no_class_passes_400_lines() -> None:
    """A class that needs more is several jobs (the store's table families are one class each): its
    lines counted with those of every class of the package it inherits from."""
    classes = _classes()

    def size(name: str) -> int:
        lines, bases = classes.get(name, (0, []))
        return lines + sum(size(b) for b in bases)

    long = {name: size(name) for name in classes if size(name) >= 400}
    assert long == {}
    assert size("chunkdedup.store.core.Store") > classes["chunkdedup.store.core.Store"][0]  # bases count


def test_no_store_family_inherits_another() -> None:
    """The store is built by composition: every class of the store that inherits the connection or a
    table family stands on the one small common base (``Tables``), but ``Store``, which stands on the
    connection; a family reaches another only through a reference it is given."""
    classes = _classes()
    tables = {"chunkdedup.store.connection.Connection"} | {n for n in classes if n.endswith("Tables")}
    store = {n: b for n, (_, b) in classes.items() if n.startswith("chunkdedup.store.") and tables & set(b)}
    assert store.pop("chunkdedup.store.core.Store") == ["chunkdedup.store.connection.Connection"]
    assert {n: b for n, b in store.items() if b != ["chunkdedup.store.batches.Tables"]} == {}
    assert len(store) >= 7  # runs, boilerplate, documents, groups, canonicals, bands, embeddings
    assert classes["chunkdedup.store.connection.Connection"][1] == []
