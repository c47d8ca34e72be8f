"""Command line: every outcome is one compact JSON line on stdout, never a traceback."""
# Subcommand modules are imported lazily on purpose: the worker entry must load no host modules.
# ruff: noqa: PLC0415

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, TypedDict

from skillhost._errors import SkillError

if TYPE_CHECKING:  # types only: the worker path must not import the broker
    from _typeshed import SupportsWrite

    from skillhost.brokers import AuditEvent

MAX_OUTPUT = 64 * 1024
EXIT_USAGE, EXIT_REFUSED, EXIT_INTERNAL = 2, 3, 4


# Every report is a JSON object; each subcommand builds its own TypedDict.
Report = Mapping[str, object]


class ErrorReport(TypedDict):
    kind: str
    version: int
    code: str
    message: str


class RunReport(TypedDict):
    kind: str
    version: int
    skill_id: str
    tier: str
    safe_mode: bool
    value: object
    audit: list[AuditEvent]


class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _UsageError(message)

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        raise _UsageError(message or "help requested")

    def print_help(self, file: SupportsWrite[str] | None = None) -> NoReturn:
        raise _UsageError("usage: skillhost {probe,journey,state,worker,sign-skill,keygen,run-skill}")


def _parser() -> _Parser:
    p = _Parser(prog="skillhost", add_help=False)
    sub = p.add_subparsers(dest="cmd")
    sub.required = True
    for name in ("probe", "journey"):
        # --record: where the app contract's record goes (also QUALIFY_RECORD); stdout gets the same line.
        sub.add_parser(name, add_help=False).add_argument("--record")
    st = sub.add_parser("state", add_help=False)
    st.add_argument("verb", choices=("write", "check"))
    st.add_argument("--record")
    w = sub.add_parser("worker", add_help=False)
    w.add_argument("--self-test", action="store_true")
    s = sub.add_parser("sign-skill", add_help=False)
    s.add_argument("--key", required=True)
    s.add_argument("dir")
    k = sub.add_parser("keygen", add_help=False)
    k.add_argument("--out", required=True)
    r = sub.add_parser("run-skill", add_help=False)
    r.add_argument("--workspace", required=True)
    r.add_argument("--trust-store", required=True)
    r.add_argument("--safe-mode", action="store_true")
    r.add_argument("--args-json", default="{}")
    r.add_argument("skill_id")
    return p


MAX_ARGS_JSON = 4096


def _run_skill(ns: argparse.Namespace) -> tuple[RunReport, int]:
    from skillhost.host import HostConfig, SkillHost
    from skillhost.packaging import TrustStore

    if len(ns.args_json) > MAX_ARGS_JSON:
        raise SkillError("CC_SKILL_USAGE", "--args-json is larger than 4096 bytes")
    try:
        args = json.loads(ns.args_json)
    except ValueError:
        raise SkillError("CC_SKILL_USAGE", "--args-json is not JSON") from None
    if not isinstance(args, dict):
        raise SkillError("CC_SKILL_USAGE", "--args-json must be a JSON object")
    trust = TrustStore.load(Path(ns.trust_store))
    host = SkillHost(HostConfig(workspace=Path(ns.workspace), trust=trust, safe_mode=ns.safe_mode))
    res = host.run(ns.skill_id, args)
    report: RunReport = {
        "kind": "skillhost-run",
        "version": 1,
        "skill_id": res.skill_id,
        "tier": res.tier,
        "safe_mode": bool(ns.safe_mode),
        "value": res.value,
        "audit": res.audit[:64],
    }
    return report, 0


def _emit(obj: Report) -> None:
    line = json.dumps(obj, sort_keys=True, separators=(",", ":"))
    if len(line.encode("utf-8")) >= MAX_OUTPUT:
        line = json.dumps(
            _error("CC_SKILL_OUTPUT_TOO_LARGE", "output exceeded 64 KiB"), sort_keys=True, separators=(",", ":")
        )
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def _error(code: str, message: object) -> ErrorReport:
    return {"kind": "skillhost-error", "version": 1, "code": code, "message": str(message)[:300]}


