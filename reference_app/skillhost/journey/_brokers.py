"""Journey steps for the brokers: one allow path per broker, then each broker's refusals.

Network choice: the journey starts a loopback TLS server with a certificate made
for this run and gives this run's host a trust anchor for exactly that name, a
resolver that answers a public stand-in address for it, and a connector that
routes exactly that address to the server. The allow path therefore really goes
through resolution, the public-address check, pinned connect, SNI and
certificate verification, with no loopback exemption in public egress; the
refusals use names resolving to private or loopback addresses, or URLs the
policy refuses. A plain HTTP server on 127.0.0.1 is the loopback "model"
service, reached only through the loopback broker.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from skillhost._errors import SkillError
from skillhost.brokers import AuditEvent, EgressPolicy, LoopbackServices
from skillhost.host import PROTOCOL_VERSION, HostConfig, SkillHost
from skillhost.journey._authority import (
    GRANTING,
    JOURNEY_AUTHORITIES,
    authority_steps,
    runtime_domain_steps,
)
from skillhost.journey._loopback_tls import HOLD_SECONDS, SERVER_NAME, LoopbackHTTPServer, LoopbackTLSServer
from skillhost.journey._on_host import _bundled_refusal, _bundled_step, _external, on_host
from skillhost.journey._packages import package_steps
from skillhost.journey._rows import Package, PackageBuilder, RejectRow, _try_symlink, walk
from skillhost.journey._step import Step, _step
from skillhost.packaging import TrustStore

PRIVATE_NAME = "private.skillhost-journey.test"
PRIVATE_ADDRESS = "10.20.30.40"
LOOPBACK_NAME = "local.skillhost-journey.test"
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

PEEK_PY = """
def run(ports, args):
    return ports.process.run(["git", "status", "--porcelain"])
"""

MODEL_PY = """
def run(ports, args):
    res = ports.loopback.get(args.get("service", "model"), "/hello", args.get("port"))
    return {"status": res["status"], "body": res["body"]}
"""
DIAG_PY = """
def run(ports, args):
    res = ports.process.diagnose(TOOL, HOST, PORT)
    return {"command": res["command"], "returncode": res["returncode"], "stdout": res["stdout"]}
"""
# What the handler returns is the file's text as the broker read it, forwarded by the host byte for byte.
FS_ECHO_PY = """
def run(ports, args):
    return {"text": ports.fs.read_text("notes.txt")}
"""
LOOPBACK = ("service:loopback",)
MODEL_CLIENT = Package("model-client", MODEL_PY, LOOPBACK)
# The same client under an id the model service is not bound to.
MODEL_STRANGER = Package("model-stranger", MODEL_PY, LOOPBACK)
# The loopback server's answer for the path the client asks for (``/`` answers 404 "not found").
MODEL_BODY = "hello from the loopback server"
NOTES_TEXT = "journey notes\nsecond line\n"
# The skills the host binds the model service and the network diagnostics to.
MODEL_SKILLS = frozenset({"model-client", "model-port-prober", "service-prober"})
DIAG_SKILLS = frozenset({"diag-lookup", "diag-elsewhere", "diag-private", "diag-shell"})
# The dns-lookup template's argv after the executable, per platform, with the looked-up name last.
DNS_LOOKUP_ARGS = {"linux": ("ahosts",), "macos": ("-q", "host", "-a", "name")}
# The environment the process broker gives a diagnostic, and what the stand-in's own shell (and, on macOS, the
# system's text-encoding variable) adds to it; anything else came from the host.
DIAG_ENV = frozenset({"PATH", "LC_ALL", "LANG", "HOME", "GIT_CEILING_DIRECTORIES"})
SHELL_OWN_ENV = frozenset({"PWD", "SHLVL", "OLDPWD", "_", "__CF_USER_TEXT_ENCODING"})
# Stands in for the platform's lookup tool so the step can see how it was run: the argv it got and its environment.
# It is started by the broker like the real tool (absolute path, no shell, minimal environment).
LOOKUP_FIXTURE = """#!/bin/sh
printf 'argv'
for a in "$@"; do printf ' %s' "$a"; done
printf '\\n'
exec /usr/bin/env
"""


def _loopback_rejects(other_port: int) -> tuple[RejectRow, ...]:
    """The loopback broker's refusals: a port not listed for the service, a service the host does not have."""
    wrong_port = MODEL_PY.replace('args.get("port")', str(other_port))
    unknown = MODEL_PY.replace('args.get("service", "model")', '"metrics"')
    return (
        RejectRow(
            "loopback-port-not-listed-rejected",
            Package("model-port-prober", wrong_port, LOOPBACK),
            "CC_SKILL_LOOPBACK_PORT_DENIED",
        ),
        RejectRow(
            "loopback-unknown-service-rejected",
            Package("service-prober", unknown, LOOPBACK),
            "CC_SKILL_LOOPBACK_SERVICE_UNKNOWN",
        ),
    )


