"""Journey steps for the brokers, package validation, safe mode and worker protocol hardening.

Network choice: the journey starts a loopback TLS server with a certificate made
for this run and gives this run's host a resolver and a trust anchor for exactly
that name, plus an exemption for exactly that (name, 127.0.0.1) pair. The allow
path therefore really goes through resolution, address check, pinned connect,
SNI and certificate verification; the refusals use the same host without the
exemption (private resolution) or with URLs the policy refuses.
"""
# Linear scripts of steps with fixture-style helpers.
# ruff: noqa: PLR0917

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from skillhost._egress import EgressPolicy
from skillhost._errors import SkillError
from skillhost._host import HostConfig, SkillHost
from skillhost._journey_util import Step, _step, _write_skill
from skillhost._loopback_tls import SERVER_NAME, LoopbackTLSServer
from skillhost._runner import PROTOCOL_VERSION
from skillhost._signing import TrustStore

PRIVATE_NAME = "private.skillhost-journey.test"
PRIVATE_ADDRESS = "10.20.30.40"
OUTSIDE_SECRET = "journey-outside-secret"  # noqa: S105 - a canary string, not a credential

FS_PY = """
def run(ports, args):
    text = ports.fs.read_text(args.get("path", "notes.txt"))
    return {"chars": len(text)}
"""
ENV_HOST_PY = """
def run(ports, args):
    return {"home": ports.env.get("HOME")}
"""
LOOP_PY = """
def run(ports, args):
    n = 0
    while True:
        n += 1
"""


# A bundled handler returns whatever JSON it builds; each step's check knows the shape it expects.
def _bundled_step(host: SkillHost, sid: str, skill_id: str, args: dict[str, Any], check: Callable[[Any], bool]) -> Step:
    try:
        value, broker = host.run_bundled(skill_id, args)
    except SkillError as exc:
        return _step(sid, "allow", None, "reject", exc.code, exc.message)
    events = [(a["event"], a["port"], a["target"]) for a in broker.audit]
    return _step(
        sid, "allow", None, "allow", None, f"host pid={os.getpid()} value={value} audit={events}", check(value)
    )


def _bundled_refusal(
    host: SkillHost, sid: str, skill_id: str, args: dict[str, Any], code: str, extra: str = ""
) -> Step:
    try:
        value, _ = host.run_bundled(skill_id, args)
    except SkillError as exc:
        return _step(sid, "reject", code, "reject", exc.code, f"{exc.message} {extra}")
    return _step(sid, "reject", code, "allow", None, f"unexpectedly allowed: {str(value)[:120]} {extra}")


def _external(
    host: SkillHost,
    sid: str,
    skill_dir: Path,
    code: str | None,
    *,
    cancel: threading.Event | None = None,
    protocol_version: int | None = None,
) -> Step:
    expected = "allow" if code is None else "reject"
    try:
        out = host.run_external(skill_dir, cancel=cancel, protocol_version=protocol_version)
    except SkillError as exc:
        return _step(sid, expected, code, "reject", exc.code, f"refused before any worker: {exc.message}")
    detail = (
        f"worker_pid={out.worker_pid} reaped={out.reaped} rc={out.returncode} requests={out.requests} "
        f"ms={out.duration_ms} {out.message}"
    )
    ok = out.reaped and out.worker_pid != os.getpid() and out.returncode is not None
    if out.ok:
        return _step(sid, expected, code, "allow", None, f"{detail} value={out.value}", ok)
    return _step(sid, expected, code, "reject", out.code, detail, ok)


def _try_symlink(link: Path, target: Path) -> str | None:
    try:
        link.symlink_to(target)
    except (OSError, NotImplementedError) as exc:
        return f"could not create a symlink here: {exc.__class__.__name__}"
    return None


