"""Journey steps for signed external skills in the one-shot worker: the allow path and its fail-closed table.

These steps drive discovery, verification and the worker directly rather than
through ``SkillHost``: the digest-drift row needs the window between discovery
and verification, and the ports carry a secret value so that any leak of it
into the audit fails the step.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from skillhost._errors import SkillError
from skillhost.brokers import default_ports
from skillhost.host import MAX_DURATION, PROTOCOL_VERSION, Outcome, run_external
from skillhost.journey._rows import Package, PackageBuilder, RejectRow, abort_timer, walk
from skillhost.journey._step import Step, _step
from skillhost.packaging import PORT_CAPABILITY, TrustStore, discover, verify_for_execution

SECRET_VALUE = "journey-secret-value"  # noqa: S105 - a canary value, not a credential

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
# An allowed module and a plain name pass the static rules; the name is a submodule, which only the
# worker's import guard can refuse.
SUBMODULE_IMPORT_PY = """
from collections import abc

def run(ports, args):
    return {"abc": str(abc)}
"""
# Obtains the secret through an allowed call and returns only its length: the audit must name the key, never the value.
CANARY_READER_PY = """
def run(ports, args):
    value = ports.env.get("API_TOKEN")
    ports.logger.info("token read")
    return {"chars": len(value)}
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

GREETER_CAPS = ("host:logger", "runtime:time")
UNDECLARED = "CC_SKILL_CAPABILITY_UNDECLARED"


def _replace_handler(skill_dir: Path) -> None:
    (skill_dir / "handler.py").write_text(DRIFTED_PY, encoding="utf-8", newline="\n")


WORKER_REJECTS = (
    RejectRow(
        "external-unsigned-rejected",
        Package("unsigned", GREETER_PY, GREETER_CAPS, signer=None),
        "CC_SKILL_SIGNATURE_MISSING",
    ),
    RejectRow(
        "external-unknown-signer-rejected",
        Package("rogue", GREETER_PY, GREETER_CAPS, signer="rogue"),
        "CC_SKILL_SIGNER_UNKNOWN",
    ),
    RejectRow(
        "external-digest-drift-rejected",
        Package("drifter", GREETER_PY, GREETER_CAPS),
        "CC_SKILL_DIGEST_DRIFT",
        mutate=_replace_handler,
    ),
    RejectRow("external-undeclared-capability-rejected", Package("undeclared", UNDECLARED_PY), UNDECLARED),
    # The handler swallows the denial; the broker's verdict stands anyway.
    RejectRow("external-swallowed-denial-still-rejected", Package("swallower", SWALLOW_PY), UNDECLARED),
    # The host's static audit refuses a raw import before any worker starts ...
    RejectRow(
        "external-raw-import-rejected", Package("importer", IMPORT_PY), "CC_SKILL_IMPORT_DENIED", in_worker=False
    ),
    # ... and the worker's own guard refuses what the static rules cannot see.
    RejectRow(
        "external-submodule-import-refused-in-worker",
        Package("submodule-importer", SUBMODULE_IMPORT_PY),
        "CC_SKILL_IMPORT_DENIED",
        in_worker=True,
    ),
    RejectRow("external-request-flood-killed", Package("flooder", FLOOD_PY), "CC_SKILL_PROTOCOL_VIOLATION"),
    RejectRow("external-oversized-frame-killed", Package("bigframe", BIG_PY), "CC_SKILL_FRAME_TOO_LARGE"),
    RejectRow("external-oversized-result-rejected", Package("bigresult", RESULT_PY), "CC_SKILL_RESULT_TOO_LARGE"),
    # A short budget keeps the journey quick; the kill path is the same as at the default.
    RejectRow("external-timeout-killed", Package("looper", LOOP_PY), "CC_SKILL_TIMEOUT", max_duration=1.5),
)

# (observed "allow"/"reject", observed code, the worker outcome if a worker ran, message)
_Execution = tuple[str, str | None, Outcome | None, str]


