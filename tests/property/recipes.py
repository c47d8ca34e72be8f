"""Evidence recipes: what to change in the factory's passing evidence, as JSON data, and how to apply it.

A recipe names the platform statements to write and, for each, the signing
key, the file name, the commit and attempt, JSON edits of its predicate and
byte edits of its signed payload; then the aggregate's key and edits, byte
edits of the written envelope files, an extra file, which artifacts are
presented and which ``--sha``. Applying it also works out which changes the
verifier must refuse (``must_reject``): those that make the evidence wrong
whatever else holds. Changes with no such certainty (a valid edit of a
duration, a re-signed payload) only have to be refused or accepted with
stable codes.
"""

from __future__ import annotations

import base64
import binascii
import copy
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from desktop_qualify.evidence_schemas import AggregateStatement, PlatformPredicate, canonical_bytes
from desktop_qualify.qualify_policy import host_platform
from hypothesis import strategies as st
from support.evidence_factory import DEFAULT_SHA, OTHER_SHA, Evidence, PlatformSpec, make_evidence

from .baselines import evidence_baseline
from .mutations import apply_byte_ops, apply_json_ops, byte_ops, json_ops, paths_of

THREE = ("linux", "macos", "windows")
FILE_NAMES = ("platform-linux.dsse.json", "platform-macos.dsse.json", "platform-windows.dsse.json",
              "platform-solaris.dsse.json", "notes.dsse.json", "platform-linux.dsse.json.orig")
EXTRA_FILES = ("notes.txt", ".DS_Store", "platform-linux.sigstore.json", "aggregate.dsse.json.sig", "sub/")
CANDIDATES = {"default": DEFAULT_SHA, "other": OTHER_SHA, "garbage": "not-a-commit"}


def _spec_changes(index: int, predicate_ops: st.SearchStrategy[list[list[Any]]],
                  ) -> list[st.SearchStrategy[tuple[Any, ...]]]:
    def change(knob: str, values: st.SearchStrategy[Any]) -> st.SearchStrategy[tuple[Any, ...]]:
        return values.map(lambda value: ("spec", index, knob, value))

    return [
        change("edits", predicate_ops), change("edits", predicate_ops), change("edits", predicate_ops),
        change("payload_ops", byte_ops(2)),
        change("key", st.sampled_from(["aggregate", "stranger"])),
        change("file_name", st.sampled_from(FILE_NAMES)),
        change("sha", st.just("other")),
        change("attempt", st.just(2)),
    ]


def _changes(count: int, predicate_ops: st.SearchStrategy[list[list[Any]]],
             aggregate_ops: st.SearchStrategy[list[list[Any]]]) -> st.SearchStrategy[tuple[Any, ...]]:
    def knob(name: str, values: st.SearchStrategy[Any]) -> st.SearchStrategy[tuple[Any, ...]]:
        return values.map(lambda value: (name, value))

    file_ops = st.lists(st.tuples(st.integers(0, 7), byte_ops(2)).map(list), min_size=1, max_size=2)
    return st.one_of(
        *[change for index in range(count) for change in _spec_changes(index, predicate_ops)],
        knob("file_ops", file_ops), knob("file_ops", file_ops),
        knob("aggregate_edits", aggregate_ops),
        knob("required", st.sampled_from([["linux"], ["macos"], list(THREE), ["host"]])),
        knob("aggregate", st.just(False)),
        knob("aggregate_key", st.sampled_from(["platform", "stranger"])),
        knob("extra_file", st.sampled_from(EXTRA_FILES)),
        knob("artifacts", st.sampled_from(["none", "first", "extra", "dup"])),
        knob("sha_arg", st.sampled_from(["default", "other", "garbage"])),
    )


def _with_changes(platforms: list[str], changes: list[tuple[Any, ...]]) -> dict[str, Any]:
    recipe = pristine_recipe(platforms)
    for change in changes:
        if change[0] == "spec":
            _, index, name, value = change
            recipe["specs"][index][name] = value
        else:
            recipe[change[0]] = change[1]
    return recipe


