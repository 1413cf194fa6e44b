"""The layout the README promises: layers as subpackages, imports pointing down only."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "memlab"
# each layer may import the layers listed before it, never one listed after it
LAYERS = (
    "core",
    "datasets",
    "embedding",
    "rerank",
    "qdrant",
    "importers",
    "scores",
    "tuning",
    "integrations",
    "retrieval",
    "drift",
    "studies",
    "output",
    "answers",
    "app",
)
MAY_IMPORT = {
    "core": {"core"},
    "datasets": {"core", "datasets"},
    "embedding": {"core", "embedding"},
    # the rerankers' score cache is as strict as the embedding cache, with its folder checks
    "rerank": {"core", "embedding", "rerank"},
    "qdrant": {"core", "datasets", "qdrant"},
    "importers": {"core", "datasets", "embedding", "qdrant", "importers"},
    "scores": {"core", "datasets", "embedding", "qdrant", "scores"},
    "tuning": {"core", "datasets", "embedding", "scores", "tuning"},
    "integrations": {"core", "datasets", "embedding", "rerank", "qdrant", "scores", "tuning", "integrations"},
    "retrieval": {"core", "datasets", "retrieval"},
    "drift": {"core", "embedding", "retrieval", "drift"},
    # the held-out benchmark study reuses the drift study's paired bootstrap
    "studies": {
        "core",
        "datasets",
        "embedding",
        "rerank",
        "scores",
        "tuning",
        "retrieval",
        "drift",
        "studies",
    },
    "output": {"core", "datasets", "scores", "tuning", "retrieval", "studies", "drift", "output"},
    "answers": {"core", "datasets", "embedding", "qdrant", "scores", "tuning", "drift", "output", "answers"},
    "app": set(LAYERS),
}
MODULES = sorted(p for p in ROOT.rglob("*.py") if p.parent != ROOT)


def imports(path: Path) -> list[tuple[str, list[str], int]]:
    """(module, imported names, line) for every import in the file, function-local ones included."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append((node.module, [a.name for a in node.names], node.lineno))
        elif isinstance(node, ast.Import):
            out += [(a.name, [], node.lineno) for a in node.names]
    return out


def layer_of(path: Path) -> str:
    return path.relative_to(ROOT).parts[0]


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_point_down_the_layers(path):
    mine = layer_of(path)
    for module, names, line in imports(path):
        parts = module.split(".")
        if parts[0] != "memlab":
            continue
        if len(parts) == 1:  # from memlab import x: only the top-level re-exports
            raise AssertionError(f"{path.name}:{line}: imports from the top-level package")
        assert parts[1] in MAY_IMPORT[mine], f"{path.relative_to(ROOT)}:{line}: {mine} imports {module}"
        private = [n for n in names if n.startswith("_")]
        assert not private, f"{path.relative_to(ROOT)}:{line}: imports private {private} from {module}"


def test_core_needs_numpy_only():
    # every formula is numpy; pandas lays the sweep's results out as a tidy frame, portion holds
    # the feasible bonus intervals, tqdm shows the progress of a long sweep, numba compiles the
    # sweep's chunk kernels (core/sweep_kernels.py, each held equal to its numpy form); httpx and
    # tenacity send the requests of every server client (core/http.py, imported when one is sent)
    allowed = set(sys.stdlib_module_names) | {"numpy", "pandas", "portion", "tqdm", "numba", "memlab"}
    allowed |= {"httpx", "tenacity"}
    for path in (ROOT / "core").glob("*.py"):
        for module, _, line in imports(path):
            assert module.split(".")[0] in allowed, f"core/{path.name}:{line}: imports {module}"


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_no_two_modules_import_each_other():
    """No import circle, function-local imports included: when two modules need each other, what
    both need belongs in one of them, or in a third."""
    names = {module_name(p): p for p in MODULES}
    graph: dict[str, set[str]] = {}
    for name, path in names.items():
        targets = set()
        for module, imported, _ in imports(path):
            for candidate in (module, *(f"{module}.{n}" for n in imported)):
                if candidate in names and candidate != name and not candidate.endswith("__init__"):
                    targets.add(candidate)
        graph[name] = targets
    # a strongly connected component of more than one module is a circle
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    order = sorted(graph)
    at = {v: i for i, v in enumerate(order)}
    edges = [(at[v], at[w]) for v in order for w in graph[v]]
    rows, cols = zip(*edges, strict=True) if edges else ((), ())
    adjacency = csr_matrix(([1] * len(edges), (rows, cols)), shape=(len(order), len(order)))
    _, component = connected_components(adjacency, directed=True, connection="strong")
    circles = [
        [v for v, c in zip(order, component, strict=True) if c == k]
        for k in sorted(set(component))
        if (component == k).sum() > 1
    ]
    assert not circles, circles
