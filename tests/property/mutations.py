"""Mutations as plain JSON data, so that a failing one can be saved in a corpus case and replayed.

Byte operations: ``["flip", at, mask]``, ``["truncate", at]``, ``["insert", at,
base64]``, ``["delete", at, n]``; positions wrap around the input's length, so
an operation applies to any input. JSON operations on a document's parsed
value: ``["set", path, value]``, ``["delete", path]``, ``["add", path, key,
value]`` (into an object), ``["dup", path]`` (repeat a list's first item); an
operation whose path no longer exists is skipped.
"""

from __future__ import annotations

import base64
import copy
from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st

# Fragments that move a parser to its edges: string and escape boundaries,
# brackets, numbers Python reads as infinity, lone surrogates, a BOM.
SNIPPETS: tuple[bytes, ...] = (
    b'"', b"\\", b"{", b"}", b"[", b"]", b",", b":", b" ", b"\n", b"\x00", b"\xff", b"\xef\xbb\xbf",
    b'"a":1,', b',"a":1', b"NaN", b"1e400", b"-Infinity", b'"\\ud800"', b"\\u0000", b"[" * 30, b"9" * 5000,
)

INTERESTING_STRINGS: tuple[str, ...] = (
    "", "c0ffee0000000000000000000000000000000001", "0" * 40, "0" * 64, "refs/tags/v1.0", "refs/heads/feature",
    "signed", "notarized", "unsigned", "allow", "reject", "linux", "macos", "windows", "solaris", "host",
    "CC_SKILL_SIGNATURE_MISSING", "CC_SKILL_", "QE_INTERNAL", "../../etc/passwd", "a/b", ".", "x" * 5000,
    "\u202e", "\ud800", "skillhost-3b18e512dba7-linux-x86_64.tar.gz", "ed25519-detached", "sigstore", "local",
)


def apply_byte_ops(data: bytes, ops: Sequence[Sequence[Any]]) -> bytes:
    out = bytearray(data)
    for op in ops:
        kind, at = op[0], int(op[1])
        if kind == "flip" and out:
            out[at % len(out)] ^= int(op[2]) & 0xFF or 1
        elif kind == "truncate":
            del out[at % (len(out) + 1):]
        elif kind == "insert":
            position = at % (len(out) + 1)
            out[position:position] = base64.b64decode(op[2])
        elif kind == "delete" and out:
            position = at % len(out)
            del out[position:position + int(op[2])]
    return bytes(out)


def byte_ops(max_ops: int = 3) -> st.SearchStrategy[list[list[Any]]]:
    position = st.integers(0, 1 << 20)
    payload = st.one_of(st.sampled_from(SNIPPETS), st.binary(min_size=1, max_size=8))
    op = st.one_of(
        st.tuples(st.just("flip"), position, st.integers(1, 255)),
        st.tuples(st.just("truncate"), position),
        st.tuples(st.just("insert"), position, payload.map(lambda b: base64.b64encode(b).decode("ascii"))),
        st.tuples(st.just("delete"), position, st.integers(1, 16)),
    ).map(list)
    return st.lists(op, min_size=1, max_size=max_ops)


# -- JSON operations -------------------------------------------------------------------------------------


