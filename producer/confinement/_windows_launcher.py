"""Windows: the launcher that starts one app stage inside a job object, under a restricted low-integrity token.

Run by the producer's own Python (``python -I -m desktop_qualify.producer.confinement._windows_launcher --plan
PLAN --report REPORT``); standard library only. In order, each step through ``Win32`` (the tests' seam):

1. an unnamed job whose handle only this process holds, limited to kill-on-close and die-on-unhandled-exception
   (no breakaway), with UI limits (no other process's windows, no clipboard, no session settings), read back;
2. this process's token made into a restricted one: every privilege gone, Administrators deny-only, and a
   second access check that passes only through Everyone, Users, RESTRICTED and the logon session's SID (so a
   file granting only the runner user, as the checkout and the key folders do, is closed even to reading);
   its integrity set to Low (no writing up) and its default DACL opened to RESTRICTED (the stage can open the
   pipes and events it creates), both read back;
3. the command started suspended with that token (``CreateProcessAsUserW``: a restricted version of the
   caller's own token needs no privilege), assigned to the job, then resumed;
4. once it ends, every process left in the job is ended too (as bubblewrap's PID namespace ends with its
   first process), and the launcher exits with the command's exit code.

The report (``--report``) says what was applied, as read back; the producer's ``finish`` confirms the layers
from it. If the launcher itself is killed (the producer's tree kill), its job handle closes with it and the
kernel ends every process in the job.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from . import _windows_structs as ws

EXIT_LAUNCH_FAILED = 126
_DRAIN_POLLS, _DRAIN_PAUSE = 50, 0.1


# The ``Win32`` methods the launcher calls: ``_windows_api.Win32``, or the tests' recorder.
Api = Any


def environment_block(env: Mapping[str, str]) -> str:
    """``K=V\\0...\\0\\0``, sorted without regard to case, as CreateProcess expects."""
    return "".join(f"{k}={v}\0" for k, v in sorted(env.items(), key=lambda kv: kv[0].upper())) + "\0"


def logon_sid(buffer: ctypes.Array[ctypes.c_char]) -> int:
    """The logon session's SID among a TOKEN_GROUPS answer's groups (it points into ``buffer``)."""
    count = ws.TOKEN_GROUPS.from_buffer(buffer).GroupCount
    offset = ws.TOKEN_GROUPS.Groups.offset
    if offset + count * ctypes.sizeof(ws.SID_AND_ATTRIBUTES) > len(buffer):
        raise OSError("the token's group list is longer than its answer")
    for group in (ws.SID_AND_ATTRIBUTES * count).from_buffer(buffer, offset):
        if group.Attributes & ws.SE_GROUP_LOGON_ID == ws.SE_GROUP_LOGON_ID and group.Sid:
            return int(group.Sid)
    raise OSError("the token has no logon session SID")


def _restricted_token(api: Api, own: int, held: list[tuple[str, int]], facts: dict[str, Any]) -> int:
    """Step 2 of the module docstring; every SID and descriptor it allocates goes to ``held`` for freeing."""
    groups = api.token_information(own, ws.TOKEN_GROUPS_CLASS)
    logon = logon_sid(groups)
    logon_text = api.sid_to_string(logon)
    restrict = []
    for text in ws.RESTRICTING:
        restrict.append(api.string_to_sid(text))
        held.append(("local", restrict[-1]))
    admins = api.string_to_sid(ws.ADMINISTRATORS)
    held.append(("local", admins))
    token = int(api.create_restricted_token(own, ws.DISABLE_MAX_PRIVILEGE, [admins], [*restrict, logon]))
    held.append(("handle", token))
    low = api.string_to_sid(ws.LOW_INTEGRITY)
    held.append(("local", low))
    label = ws.TOKEN_MANDATORY_LABEL()
    label.Label.Sid, label.Label.Attributes = low, ws.SE_GROUP_INTEGRITY
    api.set_token_information(token, ws.TOKEN_INTEGRITY_LEVEL_CLASS, label,
                              ctypes.sizeof(label) + api.sid_length(low))
    descriptor = api.descriptor_from_sddl(f"D:(A;;GA;;;SY)(A;;GA;;;RC)(A;;GA;;;{logon_text})", ws.SDDL_REVISION_1)
    held.append(("local", descriptor))
    default = ws.TOKEN_DEFAULT_DACL(api.descriptor_dacl(descriptor))
    api.set_token_information(token, ws.TOKEN_DEFAULT_DACL_CLASS, default, ctypes.sizeof(default))
    answer = api.token_information(token, ws.TOKEN_INTEGRITY_LEVEL_CLASS)
    facts.update(restricted=bool(api.is_token_restricted(token)), privileges="max-disabled",
                 restricting=[*ws.RESTRICTING, "logon"], deny_only=[ws.ADMINISTRATORS],
                 integrity=api.sid_to_string(ws.TOKEN_MANDATORY_LABEL.from_buffer(answer).Label.Sid or 0))
    return token


def _startup(api: Api) -> ws.STARTUPINFOW:
    startup = ws.STARTUPINFOW()
    startup.cb = ctypes.sizeof(ws.STARTUPINFOW)
    startup.dwFlags = ws.STARTF_USESTDHANDLES
    handles = [api.std_handle(which) for which in (ws.STD_INPUT, ws.STD_OUTPUT, ws.STD_ERROR)]
    startup.hStdInput, startup.hStdOutput, startup.hStdError = handles
    return startup


def launch(api: Api, argv: Sequence[str], env: Mapping[str, str], cwd: str, *,
           report: Callable[[dict[str, Any]], None], sleep: Callable[[float], None] = time.sleep) -> int:
    """Steps 1 to 4 of the module docstring; the command's exit code. ``report`` gets the facts as they stand."""
    facts: dict[str, Any] = {"phase": "starting"}
    held: list[tuple[str, int]] = []
    job = process = 0
    try:
        job = int(api.create_job())
        api.set_job_information(job, ws.JOB_EXTENDED_LIMITS, ws.job_limits())
        api.set_job_information(job, ws.JOB_BASIC_UI_RESTRICTIONS, ws.UI_RESTRICTIONS(ws.UI_LIMITS))
        limits = ws.EXTENDED_LIMITS()
        api.query_job_information(job, ws.JOB_EXTENDED_LIMITS, limits)
        facts.update(job=True, limit_flags=int(limits.BasicLimitInformation.LimitFlags))
        own = int(api.open_process_token(ws.OWN_TOKEN_ACCESS))
        held.append(("handle", own))
        token = _restricted_token(api, own, held, facts)
        info = api.create_process_as_user(token, subprocess.list2cmdline(list(argv)), environment_block(env), cwd,
                                          startup=_startup(api), flags=ws.START_FLAGS)
        process = int(info.hProcess)
        held.append(("handle", int(info.hThread)))
        try:
            api.assign(job, process)
        except OSError:
            api.terminate_process(process, EXIT_LAUNCH_FAILED)  # never runs a single instruction unconfined
            raise
        facts.update(phase="started", assigned=True, pid=int(info.dwProcessId),
                     home=env.get("USERPROFILE"), tmp=env.get("TEMP"))
        report(facts)
        api.resume_thread(int(info.hThread))
        api.wait(process, ws.INFINITE)
        code = int(api.exit_code(process))
        api.terminate_job(job, 1)  # the stage ends with its first process: whatever it left goes too
        facts.update(phase="ended", exit_code=code, active_after=_drain(api, job, sleep))
        report(facts)
        return code
    except OSError as exc:
        facts.update(phase="failed", failed_call=getattr(exc, "function", type(exc).__name__),
                     error=getattr(exc, "code", None))
        report(facts)
        return EXIT_LAUNCH_FAILED
    finally:
        for kind, value in reversed(held):
            with contextlib.suppress(OSError):
                api.close(value) if kind == "handle" else api.local_free(value)
        for handle in (process, job):  # the job last: closing it kills anything still in it
            if handle:
                with contextlib.suppress(OSError):
                    api.close(handle)


