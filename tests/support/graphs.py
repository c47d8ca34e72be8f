"""Import graphs: the loops in one and its parts, for the tests that hold the layering (packages, the app's
parts, the producer's parts)."""

from __future__ import annotations

from collections.abc import Mapping


def loops(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one node (Tarjan), each sorted: every import loop."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph.get(node, set())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while (member := stack.pop()) != node:
                group.append(member)
            group.append(node)
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def part_of(module: str) -> str:
    """``skillhost.host._runner`` -> ``skillhost.host``; a top-level module is a part of its own."""
    pieces = module.split(".")
    return ".".join(pieces[:2]) if len(pieces) > 2 else module


def part_graph(graph: Mapping[str, set[str]]) -> dict[str, set[str]]:
    """The graph between parts (``part_of``): each part's imports of other parts."""
    parts: dict[str, set[str]] = {}
    for module, targets in graph.items():
        own = part_of(module)
        parts.setdefault(own, set()).update(part_of(t) for t in targets if part_of(t) != own)
    return parts