def recipes() -> st.SearchStrategy[dict[str, Any]]:
    """The untouched evidence of one to three platforms with up to three changes, most often one."""
    baseline = evidence_baseline()
    predicate_ops, aggregate_ops = json_ops(baseline.predicate), json_ops(baseline.aggregate_data)
    platforms = st.lists(st.sampled_from(THREE), min_size=1, max_size=3, unique=True)
    return platforms.flatmap(lambda names: st.lists(
        _changes(len(names), predicate_ops, aggregate_ops), max_size=3).map(
        lambda changes: _with_changes(names, changes)))


def pristine_recipe(platforms: list[str] | None = None) -> dict[str, Any]:
    """The untouched evidence, as a recipe: it must be QUALIFIED."""
    return {"specs": [{"platform": platform, "key": "platform", "file_name": None, "sha": None, "attempt": 1,
                       "edits": [], "payload_ops": []} for platform in platforms or [host_platform()]],
            "required": None, "aggregate": True, "aggregate_key": "aggregate", "aggregate_edits": [],
            "file_ops": [], "extra_file": None, "artifacts": "all", "sha_arg": None}


# -- applying a recipe ----------------------------------------------------------------------------------


class _NotExpressibleError(Exception):
    """An edit the factory's models refuse: it is sent again as signed payload bytes."""

    def __init__(self, where: str) -> None:
        super().__init__(where)
        self.where = where


@dataclass
class Built:
    evidence: Evidence
    artifacts: list[Path]
    candidate_sha: str | None
    must_reject: list[tuple[str, str]] = field(default_factory=list)  # (category, why)
    pristine: bool = False

    def verify_argv(self, *extra: str) -> list[str]:
        argv = self.evidence.verify_argv(*extra, artifacts=self.artifacts)
        return [*argv, "--sha", self.candidate_sha] if self.candidate_sha is not None else argv


@dataclass
class _Edits:
    routed: set[str] = field(default_factory=set)  # edits sent as payload bytes
    changed: set[str] = field(default_factory=set)  # edits that changed the document
    failed_records: dict[str, set[str]] = field(default_factory=dict)  # records an edit turned `passed` False


def _records_failed(before: Any, after: Any) -> set[str]:
    """Records whose ``passed`` the edit turned False, named by path without list indices ("journey.steps")."""
    return {".".join(str(key) for key in path[:-1] if isinstance(key, str)) or "<root>"
            for path in paths_of(before)
            if path[-1] == "passed" and _at(before, path) is True and _at(after, path) is False}


def _at(value: Any, path: tuple[str | int, ...]) -> Any:
    for key in path:
        try:
            value = value[key]
        except (KeyError, IndexError, TypeError):
            return None
    return value


def _validator(model: type[PlatformPredicate] | type[AggregateStatement]) -> Callable[[dict[str, Any]], None]:
    def validate(data: dict[str, Any]) -> None:
        canonical_bytes(model.model_validate(data))
    return validate


