"""The Windows adapter, held on Linux: the launcher's Win32 call sequence, the seam's declared signatures,
the ``icacls`` command lines, and the read-back of the launcher's report.

Nothing here runs on Windows: the launcher is driven through a recorder in place of ``Win32``, and ``Win32``
itself over stand-in DLL functions that check every argument against the ``argtypes`` it declared.
docs/boundaries.md says what only a real Windows machine can confirm.
"""

from __future__ import annotations

import ctypes
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from desktop_qualify.evidence_schemas import WINDOWS_LAYERS
from desktop_qualify.producer.confinement import _windows_structs as ws
from desktop_qualify.producer.confinement._stage import ConfinementError, StageSandbox
from desktop_qualify.producer.confinement._windows import (
    LAUNCHER,
    JobObjectConfinement,
    facts_from_report,
    open_aces,
)
from desktop_qualify.producer.confinement._windows_api import SIGNATURES, Win32, Win32Error
from desktop_qualify.producer.confinement._windows_launcher import environment_block, launch, logon_sid, main

LOGON, LOW_SID, RESTRICTED_TOKEN, JOB, OWN = 0x5000, 0x7000, 0x400, 0x100, 0x200
CREATE_BREAKAWAY_FROM_JOB = 0x01000000


def groups_buffer(groups: list[tuple[int, int]]) -> ctypes.Array[ctypes.c_char]:
    """A TOKEN_GROUPS answer holding ``groups`` (SID pointer, attributes)."""
    offset = ws.TOKEN_GROUPS.Groups.offset
    buffer = ctypes.create_string_buffer(offset + len(groups) * ctypes.sizeof(ws.SID_AND_ATTRIBUTES))
    ws.TOKEN_GROUPS.from_buffer(buffer).GroupCount = len(groups)
    array = (ws.SID_AND_ATTRIBUTES * len(groups)).from_buffer(buffer, offset)
    for index, (sid, attributes) in enumerate(groups):
        array[index].Sid, array[index].Attributes = sid, attributes
    return buffer


