"""Valid signed local evidence, built without building the app, and the knobs to spoil it.

The factory writes what a real local chain leaves behind (a keyring and two
Ed25519 keys, a policy naming them by absolute path, one fake artifact per
platform, ``platform-<p>.dsse.json`` statements and ``aggregate.dsse.json``),
with every record filled consistently so that the untouched evidence is
QUALIFIED. A test then changes exactly one thing and expects exactly one code.

Three levels of change, from the most to the least structured:

* ``PlatformSpec`` fields: another SHA, run id or attempt, another signing key,
  another file name (a duplicate), another subject;
* ``PlatformSpec.edit``: a function that edits the predicate as JSON data
  (``pred["install"]["passed"] = False``) before it is re-validated and signed;
* ``PlatformSpec.payload``: a function on the exact payload bytes that get
  signed, for inputs no model can express (NaN, duplicate keys, another
  predicate type).

Beside each platform statement goes its SLSA provenance, built as
``producer/_emit.py`` builds it; ``PlatformSpec.provenance`` (None: none
written), ``provenance_key`` and ``provenance_edit`` spoil it.

The aggregate is built the way ``aggregate/_aggregate.py`` builds it, but over
whatever platform statements the test made, so that a consumer test can see
one platform defect without the aggregate job refusing first.
"""

from __future__ import annotations

import base64
import datetime as _dt
import hashlib
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from desktop_qualify.evidence_schemas import (
    AggregatedPlatform,
    AggregatePredicate,
    AggregateStatement,
    DigestSet,
    Platform,
    PlatformPredicate,
    PlatformStatement,
    ProvenanceStatement,
    Subject,
    canonical_bytes,
    local_builder_id,
    provenance_statement,
)
from desktop_qualify.qualify_policy import Policy, host_platform, load_policy
from desktop_qualify.qualify_trust import add_to_keyring, generate_private_key
from desktop_qualify.qualify_trust._envelope import sign_artifact_digest, sign_envelope
from desktop_qualify.qualify_trust._keys import keyid_of

DEFAULT_SHA = "3b18e512dba79e4c8300dd08aeb37f8e728b8dad"
OTHER_SHA = "c0ffee0000000000000000000000000000000001"
DEFAULT_RUN_ID = "local-20260101T000000-0123abcd"
REPOSITORY = "local/desktop-qualify"
WORKFLOW = ".github/workflows/qualify.yml"
MAIN_REF = "refs/heads/main"
DEFAULT_STEPS: tuple[str, ...] = (
    "catalog-verified",
    "bundled-skill-runs",
    "external-signed-runs-in-worker",
    "external-unsigned-rejected",
    "kernel-refuses-exec-shell",
)
# What each default step must show: the first three are allow paths, then a
# fail-closed path with the skill host's code and a kernel-refusal step with its
# errno. A step named in a test that is not here is an allow path.
REJECT_CODES = {"external-unsigned-rejected": "CC_SKILL_SIGNATURE_MISSING",
                "kernel-refuses-exec-shell": "CC_SKILL_SANDBOX_DENIED"}
# A kernel-refusal step names the errno names it accepts in the policy.
KERNEL_ERRNO_CHOICES = {"kernel-refuses-exec-shell": ("EPERM", "EACCES")}
# The layer the policy requires to refuse each kernel-refusal step, per platform (policies/*.toml's), and what
# a passing step records: that layer, and the errno that layer refuses with (REFUSES_WITH).
KERNEL_LAYERS = {"kernel-refuses-exec-shell": {"linux": "seccomp", "macos": "sandbox-exec",
                                               "windows": "no-child-process"}}
REFUSES_WITH = {"landlock-fs": ["EACCES"], "landlock-net": ["EACCES"], "seccomp": ["EPERM"],
                "sandbox-exec": ["EACCES", "EPERM"], "appcontainer": ["EACCES"], "no-child-process": ["EACCES"],
                "restricted-token": ["EACCES"]}