def _record_path(ns: argparse.Namespace) -> str | None:
    path = ns.record or os.environ.get("QUALIFY_RECORD")
    return path or None


def write_record(path: str, report: Report) -> None:
    """The contract's record file: created new (never through a link, never over a file), one JSON object."""
    data = (json.dumps(report, sort_keys=True, separators=(",", ":")) + "\n").encode("utf-8")
    if len(data) >= MAX_OUTPUT:
        raise SkillError("CC_SKILL_OUTPUT_TOO_LARGE", "the record exceeded 64 KiB")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags, 0o600)
    except OSError as exc:
        raise SkillError("CC_SKILL_RECORD_UNWRITABLE", f"cannot create the record file: {exc.strerror}") from None
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)


def _dispatch(ns: argparse.Namespace) -> tuple[Report, int]:
    if ns.cmd == "probe":
        from skillhost._probe import run_probe

        probe, rc, refusal = run_probe()
        if (path := _record_path(ns)) is not None:
            write_record(path, probe)
        if refusal is not None:
            # The app does not start without its checks: the record says which failed, the refusal says why.
            raise refusal
        return probe, rc
    if ns.cmd == "journey":
        from skillhost.journey import run_journey

        journey, rc = run_journey()
        if (path := _record_path(ns)) is not None:
            write_record(path, journey)
        return journey, rc
    if ns.cmd == "state":
        from skillhost._user_state import check_state, write_state

        state = write_state() if ns.verb == "write" else check_state()
        if (path := _record_path(ns)) is not None:
            write_record(path, state)
        # A refusal is an observation the record carries; the exit status says the app refused.
        return state, 0 if state["observed"] == "allow" else EXIT_REFUSED
    if ns.cmd == "keygen":
        import base64

        from skillhost.packaging import keyid_of, new_key, raw_public, write_private_key

        key = new_key()
        try:
            write_private_key(ns.out, key)
        except FileExistsError:
            raise SkillError("CC_SKILL_USAGE", "output file already exists") from None
        pub = key.public_key()
        return {
            "kind": "skillhost-keygen",
            "version": 1,
            "path": str(Path(ns.out).resolve())[:300],
            "keyid": keyid_of(pub),
            "public_key": base64.b64encode(raw_public(pub)).decode("ascii"),
        }, 0
    if ns.cmd == "sign-skill":
        from skillhost.packaging import load_private_key, sign_package

        res = sign_package(ns.dir, load_private_key(ns.key))
        return dict(res, kind="skillhost-sign", version=1), 0
    if ns.cmd == "run-skill":
        return _run_skill(ns)
    raise _UsageError("unknown command")


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    # The worker is the fixed entry point: dispatch before importing anything else.
    if argv[:1] == ["worker"]:
        from skillhost.worker import main as worker_main

        try:
            return worker_main(argv[1:])
        except SystemExit as exc:
            return exc.code if isinstance(exc.code, int) else 70
        except BaseException:
            return 70
    try:
        ns = _parser().parse_args(argv)
        report, rc = _dispatch(ns)
        _emit(report)
        return rc
    except _UsageError as exc:
        _emit(_error("CC_SKILL_USAGE", str(exc).strip()))
        return EXIT_USAGE
    except SkillError as exc:
        _emit(_error(exc.code, exc.message))
        return EXIT_USAGE if exc.code == "CC_SKILL_USAGE" else EXIT_REFUSED
    except KeyboardInterrupt:
        _emit(_error("CC_SKILL_INTERRUPTED", "interrupted"))
        return EXIT_INTERNAL
    except BaseException as exc:
        _emit(_error("CC_SKILL_INTERNAL", exc.__class__.__name__))
        return EXIT_INTERNAL
