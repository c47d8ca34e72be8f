"""Scripted, self-contained journey: each allow path and each fail-closed path."""

import gc
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypedDict

from skillhost import __version__
from skillhost._broker import default_ports
from skillhost._bundled import run_bundled
from skillhost._catalog import verify
from skillhost._errors import SkillError
from skillhost._journey_more import broker_steps
from skillhost._journey_util import Step, _step, _write_skill
from skillhost._package import discover, verify_for_execution
from skillhost._runner import MAX_DURATION, Outcome, run_external, self_test
from skillhost._runtime import build_info, package_dir, platform_name, unexpected_worker_env_keys
from skillhost._signing import TrustStore, new_key

GREETER_PY = """
def run(ports, args):
    now = ports.time.now()
    ports.logger.info("greeter ran")
    return {"greeting": "hello " + str(args.get("who", "world"))[:40], "now": now}
"""

UNDECLARED_PY = """
def run(ports, args):
    ports.time.now()
    return {"token": ports.env.get("API_TOKEN")}
"""

SWALLOW_PY = """
def run(ports, args):
    try:
        ports.env.get("API_TOKEN")
    except Exception:
        pass
    return {"ok": True}
"""

IMPORT_PY = """
import os

def run(ports, args):
    return {"cwd": os.getcwd()}
"""

LOOP_PY = """
def run(ports, args):
    while True:
        pass
"""

FLOOD_PY = """
def run(ports, args):
    for _ in range(100):
        ports.time.now()
    return {}
"""

BIG_PY = """
def run(ports, args):
    return {"blob": "x" * 100000}
"""

RESULT_PY = """
def run(ports, args):
    return {"blob": "x" * 20000}
"""

DRIFTED_PY = """
def run(ports, args):
    return {"replaced": True}
"""

SECRET_CANARY = "SKILLHOST_JOURNEY_CANARY"  # noqa: S105 - a variable name, not a secret


class JourneyReport(TypedDict):
    kind: str
    version: int
    app_version: str
    build_sha: str
    platform: str
    host_pid: int
    duration_ms: int
    passed: bool
    steps: list[Step]


# (observed "allow"/"reject", observed code, the worker outcome if a worker ran, message)
_Execution = tuple[str, str | None, Outcome | None, str]


class _Ctx:
    def __init__(self, root: Path, trust: TrustStore) -> None:
        self.root, self.trust = root, trust
        self.logs: list[dict[str, str]] = []

    def execute(
        self,
        skill_dir: Path,
        mutate: Callable[[Path], None] | None = None,
        *,
        args: dict[str, object] | None = None,
        max_duration: float = MAX_DURATION,
    ) -> _Execution:
        """discover -> (optional mutation) -> re-verify -> worker. Returns (observed, code, outcome|None)."""
        try:
            cand = discover(skill_dir)
            if mutate:
                mutate(skill_dir)
            verified = verify_for_execution(cand, self.trust)
        except SkillError as exc:
            return "reject", exc.code, None, exc.message
        ports = default_ports(self.logs, env_values={"API_TOKEN": "journey-secret-value"})
        outcome = run_external(verified, ports, args, max_duration)
        if outcome.ok:
            return "allow", None, outcome, ""
        return "reject", outcome.code, outcome, outcome.message


def _external_step(
    ctx: _Ctx,
    sid: str,
    skill_dir: Path,
    expected_code: str,
    mutate: Callable[[Path], None] | None = None,
    *,
    max_duration: float = MAX_DURATION,
) -> Step:
    observed, code, outcome, msg = ctx.execute(skill_dir, mutate=mutate, max_duration=max_duration)
    extra_ok, detail = True, msg
    if outcome is not None:
        extra_ok = outcome.reaped and outcome.worker_pid != os.getpid()
        denied = [a["code"] for a in outcome.audit if a["event"] == "denied"]
        detail = (
            f"worker_pid={outcome.worker_pid} reaped={outcome.reaped} rc={outcome.returncode} "
            f"requests={outcome.requests} ms={outcome.duration_ms} denied={denied[:2]} {msg}"
        )
        secret_leak = any("journey-secret-value" in str(a) for a in outcome.audit)
        extra_ok = extra_ok and not secret_leak
    return _step(sid, "reject", expected_code, observed, code, detail, extra_ok)


def _external_code_in_host() -> int:
    count = 0
    for obj in gc.get_objects():
        code = getattr(obj, "__code__", None) if callable(obj) else None
        if code is not None and getattr(code, "co_filename", "") == "<external-skill>":
            count += 1
    return count


def _worker_env_step() -> Step:
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


