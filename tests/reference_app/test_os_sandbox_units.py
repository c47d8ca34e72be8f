"""The sandbox pieces as logic, on every platform: the seccomp program, the layer reports when the kernel
says no, the macOS command line and profile, the Windows job-object calls, and the fail-closed layer check."""

from __future__ import annotations

import ctypes
import errno
import hashlib
import os
import re
import struct

import pytest
import skillhost.os_sandbox._linux as linux
import skillhost.os_sandbox._macos as macos
from skillhost.journey._kernel import refusing_layer
from skillhost.os_sandbox._dispatch import REQUIRED_LAYERS, launch_plan, missing_layers, valid_layers
from skillhost.os_sandbox._interface import layer
from skillhost.os_sandbox._seccomp_bpf import (
    ALLOWED,
    ARCHES,
    ARG_RULES,
    RET_ALLOW,
    RET_ERRNO,
    RET_KILL_PROCESS,
    build_program,
    describe,
)
from skillhost_testutil import FakeSandboxLib

# -- seccomp program ---------------------------------------------------------------------------------------

# Calls the worker must never make, by their own numbers (not from the module under test).
_REFUSED = {
    "x86_64": {"execve": 59, "execveat": 322, "ptrace": 101, "socket": 41, "clone": 56, "clone3": 435, "fork": 57,
               "personality": 135, "keyctl": 250, "userfaultfd": 323, "memfd_create": 319, "unshare": 272,
               "seccomp": 317, "bpf": 321, "io_uring_setup": 425, "getrandom": 318, "kill": 62},
    "aarch64": {"execve": 221, "execveat": 281, "ptrace": 117, "socket": 198, "clone": 220, "clone3": 435,
                "personality": 92, "keyctl": 219, "userfaultfd": 282, "memfd_create": 279, "unshare": 97,
                "seccomp": 277, "bpf": 280, "io_uring_setup": 425, "getrandom": 278, "kill": 129},
}  # fmt: skip


@pytest.mark.parametrize("machine", sorted(ARCHES))
def test_every_allowed_call_has_one_number_on_every_architecture(machine: str) -> None:
    _, numbers = ARCHES[machine]
    assert set(numbers) == set(ALLOWED)
    assert set(ARG_RULES) <= set(ALLOWED)
    assert len(set(numbers.values())) == len(numbers), "two names share one syscall number"
    assert not set(numbers.values()) & set(_REFUSED[machine].values())
    # Every entry says why; those the trace did not show say so.
    assert all(len(why) > 10 for why in ALLOWED.values())


def _run(prog: list[tuple[int, int, int, int]], arch: int, nr: int, *args: int) -> int:
    """A classic-BPF interpreter for the opcodes the program uses, over one struct seccomp_data."""
    data = struct.pack("=iIQ6Q", nr, arch, 0, *(list(args) + [0] * (6 - len(args))))
    acc, pc = 0, 0
    while True:
        code, jt, jf, k = prog[pc]
        if code == 0x20:
            acc = struct.unpack_from("=I", data, k)[0]
            pc += 1
        elif code == 0x06:
            return k
        else:
            taken = {0x15: acc == k, 0x35: acc >= k}[code]
            pc += 1 + (jt if taken else jf)


@pytest.mark.parametrize("machine", sorted(ARCHES))
def test_the_program_allows_only_its_table_and_kills_foreign_arches(machine: str) -> None:
    arch, numbers = ARCHES[machine]
    prog = build_program(machine)
    assert len(prog) < 256
    assert prog[-1] == (0x06, 0, 0, RET_ERRNO | errno.EPERM)  # the default: refused
    for name in set(ALLOWED) - set(ARG_RULES):
        assert _run(prog, arch, numbers[name], 0xFFFF) == RET_ALLOW, name
    for name, nr in _REFUSED[machine].items():
        assert _run(prog, arch, nr) == RET_ERRNO | errno.EPERM, name
    # Every number nobody listed, including ones a later kernel may add, is refused.
    listed = set(numbers.values())
    allowed = {nr for nr in range(1024) for args in ((0, 0x5401), (21,)) if _run(prog, arch, nr, *args) == RET_ALLOW}
    assert allowed == listed
    assert _run(prog, arch ^ 1, numbers["read"]) == RET_KILL_PROCESS
    assert len(describe(prog)) == len(prog)


