"""Imports between the modules of one package: the graph, and the cycles in it.

A package's modules import in one direction (``state.py`` <- ``rules.py`` <- ``generate.py``
<- ``env.py``): a cycle means one module cannot be read, tested or replaced without the
others, and it only loads thanks to import order, deferred imports or ``TYPE_CHECKING``.
The graph counts every relative import wherever it stands (inside a function, under
``if TYPE_CHECKING:``), since each of those is a dependency a reader must follow too.
"""

from __future__ import annotations

from collections.abc import Mapping

from envcraft.core.lint.code import SourceAnalysis
from envcraft.core.lint.report import Finding, finding

# file -> {imported sibling file: line of its first import there}
ImportGraph = dict[str, dict[str, int]]


def sibling_graph(analyses: Mapping[str, SourceAnalysis]) -> ImportGraph:
    """Which root modules each root module imports (``from .rules import x``, ``from . import
    rules``), keyed by file name (``"env.py"``), with the line of the first such import."""
    files = set(analyses)
    graph: ImportGraph = {file: {} for file in sorted(files)}
    for file, analysis in analyses.items():
        for ref in analysis.imports:
            if ref.level != 1:
                continue
            targets = [ref.module] if ref.module else list(ref.names)
            for target in targets:
                sibling = f"{target.split('.')[0]}.py"
                if sibling in files and sibling != file:
                    graph[file].setdefault(sibling, ref.line)
    return graph


def import_cycles(graph: ImportGraph) -> list[tuple[list[str], list[str]]]:
    """One cycle per group of modules that import each other: the shortest closed path from the
    group's first module by name back to it (``["env.py", "rules.py", "env.py"]``), and the
    group's other modules that path misses; groups in name order."""
    cycles = []
    for group in _entangled(graph):
        path = _shortest_cycle(graph, min(group), group)
        cycles.append((path, sorted(group - set(path))))
    return cycles


def check_module_cycles(analyses: Mapping[str, SourceAnalysis]) -> list[Finding]:
    """A ``module-cycle`` error for each group of modules that import each other, at the import
    that opens the cycle it names."""
    graph = sibling_graph(analyses)
    findings = []
    for path, others in import_cycles(graph):
        message = f"import cycle: {' -> '.join(path)}"
        if others:
            message += f" (also entangled: {', '.join(others)})"
        findings.append(finding("module-cycle", path[0], graph[path[0]][path[1]], message))
    return findings


def _entangled(graph: ImportGraph) -> list[set[str]]:
    """The strongly connected groups of more than one module (Tarjan), in name order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, {})):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.add(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(group)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(groups, key=min)


def _shortest_cycle(graph: ImportGraph, start: str, group: set[str]) -> list[str]:
    """The shortest path from ``start`` back to itself inside ``group`` (breadth first, targets
    in name order, so the same package always gives the same path)."""
    paths = [[start]]
    seen = {start}
    while paths:
        following = []
        for path in paths:
            for target in sorted(graph[path[-1]]):
                if target == start:
                    return [*path, start]
                if target in group and target not in seen:
                    seen.add(target)
                    following.append([*path, target])
        paths = following
    raise ValueError(f"{start} is on no cycle")  # unreachable: start belongs to an entangled group