def kernel_errno(step: str, platform: str) -> str | None:
    """The errno a passing kernel step records on ``platform``: one its policy accepts and its layer gives."""
    if step not in KERNEL_ERRNO_CHOICES:
        return None
    gives = REFUSES_WITH[KERNEL_LAYERS[step][platform]]
    return next(e for e in KERNEL_ERRNO_CHOICES[step] if e in gives)

# The policy's app section (policies/local.toml's): commands as written there, the installer and executable.
BUILD_ARGV = ["{python}", "tools/build_release.py", "--out", "{out}"]
PROBE_ARGV = ["{executable}", "probe", "--record", "{record}"]
JOURNEY_ARGV = ["{executable}", "journey", "--record", "{record}"]
PROBE_CHECKS = ("catalog-verified", "worker-entry-resolvable", "isolation")
EXECUTABLES = {"linux": "skillhost/skillhost", "macos": "skillhost/skillhost", "windows": "skillhost/skillhost.exe"}
OUTPUTS = {"linux": "skillhost-*-linux.tar.gz", "macos": "skillhost-*-macos.tar.gz",
           "windows": "skillhost-*-windows.zip"}
CODE_PATTERN = "^CC_SKILL_[A-Z_]{1,64}$"

# The policy's required sandbox layers per platform (policies/*.toml), and what a passing worker reports:
# every required layer applied, and on Linux one optional layer that this machine could not apply.
ISOLATION = {"linux": ["no-new-privs", "landlock-fs", "landlock-net", "seccomp"], "macos": ["sandbox-exec"],
             "windows": ["job-object", "no-child-process", "appcontainer", "restricted-token"]}


def isolation_layers(platform: str) -> list[dict[str, Any]]:
    layers = [{"name": name, "applied": True, "detail": f"{name} applied"} for name in ISOLATION[platform]]
    if platform == "linux":
        layers.append({"name": "user-net-namespace", "applied": False, "detail": "unshare: EPERM"})
    return layers


KeyChoice = Literal["platform", "aggregate", "stranger"]
PredicateEdit = Callable[[dict[str, Any]], None]
BytesEdit = Callable[[bytes], bytes]


def utc_now() -> str:
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _payload_of(envelope: bytes) -> bytes:
    """The signed statement bytes inside a local DSSE envelope: what an aggregate entry names.

    Hostile rows write platform files that are no envelope at all; their entry then names the raw bytes,
    which no verified statement can match (those rows fail on the statement itself first).
    """
    try:
        return base64.b64decode(json.loads(envelope)["payload"], validate=True)
    except (ValueError, TypeError, KeyError):
        return envelope


@dataclass(frozen=True)
class Keys:
    keyring: Path
    platform_path: Path
    aggregate_path: Path
    platform: Ed25519PrivateKey
    aggregate: Ed25519PrivateKey
    # A valid key that no keyring names.
    stranger: Ed25519PrivateKey

    def pick(self, choice: KeyChoice) -> Ed25519PrivateKey:
        return {"platform": self.platform, "aggregate": self.aggregate, "stranger": self.stranger}[choice]


def make_keys(directory: Path) -> Keys:
    """A keyring with one platform-role and one aggregate-role key, as `qualify keygen` makes it."""
    keyring = directory / "keyring.json"
    platform_path = directory / "keys" / "platform.ed25519.pem"
    aggregate_path = directory / "keys" / "aggregate.ed25519.pem"
    platform = generate_private_key(platform_path)
    aggregate = generate_private_key(aggregate_path)
    add_to_keyring(keyring, "local-platform", platform.public_key(), ["platform"])
    add_to_keyring(keyring, "local-aggregate", aggregate.public_key(), ["aggregate"])
    return Keys(keyring, platform_path, aggregate_path, platform, aggregate, Ed25519PrivateKey.generate())


def _toml_list(values: Sequence[str]) -> str:
    return "[" + ", ".join(json.dumps(v) for v in values) + "]"


