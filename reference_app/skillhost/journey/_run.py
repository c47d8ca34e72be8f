"""Scripted, self-contained journey: each allow path and each fail-closed path.

The report is a ``qualify-journey`` v2 record (docs/app-contract.md): each step
says what was observed, never what was expected or whether it passed; the
policy's step table judges it. The app's own expectations stay in its step
tables, which is how it tells an observation from a broken step (``error``).
The order of the phases is the order of the report, which the committed
policies pin step for step. The fail-closed external-skill steps are tables of
rows (``_rows``) in ``_external``, ``_brokers`` and
``_packages``; the steps here check the host itself and stay functions.
"""

import os
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypedDict

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from skillhost._errors import SkillError
from skillhost._runtime import build_info, package_dir, platform_name, unexpected_worker_env_keys
from skillhost._version import __version__
from skillhost.host import HostConfig, SkillHost, run_bundled, self_test
from skillhost.journey._audit_steps import audit_steps
from skillhost.journey._authority import GRANTING, JOURNEY_AUTHORITIES
from skillhost.journey._boundary import host_boundary_step
from skillhost.journey._brokers import broker_steps
from skillhost.journey._external import external_steps
from skillhost.journey._kernel import kernel_steps
from skillhost.journey._rows import PackageBuilder
from skillhost.journey._step import Step, _step
from skillhost.os_sandbox import Layer
from skillhost.packaging import TrustStore, list_bundled, new_key, verify_catalog

SECRET_CANARY = "SKILLHOST_JOURNEY_CANARY"  # noqa: S105 - a variable name, not a secret


class ObservedStep(TypedDict):
    """One step as the contract reports it: observed outcome, refusal code, errno, refusing layer, detail."""

    id: str
    observed: str
    code: str | None
    errno: str | None
    layer: str | None
    detail: str


class JourneyReport(TypedDict):
    kind: str
    version: int
    app_version: str
    build_sha: str
    platform: str
    steps: list[ObservedStep]
    isolation_layers: list[Layer]


def observed(step: Step) -> ObservedStep:
    """The contract's view of a step. A step whose own check failed although its outcome looked as expected
    (an allow path that returned the wrong value) is an ``error``: no policy can take it for its outcome."""
    broken = not step["passed"] and (step["observed"], step["observed_code"]) == (step["expected"],
                                                                                  step["expected_code"])
    if broken:
        return {"id": step["id"], "observed": "error", "code": None, "errno": None, "layer": None,
                "detail": step["detail"]}
    return {"id": step["id"], "observed": step["observed"], "code": step["observed_code"], "errno": step["errno"],
            "layer": step["layer"], "detail": step["detail"]}


def _catalog_step(pkg: Path) -> Step:
    try:
        entries = verify_catalog(pkg)
    except SkillError as exc:
        return _step("catalog-verified", "allow", None, "reject", exc.code, exc.message)
    bundled = list_bundled(pkg)
    detail = f"{len(entries)} of {len(bundled)} bundled skill(s) match catalog digests and capabilities"
    # A verifier that checked fewer skills than the bundle holds proved nothing about the rest.
    return _step("catalog-verified", "allow", None, "allow", None, detail, sorted(entries) == bundled != [])


def _bundled_in_host_step(pkg: Path) -> Step:
    try:
        logs: list[dict[str, str]] = []
        # The clock's own ports (time, logger), granted explicitly: no default grants anything.
        granted = frozenset({"runtime:time", "host:logger"})
        value, broker = run_bundled(pkg, "clock", {"label": "journey"}, log_sink=logs, granted=granted)
    except SkillError as exc:
        return _step("bundled-skill-runs", "allow", None, "reject", exc.code, exc.message)
    ok = isinstance(value, dict) and isinstance(value.get("now"), str) and len(logs) == 1
    events = [a["event"] for a in broker.audit]
    detail = f"in host pid={os.getpid()} now={value.get('now')} audit={events}"
    return _step("bundled-skill-runs", "allow", None, "allow", None, detail, ok)


def _host_boundary(tmp: Path, trust: TrustStore, keys: dict[str, Ed25519PrivateKey]) -> Step:
    """After every other step: one more external skill runs, and none of it may be found in this process."""
    root = tmp / "boundary"
    root.mkdir()
    host = SkillHost(HostConfig(workspace=root, trust=trust, authority=GRANTING, authorities=JOURNEY_AUTHORITIES))
    return host_boundary_step(host, PackageBuilder(root, keys))