class Recorder:
    """Stands in for ``Win32``: records each call with what matters of its arguments, answers as Windows."""

    def __init__(self, fail: str | None = None, active_after: int = 0) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.fail, self.active_after = fail, active_after
        self.sids = iter(range(0x300, 0x400))

    def _record(self, name: str, *args: Any) -> None:
        self.calls.append((name, *args))
        if name == self.fail:
            raise Win32Error(name, 5)

    def create_job(self) -> int:
        self._record("create_job")
        return JOB

    def set_job_information(self, job: int, info_class: int, info: ctypes.Structure) -> None:
        value = info.BasicLimitInformation.LimitFlags if info_class == ws.JOB_EXTENDED_LIMITS \
            else info.UIRestrictionsClass  # fmt: skip
        self._record("set_job_information", job, info_class, value)

    def query_job_information(self, job: int, info_class: int, info: ctypes.Structure) -> None:
        self._record("query_job_information", job, info_class)
        if info_class == ws.JOB_EXTENDED_LIMITS:
            info.BasicLimitInformation.LimitFlags = ws.JOB_LIMITS
        else:
            info.ActiveProcesses = self.active_after

    def open_process_token(self, access: int) -> int:
        self._record("open_process_token", access)
        return OWN

    def token_information(self, token: int, info_class: int) -> ctypes.Array[ctypes.c_char]:
        self._record("token_information", token, info_class)
        if info_class == ws.TOKEN_GROUPS_CLASS:
            return groups_buffer([(0x111, 0x7), (LOGON, ws.SE_GROUP_LOGON_ID | 0x7)])
        answer = ctypes.create_string_buffer(ctypes.sizeof(ws.TOKEN_MANDATORY_LABEL))
        ws.TOKEN_MANDATORY_LABEL.from_buffer(answer).Label.Sid = LOW_SID
        return answer

    def sid_to_string(self, sid: int) -> str:
        self._record("sid_to_string", sid)
        return {LOGON: "S-1-5-5-0-4242", LOW_SID: ws.LOW_INTEGRITY}[sid]

    def string_to_sid(self, text: str) -> int:
        self._record("string_to_sid", text)
        return LOW_SID if text == ws.LOW_INTEGRITY else next(self.sids)

    def create_restricted_token(self, token: int, flags: int, disable: list[int], restrict: list[int]) -> int:
        self._record("create_restricted_token", token, flags, list(disable), list(restrict))
        return RESTRICTED_TOKEN

    def sid_length(self, sid: int) -> int:
        self._record("sid_length", sid)
        return 12

    def set_token_information(self, token: int, info_class: int, info: ctypes.Structure, size: int) -> None:
        value = (info.Label.Sid, info.Label.Attributes) if info_class == ws.TOKEN_INTEGRITY_LEVEL_CLASS \
            else info.DefaultDacl  # fmt: skip
        self._record("set_token_information", token, info_class, value, size)

    def descriptor_from_sddl(self, sddl: str, revision: int) -> int:
        self._record("descriptor_from_sddl", sddl, revision)
        return 0x900

    def descriptor_dacl(self, descriptor: int) -> int:
        self._record("descriptor_dacl", descriptor)
        return 0x910

    def is_token_restricted(self, token: int) -> bool:
        self._record("is_token_restricted", token)
        return True

    def std_handle(self, which: int) -> int:
        self._record("std_handle", which)
        return {ws.STD_INPUT: 11, ws.STD_OUTPUT: 12, ws.STD_ERROR: 13}[which]

    def create_process_as_user(self, token: int, command_line: str, environment: str, cwd: str, *,
                               startup: ws.STARTUPINFOW, flags: int) -> ws.PROCESS_INFORMATION:
        self._record("create_process_as_user", token, command_line, environment, cwd,
                     (startup.cb, startup.dwFlags, startup.hStdInput, startup.hStdOutput, startup.hStdError), flags)
        return ws.PROCESS_INFORMATION(0x600, 0x601, 4242, 1)

    def __getattr__(self, name: str) -> Any:
        # The calls whose answer is nothing (or a plain number): assign, resume_thread, wait, exit_code, ...
        answers = {"wait": 0, "exit_code": 3}

        def call(*args: Any) -> Any:
            self._record(name, *args)
            return answers.get(name)

        return call


def run_launch(recorder: Recorder) -> tuple[int, list[dict[str, Any]]]:
    reports: list[dict[str, Any]] = []
    code = launch(recorder, ["C:\\py\\python.exe", "-c", "print('a b')"], {"TEMP": "C:\\s\\tmp", "USERPROFILE":
                  "C:\\s\\home", "Path": "C:\\py"}, "C:\\s\\src", report=lambda f: reports.append(dict(f)),
                  sleep=lambda s: None)  # fmt: skip
    return code, reports