def _isolation_section() -> str:
    refusals = "".join(f"{name} = {_toml_list(errnos)}\n" for name, errnos in REFUSES_WITH.items())
    return (f"[isolation]\nlinux = {_toml_list(ISOLATION['linux'])}\nmacos = {_toml_list(ISOLATION['macos'])}\n"
            f"windows = {_toml_list(ISOLATION['windows'])}\n\n[isolation.refuses_with]\n{refusals}")


def app_section(source: str) -> str:
    """policies/local.toml's ``[app]`` section (the reference app), with ``source`` as the app's folder."""
    return f"""[app]
name = "skillhost"
source = {json.dumps(source)}

[app.build]
argv = {_toml_list(BUILD_ARGV)}

[app.build.outputs]
linux = "{OUTPUTS["linux"]}"
macos = "{OUTPUTS["macos"]}"
windows = "{OUTPUTS["windows"]}"

[app.install]
linux = {{ kind = "archive", executable = "{EXECUTABLES["linux"]}" }}
macos = {{ kind = "archive", executable = "{EXECUTABLES["macos"]}" }}
windows = {{ kind = "archive", executable = "{EXECUTABLES["windows"]}" }}

[app.probe]
argv = {_toml_list(PROBE_ARGV)}
require = {_toml_list(PROBE_CHECKS)}

[app.journey]
argv = {_toml_list(JOURNEY_ARGV)}

[app.codes]
pattern = "{CODE_PATTERN}"
"""


def _journey_table(steps: Sequence[str]) -> str:
    """The policy's ``[journey.steps]`` entries: each step with the outcome (and code) it must show."""
    lines = []
    for step in steps:
        code = REJECT_CODES.get(step)
        errno = f", errno = {_toml_list(KERNEL_ERRNO_CHOICES[step])}" if step in KERNEL_ERRNO_CHOICES else ""
        if step in KERNEL_LAYERS:
            errno += ", layer = { " + ", ".join(f'{p} = "{n}"' for p, n in KERNEL_LAYERS[step].items()) + " }"
        lines.append(f'{step} = {{ expect = "reject", code = "{code}"{errno} }}' if code else
                     f'{step} = {{ expect = "allow" }}')
    return "\n".join(lines)


def policy_text(keys: Keys, *, required: Sequence[str] = ("host",), required_steps: Sequence[str] = DEFAULT_STEPS,
                signing: dict[str, Sequence[str]] | None = None, require_clean: bool = False,
                max_statement_bytes: int = 1048576, app_source: Path | None = None,
                relative_to: Path | None = None, app: str | None = None, journey_steps: str | None = None,
                isolation: bool = True) -> str:
    """policies/local.toml's shape, with absolute paths to the temporary keyring and keys.

    ``app`` and ``journey_steps``: another app's ``[app]`` section and ``[journey.steps]`` entries (TOML
    text) instead of the reference app's; ``isolation=False`` leaves ``[isolation]`` out.

    ``relative_to``: the policy's folder; the trust paths are then written relative to it, as a committed
    policy writes them (what a bundle needs: its trust material stands where those paths lead).
    """

    def where(path: Path) -> str:
        return json.dumps(os.path.relpath(path, relative_to) if relative_to is not None else str(path))

    signing = {"linux": ["unsigned"], "macos": ["unsigned"], "windows": ["unsigned"], **(signing or {})}
    return f"""version = 2
name = "local"

[producer]
repository = "{REPOSITORY}"
workflow = "{WORKFLOW}"
ref = "{MAIN_REF}"
allowed_triggers = ["local"]
runner_environment = "local"

[trust]
mode = "ed25519"
keyring = {where(keys.keyring)}
platform_key = {where(keys.platform_path)}
aggregate_key = {where(keys.aggregate_path)}

[source]
require_clean_worktree = {"true" if require_clean else "false"}

{app if app is not None else app_section(str(app_source or keys.keyring.parent))}
[platforms]
required = {_toml_list(required)}

[journey.steps]
{journey_steps if journey_steps is not None else _journey_table(required_steps)}

{_isolation_section() if isolation else ""}
[signing]
linux = {_toml_list(signing["linux"])}
macos = {_toml_list(signing["macos"])}
windows = {_toml_list(signing["windows"])}

[limits]
max_statement_bytes = {max_statement_bytes}
build_timeout_seconds = 1200
probe_timeout_seconds = 60
journey_timeout_seconds = 300
"""