def _drain(api: Api, job: int, sleep: Callable[[float], None]) -> int:
    """How many processes are still in the job once the termination has had time to land (0 expected)."""
    accounting = ws.ACCOUNTING()
    for _ in range(_DRAIN_POLLS):
        api.query_job_information(job, ws.JOB_BASIC_ACCOUNTING, accounting)
        if accounting.ActiveProcesses == 0:
            return 0
        sleep(_DRAIN_PAUSE)
    return int(accounting.ActiveProcesses)


def write_report(path: Path) -> Callable[[dict[str, Any]], None]:
    """Write each report whole, then rename it over the last: the producer never reads half of one."""

    def write(facts: dict[str, Any]) -> None:
        partial = path.with_name(path.name + ".partial")
        partial.write_text(json.dumps(facts, sort_keys=True), encoding="utf-8")
        partial.replace(path)

    return write


def main(args: Sequence[str] | None = None, api_factory: Callable[[], Api] | None = None) -> int:
    """Read the plan the producer wrote (argv, environment, folder), launch it, exit with its code."""
    parser = argparse.ArgumentParser(prog="windows-launcher")
    parser.add_argument("--plan", type=Path, required=True)
    parser.add_argument("--report", type=Path, required=True)
    options = parser.parse_args(args)
    plan = json.loads(options.plan.read_text(encoding="utf-8"))
    if api_factory is None:
        from ._windows_api import Win32  # noqa: PLC0415 - loads kernel32: Windows only

        api_factory = Win32
    report = write_report(options.report)
    try:
        api = api_factory()
    except (OSError, AttributeError) as exc:  # no kernel32 or advapi32: not Windows, or a broken install
        report({"phase": "failed", "failed_call": "load", "error": type(exc).__name__})
        return EXIT_LAUNCH_FAILED
    code = launch(api, plan["argv"], plan["env"], plan["cwd"], report=report)
    return code - (1 << 32) if code > 0x7FFFFFFF else code  # an NTSTATUS exit code, as a signed DWORD


if __name__ == "__main__":
    sys.exit(main())