def test_the_launcher_makes_the_job_and_the_token_then_starts_suspended_assigns_and_resumes() -> None:
    recorder = Recorder()
    code, reports = run_launch(recorder)
    admins, everyone, users, restricted = 0x303, 0x300, 0x301, 0x302
    assert recorder.calls == [
        ("create_job",),
        ("set_job_information", JOB, ws.JOB_EXTENDED_LIMITS, ws.KILL_ON_JOB_CLOSE | ws.DIE_ON_UNHANDLED_EXCEPTION),
        ("set_job_information", JOB, ws.JOB_BASIC_UI_RESTRICTIONS, 0xFF),
        ("query_job_information", JOB, ws.JOB_EXTENDED_LIMITS),
        ("open_process_token", ws.TOKEN_ASSIGN_PRIMARY | ws.TOKEN_DUPLICATE | ws.TOKEN_QUERY
         | ws.TOKEN_ADJUST_DEFAULT),
        ("token_information", OWN, ws.TOKEN_GROUPS_CLASS),
        ("sid_to_string", LOGON),
        ("string_to_sid", "S-1-1-0"), ("string_to_sid", "S-1-5-32-545"), ("string_to_sid", "S-1-5-12"),
        ("string_to_sid", "S-1-5-32-544"),
        ("create_restricted_token", OWN, ws.DISABLE_MAX_PRIVILEGE, [admins], [everyone, users, restricted, LOGON]),
        ("string_to_sid", "S-1-16-4096"),
        ("sid_length", LOW_SID),
        ("set_token_information", RESTRICTED_TOKEN, ws.TOKEN_INTEGRITY_LEVEL_CLASS, (LOW_SID, ws.SE_GROUP_INTEGRITY),
         ctypes.sizeof(ws.TOKEN_MANDATORY_LABEL) + 12),
        ("descriptor_from_sddl", "D:(A;;GA;;;SY)(A;;GA;;;RC)(A;;GA;;;S-1-5-5-0-4242)", 1),
        ("descriptor_dacl", 0x900),
        ("set_token_information", RESTRICTED_TOKEN, ws.TOKEN_DEFAULT_DACL_CLASS, 0x910,
         ctypes.sizeof(ws.TOKEN_DEFAULT_DACL)),
        ("token_information", RESTRICTED_TOKEN, ws.TOKEN_INTEGRITY_LEVEL_CLASS),
        ("is_token_restricted", RESTRICTED_TOKEN),
        ("sid_to_string", LOW_SID),
        ("std_handle", ws.STD_INPUT), ("std_handle", ws.STD_OUTPUT), ("std_handle", ws.STD_ERROR),
        ("create_process_as_user", RESTRICTED_TOKEN, 'C:\\py\\python.exe -c "print(\'a b\')"',
         "Path=C:\\py\0TEMP=C:\\s\\tmp\0USERPROFILE=C:\\s\\home\0\0", "C:\\s\\src",
         (ctypes.sizeof(ws.STARTUPINFOW), ws.STARTF_USESTDHANDLES, 11, 12, 13),
         ws.CREATE_SUSPENDED | ws.CREATE_UNICODE_ENVIRONMENT | ws.CREATE_NO_WINDOW),
        ("assign", JOB, 0x600),
        ("resume_thread", 0x601),
        ("wait", 0x600, ws.INFINITE),
        ("exit_code", 0x600),
        ("terminate_job", JOB, 1),
        ("query_job_information", JOB, ws.JOB_BASIC_ACCOUNTING),
        # Freed in reverse: the low SID, the descriptor, the restricted token... then the process, the job last.
        ("close", 0x601), ("local_free", 0x900), ("local_free", LOW_SID), ("close", RESTRICTED_TOKEN),
        ("local_free", admins), ("local_free", restricted), ("local_free", users), ("local_free", everyone),
        ("close", OWN), ("close", 0x600), ("close", JOB),
    ]
    assert code == 3
    started = {"phase": "started", "job": True, "limit_flags": ws.JOB_LIMITS, "restricted": True,
               "privileges": "max-disabled", "restricting": ["S-1-1-0", "S-1-5-32-545", "S-1-5-12", "logon"],
               "deny_only": ["S-1-5-32-544"], "integrity": "S-1-16-4096", "assigned": True, "pid": 4242,
               "home": "C:\\s\\home", "tmp": "C:\\s\\tmp"}
    assert reports == [started, {**started, "phase": "ended", "exit_code": 3, "active_after": 0}]


def test_the_start_flags_never_break_away_from_the_job() -> None:
    assert not ws.START_FLAGS & CREATE_BREAKAWAY_FROM_JOB
    assert not ws.JOB_LIMITS & (ws.BREAKAWAY_OK | ws.SILENT_BREAKAWAY_OK)


@pytest.mark.parametrize("failing", ["create_job", "set_job_information", "open_process_token",
                                     "create_restricted_token", "set_token_information", "create_process_as_user",
                                     "assign", "resume_thread"])
def test_a_failing_call_stops_the_launch_before_the_command_runs_unconfined(failing: str) -> None:
    recorder = Recorder(fail=failing)
    code, reports = run_launch(recorder)
    names = [call[0] for call in recorder.calls]
    assert code == 126
    assert reports[-1]["phase"] == "failed"
    assert reports[-1]["failed_call"] == failing
    # After the failed call, nothing but the cleanup.
    assert set(names[names.index(failing) + 1:]) <= {"close", "local_free", "terminate_process"}
    if failing == "resume_thread":
        assert reports[0]["phase"] == "started"  # assigned: closing the job below kills it, never resumed
    else:
        assert "resume_thread" not in names
        assert all(r["phase"] != "started" for r in reports)
    if failing == "assign":
        assert ("terminate_process", 0x600, 126) in recorder.calls  # it never ran a single instruction
    if failing != "create_job":
        assert recorder.calls[-1] == ("close", JOB)  # the job's handle is the last one closed