def artifact_name(platform: str, sha: str) -> str:
    suffix = ".zip" if platform == "windows" else ".tar.gz"
    return f"skillhost-{sha[:12]}-{platform}-x86_64{suffix}"


def write_artifact(directory: Path, platform: str, sha: str) -> Path:
    """A stand-in archive: its bytes only need a stable digest, nobody unpacks it."""
    path = directory / artifact_name(platform, sha)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(f"fake {platform} bundle built from {sha}\n".encode() * 64)
    return path


def probe_checks() -> list[dict[str, Any]]:
    """What a passing probe reports: each check the policy requires, passed."""
    return [{"name": name, "passed": True, "detail": "ok"} for name in PROBE_CHECKS]


def _journey_steps(steps: Sequence[str], platform: str) -> list[dict[str, Any]]:
    out = []
    for step in steps:
        code = REJECT_CODES.get(step)
        verdict = "reject" if code else "allow"
        out.append({"id": step, "observed": verdict, "code": code, "errno": kernel_errno(step, platform),
                    "layer": KERNEL_LAYERS[step][platform] if step in KERNEL_LAYERS else None,
                    "detail": f"{step}: as expected", "passed": True})
    return out


def predicate_data(*, platform: Platform, artifact: Path, sha: str, run_id: str, attempt: int,
                   key: Ed25519PrivateKey, required_steps: Sequence[str], worktree_clean: bool = True,
                   ) -> dict[str, Any]:
    """A passing platform predicate as JSON data: every record names the same artifact, commit and key."""
    data = artifact.read_bytes()
    digest = _sha256(data)
    exe_digest = _sha256(b"installed executable of " + data[:32])
    now = utc_now()
    return {
        "version": 2,
        "platform": platform,
        "arch": "x86_64",
        "run": {"mode": "local", "repository": REPOSITORY, "workflow": WORKFLOW, "ref": MAIN_REF, "sha": sha,
                "run_id": run_id, "attempt": attempt, "trigger": "local", "runner_environment": "local"},
        "produced_at": now,
        "source_gate": {
            "kind": "source-gate", "version": 1, "mode": "local", "repository": REPOSITORY, "ref": MAIN_REF,
            "sha": sha, "main_head": sha, "worktree_clean": worktree_clean, "protection": "not-observed",
            "head_matches": True,
            "observations": [{"source": "git rev-parse HEAD", "value": sha, "observed_at": now},
                             {"source": f"git rev-parse {MAIN_REF}", "value": sha, "observed_at": now}],
            "passed": True,
        },
        "build": {
            "kind": "build", "version": 2,
            "artifact": {"name": artifact.name, "size": len(data), "sha256": digest},
            "build_sha": sha, "source_digest": _sha256(b"source of " + sha.encode()), "command": list(BUILD_ARGV),
            "tools": {"python": "3.11.7", "pyinstaller": "6.22.3"}, "started_at": now, "duration_ms": 1000,
            "passed": True,
        },
        "signature": {
            "kind": "signature", "version": 1, "method": "ed25519-detached", "artifact_sha256": digest,
            "keyid": keyid_of(key.public_key()), "signature": sign_artifact_digest(digest, key),
            "readback_verified": True, "platform_signing_tool": "none", "platform_signing_state": "unsigned",
            "passed": True,
        },
        "install": {
            "kind": "install", "version": 2, "artifact_sha256": digest, "method": "archive", "file_count": 3,
            "total_bytes": 4096, "manifest_sha256": _sha256(b"manifest " + data[:32]),
            "executable": EXECUTABLES[platform], "executable_sha256": exe_digest,
            "duration_ms": 20,
            "passed": True, "failure": None,
        },
        "launch_probe": {
            "kind": "launch-probe", "version": 2, "command": list(PROBE_ARGV), "display": "none", "exit_code": 0,
            "timed_out": False, "duration_ms": 100,
            "report": {"app_version": "0.1.0", "build_sha": sha, "platform": platform,
                       "executable_sha256": exe_digest, "checks": probe_checks(),
                       "isolation_layers": isolation_layers(platform)},
            "build_sha_matches": True, "executable_matches_install": True, "stderr_excerpt": "", "passed": True,
        },
        "journey": {
            "kind": "journey", "version": 2, "command": list(JOURNEY_ARGV), "display": "none", "exit_code": 0,
            "timed_out": False, "duration_ms": 900,
            "app_build_sha": sha, "steps": _journey_steps(required_steps, platform),
            "required_steps": list(required_steps), "missing_steps": [], "failed_steps": [],
            "isolation_layers": isolation_layers(platform), "stderr_excerpt": "", "passed": True,
        },
    }


