"""Builders for the local-mode rows of the corpus (corpus_table.py).

Each builder returns a function of the row's ``tmp_path`` that writes a real
local qualification from the evidence factory with one thing changed, signs it
again with the trusted keys, re-binds the aggregate over the files as they now
are (so that no signature or binding check can stop the attack and only the
verifier's logic can), and returns the `qualify verify` arguments for it.
"""

from __future__ import annotations

import base64
import json
import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from desktop_qualify.evidence_schemas import IN_TOTO_PAYLOAD_TYPE, Platform, canonical_bytes, local_builder_id
from desktop_qualify.qualify_policy import host_platform
from desktop_qualify.qualify_trust import add_to_keyring
from desktop_qualify.qualify_trust._dsse import pae
from desktop_qualify.qualify_trust._envelope import sign_artifact_digest, sign_envelope
from desktop_qualify.qualify_trust._keys import keyid_of
from support.checkout import at_real_commit
from support.confinement import confined, require_confinement
from support.evidence_factory import (
    OTHER_SHA,
    BytesEdit,
    Evidence,
    PlatformSpec,
    PredicateEdit,
    make_evidence,
)

Build = Callable[[Path], list[str]]
THREE: tuple[Platform, ...] = ("linux", "macos", "windows")
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89"
BOM = b"\xef\xbb\xbf"
HUNDRED_MB = 100 * 1024 * 1024
LOG = ("+ skillhost journey --all\ncatalog-verified ... ok\nbundled-skill-runs ... ok\n"
       "external-signed-runs-in-worker ... ok\nexternal-unsigned-rejected ... ok (CC_SKILL_SIGNATURE_MISSING)\n"
       "4 passed, 0 failed\n")


def host() -> Platform:
    return host_platform()


# -- changing values: of the predicate (as data) and of the statement (as signed bytes) ----------------------


def _walk(doc: Any, path: str) -> tuple[Any, Any]:
    """The container and key that a dotted path (list indices as numbers) names."""
    *parents, last = path.split(".")
    target = doc
    for part in parents:
        target = target[int(part)] if isinstance(target, list) else target[part]
    return target, int(last) if isinstance(target, list) else last


def put(path: str, value: Any) -> PredicateEdit:
    """Set one predicate field (``value`` may be a function of the old value)."""

    def apply(doc: dict[str, Any]) -> None:
        target, key = _walk(doc, path)
        target[key] = value(target[key]) if callable(value) else value

    return apply


def puts(*edits: PredicateEdit) -> PredicateEdit:
    def apply(doc: dict[str, Any]) -> None:
        for edit in edits:
            edit(doc)

    return apply


def at(path: str, value: Any) -> BytesEdit:
    """Set one field of the signed statement (from its root), for values no model accepts; RFC 8785 again."""

    def change(payload: bytes) -> bytes:
        doc = json.loads(payload)
        put(path, value)(doc)
        return canonical_bytes(doc)

    return change


def sub(old: bytes, new: bytes) -> BytesEdit:
    def change(payload: bytes) -> bytes:
        assert old in payload, old
        return payload.replace(old, new, 1)

    return change


def off_by_one(sha: str) -> str:
    """The same commit id with its last hex digit changed: still a well-formed SHA."""
    return sha[:-1] + "0123456789abcdef"[("0123456789abcdef".index(sha[-1]) + 1) % 16]


def abbreviated(sha: str) -> str:
    return sha[:12]


def nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


# -- re-binding: the aggregate re-signed over the platform files as they are now ----------------------------


def rebind(ev: Evidence) -> None:
    ev.platforms = [replace(w, envelope=w.path.read_bytes()) for w in ev.platforms if w.path.exists()]
    ev.write_aggregate()


def hostile_statement(ev: Evidence, platform: Platform, change: BytesEdit) -> None:
    """Replace ``platform``'s statement by one whose signed payload bytes are ``change``d; re-bind the aggregate."""
    clean = next(w for w in ev.platforms if w.spec.platform == platform)
    hostile = ev.write_platform(replace(clean.spec, payload=change))
    # The aggregate names the artifact the clean predicate describes and the hostile envelope's digest.
    ev.platforms = [replace(w, predicate=clean.predicate) if w is hostile else w for w in ev.platforms]
    ev.write_aggregate()


def platform_file(ev: Evidence, file: str) -> Path:
    if file == "aggregate":
        assert ev.aggregate_path is not None
        return ev.aggregate_path
    return ev.platform_file(host())