def test_a_process_left_in_the_job_is_counted() -> None:
    recorder = Recorder(active_after=2)
    _code, reports = run_launch(recorder)
    assert reports[-1]["active_after"] == 2
    assert sum(1 for c in recorder.calls if c == ("query_job_information", JOB, ws.JOB_BASIC_ACCOUNTING)) == 50


def test_the_logon_sid_is_found_among_the_groups_or_refused() -> None:
    assert logon_sid(groups_buffer([(0x1, 0x7), (0x2, ws.SE_GROUP_LOGON_ID | 0x7), (0x3, 0x4)])) == 0x2
    with pytest.raises(OSError, match="no logon session SID"):
        logon_sid(groups_buffer([(0x1, 0x7), (0x2, 0x40000000)]))
    short = groups_buffer([(0x1, 0x7)])
    ws.TOKEN_GROUPS.from_buffer(short).GroupCount = 5
    with pytest.raises(OSError, match="longer than its answer"):
        logon_sid(short)


def test_the_environment_block_is_sorted_without_regard_to_case() -> None:
    assert environment_block({"b": "1", "A": "2", "C": "3"}) == "A=2\0b=1\0C=3\0\0"


def test_the_launcher_main_reads_the_plan_and_writes_the_report(tmp_path: Path) -> None:
    plan, report = tmp_path / "plan.json", tmp_path / "report.json"
    plan.write_text(json.dumps({"argv": ["C:\\x.exe"], "env": {"TEMP": "t"}, "cwd": "C:\\"}), encoding="utf-8")
    recorder = Recorder()
    recorder.__dict__["exit_code"] = lambda process: 0xC0000005  # an access violation's NTSTATUS
    assert main(["--plan", str(plan), "--report", str(report)], api_factory=lambda: recorder) == 0xC0000005 - 2**32
    assert json.loads(report.read_text(encoding="utf-8"))["phase"] == "ended"
    assert not (tmp_path / "report.json.partial").exists()


# -- the seam itself, over stand-in DLL functions ---------------------------------------------------------


class FakeFunction:
    """A DLL export: checks every argument with the ``argtypes`` the seam declared, answers ``result``."""

    def __init__(self, name: str, results: dict[str, Any]) -> None:
        self.name, self.results = name, results
        self.argtypes: list[Any] | None = None
        self.restype: Any = "unset"

    def __call__(self, *args: Any) -> Any:
        assert self.argtypes is not None, f"{self.name} called without argtypes"
        assert self.restype != "unset", f"{self.name} called without a restype"
        assert len(args) == len(self.argtypes), f"{self.name}: {len(args)} arguments"
        for arg, argtype in zip(args, self.argtypes, strict=True):
            argtype.from_param(arg)  # raises as ctypes would on a wrong type
        return self.results.get(self.name, 1)


class FakeDll:
    def __init__(self, results: dict[str, Any]) -> None:
        self.functions: dict[str, FakeFunction] = {}
        self.results = results

    def __getattr__(self, name: str) -> FakeFunction:
        return self.functions.setdefault(name, FakeFunction(name, self.results))


def seam(results: dict[str, Any] | None = None) -> tuple[Win32, dict[str, FakeDll]]:
    dlls: dict[str, FakeDll] = {}
    api = Win32(loader=lambda name: dlls.setdefault(name, FakeDll(results or {})), last_error=lambda: 1314)
    return api, dlls