def _diagnostic(skill: str, tool: str, host: str, port: int) -> Package:
    src = DIAG_PY.replace("TOOL", repr(tool)).replace("HOST", repr(host)).replace("PORT", str(port))
    return Package(skill, src, ("process:exec",))


def _diagnostics_rejects(port: int) -> tuple[RejectRow, ...]:
    """A host the egress rules refuse (not listed, private answers) and a tool that is not a fixed diagnostic."""
    return (
        RejectRow(
            "diagnostics-host-not-allowed-rejected",
            _diagnostic("diag-elsewhere", "dns-lookup", "not-allowed.test", port),
            "CC_SKILL_EGRESS_HOST_DENIED",
        ),
        RejectRow(
            "diagnostics-private-host-rejected",
            _diagnostic("diag-private", "ping", PRIVATE_NAME, port),
            "CC_SKILL_EGRESS_ADDRESS_DENIED",
        ),
        RejectRow(
            "diagnostics-unknown-tool-rejected",
            _diagnostic("diag-shell", "sh", SERVER_NAME, port),
            "CC_SKILL_PROCESS_DENIED",
        ),
    )


# Asks the journey's server for a page it holds back until the run is over.
LATE_PY = """
def run(ports, args):
    return ports.https.get(URL)
"""
TIMEOUT = "CC_SKILL_TIMEOUT"
# The late call's run deadline: twenty times what a worker takes to start and ask (about 50 ms here), so that
# a loaded machine still asks before it; the step fails if the call never started.
LATE_DEADLINE = 1.0

FS_READ = ("filesystem:read",)
# Built once: the allow path through the worker, and again run by the protocol-mismatch row.
NOTES_COUNTER = Package("notes-counter", FS_PY, FS_READ)

# A host variable name is not a granted logical key.
ENV_REJECTS = (
    RejectRow(
        "env-key-not-granted-rejected",
        Package("env-reader", ENV_HOST_PY, ("environment:read",)),
        "CC_SKILL_ENV_KEY_DENIED",
    ),
)

# The git rules are bound to the bundled repo-status skill: another skill declaring process:exec, under an
# authority granting everything, still may not run them.
PROCESS_BINDING_REJECTS = (
    RejectRow(
        "process-rule-bound-to-other-skill-rejected",
        Package("status-peeker", PEEK_PY, ("process:exec",)),
        "CC_SKILL_PROCESS_DENIED",
    ),
)

# Across the process boundary: a broker refusal, a version the worker does not speak, a host abort mid-run.
CROSS_PROCESS_REJECTS = (
    RejectRow(
        "external-fs-escape-rejected",
        Package("notes-escaper", FS_PY.replace('"notes.txt"', '"../outside-secret.txt"'), FS_READ),
        "CC_SKILL_PATH_ESCAPE",
    ),
    RejectRow(
        "external-protocol-version-mismatch-killed",
        NOTES_COUNTER,
        "CC_SKILL_PROTOCOL_VIOLATION",
        protocol_version=PROTOCOL_VERSION + 1,
    ),
    RejectRow("external-abort-killed", Package("abortee", LOOP_PY), "CC_SKILL_ABORTED", abort_after=0.4),
)


def _lookup_fixture(folder: Path) -> dict[str, str]:
    """The host's choice of dns-lookup executable for this run (POSIX): the recording stand-in above."""
    if os.name != "posix" or sys.platform not in ("linux", "darwin"):
        return {}  # Windows runs its own nslookup; the step then judges the return code only
    folder.mkdir()
    tool = folder / "lookup"
    tool.write_text(LOOKUP_FIXTURE, encoding="utf-8")
    tool.chmod(0o755)
    return {"dns-lookup": str(tool)}