# -- builders ------------------------------------------------------------------------------------------------


def one(edit: PredicateEdit, **kwargs: Any) -> Build:
    """A host-platform chain whose one statement gets ``edit``."""

    def build(tmp_path: Path) -> list[str]:
        return make_evidence(tmp_path, platforms=[PlatformSpec(host(), edit=edit)], **kwargs).verify_argv()

    return build


def on(platform: Platform, edit: PredicateEdit, **kwargs: Any) -> Build:
    """A one-platform chain for ``platform`` (required by the policy) whose statement gets ``edit``."""

    def build(tmp_path: Path) -> list[str]:
        return make_evidence(tmp_path, platforms=[PlatformSpec(platform, edit=edit)], **kwargs).verify_argv()

    return build


def in_macos_of_three(edit: PredicateEdit) -> Build:
    """Three platforms required; only the macOS statement gets ``edit``."""

    def build(tmp_path: Path) -> list[str]:
        specs = [PlatformSpec("linux"), PlatformSpec("macos", edit=edit), PlatformSpec("windows")]
        return make_evidence(tmp_path, platforms=specs).verify_argv()

    return build


def three(*specs: PlatformSpec, required: list[str] | None = None) -> Build:
    def build(tmp_path: Path) -> list[str]:
        return make_evidence(tmp_path, platforms=list(specs), required=required).verify_argv()

    return build


def payload(change: BytesEdit, platform: Platform | None = None) -> Build:
    """A one-platform chain whose signed payload bytes are ``change``d, signed and bound by the aggregate."""

    def build(tmp_path: Path) -> list[str]:
        ev = make_evidence(tmp_path, platforms=[platform or host()])
        hostile_statement(ev, platform or host(), change)
        return ev.verify_argv()

    return build


def aggregate_edit(edit: PredicateEdit, platforms: tuple[Platform, ...] | None = None) -> Build:
    """The aggregate statement (as data, still a valid statement) changed and signed by the aggregate key."""

    def build(tmp_path: Path) -> list[str]:
        return make_evidence(tmp_path, platforms=platforms and list(platforms), aggregate_edit=edit).verify_argv()

    return build


def aggregate_run(field: str, value: Any) -> Build:
    return aggregate_edit(lambda s: s["predicate"]["run"].update({field: value}))


def aggregate_payload(change: BytesEdit) -> Build:
    """The aggregate's signed payload bytes changed (for values no model accepts) and signed by the aggregate key."""

    def build(tmp_path: Path) -> list[str]:
        return make_evidence(tmp_path, aggregate_payload=change).verify_argv()

    return build


def file_bytes(change: BytesEdit, file: str = "platform") -> Build:
    """A statement file's bytes changed after signing (the envelope itself); a platform file is re-bound."""

    def build(tmp_path: Path) -> list[str]:
        ev = make_evidence(tmp_path)
        path = platform_file(ev, file)
        path.write_bytes(change(path.read_bytes()))
        if file != "aggregate":
            rebind(ev)
        return ev.verify_argv()

    return build


def replaced(content: bytes, file: str = "platform") -> Build:
    return file_bytes(lambda _: content, file)