def _worker_env_step() -> Step:
    """A host-only variable set for this run must not reach the worker."""
    try:
        answer = self_test()
    except SkillError as exc:
        return _step("worker-environment-minimal", "allow", None, "reject", exc.code, exc.message)
    keys = answer.get("env_keys", [])
    extra = unexpected_worker_env_keys(dict.fromkeys(answer.get("_env_passed", [])), keys)
    ok = SECRET_CANARY not in keys and not extra and answer.get("pid") != os.getpid()
    if os.name == "posix":
        ok = ok and answer.get("limits_applied") is True
    detail = (
        f"worker_pid={answer.get('pid')} env_keys={len(keys)} unexpected={extra[:3]} "
        f"canary_leaked={SECRET_CANARY in keys} limits_applied={answer.get('limits_applied')}"
    )
    return _step("worker-environment-minimal", "allow", None, "allow", None, detail, ok)


# The journey's phases in report order. Each is self-contained (its own folders under the run's tmp), so a
# test can run one phase alone from a mutated copy of the app and see whether that phase's steps still hold.
PHASES = ("host", "external", "brokers", "boundary", "worker-environment", "kernel")
# The phases that run beside one another. The boundary phase runs alone, after them: it looks for external code
# in this process once every other skill has run. Most of a phase's time is its workers' start-up and the
# deadlines it waits out (a looping skill's 1.5 s), so two at a time use a second core and overlap the waits;
# the report keeps the order above whatever order they end in.
_CONCURRENT = 2
_LAST = ("boundary",)


def _phase(phase: str, tmp: Path, pkg: Path, trust: TrustStore,
           keys: dict[str, Ed25519PrivateKey]) -> tuple[list[Step], list[Layer]]:
    if phase == "host":
        return [_catalog_step(pkg), _bundled_in_host_step(pkg), *audit_steps(tmp, trust)], []
    if phase == "external":
        return external_steps(tmp, trust, keys), []
    if phase == "brokers":
        return broker_steps(tmp, trust, keys), []  # brokers, package validation, safe mode, protocol hardening
    if phase == "boundary":
        return [_host_boundary(tmp, trust, keys)], []
    if phase == "worker-environment":
        return [_worker_env_step()], []
    if phase == "kernel":
        # Last in the report: what only the operating system can refuse, and the layers the worker reported.
        return kernel_steps(tmp)
    raise ValueError(f"unknown journey phase {phase!r}")


def _steps(tmp: Path, phases: tuple[str, ...] = PHASES) -> tuple[list[Step], list[Layer]]:
    pkg = package_dir()
    # Keys and trust for this run only; the rogue key signs but is not trusted. Every phase only reads them.
    keys = {"good": new_key(), "rogue": new_key()}
    trust_path = tmp / "trust-store.json"
    trust_path.write_bytes(TrustStore.from_public_keys([keys["good"].public_key()]).dump())
    trust = TrustStore.load(trust_path)
    for phase in phases:
        if phase not in PHASES:
            raise ValueError(f"unknown journey phase {phase!r}")
    side_by_side = [phase for phase in phases if phase not in _LAST]
    with ThreadPoolExecutor(max_workers=_CONCURRENT, thread_name_prefix="journey") as pool:
        # The longest phases first, so the short ones fill in beside them.
        running = {phase: pool.submit(_phase, phase, tmp, pkg, trust, keys)
                   for phase in sorted(side_by_side, key=lambda name: name not in ("external", "brokers"))}
        done = {phase: future.result() for phase, future in running.items()}
    for phase in phases:
        if phase in _LAST:
            done[phase] = _phase(phase, tmp, pkg, trust, keys)
    steps: list[Step] = []
    layers: list[Layer] = []
    for phase in phases:
        phase_steps, phase_layers = done[phase]
        steps += phase_steps
        layers += phase_layers
    return steps, layers


def run_journey(phases: tuple[str, ...] = PHASES) -> tuple[JourneyReport, int]:
    info = build_info()
    os.environ[SECRET_CANARY] = "host-only-secret"  # must never reach a worker
    tmp = Path(tempfile.mkdtemp(prefix="skillhost-journey-"))
    try:
        steps, layers = _steps(tmp, phases)
    finally:
        os.environ.pop(SECRET_CANARY, None)
        shutil.rmtree(tmp, ignore_errors=True)
    report: JourneyReport = {
        "kind": "qualify-journey",
        "version": 2,
        "app_version": __version__,
        "build_sha": info["build_sha"],
        "platform": platform_name(),
        "steps": [observed(step) for step in steps],
        "isolation_layers": layers,
    }
    # The journey ran to its end: exit 0. Whether its observations qualify is the policy's to say.
    return report, 0