def broker_steps(tmp: Path, trust: TrustStore, good_key: Ed25519PrivateKey) -> list[Step]:
    steps: list[Step] = []
    workspace = tmp / "workspace"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("journey notes\nsecond line\n", encoding="utf-8")
    outside = tmp / "outside-secret.txt"
    outside.write_text(OUTSIDE_SECRET, encoding="utf-8")
    packages = tmp / "packages"
    packages.mkdir()

    with LoopbackTLSServer() as srv:
        base = f"https://{SERVER_NAME}:{srv.port}"

        def resolver(host: str, port: int) -> list[str]:
            return [PRIVATE_ADDRESS] if host == PRIVATE_NAME else srv.resolver(host, port)

        policy = EgressPolicy(
            allowed=frozenset({(SERVER_NAME, srv.port), (PRIVATE_NAME, srv.port)}),
            exemptions=frozenset({(SERVER_NAME, "127.0.0.1")}),
            max_bytes=16 * 1024,
            timeout=5.0,
        )
        cfg = HostConfig(
            workspace=workspace,
            trust=trust,
            authority="journey",
            egress=policy,
            resolver=resolver,
            ssl_context=srv.client_context(),
        )
        host = SkillHost(cfg)

        # Bundled skills, one per broker, in this process.
        steps.append(
            _bundled_step(
                host,
                "bundled-read-notes-runs",
                "read-notes",
                {"path": "notes.txt"},
                lambda v: v == {"lines": 2, "first": "journey notes"},
            )
        )
        steps.append(
            _bundled_step(
                host,
                "bundled-repo-status-runs",
                "repo-status",
                {},
                lambda v: v.get("command") == "git-status" and isinstance(v.get("returncode"), int),
            )
        )
        steps.append(
            _bundled_step(
                host,
                "bundled-host-info-runs",
                "host-info",
                {},
                lambda v: v.get("platform") in ("linux", "macos", "windows"),
            )
        )
        steps.append(
            _bundled_step(
                host,
                "bundled-fetch-status-runs",
                "fetch-status",
                {"url": f"{base}/redirect-in"},
                lambda v: v == {"status": 200, "bytes": 30, "redirects": 1},
            )
        )

        # Filesystem broker: fail closed.
        steps.append(
            _bundled_refusal(
                host,
                "fs-dotdot-escape-rejected",
                "read-notes",
                {"path": "../outside-secret.txt"},
                "CC_SKILL_PATH_ESCAPE",
            )
        )
        problem = _try_symlink(workspace / "link.txt", outside)
        if problem:
            steps.append(_step("fs-symlink-escape-rejected", "reject", "CC_SKILL_PATH_ESCAPE", "allow", None, problem))
        else:
            steps.append(
                _bundled_refusal(
                    host, "fs-symlink-escape-rejected", "read-notes", {"path": "link.txt"}, "CC_SKILL_PATH_ESCAPE"
                )
            )

        # Process broker: only literal allow-listed argv; metacharacters stay literal and are refused.
        proc = host.ports_for("repo-status", tier="bundled")["process"]
        canary = workspace / "pwned"
        for sid, argv in (
            ("process-not-allow-listed-rejected", ["git", "log", "-1"]),
            ("process-shell-metachar-rejected", ["git", "status", "--porcelain; touch pwned"]),
        ):
            try:
                proc.run(argv)
                steps.append(_step(sid, "reject", "CC_SKILL_PROCESS_DENIED", "allow", None, "ran"))
            except SkillError as exc:
                steps.append(
                    _step(
                        sid,
                        "reject",
                        "CC_SKILL_PROCESS_DENIED",
                        "reject",
                        exc.code,
                        f"{exc.message}; canary created={canary.exists()}",
                        not canary.exists(),
                    )
                )

        # Environment broker: a host variable name is not a granted logical key.
        env_skill = _write_skill(packages, "env-reader", ENV_HOST_PY, ["environment:read"], good_key)
        steps.append(_external(host, "env-key-not-granted-rejected", env_skill, "CC_SKILL_ENV_KEY_DENIED"))

        # Network broker: each refusal before any connection.
        for sid, url, code in (
            ("net-ip-literal-rejected", f"https://127.0.0.1:{srv.port}/hello", "CC_SKILL_EGRESS_IP_LITERAL"),
            ("net-non-https-rejected", f"http://{SERVER_NAME}:{srv.port}/hello", "CC_SKILL_EGRESS_SCHEME_DENIED"),
            (
                "net-private-resolution-rejected",
                f"https://{PRIVATE_NAME}:{srv.port}/hello",
                "CC_SKILL_EGRESS_ADDRESS_DENIED",
            ),
            ("net-redirect-disallowed-rejected", f"{base}/redirect-out", "CC_SKILL_EGRESS_REDIRECT_DENIED"),
        ):
            steps.append(_bundled_refusal(host, sid, "fetch-status", {"url": url}, code))

        # External skill using a broker through the worker (allow path across the process boundary).
        fs_skill = _write_skill(packages, "notes-counter", FS_PY, ["filesystem:read"], good_key)
        steps.append(_external(host, "external-broker-call-through-worker", fs_skill, None))
        leak = _write_skill(
            packages,
            "notes-escaper",
            FS_PY.replace('"notes.txt"', '"../outside-secret.txt"'),
            ["filesystem:read"],
            good_key,
        )
        steps.append(_external(host, "external-fs-escape-rejected", leak, "CC_SKILL_PATH_ESCAPE"))

        # Worker protocol: a version the worker does not speak, and a host abort mid-run.
        steps.append(
            _external(
                host,
                "external-protocol-version-mismatch-killed",
                fs_skill,
                "CC_SKILL_PROTOCOL_VIOLATION",
                protocol_version=PROTOCOL_VERSION + 1,
            )
        )
        looper = _write_skill(packages, "abortee", LOOP_PY, ["runtime:time"], good_key)
        cancel = threading.Event()
        timer = threading.Timer(0.4, cancel.set)
        timer.start()
        try:
            steps.append(_external(host, "external-abort-killed", looper, "CC_SKILL_ABORTED", cancel=cancel))
        finally:
            timer.cancel()

    steps.extend(package_steps(packages, trust, good_key, workspace))
    return steps