def _lookup_check(host: str, fixture: bool) -> Callable[[Any, list[AuditEvent]], tuple[bool, str]]:
    """The tool ran with the template's literal argv and the broker's minimal environment, as it printed them;
    the audit names the tool and the host it was run for."""
    platform = "macos" if sys.platform == "darwin" else "linux"

    def check(value: Any, audit: list[AuditEvent]) -> tuple[bool, str]:
        targets = [a["target"] for a in audit if a["port"] == "process"]
        if targets != [f"diagnose:dns-lookup:{host}"] * 2:
            return False, f"audit targets {targets[:2]}"
        if not isinstance(value, dict) or not isinstance(value.get("returncode"), int):
            return False, "no tool result"
        if not fixture:
            return value.get("command") == "dns-lookup", "the platform's own tool ran"
        lines = str(value.get("stdout", "")).splitlines()
        argv = lines[0].split(" ")[1:] if lines and lines[0].startswith("argv") else None
        keys = {line.split("=", 1)[0] for line in lines[1:] if "=" in line}
        want = [*DNS_LOOKUP_ARGS[platform], host]
        ok = value.get("returncode") == 0 and argv == want and DIAG_ENV <= keys <= DIAG_ENV | SHELL_OWN_ENV
        extra = sorted(keys - DIAG_ENV - SHELL_OWN_ENV)
        return ok, f"tool saw the template's argv: {argv == want}, {len(keys)} env keys, unexpected {extra[:2]}"

    return check


def _lookup_step(host: SkillHost, build: Callable[[Package], Path], port: int, fixture: bool) -> Step:
    """A fixed diagnostic on a destination the egress rules accept; a skill it is not bound to is refused."""
    sid = "diagnostics-dns-lookup-runs"
    lookup = build(_diagnostic("diag-lookup", "dns-lookup", SERVER_NAME, port))
    step = _external(host, sid, lookup, None, check=_lookup_check(SERVER_NAME, fixture))
    stranger = _external(host, sid, build(_diagnostic("diag-stranger", "dns-lookup", SERVER_NAME, port)),
                         "CC_SKILL_PROCESS_DENIED")
    if step["passed"] and not stranger["passed"]:
        why = f"a skill diagnostics are not bound to: {stranger['observed']} {stranger['observed_code']}"
        return _step(sid, "allow", None, "allow", None, why, False)
    return step


def _repo_workspace(workspace: Path) -> str | None:
    """Make the workspace a git repository whose status is known (``notes.txt`` untracked); why not, else None."""
    git = shutil.which("git")
    if git is None:
        return "git is not installed"
    env = {"PATH": str(Path(git).parent), "HOME": str(workspace), "GIT_CONFIG_NOSYSTEM": "1", "LC_ALL": "C"}
    done = subprocess.run(  # a fixed argv, no shell
        [git, "init", "-q", str(workspace)], env=env, capture_output=True, timeout=30, check=False
    )
    return None if done.returncode == 0 else f"git init failed: {done.returncode}"


# What repo-status reports of ``git status --porcelain`` in the journey's workspace, a fresh repository whose
# only file, the notes, is untracked: one change, exit 0 (outside a repository, or with another subcommand,
# git exits non-zero).
REPO_STATUS = {"command": "git-status", "returncode": 0, "changes": 1}


def _journey_host(
    workspace: Path,
    trust: TrustStore,
    srv: LoopbackTLSServer,
    model: LoopbackHTTPServer,
    tools: Mapping[str, str] | None = None,
) -> SkillHost:
    def resolver(host: str, port: int) -> list[str]:
        fixed = {PRIVATE_NAME: [PRIVATE_ADDRESS], LOOPBACK_NAME: ["127.0.0.1"]}
        return fixed.get(host) or srv.public_resolver(host, port)

    policy = EgressPolicy(
        allowed=frozenset({(SERVER_NAME, srv.port), (PRIVATE_NAME, srv.port), (LOOPBACK_NAME, srv.port)}),
        max_bytes=16 * 1024,
        timeout=5.0,
    )
    cfg = HostConfig(
        workspace=workspace,
        trust=trust,
        authority=GRANTING,
        authorities=JOURNEY_AUTHORITIES,
        egress=policy,
        resolver=resolver,
        ssl_context=srv.client_context(),
        connect=srv.connect,
        loopback=LoopbackServices({"model": (model.port,)}, skills={"model": MODEL_SKILLS}),
        diagnostic_skills=DIAG_SKILLS,
        diagnostic_executables=dict(tools or {}),
    )
    return SkillHost(cfg)