def _model_edit(ops: list[list[Any]], where: str, edits: _Edits,
                validate: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    def edit(data: dict[str, Any]) -> None:
        trial = copy.deepcopy(data)
        apply_json_ops(trial, ops)
        try:
            validate(trial)
        except Exception as exc:  # whatever the models or canonical JSON refuse: not expressible as a model
            raise _NotExpressibleError(where) from exc
        if trial != data:
            edits.changed.add(where)
        if failed := _records_failed(data, trial):
            edits.failed_records[where] = failed
        data.clear()
        data.update(trial)
    return edit


def _payload_edit(ops: list[list[Any]], payload_ops: list[list[Any]], where: str, edits: _Edits, *,
                  predicate_only: bool) -> Callable[[bytes], bytes]:
    def change(payload: bytes) -> bytes:
        if ops:
            document = json.loads(payload)
            before = copy.deepcopy(document)
            apply_json_ops(document["predicate"] if predicate_only else document, ops)
            if document != before:
                edits.changed.add(where)
            payload = json.dumps(document).encode()
        return apply_byte_ops(payload, payload_ops)
    return change


def _make(recipe: dict[str, Any], directory: Path, edits: _Edits) -> tuple[Evidence, list[PlatformSpec]]:
    specs = []
    for index, spec in enumerate(recipe["specs"]):
        where = f"spec {index} ({spec['platform']})"
        routed = where in edits.routed
        edit = _model_edit(spec["edits"], where, edits, _validator(PlatformPredicate)) \
            if spec["edits"] and not routed else None
        payload = _payload_edit(spec["edits"] if routed else [], spec["payload_ops"], where, edits,
                                predicate_only=True) if routed or spec["payload_ops"] else None
        specs.append(PlatformSpec(spec["platform"], file_name=spec["file_name"],
                                  sha=OTHER_SHA if spec["sha"] == "other" else None, attempt=spec["attempt"],
                                  key=spec["key"], edit=edit, payload=payload))
    aggregate_edit = aggregate_payload = None
    if recipe["aggregate_edits"]:
        if "aggregate" in edits.routed:
            aggregate_payload = _payload_edit(recipe["aggregate_edits"], [], "aggregate", edits, predicate_only=False)
        else:
            aggregate_edit = _model_edit(recipe["aggregate_edits"], "aggregate", edits,
                                         _validator(AggregateStatement))
    evidence = make_evidence(directory, platforms=specs, required=recipe["required"],
                             aggregate=recipe["aggregate"], aggregate_key=recipe["aggregate_key"],
                             aggregate_edit=aggregate_edit, aggregate_payload=aggregate_payload)
    return evidence, specs


def build(recipe: dict[str, Any], root: Path) -> Built:
    edits = _Edits()
    for attempt in range(len(recipe["specs"]) + 2):
        edits.changed.clear()
        edits.failed_records.clear()
        try:
            evidence, specs = _make(recipe, root / f"attempt-{attempt}", edits)
            break
        except _NotExpressibleError as exc:
            edits.routed.add(exc.where)
    else:
        raise AssertionError(f"recipe could not be applied: {recipe}")
    built = Built(evidence, _artifacts(recipe, evidence, root), CANDIDATES.get(recipe["sha_arg"] or ""))
    original = {path.name: path.read_bytes() for path in sorted(evidence.evidence_dir.iterdir())}
    _apply_file_ops(recipe, evidence)
    _add_extra_file(recipe, evidence)
    built.must_reject = _must_reject(recipe, built, specs, edits, original)
    built.pristine = _is_pristine(recipe)
    return built


def _artifacts(recipe: dict[str, Any], evidence: Evidence, root: Path) -> list[Path]:
    present: list[Path] = evidence.artifact_paths
    choice = recipe["artifacts"]
    if choice == "none":
        return []
    if choice == "first":
        return present[:1]
    if choice == "dup":
        return [*present, *present[:1]]
    if choice == "extra":
        stranger = root / "stranger.tar.gz"
        stranger.write_bytes(b"a file no statement names\n")
        return [*present, stranger]
    return present


def _apply_file_ops(recipe: dict[str, Any], evidence: Evidence) -> None:
    files = sorted(evidence.evidence_dir.iterdir())
    for index, ops in recipe["file_ops"]:
        if files:
            path = files[index % len(files)]
            path.write_bytes(apply_byte_ops(path.read_bytes(), ops))


def _add_extra_file(recipe: dict[str, Any], evidence: Evidence) -> None:
    name = recipe["extra_file"]
    if name is None:
        return
    if name.endswith("/"):
        (evidence.evidence_dir / name).mkdir()
    else:
        (evidence.evidence_dir / name).write_bytes(b"unsigned notes\n")


def _signed_content(envelope: bytes) -> Any:
    """What an envelope says, read leniently: equal for two envelopes that carry the same signed bytes."""
    try:
        value = json.loads(envelope)
        return (value["payloadType"], base64.b64decode(value["payload"], validate=True),
                sorted((s["keyid"], base64.b64decode(s["sig"], validate=True)) for s in value["signatures"]))
    except (ValueError, KeyError, TypeError, binascii.Error):
        return None


def _must_reject(recipe: dict[str, Any], built: Built, specs: list[PlatformSpec], edits: _Edits,
                 original: dict[str, bytes]) -> list[tuple[str, str]]:
    evidence, reasons = built.evidence, []
    final = {written.path.name: written for written in evidence.platforms}
    index_of = {id(spec): index for index, spec in enumerate(specs)}
    for name, written in final.items():
        spec = written.spec
        where = f"spec {index_of[id(spec)]} ({spec.platform})"
        if name != f"platform-{spec.platform}.dsse.json":
            reasons.append(("file-name", f"{name} holds the {spec.platform} statement"))
        if spec.key != "platform":
            reasons.append(("signer", f"{name} is signed with the {spec.key} key"))
        for record in sorted(edits.failed_records.get(where, ())):
            reasons.append((f"record-failed:{record}", f"{name}: the {record} record says passed=false"))
        if where in edits.routed and where in edits.changed:
            reasons.append(("schema-invalid", f"{name}: the predicate no longer fits the model"))
        if written.predicate is None and evidence.aggregate_path is not None:
            reasons.append(("aggregate-unbound", f"the aggregate does not bind {name}"))
    required = recipe["required"]
    wanted = ({host_platform() if p == "host" else p for p in required} if required is not None
              else {spec.platform for spec in specs})
    covered = {written.spec.platform for written in final.values()}
    if covered != wanted:
        reasons.append(("coverage", f"statements for {sorted(covered)}, policy requires {sorted(wanted)}"))
    shas = {written.spec.sha or evidence.sha for written in final.values()}
    if len(shas) > 1:
        reasons.append(("sha", f"statements of commits {sorted(shas)}"))
    if len({written.spec.attempt for written in final.values()}) > 1:
        reasons.append(("run", "statements of different attempts"))
    if built.candidate_sha is not None and shas != {built.candidate_sha}:
        reasons.append(("candidate-sha", f"--sha {built.candidate_sha} is not the evidence's commit"))
    reasons.extend(_aggregate_reasons(recipe, evidence, edits, original))
    reasons.extend(_file_reasons(evidence, original))
    if recipe["extra_file"] is not None:
        reasons.append(("extra-file", f"{recipe['extra_file']} sits in the evidence folder"))
    presented = {path.resolve() for path in built.artifacts}
    expected = {path.resolve() for path in evidence.artifact_paths}
    if presented != expected:
        reasons.append(("artifacts", f"presented {len(presented)} files, the evidence names {len(expected)}"))
    return reasons


def _aggregate_reasons(recipe: dict[str, Any], evidence: Evidence, edits: _Edits,
                       original: dict[str, bytes]) -> list[tuple[str, str]]:
    if evidence.aggregate_path is None or "aggregate.dsse.json" not in original:
        return [("aggregate-missing", "no aggregate statement")]
    reasons = []
    if recipe["aggregate_key"] != "aggregate":
        reasons.append(("aggregate-signer", f"aggregate signed with the {recipe['aggregate_key']} key"))
    if "aggregate" in edits.routed and "aggregate" in edits.changed:
        reasons.append(("schema-invalid", "the aggregate no longer fits the model"))
    return reasons


def _file_reasons(evidence: Evidence, original: dict[str, bytes]) -> list[tuple[str, str]]:
    reasons = []
    for name, before in original.items():
        path = evidence.evidence_dir / name
        after = path.read_bytes() if path.is_file() else b""
        if name.startswith("platform-") and after != before:
            # The aggregate binds each platform statement by the SHA-256 of its envelope bytes.
            reasons.append(("envelope-bytes", f"{name} changed after the aggregate bound it"))
        elif name == "aggregate.dsse.json" and _signed_content(after) != _signed_content(before):
            reasons.append(("envelope-bytes", "aggregate.dsse.json no longer carries its signed bytes"))
    return reasons


def _is_pristine(recipe: dict[str, Any]) -> bool:
    """No change at all: every knob at its default (several platforms, all consistent, count as untouched)."""
    platforms = {spec["platform"] for spec in recipe["specs"]}
    required = recipe["required"]
    return (all(spec["key"] == "platform" and spec["file_name"] is None and spec["sha"] is None
                and spec["attempt"] == 1 and not spec["edits"] and not spec["payload_ops"]
                for spec in recipe["specs"])
            and (required is None or {host_platform() if p == "host" else p for p in required} == platforms)
            and recipe["aggregate"] and recipe["aggregate_key"] == "aggregate" and not recipe["aggregate_edits"]
            and not recipe["file_ops"] and recipe["extra_file"] is None and recipe["artifacts"] == "all"
            and recipe["sha_arg"] in (None, "default"))
