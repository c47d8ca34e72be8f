"""Every leaf of the evidence is checked, or declared informational in one place (issue 7, item 4).

For each leaf of a valid three-platform qualification (the linux statement's
predicate and subject, its SLSA provenance, and the aggregate), the test changes the value in a
type-preserving way that the schema still accepts, re-signs the statement with
the trusted keys, re-binds the aggregate over it, and runs the consumer. A
change must be refused unless the leaf is listed in
``qualify_verify._informational``; a listed leaf's change must still qualify
(so the list says exactly what no check reads). A leaf for which the schema
admits no other value (``kind``, ``version``, a one-value literal) is fixed by
the schema and counted as such.
"""

from __future__ import annotations

import base64
import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from desktop_qualify.evidence_schemas import PlatformPredicate
from desktop_qualify.qualify_policy import load_policy
from desktop_qualify.qualify_verify import verify_release
from desktop_qualify.qualify_verify._informational import (
    AGGREGATE_INFORMATIONAL,
    PLATFORM_INFORMATIONAL,
    PROVENANCE_INFORMATIONAL,
    is_informational,
    matches,
)
from support.confinement import confined, require_confinement
from support.evidence_factory import PlatformSpec, make_evidence, predicate_data
from support.leaves import Path_, leaves, mutation, set_leaf, walk_leaves
from support.update_evidence import evidence as update_evidence

THREE = ("linux", "macos", "windows")

def _qualifies(tmp: Path, *, platform_edit: Any = None, aggregate_edit: Any = None) -> bool:
    specs = [PlatformSpec("linux", edit=platform_edit), PlatformSpec("macos"), PlatformSpec("windows")]
    # The stricter policy (the release policy's): a clean work tree is required, so its flag is a checked fact.
    ev = make_evidence(tmp, platforms=specs, aggregate_edit=aggregate_edit, require_clean=True)
    verdict = verify_release(load_policy(ev.policy_path), [ev.evidence_dir], ev.artifact_paths)
    return verdict.qualified


# A notarized macOS statement: the notarization record exists only there, so its leaves are walked on it.
_NOTARIZED = {"outcome": "accepted", "submission_id": "2efe2717-52ef-43a5-96dc-0797e4ca1041", "status": "Accepted",
              "stapled": True, "detail": "accepted and stapled"}
_NOTARIZED_SIGNING = {"linux": ["unsigned"], "macos": ["notarized"], "windows": ["unsigned"]}


def _notarize(pred: dict[str, Any]) -> None:
    pred["signature"].update(platform_signing_state="notarized", platform_signing_tool="codesign",
                             notarization=copy.deepcopy(_NOTARIZED))


def _macos_qualifies(tmp: Path, platform_edit: Any) -> bool:
    def edit(pred: dict[str, Any]) -> None:
        _notarize(pred)
        platform_edit(pred)

    specs = [PlatformSpec("linux"), PlatformSpec("macos", edit=edit), PlatformSpec("windows")]
    ev = make_evidence(tmp, platforms=specs, require_clean=True, signing=_NOTARIZED_SIGNING)
    return verify_release(load_policy(ev.policy_path), [ev.evidence_dir], ev.artifact_paths).qualified


def _macos_base(tmp: Path) -> dict[str, Any]:
    ev = make_evidence(tmp, platforms=[PlatformSpec("linux"), PlatformSpec("macos", edit=_notarize),
                                       PlatformSpec("windows")], signing=_NOTARIZED_SIGNING)
    written = next(w for w in ev.platforms if w.predicate is not None and w.predicate.platform == "macos")
    assert written.predicate is not None
    return {"predicate": written.predicate.model_dump(mode="json")}


def _platform_base(tmp: Path) -> dict[str, Any]:
    ev = make_evidence(tmp, platforms=list(THREE))
    written = ev.platforms[0]
    assert written.predicate is not None
    return {"predicate": written.predicate.model_dump(mode="json")}


def _aggregate_base(tmp: Path) -> dict[str, Any]:
    ev = make_evidence(tmp, platforms=list(THREE))
    return ev.aggregate_statement_data()