def test_every_function_has_its_argtypes_and_restype_set_before_any_call() -> None:
    _api, dlls = seam()
    for name, (dll, restype, argtypes) in SIGNATURES.items():
        function = dlls[dll].functions[name]
        assert function.restype is restype, name
        assert function.argtypes == list(argtypes), name
    # Handles and pointers are 64-bit, never ctypes' default int.
    assert SIGNATURES["CreateJobObjectW"][1] is ctypes.c_void_p
    assert SIGNATURES["GetCurrentProcess"][1] is ctypes.c_void_p


def test_each_method_passes_arguments_of_the_declared_types() -> None:
    api, _dlls = seam({"CreateJobObjectW": 0x100, "GetCurrentProcess": 0x1, "GetLengthSid": 12,
                       "GetStdHandle": 0x10, "WaitForSingleObject": 0, "ResumeThread": 1})
    assert api.create_job() == 0x100
    api.set_job_information(1, ws.JOB_EXTENDED_LIMITS, ws.job_limits())
    api.query_job_information(1, ws.JOB_BASIC_ACCOUNTING, ws.ACCOUNTING())
    api.assign(1, 2)
    api.terminate_job(1, 1)
    api.open_process_token(ws.OWN_TOKEN_ACCESS)
    api.create_restricted_token(1, ws.DISABLE_MAX_PRIVILEGE, [0x10], [0x20, 0x30])
    assert api.is_token_restricted(1) is True
    api.string_to_sid("S-1-1-0")
    api.set_token_information(1, ws.TOKEN_INTEGRITY_LEVEL_CLASS, ws.TOKEN_MANDATORY_LABEL(), 28)
    assert api.sid_length(0x10) == 12
    api.descriptor_from_sddl("D:", 1)
    assert api.std_handle(ws.STD_INPUT) == 0x10
    api.create_process_as_user(1, "a b", "A=1\0\0", "C:\\", startup=ws.STARTUPINFOW(), flags=ws.START_FLAGS)
    api.resume_thread(1)
    assert api.wait(1, ws.INFINITE) == 0
    api.exit_code(1)
    api.terminate_process(1, 1)
    api.close(1)
    api.local_free(1)


@pytest.mark.parametrize(("call", "function"), [
    (lambda api: api.create_job(), "CreateJobObjectW"),
    (lambda api: api.assign(1, 2), "AssignProcessToJobObject"),
    (lambda api: api.create_restricted_token(1, 1, [], []), "CreateRestrictedToken"),
    (lambda api: api.create_process_as_user(1, "a", "\0", "C:\\", startup=ws.STARTUPINFOW(), flags=0),
     "CreateProcessAsUserW"),
])  # fmt: skip
def test_a_failed_call_raises_with_its_name_and_last_error(call: Any, function: str) -> None:
    api, _dlls = seam({function: 0})
    with pytest.raises(Win32Error) as raised:
        call(api)
    assert raised.value.function == function
    assert raised.value.code == 1314


def test_sentinel_results_are_failures_too() -> None:
    api, _dlls = seam({"ResumeThread": 0xFFFFFFFF, "WaitForSingleObject": 0xFFFFFFFF,
                       "GetStdHandle": ctypes.c_void_p(-1).value})
    for call, name in ((lambda: api.resume_thread(1), "ResumeThread"), (lambda: api.wait(1, 0), "WaitForSingleObject"),
                       (lambda: api.std_handle(ws.STD_OUTPUT), "GetStdHandle")):
        with pytest.raises(Win32Error, match=name):
            call()


# -- the producer's side: icacls, the plan, the read-back -------------------------------------------------