def paths_of(value: Any, prefix: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    """Every node's path below the root, depth-first, in document order."""
    found: list[tuple[str | int, ...]] = []
    items: Any = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in items:
        path = (*prefix, key)
        found.append(path)
        found.extend(paths_of(child, path))
    return found


def get_at(value: Any, path: Sequence[str | int]) -> tuple[bool, Any]:
    node = value
    for key in path:
        if not _has(node, key):
            return False, None
        node = node[key]
    return True, node


def apply_json_ops(value: Any, ops: Sequence[Sequence[Any]]) -> bool:
    """Apply ``ops`` to ``value`` in place; True when at least one applied."""
    applied = False
    for op in ops:
        kind, path = op[0], list(op[1])
        if kind in ("set", "delete") and path:
            found, parent = get_at(value, path[:-1])
            key = path[-1]
            if not found or not _has(parent, key):
                continue
            if kind == "set":
                parent[key] = copy.deepcopy(op[2])
            else:
                del parent[key]
            applied = True
        elif kind == "add":
            found, target = get_at(value, path)
            if found and isinstance(target, dict):
                target[str(op[2])] = copy.deepcopy(op[3])
                applied = True
        elif kind == "dup":
            found, target = get_at(value, path)
            if found and isinstance(target, list) and target:
                target.append(copy.deepcopy(target[0]))
                applied = True
    return applied


def _has(parent: Any, key: Any) -> bool:
    if isinstance(parent, dict):
        return isinstance(key, str) and key in parent
    return isinstance(parent, list) and isinstance(key, int) and not isinstance(key, bool) and 0 <= key < len(parent)


_json_leaf = st.one_of(st.none(), st.booleans(), st.integers(-(1 << 70), 1 << 70),
                       st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=12))
any_json = st.recursive(_json_leaf, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)), max_leaves=6)


def _value_like(old: Any, pool: Sequence[str]) -> st.SearchStrategy[Any]:
    """A replacement for ``old``: mostly of its own type, so the edit stays expressible by the models."""
    if isinstance(old, bool):
        same: st.SearchStrategy[Any] = st.just(not old)
    elif isinstance(old, int):
        same = st.one_of(st.sampled_from([0, 1, -1, old + 1, 2**31, 2**63, 10**30]), st.integers(-5, 10**6))
    elif isinstance(old, str):
        variants = [old + "x", old[:-1], old.upper(), old[::-1]] if old else ["x"]
        same = st.one_of(st.sampled_from(list(pool)), st.sampled_from(variants), st.text(max_size=12))
    elif isinstance(old, list):
        same = st.one_of(st.just([]), st.lists(any_json, max_size=2), st.just(old + old[:1]))
    elif isinstance(old, dict):
        same = st.one_of(st.just({}), st.dictionaries(st.text(max_size=6), any_json, max_size=2))
    else:
        same = st.one_of(st.sampled_from(list(pool)), st.integers(-1, 3))
    return st.one_of(same, same, same, any_json)  # a type change now and then


def json_ops(baseline: Any, max_ops: int = 3) -> st.SearchStrategy[list[list[Any]]]:
    """Edits of documents shaped like ``baseline``; a record's ``passed`` turned False is drawn often."""
    paths = paths_of(baseline)
    if not paths:
        return st.just([])
    pool = sorted({node for path in paths for node in [get_at(baseline, path)[1]]
                   if isinstance(node, str) and len(node) <= 200} | set(INTERESTING_STRINGS))
    passed = [list(p) for p in paths if p[-1] == "passed" and get_at(baseline, p)[1] is True]
    dicts = [list(p) for p in [(), *paths] if isinstance(get_at(baseline, p)[1], dict)]
    lists_ = [list(p) for p in paths if isinstance(get_at(baseline, p)[1], list)]

    def set_op(path: tuple[str | int, ...]) -> st.SearchStrategy[list[Any]]:
        return _value_like(get_at(baseline, path)[1], pool).map(lambda v: ["set", list(path), v])

    choices = [
        st.sampled_from(paths).flatmap(set_op),
        st.sampled_from(paths).map(lambda p: ["delete", list(p)]),
        st.tuples(st.sampled_from(dicts), st.sampled_from(["extra", "passed", "kind", "_type"]), any_json)
          .map(lambda t: ["add", t[0], t[1], t[2]]),
    ]
    if passed:
        choices.insert(0, st.sampled_from(passed).map(lambda p: ["set", p, False]))
    if lists_:
        choices.append(st.sampled_from(lists_).map(lambda p: ["dup", p]))
    return st.lists(st.one_of(*choices), min_size=1, max_size=max_ops)