def run_journey() -> tuple[JourneyReport, int]:  # noqa: PLR0915 - a linear script of steps
    t0 = time.monotonic()
    info = build_info()
    pkg = package_dir()
    steps: list[Step] = []
    os.environ[SECRET_CANARY] = "host-only-secret"  # must never reach a worker
    tmp = Path(tempfile.mkdtemp(prefix="skillhost-journey-"))
    try:
        # 1. catalog
        try:
            entries = verify(pkg)
            steps.append(
                _step(
                    "catalog-verified",
                    "allow",
                    None,
                    "allow",
                    None,
                    f"{len(entries)} bundled skill(s) match catalog digests and capabilities",
                )
            )
        except SkillError as exc:
            steps.append(_step("catalog-verified", "allow", None, "reject", exc.code, exc.message))

        # 2. bundled skill in the host process
        try:
            logs: list[dict[str, str]] = []
            value, broker = run_bundled(pkg, "clock", {"label": "journey"}, log_sink=logs)
            ok = isinstance(value, dict) and isinstance(value.get("now"), str) and len(logs) == 1
            events = [a["event"] for a in broker.audit]
            steps.append(
                _step(
                    "bundled-skill-runs",
                    "allow",
                    None,
                    "allow",
                    None,
                    f"in host pid={os.getpid()} now={value.get('now')} audit={events}",
                    ok,
                )
            )
        except SkillError as exc:
            steps.append(_step("bundled-skill-runs", "allow", None, "reject", exc.code, exc.message))

        # keys and trust for this run only
        good_key, rogue_key = new_key(), new_key()
        ctx = _Ctx(tmp, TrustStore.from_public_keys([good_key.public_key()]))
        trust_path = tmp / "trust-store.json"
        trust_path.write_bytes(ctx.trust.dump())
        ctx.trust = TrustStore.load(trust_path)
        skills = tmp / "skills"
        skills.mkdir()
        tc = ["host:logger", "runtime:time"]

        # 3. signed external skill runs in a one-shot worker
        good = _write_skill(skills, "greeter", GREETER_PY, tc, good_key)
        observed, code, outcome, msg = ctx.execute(good, args={"who": "journey"})
        if outcome is not None:
            value = outcome.value if isinstance(outcome.value, dict) else {}
            extra = (
                outcome.worker_pid != os.getpid()
                and outcome.reaped
                and outcome.returncode is not None
                and value.get("greeting") == "hello journey"
                and outcome.requests == 2
            )
            detail = (
                f"worker_pid={outcome.worker_pid} host_pid={os.getpid()} reaped={outcome.reaped} "
                f"rc={outcome.returncode} requests={outcome.requests} ms={outcome.duration_ms} {msg}"
            )
        else:
            extra, detail = False, msg
        steps.append(_step("external-signed-runs-in-worker", "allow", None, observed, code, detail, extra))

        # 4..: fail-closed paths
        unsigned = _write_skill(skills, "unsigned", GREETER_PY, tc, None)
        steps.append(_external_step(ctx, "external-unsigned-rejected", unsigned, "CC_SKILL_SIGNATURE_MISSING"))
        rogue = _write_skill(skills, "rogue", GREETER_PY, tc, rogue_key)
        steps.append(_external_step(ctx, "external-unknown-signer-rejected", rogue, "CC_SKILL_SIGNER_UNKNOWN"))
        drift = _write_skill(skills, "drifter", GREETER_PY, tc, good_key)

        def replace_handler(d: Path) -> None:
            (d / "handler.py").write_text(DRIFTED_PY, encoding="utf-8", newline="\n")

        steps.append(
            _external_step(
                ctx, "external-digest-drift-rejected", drift, "CC_SKILL_DIGEST_DRIFT", mutate=replace_handler
            )
        )
        undeclared = _write_skill(skills, "undeclared", UNDECLARED_PY, ["runtime:time"], good_key)
        steps.append(
            _external_step(ctx, "external-undeclared-capability-rejected", undeclared, "CC_SKILL_CAPABILITY_UNDECLARED")
        )
        swallow = _write_skill(skills, "swallower", SWALLOW_PY, ["runtime:time"], good_key)
        steps.append(
            _external_step(ctx, "external-swallowed-denial-still-rejected", swallow, "CC_SKILL_CAPABILITY_UNDECLARED")
        )
        imp = _write_skill(skills, "importer", IMPORT_PY, ["runtime:time"], good_key)
        steps.append(_external_step(ctx, "external-raw-import-rejected", imp, "CC_SKILL_IMPORT_DENIED"))
        flood = _write_skill(skills, "flooder", FLOOD_PY, ["runtime:time"], good_key)
        steps.append(_external_step(ctx, "external-request-flood-killed", flood, "CC_SKILL_PROTOCOL_VIOLATION"))
        big = _write_skill(skills, "bigframe", BIG_PY, ["runtime:time"], good_key)
        steps.append(_external_step(ctx, "external-oversized-frame-killed", big, "CC_SKILL_FRAME_TOO_LARGE"))
        res = _write_skill(skills, "bigresult", RESULT_PY, ["runtime:time"], good_key)
        steps.append(_external_step(ctx, "external-oversized-result-rejected", res, "CC_SKILL_RESULT_TOO_LARGE"))
        loop = _write_skill(skills, "looper", LOOP_PY, ["runtime:time"], good_key)
        steps.append(_external_step(ctx, "external-timeout-killed", loop, "CC_SKILL_TIMEOUT", max_duration=1.5))

        # brokers, package validation, safe mode, protocol hardening
        steps.extend(broker_steps(tmp, ctx.trust, good_key))

        # host boundary: after all of the above, no external handler code was compiled or loaded in this process
        loaded = _external_code_in_host()
        steps.append(
            _step(
                "host-boundary-external-not-loaded",
                "allow",
                None,
                "allow" if not loaded else "reject",
                None if not loaded else "CC_SKILL_HOST_BOUNDARY",
                f"host objects from external handlers: {loaded}; skill_handler module loaded: "
                f"{'skill_handler' in sys.modules}",
                "skill_handler" not in sys.modules,
            )
        )

        # worker environment is minimal: a host-only variable set now must not reach it
        steps.append(_worker_env_step())

    finally:
        os.environ.pop(SECRET_CANARY, None)
        shutil.rmtree(tmp, ignore_errors=True)
    passed = bool(steps) and all(s["passed"] for s in steps)
    report: JourneyReport = {
        "kind": "skillhost-journey",
        "version": 1,
        "app_version": __version__,
        "build_sha": info["build_sha"],
        "platform": platform_name(),
        "host_pid": os.getpid(),
        "duration_ms": int((time.monotonic() - t0) * 1000),
        "passed": passed,
        "steps": steps,
    }
    return report, (0 if passed else 1)