def truncated(file: str) -> Build:
    return file_bytes(lambda data: data[: len(data) // 2], file)


def oversized(file: str = "platform", *, limit: int = 1048576) -> Build:
    # Still valid JSON: only the size is wrong, and it must be refused before parsing.
    return file_bytes(lambda data: data + b" " * (limit + 1 - len(data)), file)


def hundred_megabytes(file: str) -> Build:
    """The statement file grown (sparsely) to 100 MB: refused on its size, without being read whole."""

    def build(tmp_path: Path) -> list[str]:
        ev = make_evidence(tmp_path)
        with platform_file(ev, file).open("r+b") as handle:
            handle.truncate(HUNDRED_MB)
        return ev.verify_argv()

    return build


def envelope_edit(edit: Callable[[Evidence, dict[str, Any], bytes], None], file: str = "platform") -> Build:
    """The envelope (as data) changed by ``edit(ev, envelope, payload)``, written as RFC 8785 JSON."""

    def build(tmp_path: Path) -> list[str]:
        ev = make_evidence(tmp_path)
        path = platform_file(ev, file)
        envelope = json.loads(path.read_bytes())
        edit(ev, envelope, base64.b64decode(envelope["payload"]))
        path.write_bytes(canonical_bytes(envelope))
        if file != "aggregate":
            rebind(ev)
        return ev.verify_argv()

    return build


def dsse_sig(key: Any, payload: bytes, *, payload_type: str = IN_TOTO_PAYLOAD_TYPE,
             keyid: str | None = None) -> dict[str, str]:
    """One DSSE signature entry: ``key``'s signature over PAE(payload_type, payload), under ``keyid``."""
    return {"keyid": keyid or keyid_of(key.public_key()),
            "sig": base64.b64encode(key.sign(pae(payload_type, payload))).decode("ascii")}


def signatures(make: Callable[[Evidence, bytes, list[dict[str, str]]], list[dict[str, str]]],
               file: str = "platform") -> Build:
    """The envelope's signature list replaced by ``make(ev, payload, current)``."""

    def edit(ev: Evidence, envelope: dict[str, Any], payload: bytes) -> None:
        envelope["signatures"] = make(ev, payload, envelope["signatures"])

    return envelope_edit(edit, file)


def aggregate_signature(ev: Evidence) -> dict[str, str]:
    assert ev.aggregate_path is not None
    return dict(json.loads(ev.aggregate_path.read_bytes())["signatures"][0])


def platform_signature(ev: Evidence) -> dict[str, str]:
    return dict(json.loads(ev.platform_file(host()).read_bytes())["signatures"][0])


def signed_as(payload_type: str, *, declared: str | None = None) -> Build:
    """The platform payload signed under PAE(``payload_type``); the envelope declares ``declared`` (default: same)."""

    def edit(ev: Evidence, envelope: dict[str, Any], payload: bytes) -> None:
        envelope["payloadType"] = payload_type if declared is None else declared
        envelope["signatures"] = [dsse_sig(ev.keys.platform, payload, payload_type=payload_type)]

    return envelope_edit(edit)


# -- builders carried over from tests/unit/test_consumer_rejections.py -------------------------------------


def flip(path: Path, offset: int, mask: int = 0x01) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= mask
    path.write_bytes(bytes(data))


def artifact_byte_flipped(tmp_path: Path) -> list[str]:
    ev = make_evidence(tmp_path)
    flip(ev.artifact_paths[0], 100)
    return ev.verify_argv()


def artifact_unknown_file(tmp_path: Path) -> list[str]:
    ev = make_evidence(tmp_path)
    stranger = tmp_path / "something-else.tar.gz"
    stranger.write_bytes(b"not the artifact")
    return ev.verify_argv(artifacts=[*ev.artifact_paths, stranger])


def artifact_not_presented(tmp_path: Path) -> list[str]:
    return make_evidence(tmp_path).verify_argv(artifacts=[])


def artifact_path_absent(tmp_path: Path) -> list[str]:
    ev = make_evidence(tmp_path)
    return ev.verify_argv(artifacts=[ev.artifacts_dir / "skillhost-gone.tar.gz"])


def candidate_other_sha(tmp_path: Path) -> list[str]:
    return make_evidence(tmp_path).verify_argv("--sha", OTHER_SHA)


def platform_removed(platform: Platform) -> Build:
    def build(tmp_path: Path) -> list[str]:
        ev = make_evidence(tmp_path, platforms=list(THREE))
        ev.platform_file(platform).unlink()
        rebind(ev)
        return ev.verify_argv()

    return build


def signed_by(choice: str, *, aggregate: bool) -> Build:
    def build(tmp_path: Path) -> list[str]:
        if aggregate:
            return make_evidence(tmp_path, aggregate_key=choice).verify_argv()  # type: ignore[arg-type]
        return make_evidence(tmp_path, platforms=[PlatformSpec(host(), key=choice)]).verify_argv()  # type: ignore[arg-type]

    return build


def aggregate_renamed_as_platform(tmp_path: Path) -> list[str]:
    ev = make_evidence(tmp_path)
    assert ev.aggregate_path is not None
    shutil.copyfile(ev.aggregate_path, ev.platform_file(host()))
    return ev.verify_argv()


def platform_renamed_as_aggregate(tmp_path: Path) -> list[str]:
    ev = make_evidence(tmp_path)
    assert ev.aggregate_path is not None
    shutil.copyfile(ev.platform_file(host()), ev.aggregate_path)
    return ev.verify_argv()


def aggregate_payload_under_platform_key(tmp_path: Path) -> list[str]:
    ev = make_evidence(tmp_path)
    ev.platform_file(host()).write_bytes(sign_envelope(ev.aggregate_payload(), ev.keys.platform))
    rebind(ev)
    return ev.verify_argv()


def empty_folder(tmp_path: Path) -> list[str]:
    ev = make_evidence(tmp_path)
    for path in ev.evidence_dir.iterdir():
        path.unlink()
    return ev.verify_argv()


def extra(make: Callable[[Path], object]) -> Build:
    def build(tmp_path: Path) -> list[str]:
        ev = make_evidence(tmp_path)
        make(ev.evidence_dir)
        return ev.verify_argv()

    return build


def aggregate_missing(tmp_path: Path) -> list[str]:
    return make_evidence(tmp_path, aggregate=False).verify_argv()


def aggregate_over_subset(tmp_path: Path) -> list[str]:
    ev = make_evidence(tmp_path, platforms=list(THREE), aggregate=False)
    ev.write_aggregate(over=ev.platforms[:2])
    return ev.verify_argv()


def statement_replaced_after_aggregate(tmp_path: Path) -> list[str]:
    ev = make_evidence(tmp_path)
    # Same content, signed again later: other bytes than the aggregate bound (deliberately not re-bound).
    ev.write_platform(PlatformSpec(host(), edit=lambda p: p.update(produced_at="2026-01-02T00:00:00Z")))
    return ev.verify_argv()


def aggregate_for_other_platforms(tmp_path: Path) -> list[str]:
    ev = make_evidence(tmp_path, aggregate=False)
    ev.write_aggregate(required=list(THREE))
    return ev.verify_argv()


def aggregate_from_other_chain(tmp_path: Path) -> list[str]:
    ev = make_evidence(tmp_path / "a")
    other = make_evidence(tmp_path / "b")
    assert other.aggregate_path is not None
    assert ev.aggregate_path is not None
    shutil.copyfile(other.aggregate_path, ev.aggregate_path)
    # The other chain's aggregate key is not in this keyring: untrusted before anything else.
    return ev.verify_argv()


def aggregate_under_platform_pattern(tmp_path: Path) -> list[str]:
    # A second aggregate under a name the platform pattern accepts must be read as a platform statement
    # (and refused for its signer), never counted as the aggregate.
    ev = make_evidence(tmp_path)
    assert ev.aggregate_path is not None
    shutil.copyfile(ev.aggregate_path, ev.evidence_dir / "platform-aggregate.dsse.json")
    return ev.verify_argv()


def dirty_tree(tmp_path: Path) -> list[str]:
    ev = make_evidence(tmp_path, require_clean=True,
                       platforms=[PlatformSpec(host(), edit=lambda p: p["source_gate"].update(worktree_clean=False))])
    return ev.verify_argv()


def step(step_id: str, **changes: Any) -> PredicateEdit:
    def apply(pred: dict[str, Any]) -> None:
        for entry in pred["journey"]["steps"]:
            if entry["id"] == step_id:
                entry.update(changes)

    return apply


def drop_step(step_id: str) -> PredicateEdit:
    def apply(pred: dict[str, Any]) -> None:
        pred["journey"]["steps"] = [s for s in pred["journey"]["steps"] if s["id"] != step_id]

    return apply


def repeat_step(step_id: str, **changes: Any) -> PredicateEdit:
    """The step reported twice: a changed copy beside the original passing one."""

    def apply(pred: dict[str, Any]) -> None:
        original = next(s for s in pred["journey"]["steps"] if s["id"] == step_id)
        pred["journey"]["steps"].append({**original, **changes})

    return apply


def check(check_name: str, /, **changes: Any) -> PredicateEdit:
    """The probe's named check ``check_name`` reported with ``changes`` (``passed=False``, another ``name``)."""

    def apply(pred: dict[str, Any]) -> None:
        for entry in pred["launch_probe"]["report"]["checks"]:
            if entry["name"] == check_name:
                entry.update(changes)

    return apply


def drop_check(name: str) -> PredicateEdit:
    def apply(pred: dict[str, Any]) -> None:
        report = pred["launch_probe"]["report"]
        report["checks"] = [c for c in report["checks"] if c["name"] != name]

    return apply


def _section(pred: dict[str, Any], section: str) -> dict[str, Any]:
    for part in section.split("."):
        pred = pred[part]
    return pred


def layer_off(section: str, name: str, *, applied: bool = False) -> PredicateEdit:
    """The layer ``name`` of ``section``'s ``isolation_layers`` reported with ``applied``."""

    def apply(pred: dict[str, Any]) -> None:
        for entry in _section(pred, section)["isolation_layers"]:
            if entry["name"] == name:
                entry["applied"] = applied

    return apply


def layer_drop(section: str, name: str) -> PredicateEdit:
    def apply(pred: dict[str, Any]) -> None:
        target = _section(pred, section)
        target["isolation_layers"] = [e for e in target["isolation_layers"] if e["name"] != name]

    return apply


def layer_twice(section: str) -> PredicateEdit:
    """The first layer reported a second time, not applied: a report that cannot be read one way."""

    def apply(pred: dict[str, Any]) -> None:
        layers = _section(pred, section)["isolation_layers"]
        layers.append({**layers[0], "applied": False})

    return apply


def set_(section: str, **changes: Any) -> PredicateEdit:
    def apply(pred: dict[str, Any]) -> None:
        target = pred
        for part in section.split("."):
            target = target[part]
        target.update(changes)

    return apply


def invoked(argv_of: Callable[[Evidence, Path], list[str]]) -> Build:
    """The factory's chain, run with the arguments ``argv_of(ev, tmp_path)`` returns (after any change it makes)."""

    def build(tmp_path: Path) -> list[str]:
        return argv_of(make_evidence(tmp_path), tmp_path)

    return build


def policy_replaced(text: str) -> Callable[[Evidence, Path], list[str]]:
    def argv(ev: Evidence, tmp_path: Path) -> list[str]:
        ev.policy_path.write_text(text, encoding="utf-8")
        return ev.verify_argv()

    return argv


def keyring_removed(ev: Evidence, tmp_path: Path) -> list[str]:
    ev.keys.keyring.unlink()
    return ev.verify_argv()


def subject(name: str, digest: str) -> Build:
    from desktop_qualify.evidence_schemas import DigestSet, Subject

    def build(tmp_path: Path) -> list[str]:
        spec = PlatformSpec(host(), subject=Subject(name=name, digest=DigestSet(sha256=digest)))
        return make_evidence(tmp_path, platforms=[spec]).verify_argv()

    return build


# -- builders for the new rows ----------------------------------------------------------------------------


def named(file_name: str, platform: Platform | None = None, *, required: list[str] | None = None) -> Build:
    """The statement for ``platform`` (default: the host) written under another file name."""

    def build(tmp_path: Path) -> list[str]:
        spec = PlatformSpec(platform or host(), file_name=file_name)
        return make_evidence(tmp_path, platforms=[spec], required=required).verify_argv()

    return build


def platforms_swapped(tmp_path: Path) -> list[str]:
    """Three platforms; the linux and macOS statements each under the other's file name."""
    specs = [PlatformSpec("linux", file_name="platform-macos.dsse.json"),
             PlatformSpec("macos", file_name="platform-linux.dsse.json"), PlatformSpec("windows")]
    return make_evidence(tmp_path, platforms=specs).verify_argv()


def all_platforms_removed(tmp_path: Path) -> list[str]:
    ev = make_evidence(tmp_path, platforms=list(THREE))
    for platform in THREE:
        ev.platform_file(platform).unlink()
    return ev.verify_argv()


def statement_from_other_chain(tmp_path: Path) -> list[str]:
    """The platform statement of another make_evidence chain (other keys), bound by this chain's aggregate."""
    ev = make_evidence(tmp_path / "a")
    other = make_evidence(tmp_path / "b")
    shutil.copyfile(other.platform_file(host()), ev.platform_file(host()))
    rebind(ev)
    return ev.verify_argv()


def statement_of_older_run(tmp_path: Path) -> list[str]:
    """Same keys: the windows statement of an older run beside this run's linux and macOS statements."""
    specs = [PlatformSpec("linux"), PlatformSpec("macos"),
             PlatformSpec("windows", run_id="local-20251231T000000-00000000")]
    return make_evidence(tmp_path, platforms=specs).verify_argv()


def whole_older_run_under_new_aggregate(tmp_path: Path) -> list[str]:
    """An older run's statement (same keys), under an aggregate signed for the newer run."""
    ev = make_evidence(tmp_path, platforms=[PlatformSpec(host(), run_id="local-20251231T000000-00000000")],
                       aggregate_edit=lambda s: s["predicate"]["run"].update(run_id="local-20260101T000000-0123abcd"))
    return ev.verify_argv()


def artifact_of_older_build(tmp_path: Path) -> list[str]:
    """The candidate file is the artifact of an older build (another commit), under this build's file name."""
    ev = make_evidence(tmp_path)
    (current,) = ev.artifact_paths
    older = make_evidence(tmp_path / "older", sha=OTHER_SHA)
    older_bytes = older.artifact_paths[0].read_bytes()
    current.write_bytes(older_bytes)
    return ev.verify_argv()


def artifact_of_older_build_presented(tmp_path: Path) -> list[str]:
    """The older build's artifact presented as it is (its own name), instead of this build's."""
    ev = make_evidence(tmp_path)
    older = make_evidence(tmp_path / "older", sha=OTHER_SHA)
    return ev.verify_argv(artifacts=older.artifact_paths)


def aggregate_lists_failed_platform(tmp_path: Path) -> list[str]:
    """Three platforms, the aggregate binds all of them, one of them did not qualify (install failed)."""
    specs = [PlatformSpec("linux"), PlatformSpec("macos"),
             PlatformSpec("windows", edit=set_("install", passed=False, failure="unpack refused: hard link"))]
    return make_evidence(tmp_path, platforms=specs).verify_argv()


def aggregate_extra_entry(tmp_path: Path) -> list[str]:
    """The aggregate lists the real statement and a second, unqualified artifact (another digest)."""

    def edit(s: dict[str, Any]) -> None:
        entry = dict(s["predicate"]["platforms"][0])
        entry["artifact"] = {**entry["artifact"], "name": "skillhost-unqualified.tar.gz", "sha256": "5" * 64}
        entry["platform"] = "macos"
        s["predicate"]["platforms"].append(entry)
        s["subject"].append({"name": "skillhost-unqualified.tar.gz", "digest": {"sha256": "5" * 64}})

    return make_evidence(tmp_path, aggregate_edit=edit).verify_argv()


def steps_of(count: int) -> list[dict[str, Any]]:
    return [{"id": f"s-{i}", "observed": "allow", "code": None, "errno": None, "layer": None, "detail": "",
             "passed": True}
            for i in range(count)]


def subjects_of(count: int) -> Callable[[list[dict[str, Any]]], list[dict[str, Any]]]:
    return lambda current: [*current, *({"name": f"extra-{i}.tar.gz", "digest": {"sha256": "6" * 64}}
                                         for i in range(count - len(current)))]


def observations_of(count: int) -> Callable[[list[dict[str, Any]]], list[dict[str, Any]]]:
    return lambda current: [*current, *({**current[0], "source": f"source {i}"} for i in range(count - len(current)))]


def tools_of(count: int) -> Callable[[dict[str, str]], dict[str, str]]:
    return lambda current: {**current, **{f"tool-{i}": "1.0" for i in range(count - len(current))}}


def padded_payload(size: int) -> BytesEdit:
    """The statement bytes grown to ``size`` with insignificant whitespace: still the same, valid JSON."""
    return lambda payload: payload[:-1] + b" " * (size - len(payload)) + b"}"


def big_payload_under_large_limit(tmp_path: Path) -> list[str]:
    """A policy allowing 4 MiB files; a signed statement just over the 1 MiB payload bound, in a 1.4 MB file."""
    ev = make_evidence(tmp_path, max_statement_bytes=4 * 1024 * 1024)
    hostile_statement(ev, host(), padded_payload(1024 * 1024 + 1))
    return ev.verify_argv()


def small_limit(tmp_path: Path) -> list[str]:
    """A policy whose statement limit (4096 bytes) the honest statements exceed."""
    return make_evidence(tmp_path, max_statement_bytes=4096).verify_argv()


def deep_value(depth: int) -> BytesEdit:
    """A field whose value nests so that the whole document is ``depth`` levels deep."""
    return sub(b'{"_type"', b'{"deep":' + nested(depth - 1) + b',"_type"')


def deep_envelope(depth: int) -> BytesEdit:
    return sub(b'{"payload"', b'{"deep":' + nested(depth - 1) + b',"payload"')


def artifact_signed_by(choice: str, *, over: str | None = None) -> Build:
    """The artifact signature (and its key id) made by another key, or over another digest."""

    def build(tmp_path: Path) -> list[str]:
        ev = make_evidence(tmp_path)
        key = ev.keys.pick(choice)  # type: ignore[arg-type]
        predicate = ev.platforms[0].predicate
        assert predicate is not None
        signed = over or predicate.build.artifact.sha256
        ev.write_platform(PlatformSpec(host(), edit=set_("signature", keyid=keyid_of(key.public_key()),
                                                          signature=sign_artifact_digest(signed, key))))
        rebind(ev)
        return ev.verify_argv()

    return build


# -- the SLSA provenance beside each platform statement -------------------------------------------------------


def provenance(**spec: Any) -> Build:
    """A host-platform chain whose provenance is spoiled by ``PlatformSpec`` knobs (``provenance``,
    ``provenance_key``, ``provenance_edit``), signed and bound by the aggregate as written."""

    def build(tmp_path: Path) -> list[str]:
        return make_evidence(tmp_path, platforms=[PlatformSpec(host(), **spec)]).verify_argv()

    return build


def provenance_put(path: str, value: Any) -> Build:
    """One field of the provenance statement (dotted, from its root) changed, re-signed by the platform key."""
    return provenance(provenance_edit=put(path, value))


def provenance_of_another_artifact(tmp_path: Path) -> list[str]:
    """The provenance names another artifact this chain built (another commit's), not the statement's."""
    ev = make_evidence(tmp_path / "other", sha=OTHER_SHA)
    other = ev.platforms[0].predicate
    assert other is not None
    artifact = other.build.artifact
    return provenance(provenance_edit=put("subject", [{"name": artifact.name,
                                                       "digest": {"sha256": artifact.sha256}}]))(tmp_path)


def provenance_kept_after_statement_resigned(tmp_path: Path) -> list[str]:
    """A holder of every key re-signs the platform statement with an informational change and re-binds the
    aggregate, but keeps the provenance of the statement as it was: it names the old statement's digest."""
    ev = make_evidence(tmp_path)
    clean = ev.platforms[0]
    ev.write_platform(replace(clean.spec, provenance=False,
                              edit=lambda p: p.update(produced_at="2026-01-02T00:00:00Z")))
    ev.platforms = [replace(w, provenance=clean.provenance) for w in ev.platforms]
    ev.write_aggregate()
    return ev.verify_argv()


def provenance_is_the_platform_statement(tmp_path: Path) -> list[str]:
    """The platform statement's own envelope under the provenance's name, bound by the aggregate as such."""
    ev = make_evidence(tmp_path)
    shutil.copyfile(ev.platform_file(host()), ev.provenance_file(host()))
    ev.platforms = [replace(w, provenance=w.envelope) for w in ev.platforms]
    ev.write_aggregate()
    return ev.verify_argv()


def provenance_payload(change: BytesEdit) -> Build:
    """The provenance's signed bytes changed (for values no model accepts), re-signed by the platform key."""

    def build(tmp_path: Path) -> list[str]:
        ev = make_evidence(tmp_path)
        envelope = ev.provenance_file(host()).read_bytes()
        payload = change(base64.b64decode(json.loads(envelope)["payload"]))
        signed = sign_envelope(payload, ev.keys.platform)
        ev.provenance_file(host()).write_bytes(signed)
        ev.platforms = [replace(w, provenance=signed) for w in ev.platforms]
        ev.write_aggregate()
        return ev.verify_argv()

    return build


def at_commit_with_checkout(edit: PredicateEdit) -> Build:
    """Single-platform evidence of a real commit, the policy inside its checkout, with ``edit`` re-signed.

    The release gate recomputes the source digest from ``git archive`` of that commit in the checkout.
    """

    def build(tmp_path: Path) -> list[str]:
        ev = make_evidence(tmp_path, committed_layout=True)
        at_real_commit(ev, edit)
        return ev.verify_argv()

    return build


def provenance_for_platform_not_required(tmp_path: Path) -> list[str]:
    """A second, valid provenance (another platform's) beside this run's: it has no platform statement."""
    ev = make_evidence(tmp_path)
    other: Platform = "windows" if host() != "windows" else "linux"
    spare = make_evidence(tmp_path / "spare", platforms=[other], required=[other])
    shutil.copyfile(spare.provenance_file(other), ev.provenance_file(other))
    return ev.verify_argv()


def provenance_signed_by_second_platform_key(tmp_path: Path) -> list[str]:
    """A second key the keyring trusts for the platform role signs the provenance, which names it as builder:
    trusted, but not the key that signed the platform statement."""
    ev = make_evidence(tmp_path)
    second = Ed25519PrivateKey.generate()
    add_to_keyring(ev.keys.keyring, "second-platform", second.public_key(), ["platform"])
    document = json.loads(base64.b64decode(json.loads(ev.provenance_file(host()).read_bytes())["payload"]))
    document["predicate"]["runDetails"]["builder"]["id"] = local_builder_id(keyid_of(second.public_key()))
    signed = sign_envelope(canonical_bytes(document), second)
    ev.provenance_file(host()).write_bytes(signed)
    ev.platforms = [replace(w, provenance=signed) for w in ev.platforms]
    ev.write_aggregate()
    return ev.verify_argv()
def reproduced_as(*, first: str | None = None, second: str | None = None, reproduced: bool = True) -> PredicateEdit:
    """A second build in the build record: both digests the artifact's unless given, and its ``reproduced`` flag."""

    def apply(pred: dict[str, Any]) -> None:
        digest = pred["build"]["artifact"]["sha256"]
        pred["build"]["reproduction"] = {
            "first_sha256": first or digest, "second_sha256": second or digest, "second_size": 1,
            "variations": [{"name": "umask", "first": "0022", "second": "0002"},
                           {"name": "locale", "first": "C.UTF-8", "second": "fr_CH.UTF-8"}],
            "reproduced": reproduced, "duration_ms": 1}

    return apply


def reproducible_required(edit: PredicateEdit | None) -> Build:
    """The host chain under a policy whose [reproducible] requires the host's build to reproduce."""

    def build(tmp_path: Path) -> list[str]:
        ev = make_evidence(tmp_path, platforms=[PlatformSpec(host(), edit=edit)])
        with ev.policy_path.open("a", encoding="utf-8") as policy:
            policy.write('\n[reproducible]\nrequired = ["host"]\n')
        ev.rebind_provenance()  # the provenance and the aggregate are bound to the policy as it now is
        ev.write_aggregate()
        return ev.verify_argv()

    return build


# -- confinement of app code: a passing record for each stage that ran, under a policy with [confinement] --------


def confinement_required(edit: PredicateEdit | None) -> Build:
    """The host chain whose statement records a passing confinement for each app stage, spoiled by ``edit``,
    under a policy whose [confinement] requires policies/release.toml's layers on every platform."""

    def build(tmp_path: Path) -> list[str]:
        ev = make_evidence(tmp_path, platforms=[PlatformSpec(host(), edit=confined(edit))])
        require_confinement(ev)  # the provenance and the aggregate are bound to the policy as it now is
        return ev.verify_argv()

    return build


def stage_entry(stage: str, **changes: Any) -> PredicateEdit:
    """Change one app stage's confinement record (``changes`` values may be functions of the old value)."""

    def apply(pred: dict[str, Any]) -> None:
        for record in pred["confinement"]:
            if record["stage"] == stage:
                for key, value in changes.items():
                    record[key] = value(record[key]) if callable(value) else value

    return apply


def without_layer(layer: str) -> Callable[[list[str]], list[str]]:
    return lambda layers: [name for name in layers if name != layer]


def first_layer_removed(layers: list[str]) -> list[str]:
    return layers[1:]


# -- a package's own signature, as its installer checked it (issue 35) ---------------------------------------


def package_signature(platform: Platform, check: dict[str, Any] | None) -> Build:
    """``platform`` installs a package that checks its own signature (macOS ``.pkg``, Windows ``.msi``) under a
    policy that accepts only signed builds there; the install record's check is ``check`` (None: none recorded).

    The artifact keeps the factory's archive name, so the build's name check refuses it too: the row is about
    the install's reason, which must be among them.
    """
    kind, tool = ("pkg", "codesign") if platform == "macos" else ("msi", "signtool")

    def edit(pred: dict[str, Any]) -> None:
        pred["install"].update(method=kind, package_signature=check)
        pred["signature"].update(platform_signing_state="signed", platform_signing_tool=tool)

    def build(tmp_path: Path) -> list[str]:
        ev = make_evidence(tmp_path, platforms=[PlatformSpec(platform, edit=edit)], signing={platform: ["signed"]})
        text = ev.policy_path.read_text(encoding="utf-8")
        archive = f'{platform} = {{ kind = "archive"'
        assert archive in text
        ev.policy_path.write_text(text.replace(archive, f'{platform} = {{ kind = "{kind}"'), encoding="utf-8")
        ev.rebind_provenance()
        ev.write_aggregate()
        return ev.verify_argv()

    return build
