"""Walking the leaves of a statement and changing one in a way its schema still accepts (the leaf-coverage tests).

Shared by tests/unit/test_evidence_leaves.py (factory evidence of the reference
app's shape) and tests/e2e/test_example_chain.py (the example app's real
evidence): a change to any leaf must be refused unless ``qualify_verify``
declares the leaf informational.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from desktop_qualify.evidence_schemas import AggregateStatement, PlatformPredicate, ProvenanceStatement
from pydantic import ValidationError

Path_ = tuple[str, ...]

# Values a changed enum-like string may take: another member of the same vocabulary.
_ALTERNATIVES = {
    "local": "github", "github": "local", "allow": "reject", "reject": "allow", "unsigned": "signed",
    "signed": "unsigned", "linux": "macos", "macos": "windows", "windows": "linux", "not-observed": "protected",
    "ed25519-detached": "sigstore-bundle", "none": "codesign", "unpack": "copy",
    # Installer kinds and displays (the example app's evidence holds a .deb under Xvfb).
    "deb": "archive", "archive": "deb", "xvfb": "offscreen", "offscreen": "xvfb",
}
# What an empty list or a null may become; the first the schema accepts is used.
_FILLERS: tuple[Any, ...] = ("catalog-verified", "CC_SKILL_TIMEOUT", "x", 0, "0" * 64)


def leaves(data: Any, path: Path_ = ()) -> Iterator[tuple[Path_, Any]]:
    if isinstance(data, dict):
        for key, value in data.items():
            yield from leaves(value, (*path, str(key)))
    elif isinstance(data, list) and data:
        for index, value in enumerate(data):
            yield from leaves(value, (*path, str(index)))
    else:
        yield path, data


def _candidates(value: Any) -> list[Any]:
    if isinstance(value, bool):
        return [not value]
    if isinstance(value, int):
        return [value + 1, value - 1]
    if value is None or value == []:
        return [[f] for f in _FILLERS] if value == [] else list(_FILLERS)
    text = str(value)
    out = []
    if text in _ALTERNATIVES:
        out.append(_ALTERNATIVES[text])
    if text.startswith("CC_SKILL_"):
        out.append("CC_SKILL_TIMEOUT" if text != "CC_SKILL_TIMEOUT" else "CC_SKILL_ABORTED")
    # One character changed in place keeps every pattern (hex stays hex, a timestamp stays one).
    for i in range(len(text) - 1, -1, -1):
        if text[i].isdigit() or text[i] in "abcdef":
            swapped = "1" if text[i] == "0" else "0"
            out.append(text[:i] + swapped + text[i + 1:])
            break
    out += [text + "x", text[:-1] + ("y" if text[-1:] != "y" else "z")]
    if text.isupper():  # an app's refusal code of its own: it stays a code
        out.append(text[:-1] + ("Z" if text[-1] != "Z" else "Y"))
    return out


def set_leaf(data: Any, path: Path_, value: Any) -> None:
    for part in path[:-1]:
        data = data[int(part)] if isinstance(data, list) else data[part]
    if isinstance(data, list):
        data[int(path[-1])] = value
    else:
        data[path[-1]] = value


def schema_accepts(kind: str, data: dict[str, Any]) -> bool:
    try:
        if kind == "platform":
            PlatformPredicate.model_validate(data["predicate"])
        elif kind == "provenance":
            ProvenanceStatement.model_validate(data)
        else:
            AggregateStatement.model_validate(data)
    except ValidationError:
        return False
    return True


def mutation(kind: str, base: dict[str, Any], path: Path_, value: Any) -> Any:
    """The first changed value the schema still accepts, or ``...`` when it admits none."""
    for candidate in _candidates(value):
        trial = copy.deepcopy(base)
        set_leaf(trial, path, candidate)
        if schema_accepts(kind, trial):
            return candidate
    return ...


@dataclass
class LeafWalk:
    """Each leaf changed once, and what the consumer made of it: refused (checked) or qualified (informational)."""

    escaped: list[str] = field(default_factory=list)
    wrongly_listed: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=lambda: {"checked": 0, "informational": 0, "schema-fixed": 0})

    def assert_complete(self) -> None:
        assert self.escaped == [], ("leaves no check reads (check them, or declare them informational): "
                                    + "; ".join(self.escaped))
        assert self.wrongly_listed == [], f"declared informational, yet a change is refused: {self.wrongly_listed}"


def walk_leaves(kind: str, base: dict[str, Any], qualifies: Callable[[Path_, Any], bool], *,
                informational: Callable[[Path_], str | None]) -> LeafWalk:
    """Change every leaf of ``base`` the schema lets change; ``qualifies(path, changed)`` runs the consumer.

    ``informational(path)`` names the bucket of a leaf no check is expected to read (None: it must be checked).
    """
    walk = LeafWalk()
    for path, value in leaves(base):
        changed = mutation(kind, base, path, value)
        if changed is ...:
            walk.counts["schema-fixed"] += 1
            continue
        qualified = qualifies(path, changed)
        bucket = informational(path)
        if bucket is not None:
            walk.counts[bucket] = walk.counts.get(bucket, 0) + 1
            if not qualified:
                walk.wrongly_listed.append(".".join(path))
        else:
            walk.counts["checked"] += 1
            if qualified:
                walk.escaped.append(f"{'.'.join(path)}: {value!r} -> {changed!r}")
    return walk