def _loopback_step(host: SkillHost, build: Callable[[Package], Path], model: LoopbackHTTPServer) -> Step:
    """The model service answers the path asked for with its known body; a skill it is not bound to is refused."""
    sid = "loopback-service-runs"
    before = len(model.paths)

    def answered(value: Any, audit: list[AuditEvent]) -> tuple[bool, str]:
        asked = model.paths[before:]
        right = value == {"status": 200, "body": MODEL_BODY}
        return right and asked == ["/hello"], f"known body: {right}, service was asked {asked[:2]}"

    step = _external(host, sid, build(MODEL_CLIENT), None, check=answered)
    stranger = _external(host, sid, build(MODEL_STRANGER), "CC_SKILL_LOOPBACK_SERVICE_UNKNOWN")
    if step["passed"] and not stranger["passed"]:
        why = f"a skill the service is not bound to: {stranger['observed']} {stranger['observed_code']}"
        return _step(sid, "allow", None, "allow", None, why, False)
    return step


def _bundled_allows(host: SkillHost, base: str) -> list[Step]:
    """Bundled skills, one per broker, in this process."""
    rows: tuple[tuple[str, str, dict[str, Any], Callable[[Any], bool]], ...] = (
        ("bundled-read-notes-runs", "read-notes", {"path": "notes.txt"},
         lambda v: v == {"lines": 2, "first": "journey notes"}),
        ("bundled-repo-status-runs", "repo-status", {},
         lambda v: v == REPO_STATUS),
        ("bundled-host-info-runs", "host-info", {},
         lambda v: v.get("platform") in ("linux", "macos", "windows")),
        ("bundled-fetch-status-runs", "fetch-status", {"url": f"{base}/redirect-in"},
         lambda v: v == {"status": 200, "bytes": 30, "redirects": 1}),
    )
    return [_bundled_step(host, sid, skill, args, check) for sid, skill, args, check in rows]


def _fs_refusals(host: SkillHost, workspace: Path, outside: Path) -> list[Step]:
    escape = "CC_SKILL_PATH_ESCAPE"
    dotdot = {"path": "../outside-secret.txt"}
    steps = [_bundled_refusal(host, "fs-dotdot-escape-rejected", "read-notes", dotdot, escape)]
    problem = _try_symlink(workspace / "link.txt", outside)
    if problem:
        steps.append(_step("fs-symlink-escape-rejected", "reject", escape, "allow", None, problem))
    else:
        steps.append(_bundled_refusal(host, "fs-symlink-escape-rejected", "read-notes", {"path": "link.txt"}, escape))
    return steps


def _process_refusals(host: SkillHost, workspace: Path) -> list[Step]:
    """Only literal allow-listed argv runs; metacharacters stay literal bytes and are refused."""
    entry = host.bundled_entry("repo-status") or ""
    proc = host.ports_for("repo-status", tier="bundled", capabilities=("process:exec",), entry=entry)["process"]
    canary = workspace / "pwned"
    steps: list[Step] = []
    for sid, argv in (
        ("process-not-allow-listed-rejected", ["git", "log", "-1"]),
        ("process-shell-metachar-rejected", ["git", "status", "--porcelain; touch pwned"]),
    ):
        try:
            proc.run(argv)
            steps.append(_step(sid, "reject", "CC_SKILL_PROCESS_DENIED", "allow", None, "ran"))
        except SkillError as exc:
            created = canary.exists()
            detail = f"{exc.message}; canary created={created}"
            steps.append(_step(sid, "reject", "CC_SKILL_PROCESS_DENIED", "reject", exc.code, detail, not created))
    return steps


def _net_refusals(host: SkillHost, port: int, base: str) -> list[Step]:
    """Each refusal comes before any connection."""
    rows = (
        ("net-ip-literal-rejected", f"https://127.0.0.1:{port}/hello", "CC_SKILL_EGRESS_IP_LITERAL"),
        ("net-non-https-rejected", f"http://{SERVER_NAME}:{port}/hello", "CC_SKILL_EGRESS_SCHEME_DENIED"),
        ("net-private-resolution-rejected", f"https://{PRIVATE_NAME}:{port}/hello", "CC_SKILL_EGRESS_ADDRESS_DENIED"),
        # Public egress has no loopback exemption: a loopback service is the loopback broker's.
        ("net-loopback-resolution-rejected", f"https://{LOOPBACK_NAME}:{port}/hello", "CC_SKILL_EGRESS_ADDRESS_DENIED"),
        ("net-redirect-disallowed-rejected", f"{base}/redirect-out", "CC_SKILL_EGRESS_REDIRECT_DENIED"),
    )
    return [_bundled_refusal(host, sid, "fetch-status", {"url": url}, code) for sid, url, code in rows]