@pytest.mark.parametrize("machine", sorted(ARCHES))
def test_ioctl_and_prctl_are_allowed_with_one_argument_only(machine: str) -> None:
    arch, numbers = ARCHES[machine]
    prog = build_program(machine)
    assert _run(prog, arch, numbers["ioctl"], 3, 0x5401) == RET_ALLOW  # TCGETS: is this a terminal?
    for request in (0x5412, 0x5451, 0x541B, 0x5401 | (1 << 32)):  # TIOCSTI, FIOCLEX, FIONREAD, TCGETS in the high half
        expected = RET_ALLOW if request & 0xFFFFFFFF == 0x5401 else RET_ERRNO | errno.EPERM
        assert _run(prog, arch, numbers["ioctl"], 3, request) == expected, hex(request)
    assert _run(prog, arch, numbers["prctl"], 21) == RET_ALLOW  # PR_GET_SECCOMP
    for option in (22, 38, 0x59616D61, 15):  # SET_SECCOMP, SET_NO_NEW_PRIVS, SET_PTRACER, SET_NAME
        assert _run(prog, arch, numbers["prctl"], option) == RET_ERRNO | errno.EPERM, option


def test_x32_calls_are_killed_on_x86_64() -> None:
    arch, numbers = ARCHES["x86_64"]
    assert _run(build_program("x86_64"), arch, 0x40000000 | numbers["read"]) == RET_KILL_PROCESS


# -- Linux layer reports when the kernel refuses --------------------------------------------------------------


class _RefusingLibc:
    """Every call fails with ``err``, as an old or locked-down kernel answers."""

    def __init__(self, err: int) -> None:
        self.err = err

    def _fail(self, *_args: object) -> int:
        ctypes.set_errno(self.err)
        return -1

    prctl = syscall = unshare = _fail