class SignedRunner:
    def __init__(self, trust: TrustStore) -> None:
        self.trust = trust
        self.logs: list[dict[str, str]] = []

    def execute(
        self,
        skill_dir: Path,
        mutate: Callable[[Path], None] | None = None,
        *,
        args: dict[str, object] | None = None,
        max_duration: float = MAX_DURATION,
        abort_after: float | None = None,
        protocol_version: int | None = None,
    ) -> _Execution:
        """discover -> (optional mutation) -> re-verify -> worker."""
        try:
            cand = discover(skill_dir)
            if mutate:
                mutate(skill_dir)
            verified = verify_for_execution(cand, self.trust)
        except SkillError as exc:
            return "reject", exc.code, None, exc.message
        ports = default_ports(self.logs, env_values={"API_TOKEN": SECRET_VALUE})
        version = PROTOCOL_VERSION if protocol_version is None else protocol_version
        with abort_timer(abort_after) as cancel:
            # Driven directly, under an authority that grants exactly the ports this runner offers.
            granted = frozenset(PORT_CAPABILITY[port] for port in ports)
            outcome = run_external(
                verified, ports, args, max_duration, cancel=cancel, protocol_version=version, granted=granted
            )
        if outcome.ok:
            return "allow", None, outcome, ""
        return "reject", outcome.code, outcome, outcome.message

    def reject_step(self, row: RejectRow, skill_dir: Path) -> Step:
        """The runner for ``WORKER_REJECTS``."""
        observed, code, outcome, msg = self.execute(
            skill_dir,
            row.mutate,
            max_duration=row.max_duration,
            abort_after=row.abort_after,
            protocol_version=row.protocol_version,
        )
        extra_ok, detail = row.in_worker is not True, msg
        if outcome is not None:
            # A refusal inside the worker still needs a separate, reaped process and no leaked secret.
            leaked = any(SECRET_VALUE in str(a) for a in outcome.audit)
            separate = outcome.reaped and outcome.worker_pid != os.getpid()
            extra_ok = separate and not leaked and row.in_worker is not False
            denied = [a["code"] for a in outcome.audit if a["event"] == "denied"]
            detail = (
                f"worker_pid={outcome.worker_pid} reaped={outcome.reaped} rc={outcome.returncode} "
                f"requests={outcome.requests} ms={outcome.duration_ms} denied={denied[:2]} {msg}"
            )
        return _step(row.sid, "reject", row.code, observed, code, detail, extra_ok)


def _signed_allow_step(runner: SignedRunner, build: PackageBuilder) -> Step:
    greeter = build(Package("greeter", GREETER_PY, GREETER_CAPS))
    observed, code, outcome, msg = runner.execute(greeter, args={"who": "journey"})
    if outcome is None:
        return _step("external-signed-runs-in-worker", "allow", None, observed, code, msg, False)
    value = outcome.value if isinstance(outcome.value, dict) else {}
    ok = (
        outcome.worker_pid != os.getpid()
        and outcome.reaped
        and outcome.returncode is not None
        and value.get("greeting") == "hello journey"
        and outcome.requests == 2  # time + logger, nothing else
    )
    detail = (
        f"worker_pid={outcome.worker_pid} host_pid={os.getpid()} reaped={outcome.reaped} "
        f"rc={outcome.returncode} requests={outcome.requests} ms={outcome.duration_ms} {msg}"
    )
    return _step("external-signed-runs-in-worker", "allow", None, observed, code, detail, ok)


def _secret_step(runner: SignedRunner, build: PackageBuilder) -> Step:
    """A handler obtains the secret through an allowed call: the audit and the log name the key, never the value."""
    sid = "external-secret-read-not-audited"
    reader = build(Package("secret-reader", CANARY_READER_PY, ("environment:read", "host:logger")))
    observed, code, outcome, msg = runner.execute(reader)
    if outcome is None or not outcome.ok:
        return _step(sid, "allow", None, observed, code, msg, False)
    value = outcome.value if isinstance(outcome.value, dict) else {}
    recorded = json.dumps([outcome.audit, runner.logs])
    read = [a for a in outcome.audit if (a["port"], a["method"], a["event"]) == ("env", "get", "done")]
    obtained = value.get("chars") == len(SECRET_VALUE)
    key_named = len(read) == 1 and read[0]["target"] == "API_TOKEN"
    leaked = SECRET_VALUE in recorded
    detail = (
        f"worker_pid={outcome.worker_pid} obtained={obtained} audit_names_key={key_named} "
        f"value_in_audit_or_log={leaked} events={len(outcome.audit)}"
    )
    ok = obtained and key_named and not leaked and outcome.reaped and outcome.worker_pid != os.getpid()
    return _step(sid, "allow", None, observed, code, detail, ok)


def external_steps(tmp: Path, trust: TrustStore, keys: Mapping[str, Ed25519PrivateKey]) -> list[Step]:
    """The signed allow path, the secret read, then every row of ``WORKER_REJECTS``."""
    skills = tmp / "skills"
    skills.mkdir()
    runner, build = SignedRunner(trust), PackageBuilder(skills, keys)
    allows = [_signed_allow_step(runner, build), _secret_step(runner, build)]
    return [*allows, *walk(WORKER_REJECTS, build, runner.reject_step)]