class FakeIcacls:
    def __init__(self, sddl: str = "D:PAI(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)(A;OICI;FA;;;S-1-5-21-1-2-3-1001)") -> None:
        self.calls: list[list[str]] = []
        self.sddl = sddl

    def __call__(self, argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[bytes]:
        self.calls.append(list(argv))
        if argv[2] == "/save":
            Path(argv[3]).write_bytes(("\ufeffcheckout\r\n" + self.sddl + "\r\n").encode("utf-16-le"))
        return subprocess.CompletedProcess(argv, 0, b"", b"")


@pytest.fixture
def stage(tmp_path: Path) -> StageSandbox:
    root, given = tmp_path / "stage", tmp_path / "in.msi"
    (root / "home").mkdir(parents=True)
    (root / "tmp").mkdir()
    given.write_bytes(b"")
    (tmp_path / "checkout").mkdir()
    return StageSandbox(stage="journey", home=root / "home", tmp=root / "tmp", writable=(root,), readable=(given,),
                        toolchain=(Path("/py"),), protected=(tmp_path / "checkout", tmp_path / "keys"))


def windows(runner: FakeIcacls, tmp_path: Path) -> JobObjectConfinement:
    work = tmp_path / "work"

    def make() -> str:
        work.mkdir()
        return str(work)

    return JobObjectConfinement(runner, platform="win32", python="C:\\py\\python.exe", icacls="icacls",
                                workdir=make)


def test_wrap_opens_the_stage_folders_to_the_token_and_starts_the_launcher(stage: StageSandbox,
                                                                           tmp_path: Path) -> None:
    runner = FakeIcacls()
    command = windows(runner, tmp_path).wrap(["/py/python.exe", "-m", "journey"], stage,
                                             {"Temp": "C:\\elsewhere", "PATH": "/py", "SYSTEMROOT": "C:\\Windows"})
    work = tmp_path / "work"
    assert command.argv == ["C:\\py\\python.exe", "-I", "-m", LAUNCHER, "--plan", str(work / "plan.json"),
                            "--report", str(work / "report.json")]
    assert LAUNCHER == "desktop_qualify.producer.confinement._windows_launcher"
    root, given = stage.writable[0], stage.readable[0]
    assert runner.calls == [
        ["icacls", str(given), "/grant", "*S-1-5-12:RX", "/q"],  # a file: no inheritance flags
        ["icacls", str(root), "/grant", "*S-1-5-12:(OI)(CI)M", "/q"],
        ["icacls", str(root), "/setintegritylevel", "(OI)(CI)low", "/q"],
        ["icacls", str(stage.protected[0]), "/save", str(work / "acl.txt"), "/q"],  # keys: missing, nothing to read
    ]
    plan = json.loads((work / "plan.json").read_text(encoding="utf-8"))
    private = {"USERPROFILE": str(stage.home), "HOME": str(stage.home), "TEMP": str(stage.tmp),
               "TMP": str(stage.tmp)}
    assert plan == {"argv": ["/py/python.exe", "-m", "journey"], "cwd": str(stage.home),
                    "env": {"PATH": "/py", "SYSTEMROOT": "C:\\Windows", **private}}  # the caller's "Temp" is gone
    command.close()
    assert not work.exists()


@pytest.mark.parametrize("ace", ["(A;OICI;0x1200a9;;;BU)", "(A;;FR;;;WD)", "(A;ID;FA;;;S-1-5-12)",
                                 "(A;;GR;;;S-1-1-0)"])
def test_a_protected_path_the_token_could_read_is_refused(stage: StageSandbox, tmp_path: Path, ace: str) -> None:
    runner = FakeIcacls("D:AI(A;OICI;FA;;;SY)" + ace)
    with pytest.raises(ConfinementError, match="restricted token reads"):
        windows(runner, tmp_path).wrap(["/py/python.exe"], stage, {})
    assert not (tmp_path / "work").exists()


def test_only_allow_entries_for_the_tokens_groups_count() -> None:
    assert open_aces("D:(D;OICI;FA;;;WD)(A;;FA;;;AU)(A;;FA;;;SY)(A;;FA;;;S-1-5-21-1-1001)") == []
    assert open_aces("D:(A;;FA;;;BU)") == ["(A; ; FA; ; ; BU)"]


@pytest.mark.parametrize("env", [{"ACTIONS_ID_TOKEN_REQUEST_URL": "x"}, {"GITHUB_TOKEN": "x"}, {"A B": "1"}])
def test_an_environment_with_a_credential_is_refused(stage: StageSandbox, tmp_path: Path,
                                                     env: dict[str, str]) -> None:
    with pytest.raises(ConfinementError):
        windows(FakeIcacls(), tmp_path).wrap(["/py/python.exe"], stage, env)


def test_unavailable_says_what_is_missing() -> None:
    assert JobObjectConfinement(FakeIcacls(), platform="linux").unavailable() == \
        "job objects confine app code on Windows only"  # fmt: skip
    missing = JobObjectConfinement(FakeIcacls(), platform="win32")
    missing._icacls = None
    assert "icacls is not on PATH" in (missing.unavailable() or "")


def report(**overrides: Any) -> dict[str, Any]:
    base = {"phase": "ended", "job": True, "assigned": True, "limit_flags": ws.JOB_LIMITS, "restricted": True,
            "privileges": "max-disabled", "integrity": "S-1-16-4096", "home": "/s/home", "tmp": "/s/tmp",
            "exit_code": 0, "active_after": 0}
    return {**base, **overrides}


BOX = StageSandbox(stage="probe", home=Path("/s/home"), tmp=Path("/s/tmp"), writable=(Path("/s"),))


def test_finish_reports_every_layer_the_report_confirms() -> None:
    facts = facts_from_report(BOX, report())
    assert facts.layers == WINDOWS_LAYERS
    assert facts.mechanism == "job-object"
    assert facts.network is True
    assert "network: not cut" in facts.detail
    # The launcher killed by the producer's tree kill: the job's only handle closed with it.
    assert facts_from_report(BOX, report(phase="started")).layers == WINDOWS_LAYERS


@pytest.mark.parametrize(("overrides", "missing"), [
    ({"limit_flags": ws.DIE_ON_UNHANDLED_EXCEPTION}, {"kill-on-job-close", "dies-with-stage"}),
    ({"limit_flags": ws.JOB_LIMITS | ws.BREAKAWAY_OK}, {"kill-on-job-close", "dies-with-stage"}),
    ({"assigned": False}, {"job-object", "dies-with-stage"}),
    ({"restricted": False}, {"restricted-token"}),
    ({"integrity": "S-1-16-8192"}, {"low-integrity"}),
    ({"home": "C:\\Users\\runneradmin"}, {"private-home"}),
    ({"tmp": None}, {"private-tmp"}),
])  # fmt: skip
def test_a_layer_the_report_does_not_confirm_is_not_reported(overrides: dict[str, Any], missing: set[str]) -> None:
    layers = facts_from_report(BOX, report(**overrides)).layers
    assert set(WINDOWS_LAYERS) - set(layers) == missing


def test_a_failed_or_missing_report_confirms_nothing_and_a_survivor_is_an_error() -> None:
    assert facts_from_report(BOX, None).layers == ()
    assert facts_from_report(BOX, {"phase": "failed", "failed_call": "CreateRestrictedToken"}).layers == ()
    with pytest.raises(ConfinementError, match="survived"):
        facts_from_report(BOX, report(active_after=1))


def test_finish_reads_the_report_the_launcher_wrote(stage: StageSandbox, tmp_path: Path) -> None:
    command = windows(FakeIcacls(), tmp_path).wrap(["/py/python.exe"], stage, {})
    assert command.finish().layers == ()  # nothing written yet: the launcher never started the command
    written = report(home=str(stage.home), tmp=str(stage.tmp))
    (tmp_path / "work" / "report.json").write_text(json.dumps(written), encoding="utf-8")
    assert command.finish().layers == WINDOWS_LAYERS
    (tmp_path / "work" / "report.json").write_text(json.dumps({**written, "pad": "x" * 70000}), encoding="utf-8")
    assert command.finish().layers == ()  # over the cap: not read


def test_a_launcher_that_cannot_load_the_win32_dlls_reports_it_and_starts_nothing(tmp_path: Path) -> None:
    plan, report_path = tmp_path / "plan.json", tmp_path / "report.json"
    plan.write_text(json.dumps({"argv": ["C:\\x.exe"], "env": {}, "cwd": "C:\\"}), encoding="utf-8")

    def no_dll() -> Any:
        raise OSError("kernel32 not found")

    assert main(["--plan", str(plan), "--report", str(report_path)], api_factory=no_dll) == 126
    assert json.loads(report_path.read_text(encoding="utf-8")) == {"phase": "failed", "failed_call": "load",
                                                                     "error": "OSError"}