def platform_payload(predicate: PlatformPredicate, *, subject: Subject | None = None) -> bytes:
    """The RFC 8785 statement bytes, built as producer/_emit.py builds them."""
    artifact = predicate.build.artifact
    statement = PlatformStatement(
        type_="https://in-toto.io/Statement/v1",
        subject=[subject or Subject(name=artifact.name, digest=DigestSet(sha256=artifact.sha256))],
        predicateType="https://desktop-qualify.invalid/evidence/platform-qualification/v2",
        predicate=predicate,
    )
    return canonical_bytes(statement)


@dataclass(frozen=True)
class PlatformSpec:
    """One platform statement to write; every field left alone gives a passing statement."""

    platform: Platform
    file_name: str | None = None
    sha: str | None = None
    run_id: str | None = None
    attempt: int = 1
    key: KeyChoice = "platform"
    edit: PredicateEdit | None = None
    payload: BytesEdit | None = None
    subject: Subject | None = None
    # The provenance beside the statement: written (True) or not; signed with which key; edited as JSON data
    # (the whole statement) before it is validated and signed.
    provenance: bool = True
    provenance_key: KeyChoice = "platform"
    provenance_edit: PredicateEdit | None = None


@dataclass(frozen=True)
class WrittenPlatform:
    spec: PlatformSpec
    path: Path
    artifact: Path
    predicate: PlatformPredicate | None  # None when the payload edit made it something else
    envelope: bytes
    provenance: bytes | None = None  # the provenance's envelope, when one was written