def _provenance_base(tmp: Path) -> dict[str, Any]:
    ev = make_evidence(tmp, platforms=list(THREE))
    envelope = json.loads(ev.provenance_file("linux").read_bytes())
    return json.loads(base64.b64decode(envelope["payload"]))  # type: ignore[no-any-return]


def _provenance_qualifies(tmp: Path, path: Path_, changed: Any) -> bool:
    """The linux provenance with one leaf changed, signed again by the platform key and bound by the aggregate."""
    specs = [PlatformSpec("linux", provenance_edit=lambda data: set_leaf(data, path, changed)), PlatformSpec("macos"),
             PlatformSpec("windows")]
    ev = make_evidence(tmp, platforms=specs, require_clean=True)
    return verify_release(load_policy(ev.policy_path), [ev.evidence_dir], ev.artifact_paths).qualified


def test_every_provenance_leaf_is_checked_or_informational(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Every field of the SLSA provenance equals a fact the verifier holds, but the policy's path."""
    base = _provenance_base(tmp_path_factory.mktemp("base"))
    assert _provenance_qualifies(tmp_path_factory.mktemp("untouched"), ("_type",), base["_type"])

    def qualifies(path: Path_, changed: Any) -> bool:
        return _provenance_qualifies(tmp_path_factory.mktemp("leaf"), path, changed)

    walk = walk_leaves("provenance", base, qualifies,
                       informational=lambda path: "informational" if is_informational("provenance", path) else None)
    print(f"provenance leaves: {walk.counts}")
    assert walk.counts["checked"] >= 14
    walk.assert_complete()


def _edit_at(kind: str, path: Path_, changed: Any) -> dict[str, Any]:
    """The factory keyword that applies one change: a platform edit sees the predicate, an aggregate edit the
    whole statement."""
    if kind == "platform":
        return {"platform_edit": lambda pred: set_leaf(pred, path[1:], changed)}
    return {"aggregate_edit": lambda data: set_leaf(data, path, changed)}


@pytest.mark.parametrize("kind", ["platform", "aggregate"])
def test_every_leaf_is_checked_or_informational(kind: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    base_dir = tmp_path_factory.mktemp("base")
    base = _platform_base(base_dir) if kind == "platform" else _aggregate_base(base_dir)
    def qualifies(path: Path_, changed: Any) -> bool:
        return _qualifies(tmp_path_factory.mktemp("leaf"), **_edit_at(kind, path, changed))

    walk = walk_leaves(kind, base, qualifies,
                       informational=lambda path: "informational" if is_informational(kind, path) else None)
    print(f"{kind} statement leaves: {walk.counts}")
    walk.assert_complete()


def _walk_part(base: dict[str, Any], prefix: tuple[str, ...],
               qualifies: Callable[[tuple[str, ...], Any], bool]) -> tuple[list[str], list[str], int]:
    """Each leaf of ``base`` under ``prefix`` changed alone, judged by ``qualifies(path, changed)``.

    Returns the changes that still qualified though the leaf is not informational (escaped), the changes
    refused though the leaf is listed informational (wrongly listed), and how many leaves were seen.
    """
    escaped, wrongly_listed, seen = [], [], 0
    for path, value in leaves(base):
        if path[:len(prefix)] != prefix:
            continue
        seen += 1
        changed = mutation("platform", base, path, value)
        if changed is ...:
            continue
        qualified = qualifies(path, changed)
        if is_informational("platform", path) != qualified:
            where = wrongly_listed if not qualified else escaped
            where.append(f"{'.'.join(path)}: {value!r} -> {changed!r}")
    return escaped, wrongly_listed, seen


def _walk_edited(factory: pytest.TempPathFactory, base: dict[str, Any], prefix: tuple[str, ...],
                 qualifies_with: Callable[[Path, Any], bool]) -> tuple[list[str], list[str], int]:
    """``_walk_part`` over evidence made afresh per leaf by ``qualifies_with(folder, predicate edit)``, after
    checking that the untouched evidence qualifies (else every leaf would look checked)."""
    assert qualifies_with(factory.mktemp("untouched"), lambda pred: None)
    return _walk_part(base, prefix, lambda path, changed: qualifies_with(
        factory.mktemp("leaf"), lambda pred: set_leaf(pred, path[1:], changed)))


def test_every_notarization_leaf_is_checked_or_informational(tmp_path_factory: pytest.TempPathFactory) -> None:
    escaped, wrongly_listed, seen = _walk_edited(tmp_path_factory, _macos_base(tmp_path_factory.mktemp("base")),
                                                 ("predicate", "signature", "notarization"), _macos_qualifies)
    assert seen == 5
    assert escaped == []
    assert wrongly_listed == []


# A build record with a second build (a reproducibility check): its leaves exist only there, so they are walked on it.
def _reproduce(pred: dict[str, Any]) -> None:
    digest = pred["build"]["artifact"]["sha256"]
    pred["build"]["reproduction"] = {
        "first_sha256": digest, "second_sha256": digest, "second_size": 1024, "reproduced": True, "duration_ms": 9,
        "variations": [{"name": "umask", "first": "0022", "second": "0002"}]}


def _reproduced_qualifies(tmp: Path, platform_edit: Any) -> bool:
    def edit(pred: dict[str, Any]) -> None:
        _reproduce(pred)
        platform_edit(pred)

    ev = make_evidence(tmp, platforms=[PlatformSpec("linux", edit=edit)], require_clean=True)
    return verify_release(load_policy(ev.policy_path), [ev.evidence_dir], ev.artifact_paths).qualified


def _reproduced_base(tmp: Path) -> dict[str, Any]:
    ev = make_evidence(tmp, platforms=[PlatformSpec("linux", edit=_reproduce)])
    written = ev.platforms[0]
    assert written.predicate is not None
    return {"predicate": written.predicate.model_dump(mode="json")}


def test_every_reproduction_leaf_is_checked_or_informational(tmp_path_factory: pytest.TempPathFactory) -> None:
    escaped, wrongly_listed, seen = _walk_edited(tmp_path_factory, _reproduced_base(tmp_path_factory.mktemp("base")),
                                                 ("predicate", "build", "reproduction"), _reproduced_qualifies)
    assert seen == 8
    assert escaped == []
    assert wrongly_listed == []


# A statement that records its app stages' confinement, under a policy with [confinement]: its leaves exist only
# there, so they are walked on it.
def _confined_qualifies(tmp: Path, platform_edit: Any) -> bool:
    ev = make_evidence(tmp, platforms=[PlatformSpec("linux", edit=confined(platform_edit))], require_clean=True)
    require_confinement(ev)
    return verify_release(load_policy(ev.policy_path), [ev.evidence_dir], ev.artifact_paths).qualified


def _confined_base(tmp: Path) -> dict[str, Any]:
    ev = make_evidence(tmp, platforms=[PlatformSpec("linux", edit=confined())])
    written = ev.platforms[0]
    assert written.predicate is not None
    assert written.predicate.confinement
    return {"predicate": written.predicate.model_dump(mode="json")}


def test_every_confinement_leaf_is_checked_or_informational(tmp_path_factory: pytest.TempPathFactory) -> None:
    escaped, wrongly_listed, seen = _walk_edited(tmp_path_factory, _confined_base(tmp_path_factory.mktemp("base")),
                                                 ("predicate", "confinement"), _confined_qualifies)
    # build, probe and journey: stage, mechanism, network, detail and eight or seven layers each.
    assert seen == 3 * 4 + 7 + 8 + 8
    assert escaped == []
    assert wrongly_listed == []


# The tools the probe and journey named by placeholder ({python}, [app.toolchains]), as the producer resolved them.
_TOOLCHAINS = [{"name": "node", "requested": "node", "path": "/opt/node/bin/node", "resolved": "/opt/node/bin/node",
                "sha256": "4" * 64, "version": "v20.11.1", "folders": ["/opt/node"]}]


def _with_toolchains(edit: Any = None) -> Any:
    def apply(pred: dict[str, Any]) -> None:
        pred["toolchains"] = json.loads(json.dumps(_TOOLCHAINS))
        if edit is not None:
            edit(pred)
    return apply


def _toolchain_qualifies(tmp: Path, platform_edit: Any) -> bool:
    ev = make_evidence(tmp, platforms=[PlatformSpec("linux", edit=_with_toolchains(platform_edit))],
                       require_clean=True)
    return verify_release(load_policy(ev.policy_path), [ev.evidence_dir], ev.artifact_paths).qualified


def _toolchain_base(tmp: Path) -> dict[str, Any]:
    ev = make_evidence(tmp, platforms=[PlatformSpec("linux", edit=_with_toolchains())])
    written = ev.platforms[0]
    assert written.predicate is not None
    assert written.predicate.toolchains
    return {"predicate": written.predicate.model_dump(mode="json")}


def test_every_toolchain_leaf_is_informational(tmp_path_factory: pytest.TempPathFactory) -> None:
    escaped, wrongly_listed, seen = _walk_edited(tmp_path_factory, _toolchain_base(tmp_path_factory.mktemp("base")),
                                                 ("predicate", "toolchains"), _toolchain_qualifies)
    # name, requested, path, resolved, sha256, version and one folder.
    assert seen == 7
    assert escaped == []
    assert wrongly_listed == []


def test_every_update_leaf_is_checked_or_informational(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The update journey's record, walked like the rest: each leaf checked, or listed as informational."""
    ev = update_evidence(tmp_path_factory.mktemp("base"))
    written = ev.platforms[0]
    assert written.predicate is not None
    assert written.predicate.update is not None
    base = {"predicate": written.predicate.model_dump(mode="json")}

    def qualifies(path: tuple[str, ...], changed: Any) -> bool:
        spoiled = update_evidence(tmp_path_factory.mktemp("leaf"),
                                  edit=lambda update: set_leaf(update, path[2:], changed))
        return verify_release(load_policy(spoiled.policy_path), [spoiled.evidence_dir],
                              spoiled.artifact_paths).qualified

    escaped, wrongly_listed, seen = _walk_part(base, ("predicate", "update"), qualifies)
    print(f"update record leaves: {seen}")
    assert seen > 100
    assert escaped == []
    assert wrongly_listed == []


@pytest.mark.parametrize(("kind", "table"), [("platform", PLATFORM_INFORMATIONAL),
                                             ("aggregate", AGGREGATE_INFORMATIONAL),
                                             ("provenance", PROVENANCE_INFORMATIONAL)])
def test_every_informational_pattern_names_a_real_leaf(kind: str, table: Any, tmp_path: Path) -> None:
    base = {"platform": _platform_base, "aggregate": _aggregate_base,
            "provenance": _provenance_base}[kind](tmp_path / "a")
    paths = [path for path, _ in leaves(base)]
    if kind == "platform":
        paths += [path for path, _ in leaves(_macos_base(tmp_path / "m"))]
        paths += [path for path, _ in leaves(_reproduced_base(tmp_path / "r"))]
        paths += [path for path, _ in leaves(_confined_base(tmp_path / "c"))]
        paths += [path for path, _ in leaves(_toolchain_base(tmp_path / "t"))]
        updated = update_evidence(tmp_path / "u").platforms[0].predicate
        assert updated is not None
        paths += [path for path, _ in leaves({"predicate": updated.model_dump(mode="json")})]
    stale = [pattern for pattern in table if not any(matches(pattern, path) for path in paths)]
    assert stale == []


def test_the_walk_sees_every_record(tmp_path: Path) -> None:
    """A guard on the walker itself: it reaches into every record of the predicate."""
    data = predicate_data(platform="linux", artifact=make_evidence(tmp_path).artifact_paths[0], sha="a" * 40,
                          run_id="r", attempt=1, key=make_evidence(tmp_path / "k").keys.platform,
                          required_steps=("catalog-verified",))
    tops = {path[0] for path, _ in leaves(data)}
    # The update journey's record is optional (only a policy with [update] asks for it): its leaves are walked
    # on a statement that carries one (test_every_update_leaf_is_checked_or_informational); the confinement
    # records likewise (test_every_confinement_leaf_is_checked_or_informational), and the toolchains
    # (test_every_toolchain_leaf_is_informational).
    assert tops | {"update", "confinement", "toolchains"} == set(PlatformPredicate.model_fields)