def test_each_layer_says_why_it_was_not_applied(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setattr(linux, "_libc", lambda: _RefusingLibc(errno.ENOSYS))
    layers = linux.apply([str(tmp_path)], str(tmp_path))
    assert [e["name"] for e in layers] == list(linux.LINUX_LAYERS)
    assert not any(e["applied"] for e in layers)
    details = {e["name"]: e["detail"] for e in layers}
    assert "ENOSYS" in details["no-new-privs"]
    assert "ENOSYS" in details["landlock-fs"]
    assert details["seccomp"] == "needs no-new-privs"
    assert missing_layers(layers, "linux") == list(REQUIRED_LAYERS["linux"])


def test_landlock_handles_every_fs_right_its_abi_knows() -> None:
    assert linux._fs_access(1) == (1 << 13) - 1
    assert linux._fs_access(7) == (1 << 16) - 1


# -- the fail-closed check ------------------------------------------------------------------------------------


def test_missing_layers_counts_only_applied_reports() -> None:
    reported = [
        layer("no-new-privs", applied=True, detail=""),
        layer("seccomp", applied=False, detail="x"),
        "not a layer",
        layer("landlock-fs", applied=True, detail=""),
        layer("landlock-net", applied=True, detail=""),
    ]
    assert missing_layers(reported, "linux") == ["seccomp"]
    assert missing_layers([], "plan9") == ["unknown-platform"]


@pytest.mark.parametrize(
    "bad",
    [
        [{"name": "seccomp", "applied": "yes", "detail": ""}],
        [{"name": "seccomp", "applied": True}],
        [{"name": "", "applied": True, "detail": ""}],
        [{"name": "seccomp", "applied": True, "detail": ""}] * 2,
        [{"name": f"l{i}", "applied": True, "detail": ""} for i in range(17)],
    ],
)
def test_a_malformed_layer_report_is_refused(bad: list[object]) -> None:
    with pytest.raises(ValueError):  # noqa: PT011 - the message is for the host's error text
        valid_layers(bad)


# -- macOS ------------------------------------------------------------------------------------------------


def _forms(text: str) -> list[object]:
    """The top-level forms of a sandbox profile, as nested lists of atoms and strings (a small SBPL reader)."""
    tokens = re.findall(r'\(|\)|"(?:[^"\\]|\\.)*"|[^\s()"]+', text)
    stack: list[list[object]] = [[]]
    for token in tokens:
        if token == "(":
            stack.append([])
        elif token == ")":
            done = stack.pop()
            stack[-1].append(done)
        else:
            stack[-1].append(token)
    assert len(stack) == 1, "unbalanced profile"
    assert "".join(re.split(r'\(|\)|"(?:[^"\\]|\\.)*"|[^\s()"]+', text)).strip() == ""  # nothing unread
    return stack[0]


def test_macos_profile_denies_by_default_and_allows_only_the_listed_rules() -> None:
    forms = _forms(macos.PROFILE)
    assert forms[:2] == [["version", "1"], ["deny", "default"]]
    # Denied explicitly, as Mozilla's profiles do, before any allow rule.
    assert forms[2:6] == [["deny", "process-info*"], ["deny", "nvram*"], ["deny", "iokit-get-properties"],
                          ["deny", "file-map-executable"]]  # fmt: skip
    parents = " ".join(f'(literal (param "PARENT_{i}"))' for i in range(macos.MAX_PARENTS))
    listed = [_forms(rule.replace("{read_roots}", '(subpath (param "READ_ROOT_0"))').replace("{parents}", parents))[0]
              for rule, _why in macos.ALLOWED_RULES]  # fmt: skip
    assert forms[6:] == listed  # every other form is one of the listed allow rules, in order
    assert all(form[0] == "allow" for form in listed)
    assert all(len(why) > 20 for _rule, why in macos.ALLOWED_RULES)
    operations = {form[1] for form in listed}  # type: ignore[index]
    # No network, no fork, no default allow, no Mach lookup but the two named services, no exec but the worker.
    assert not {op for op in operations if str(op).startswith(("network", "process-fork", "default"))}
    assert operations == {"process-exec", "file-read*", "file-read-metadata", "file-write*", "mach-lookup",
                          "sysctl-read", "signal", "file-map-executable", "process-info-pidinfo"}  # fmt: skip
    # Every allow rule has a filter: none is an operation allowed everywhere.
    assert all(len(form) > 2 for form in listed)
    writes = [form for form in listed if form[1] == "file-write*"]
    assert writes == [["allow", "file-write*", ["subpath", ["param", '"WORKER_TMP"']], ["literal", '"/dev/null"']]]
    execs = [form for form in listed if form[1] == "process-exec"]
    assert execs == [["allow", "process-exec", ["literal", ["param", '"WORKER_EXE"']],
                      ["literal", ["param", '"WORKER_EXE_REAL"']],
                      ["literal", ["param", '"WORKER_EXE_FRAMEWORK"']]]]  # fmt: skip
    lookups = [form[2] for form in listed if form[1] == "mach-lookup"]
    assert lookups == [["global-name", '"com.apple.system.notification_center"'],
                       ["global-name", '"com.apple.system.opendirectoryd.libinfo"']]  # fmt: skip
    assert ["allow", "signal", ["target", "self"]] in listed
    # Metadata is the one unfiltered read: contents of any path outside the listed folders stay denied.
    reads = [form for form in listed if form[1] == "file-read*"]
    assert all(len(form) > 2 for form in reads)


def test_macos_command_line_puts_paths_in_parameters_not_in_the_profile() -> None:
    exe = "/Applications/S kill (x).app/skillhost"
    argv = macos.wrap_command([exe, "worker"], '/tmp/w"k', ["/Applications/S kill (x).app"])
    assert argv[0] == "/usr/bin/sandbox-exec"
    assert argv[-2:] == [exe, "worker"]
    assert argv[argv.index("-p") + 1] == macos.PROFILE
    params = dict(argv[i + 1].split("=", 1) for i, a in enumerate(argv) if a == "-D")
    parents = [f"PARENT_{i}" for i in range(macos.MAX_PARENTS)]
    assert list(params) == ["READ_ROOT_0", *parents, "WORKER_TMP", "WORKER_EXE", "WORKER_EXE_REAL",
                            "WORKER_EXE_FRAMEWORK"]  # fmt: skip
    above = macos.parent_folders([os.path.realpath("/Applications/S kill (x).app"), os.path.realpath('/tmp/w"k'),
                                  os.path.realpath(exe)])  # fmt: skip
    assert [params[p] for p in parents] == above + ["/"] * (macos.MAX_PARENTS - len(above))
    assert params["WORKER_EXE"] == exe
    assert params["WORKER_TMP"] == os.path.realpath('/tmp/w"k')
    parent_args = [a for p in parents for a in ("-D", f"{p}={params[p]}")]
    assert argv == ["/usr/bin/sandbox-exec", "-D", f"READ_ROOT_0={os.path.realpath('/Applications/S kill (x).app')}",
                    *parent_args, "-D", "WORKER_TMP=" + os.path.realpath('/tmp/w"k'), "-D", f"WORKER_EXE={exe}",
                    "-D", f"WORKER_EXE_REAL={os.path.realpath(exe)}",
                    # Frozen (no framework executable): the worker's own binary again, so nothing more may run.
                    "-D", f"WORKER_EXE_FRAMEWORK={os.path.realpath(exe)}", "-p", macos.PROFILE, exe,
                    "worker"]  # fmt: skip
    for path in params.values():
        assert path == "/" or path not in macos.PROFILE


def test_macos_profile_names_one_parameter_per_read_root() -> None:
    assert {f"READ_ROOT_{i}" for i in range(3)} == set(re.findall(r"READ_ROOT_\d+", macos.profile(3)))
    assert macos.profile(3).count("READ_ROOT_") == 6  # read, and executable maps
    assert macos.profile_digest(1) == hashlib.sha256(macos.PROFILE.encode()).hexdigest()
    with pytest.raises(ValueError):  # noqa: PT011
        macos.profile(0)
    with pytest.raises(ValueError):  # noqa: PT011
        macos.profile(macos.MAX_READ_ROOTS + 1)


@pytest.mark.parametrize(("exe", "tmp"), [("relative/skillhost", "/tmp/w"), ("/a/skillhost", "/tmp/w\nx")])
def test_macos_refuses_a_path_it_cannot_pass_safely(exe: str, tmp: str) -> None:
    with pytest.raises(ValueError):  # noqa: PT011
        macos.wrap_command([exe, "worker"], tmp, ["/a"])


def test_macos_self_report_reads_sandbox_check_and_names_the_profile() -> None:
    class Lib:
        class sandbox_check:  # noqa: N801 - mimics a ctypes function
            restype = None

            def __new__(cls, pid: int, kind: object, flags: int) -> int:  # type: ignore[misc]
                return 1

    digest = macos.profile_digest(1)[:16]
    assert macos.self_report(1, Lib()) == [  # type: ignore[arg-type]
        layer("sandbox-exec", applied=True, detail=f"sandbox_check=1, profile sha256 {digest}")]


def test_macos_profile_scopes_sysctl_metadata_and_executable_maps() -> None:
    forms = _forms(macos.PROFILE)
    by_op: dict[str, list[object]] = {}
    for form in forms[6:]:
        by_op.setdefault(str(form[1]), []).append(form)  # type: ignore[index]
    # sysctl: exactly the named list (each justified), and the hw.optional.* prefix; never every name.
    (sysctl,) = by_op["sysctl-read"]
    assert sysctl[2:] == [*(["sysctl-name", f'"{n}"'] for n in (
        "hw.ncpu", "hw.activecpu", "hw.pagesize", "hw.memsize", "kern.osrelease", "kern.osversion", "kern.ostype",
        "kern.version", "hw.machine", "sysctl.proc_translated")), ["sysctl-name-prefix", '"hw.optional."']]
    assert all(len(why) > 15 for _name, why in macos.SYSCTL_NAMES)
    # Metadata: "/", the parent folders handed in as parameters and the localtime link; nothing unfiltered.
    (metadata,) = by_op["file-read-metadata"]
    assert metadata[2:] == [["literal", '"/"'], *(["literal", ["param", f'"PARENT_{i}"']]
                                                  for i in range(macos.MAX_PARENTS)),
                            ["literal", '"/private/etc/localtime"']]  # fmt: skip
    # Executable maps: the bundle and the system libraries, never the worker's writable folder.
    (maps,) = by_op["file-map-executable"]
    assert ["subpath", ["param", '"READ_ROOT_0"']] in maps
    assert "WORKER_TMP" not in str(maps)
    assert by_op["process-info-pidinfo"] == [["allow", "process-info-pidinfo", ["target", "self"]]]
    assert all(len(why) > 15 for _rule, why in macos.DENIED_RULES)


def test_macos_parent_folders_are_each_folder_above_once() -> None:
    assert macos.parent_folders(["/a/b/c", "/a/d"]) == ["/a", "/a/b"]
    assert macos.parent_folders(["/x"]) == []
    with pytest.raises(ValueError):  # noqa: PT011
        macos.parent_folders(["/" + "/".join(str(i) for i in range(macos.MAX_PARENTS + 2))])


def test_macos_a_refusal_is_the_sandbox_s_only_when_sandbox_check_says_so() -> None:
    def lib(answer: int) -> FakeSandboxLib:
        return FakeSandboxLib(lambda operation: answer)

    denied = lib(1)
    assert macos.sandbox_denies("file-read-data", "/Users/u/secret", pid=42, libc=denied)  # type: ignore[arg-type]
    assert denied.sandbox_check.calls == [(42, b"file-read-data", macos.SANDBOX_FILTER_PATH, b"/Users/u/secret")]
    assert macos.SANDBOX_FILTER_PATH == 1
    none = lib(1)
    assert macos.sandbox_denies("network-outbound", pid=42, libc=none)  # type: ignore[arg-type]
    assert none.sandbox_check.calls == [(42, b"network-outbound", 0)]
    # Allowed (a file's own permissions refused it), an error, or no sandbox_check: never the sandbox's.
    assert not macos.sandbox_denies("file-read-data", "/x", pid=42, libc=lib(0))  # type: ignore[arg-type]
    assert not macos.sandbox_denies("file-read-data", "/x", pid=42, libc=lib(-1))  # type: ignore[arg-type]
    assert not macos.sandbox_denies("file-read-data", "/x", pid=42, libc=object())  # type: ignore[arg-type]


def test_macos_refusals_are_the_sandbox_s() -> None:
    applied = [layer("sandbox-exec", applied=True, detail="")]
    assert refusing_layer("macos", "exec-shell", "EPERM", applied) == "sandbox-exec"
    assert refusing_layer("macos", "exec-shell", "ENOENT", applied) is None
    assert refusing_layer("macos", "exec-shell", "EPERM", []) is None


# -- Linux plan -------------------------------------------------------------------------------------------


def test_linux_plan_starts_the_worker_as_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("skillhost.os_sandbox._dispatch.platform_key", lambda: "linux")
    plan = launch_plan(["/opt/skillhost/skillhost", "worker"], "/tmp/w", ["/opt/skillhost"])
    assert plan.argv == ["/opt/skillhost/skillhost", "worker"]
    assert plan.after_spawn is None