@dataclass
class Evidence:
    """A temporary local chain's output: policy, keys, artifacts, statements."""

    root: Path
    keys: Keys
    policy_path: Path
    evidence_dir: Path
    artifacts_dir: Path
    sha: str
    run_id: str
    required_steps: tuple[str, ...]
    platforms: list[WrittenPlatform] = field(default_factory=list)
    aggregate_path: Path | None = None

    @property
    def policy(self) -> Policy:
        return load_policy(self.policy_path)

    @property
    def artifact_paths(self) -> list[Path]:
        seen: list[Path] = []
        for written in self.platforms:
            if written.artifact not in seen:
                seen.append(written.artifact)
        return seen

    def platform_file(self, platform: str) -> Path:
        return self.evidence_dir / f"platform-{platform}.dsse.json"

    def verify_argv(self, *extra: str, artifacts: Sequence[Path] | None = None) -> list[str]:
        """`qualify verify` arguments for this evidence, every artifact presented unless told otherwise."""
        argv = ["verify", "--policy", str(self.policy_path), "--evidence", str(self.evidence_dir)]
        for path in self.artifact_paths if artifacts is None else artifacts:
            argv += ["--artifact", str(path)]
        return [*argv, *extra]

    # -- building blocks a test can call again to add or replace one file --------------------------------

    def write_platform(self, spec: PlatformSpec) -> WrittenPlatform:
        sha = spec.sha or self.sha
        artifact = self.artifacts_dir / artifact_name(spec.platform, sha)
        if not artifact.exists():
            write_artifact(self.artifacts_dir, spec.platform, sha)
        key = self.keys.pick(spec.key)
        data = predicate_data(platform=spec.platform, artifact=artifact, sha=sha, run_id=spec.run_id or self.run_id,
                              attempt=spec.attempt, key=key, required_steps=self.required_steps)
        if spec.edit is not None:
            spec.edit(data)
        predicate = PlatformPredicate.model_validate(data)
        payload = platform_payload(predicate, subject=spec.subject)
        if spec.payload is not None:
            payload = spec.payload(payload)
        envelope = sign_envelope(payload, key)
        path = self.evidence_dir / (spec.file_name or f"platform-{spec.platform}.dsse.json")
        path.write_bytes(envelope)
        provenance = self.write_provenance(spec, predicate, payload, key) \
            if spec.provenance and spec.payload is None else None
        written = WrittenPlatform(spec, path, artifact, predicate if spec.payload is None else None, envelope,
                                  provenance)
        self.platforms = [w for w in self.platforms if w.path != path] + [written]
        return written

    def rebind_provenance(self) -> None:
        """Sign each platform's provenance again under the policy as it now is (it names the policy's digest).

        For a test that edits the policy after the chain was made; the aggregate, which binds both the policy
        and the provenance, must be written again after this.
        """
        rebound = []
        for written in self.platforms:
            if written.provenance is None or written.predicate is None:
                rebound.append(written)
                continue
            key = self.keys.pick(written.spec.key)
            envelope = self.write_provenance(written.spec, written.predicate, _payload_of(written.envelope), key)
            rebound.append(replace(written, provenance=envelope))
        self.platforms = rebound

    def provenance_file(self, platform: str) -> Path:
        return self.evidence_dir / f"provenance-{platform}.dsse.json"

    def provenance_payload(self, spec: PlatformSpec, predicate: PlatformPredicate, payload: bytes,
                           key: Ed25519PrivateKey) -> bytes:
        """The provenance statement's bytes for a platform statement's signed ``payload``, as the producer makes
        them (builder: the signing key; the byproduct: the statement's digest), then ``spec.provenance_edit``."""
        statement = provenance_statement(predicate, statement_name=f"platform-{spec.platform}.dsse.json",
                                         statement_sha256=_sha256(payload), policy_path=self.policy_path.name,
                                         policy_sha256=self.policy.sha256,
                                         builder_id=local_builder_id(keyid_of(key.public_key())))
        if spec.provenance_edit is None:
            return canonical_bytes(statement)
        data = statement.model_dump(mode="json", by_alias=True)
        spec.provenance_edit(data)
        return canonical_bytes(ProvenanceStatement.model_validate(data))

    def write_provenance(self, spec: PlatformSpec, predicate: PlatformPredicate, payload: bytes,
                         key: Ed25519PrivateKey) -> bytes:
        envelope = sign_envelope(self.provenance_payload(spec, predicate, payload, key),
                                 self.keys.pick(spec.provenance_key))
        self.provenance_file(spec.platform).write_bytes(envelope)
        return envelope

    def aggregate_payload(self, *, over: Sequence[WrittenPlatform] | None = None,
                          required: Sequence[Platform] | None = None, edit: PredicateEdit | None = None) -> bytes:
        """The aggregate statement's bytes, built as aggregate/_aggregate.py builds them."""
        chosen = [w for w in (self.platforms if over is None else over) if w.predicate is not None]
        chosen.sort(key=lambda w: w.spec.platform)
        if not chosen:
            raise ValueError("an aggregate needs at least one platform statement with a predicate")
        keyid = keyid_of(self.keys.platform.public_key())
        entries = [
            AggregatedPlatform(platform=w.predicate.platform, artifact=w.predicate.build.artifact,
                               payload_sha256=_sha256(_payload_of(w.envelope)), signer_keyid=keyid,
                               signer_identity="local-platform",
                               provenance_sha256=_sha256(_payload_of(w.provenance or b"")))
            for w in chosen if w.predicate is not None
        ]
        first = chosen[0].predicate
        assert first is not None
        statement = AggregateStatement(
            type_="https://in-toto.io/Statement/v1",
            subject=[Subject(name=e.artifact.name, digest=DigestSet(sha256=e.artifact.sha256)) for e in entries],
            predicateType="https://desktop-qualify.invalid/evidence/aggregate-qualification/v3",
            predicate=AggregatePredicate(
                run=first.run,
                required_platforms=list(self.policy.required_platforms if required is None else required),
                platforms=entries, aggregated_at=utc_now(), policy_sha256=self.policy.sha256),
        )
        if edit is None:
            return canonical_bytes(statement)
        data = statement.model_dump(mode="json", by_alias=True)
        edit(data)
        return canonical_bytes(AggregateStatement.model_validate(data))

    def aggregate_statement_data(self) -> dict[str, Any]:
        """The aggregate statement as JSON data, exactly as ``write_aggregate`` signs it."""
        return AggregateStatement.model_validate_json(self.aggregate_payload()).model_dump(mode="json",
                                                                                            by_alias=True)

    def write_aggregate(self, *, key: KeyChoice = "aggregate", over: Sequence[WrittenPlatform] | None = None,
                        required: Sequence[Platform] | None = None, edit: PredicateEdit | None = None,
                        payload: BytesEdit | None = None) -> Path:
        data = self.aggregate_payload(over=over, required=required, edit=edit)
        if payload is not None:
            data = payload(data)
        path = self.evidence_dir / "aggregate.dsse.json"
        path.write_bytes(sign_envelope(data, self.keys.pick(key)))
        self.aggregate_path = path
        return path