def _late_call_step(host: SkillHost, build: Callable[[Package], Path], srv: LoopbackTLSServer) -> Step:
    """A port call still running at the run's deadline: the run is refused, and the audit keeps the call whole:
    its start, ``abandoned`` at the deadline, and ``late-done`` when it ends (the server answers it only once
    released, after the run)."""
    sid = "external-late-call-recorded"
    url = f"https://{SERVER_NAME}:{srv.port}/held"
    skill_dir = build(Package("late-fetcher", LATE_PY.replace("URL", repr(url)), ("network:https",)))
    try:
        out = host.run_external(skill_dir, max_duration=LATE_DEADLINE)
    except SkillError as exc:
        return _step(sid, "reject", TIMEOUT, "reject", exc.code, f"refused before any worker: {exc.message}")
    finally:
        srv.release()
    audit = out.audit
    waited = time.monotonic() + HOLD_SECONDS
    while not any(a["event"].startswith("late-") for a in audit) and time.monotonic() < waited:
        time.sleep(0.01)
    https = [(a["event"], a["code"], a["target"]) for a in audit if a["port"] == "https"]
    whole = https == [("start", None, SERVER_NAME), ("abandoned", TIMEOUT, SERVER_NAME),
                      ("late-done", None, SERVER_NAME)]
    named = all(a["skill_id"] == "late-fetcher" and a["authority"] == GRANTING for a in audit)
    detail = f"reaped={out.reaped} ms={out.duration_ms} https audit={https[:4]}"
    if out.ok:
        return _step(sid, "reject", TIMEOUT, "allow", None, f"the run ended in time: {detail}")
    return _step(sid, "reject", TIMEOUT, "reject", out.code, detail, whole and named and out.reaped)


def broker_steps(tmp: Path, trust: TrustStore, keys: Mapping[str, Ed25519PrivateKey]) -> list[Step]:
    """Broker steps, then package validation and safe mode (they share the workspace and packages)."""
    workspace = tmp / "workspace"
    workspace.mkdir()
    (workspace / "notes.txt").write_bytes(NOTES_TEXT.encode("utf-8"))
    # A real repository with a known status; if git is missing the repo-status step fails on its own.
    _repo_workspace(workspace)
    outside = tmp / "outside-secret.txt"
    outside.write_text(OUTSIDE_SECRET, encoding="utf-8")
    packages = tmp / "packages"
    packages.mkdir()
    build = PackageBuilder(packages, keys)

    with LoopbackTLSServer() as srv, LoopbackHTTPServer() as model:
        base = f"https://{SERVER_NAME}:{srv.port}"
        host = _journey_host(workspace, trust, srv, model, _lookup_fixture(tmp / "tools"))
        tools = host.config.diagnostic_executables
        steps = _bundled_allows(host, base)
        # The same calls under authorities that do not grant them.
        steps += authority_steps(host, base, lambda: build(NOTES_COUNTER))
        steps += _fs_refusals(host, workspace, outside)
        steps += _process_refusals(host, workspace)
        steps += walk(PROCESS_BINDING_REJECTS, build, on_host(host))
        steps += walk(ENV_REJECTS, build, on_host(host))
        steps += _net_refusals(host, srv.port, base)
        steps += runtime_domain_steps(host, SERVER_NAME, srv.port)
        steps.append(_loopback_step(host, build, model))
        steps += walk(_loopback_rejects(srv.port), build, on_host(host))
        # Network diagnostics: a fixed tool on a destination the egress rules accept (it may fail offline: it ran).
        steps.append(_lookup_step(host, build, srv.port, bool(tools)))
        steps += walk(_diagnostics_rejects(srv.port), build, on_host(host))
        # An external skill using a broker through the worker: the allow path across the process boundary.
        echo = build(Package("notes-echo", FS_ECHO_PY, FS_READ))

        def forwarded(value: Any, audit: list[AuditEvent]) -> tuple[bool, str]:
            same = value == {"text": NOTES_TEXT}
            return same, f"the broker's answer came back unchanged: {same}"

        steps.append(_external(host, "external-broker-call-through-worker", echo, None, check=forwarded))
        steps.append(_late_call_step(host, build, srv))
        steps += walk(CROSS_PROCESS_REJECTS, build, on_host(host))

    steps += package_steps(build, trust, workspace)
    return steps