def package_steps(packages: Path, trust: TrustStore, good_key: Ed25519PrivateKey, workspace: Path) -> list[Step]:
    steps: list[Step] = []
    host = SkillHost(HostConfig(workspace=workspace, trust=trust, authority="journey"))
    good = "def run(ports, args):\n    return {'t': ports.time.now()}\n"
    tc = ["runtime:time"]

    trav = _write_skill(packages, "traverser", good, tc, good_key, extra_md="entry: ../outside/handler.py\n")
    steps.append(_external(host, "package-path-traversal-rejected", trav, "CC_SKILL_PACKAGE_INVALID"))

    sym = _write_skill(packages, "linker", good, tc, good_key)
    problem = _try_symlink(sym / "notes.md", workspace / "notes.txt")
    if problem:
        steps.append(_step("package-symlink-rejected", "reject", "CC_SKILL_PACKAGE_INVALID", "allow", None, problem))
    else:
        steps.append(_external(host, "package-symlink-rejected", sym, "CC_SKILL_PACKAGE_INVALID"))

    native = _write_skill(packages, "native", good, tc, good_key)
    (native / "data.json").write_bytes(b"\x7fELF\x02\x01\x01" + b"\x00" * 57)
    steps.append(_external(host, "package-native-binary-rejected", native, "CC_SKILL_PACKAGE_INVALID"))

    unknown = _write_skill(packages, "installer", good, tc, good_key, extra_md="postinstall: touch pwned\n")
    steps.append(_external(host, "package-unknown-manifest-field-rejected", unknown, "CC_SKILL_PACKAGE_INVALID"))

    prompt = _write_skill(packages, "prompt-only", None, [], good_key)
    steps.append(_external(host, "prompt-only-no-execution", prompt, "CC_SKILL_PROMPT_ONLY"))

    # Safe mode: decided before any third-party byte is read; bundled skills keep working.
    safe = SkillHost(HostConfig(workspace=workspace, trust=trust, authority="journey", safe_mode=True))
    steps.append(
        _bundled_step(safe, "safe-mode-bundled-runs", "clock", {"label": "safe"}, lambda v: v.get("label") == "safe")
    )
    greeter = _write_skill(packages, "safe-greeter", good, tc, good_key)
    steps.append(_external(safe, "safe-mode-external-refused", greeter, "CC_SKILL_SAFE_MODE"))
    return steps