def make_evidence(tmp_path: Path, *, platforms: Sequence[PlatformSpec | Platform] | None = None,
                  required: Sequence[str] | None = None, required_steps: Sequence[str] = DEFAULT_STEPS,
                  signing: dict[str, Sequence[str]] | None = None, require_clean: bool = False,
                  max_statement_bytes: int = 1048576, sha: str = DEFAULT_SHA, run_id: str = DEFAULT_RUN_ID,
                  aggregate: bool = True, aggregate_key: KeyChoice = "aggregate",
                  aggregate_edit: PredicateEdit | None = None, aggregate_payload: BytesEdit | None = None,
                  committed_layout: bool = False) -> Evidence:
    """Write a complete, passing local evidence folder under ``tmp_path``; the keywords spoil it.

    ``platforms`` defaults to this host's platform; ``required`` (the policy's
    ``[platforms] required``) defaults to ``["host"]`` for one host platform and
    to the platforms given otherwise. ``committed_layout`` puts the policy at
    ``policies/local.toml`` with trust paths relative to it, as in a repository.
    """
    specs = [p if isinstance(p, PlatformSpec) else PlatformSpec(p) for p in (platforms or [host_platform()])]
    if required is None:
        names = list(dict.fromkeys(s.platform for s in specs))
        required = ["host"] if names == [host_platform()] else names
    root = tmp_path / "chain"
    keys = make_keys(root / "trust")
    policy_path = root / "policies" / "local.toml" if committed_layout else root / "policy.toml"
    policy_path.parent.mkdir(parents=True, exist_ok=True)
    policy_path.write_text(policy_text(keys, required=required, required_steps=required_steps, signing=signing,
                                       require_clean=require_clean, max_statement_bytes=max_statement_bytes,
                                       relative_to=policy_path.parent if committed_layout else None),
                           encoding="utf-8")
    evidence = Evidence(root=root, keys=keys, policy_path=policy_path, evidence_dir=root / "evidence",
                        artifacts_dir=root / "artifacts", sha=sha, run_id=run_id,
                        required_steps=tuple(required_steps))
    evidence.evidence_dir.mkdir(parents=True)
    evidence.artifacts_dir.mkdir(parents=True)
    for spec in specs:
        evidence.write_platform(spec)
    if aggregate and any(w.predicate is not None for w in evidence.platforms):
        evidence.write_aggregate(key=aggregate_key, edit=aggregate_edit, payload=aggregate_payload)
    return evidence
