"""The worker's Linux sandbox: each layer applied and reported, each escape refused by the kernel, and the
same escapes succeeding without the sandbox (so the journey's kernel steps can fail)."""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import skillhost.host._runner as runner
from skillhost._errors import SkillError
from skillhost.journey._kernel import DENIED_CODE, kernel_steps
from skillhost.os_sandbox._dispatch import REQUIRED_LAYERS
from skillhost.os_sandbox._linux import LINUX_LAYERS
from skillhost.os_sandbox._seccomp_bpf import ALLOWED
from skillhost.worker._hostile import EXEC_OK_LINE, OPERATIONS
from skillhost_testutil import APP_DIR

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the Linux sandbox")


def _python(code: str, *, stdin: bytes = b"", cwd: Path | None = None, timeout: float = 30) -> bytes:
    env = {"PYTHONPATH": str(APP_DIR), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        input=stdin,
        capture_output=True,
        env=env,
        cwd=cwd,
        timeout=timeout,
        check=True,
    ).stdout


def test_every_linux_layer_is_applied_on_this_machine(tmp_path: Path) -> None:
    out = _python(
        """
        import json, os
        from skillhost.os_sandbox._dispatch import confine
        print(json.dumps(confine(os.getcwd())))
    """,
        cwd=tmp_path,
    )
    layers = json.loads(out)
    assert [entry["name"] for entry in layers] == list(LINUX_LAYERS)
    not_applied = {entry["name"]: entry["detail"] for entry in layers if not entry["applied"]}
    # This machine (Linux 6.18, Landlock ABI 7) allows every layer; elsewhere only the required ones must hold.
    assert not set(not_applied) & set(REQUIRED_LAYERS["linux"]), not_applied


def test_confined_process_keeps_its_bundle_and_tmp_and_loses_the_rest(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("host data", encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()
    out = _python(
        f"""
        import json, os, socket
        from skillhost.os_sandbox._dispatch import confine
        confine(os.getcwd())
        res = {{}}
        def probe(name, fn):
            try:
                fn(); res[name] = "ok"
            except OSError as exc:
                res[name] = exc.errno
        probe("read-bundle", lambda: open({str(APP_DIR / "skillhost" / "__init__.py")!r}, "rb").read())
        probe("write-tmp", lambda: open("mine.txt", "w").write("x"))
        probe("read-outside", lambda: open({str(outside)!r}, "rb").read())
        probe("socket", lambda: socket.socket(socket.AF_UNIX))
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        def unshare():
            if libc.unshare(0x20000) != 0:  # CLONE_NEWNS
                raise OSError(ctypes.get_errno(), "unshare")
        probe("unshare", unshare)
        import datetime, textwrap  # lazily imported handler modules still load from the bundle
        print(json.dumps(res))
    """,
        cwd=work,
    )
    assert json.loads(out) == {"read-bundle": "ok", "write-tmp": "ok", "read-outside": 13, "socket": 1, "unshare": 1}


def _kernel_ops_unconfined(tmp_path: Path) -> tuple[dict[str, dict[str, object]], Path]:
    """The hostile operations in an unconfined worker-like child of a small host process (dumpable, any
    ptracer), against the same kinds of targets the journey gives the sandboxed worker."""
    secret = tmp_path / "host-secret.txt"
    secret.write_text("host data\n", encoding="utf-8")
    written = tmp_path / "written.txt"
    child = textwrap.dedent(f"""
        import json, sys
        from skillhost.worker._hostile import OPERATIONS, attempt, exec_shell
        targets = {{"read_path": {str(secret)!r}, "write_path": {str(written)!r}, "tcp_port": int(sys.argv[1])}}
        for op in OPERATIONS[:-1]:
            print(json.dumps(attempt(op, targets)), flush=True)
        print(json.dumps(exec_shell()), flush=True)
    """)
    host = textwrap.dedent(f"""
        import ctypes, socket, subprocess, sys
        ctypes.CDLL(None).prctl(0x59616d61, -1, 0, 0, 0)  # PR_SET_PTRACER_ANY: Yama lets the child try
        with socket.create_server(("127.0.0.1", 0)) as srv:
            out = subprocess.run([sys.executable, "-c", {child!r}, str(srv.getsockname()[1])],
                                 capture_output=True, timeout=20).stdout
        sys.stdout.write(out.decode())
    """)
    lines = _python(host).decode().splitlines()
    results = {json.loads(line)["op"]: json.loads(line) for line in lines}
    return results, written


def test_the_same_hostile_operations_succeed_without_the_sandbox(tmp_path: Path) -> None:
    results, written = _kernel_ops_unconfined(tmp_path)
    assert set(results) == set(OPERATIONS)
    assert {op: r["ok"] for op, r in results.items()} == dict.fromkeys(OPERATIONS, True), results
    # The shell, not the worker, printed the exec result; the write really happened.
    assert json.loads(EXEC_OK_LINE) == results["exec-shell"]
    assert written.read_bytes() == b"written by the worker\n"


def test_sandboxed_hostile_worker_is_refused_by_the_kernel_with_an_errno(tmp_path: Path) -> None:
    steps, layers = kernel_steps(tmp_path)
    assert [s["id"] for s in steps] == [f"kernel-refuses-{op}" for op in OPERATIONS]
    assert all(s["passed"] for s in steps), steps
    assert all(s["observed_code"] == DENIED_CODE and s["errno"] in ("EACCES", "EPERM") for s in steps)
    # Landlock refuses the file operations (EACCES), seccomp the socket, ptrace and exec (EPERM).
    assert {s["id"]: s["errno"] for s in steps} == {
        "kernel-refuses-read-outside-bundle": "EACCES",
        "kernel-refuses-write-outside-tmp": "EACCES",
        "kernel-refuses-tcp-connect-loopback": "EPERM",
        "kernel-refuses-ptrace-host": "EPERM",
        "kernel-refuses-exec-shell": "EPERM",
    }
    assert {entry["name"] for entry in layers if entry["applied"]} >= set(REQUIRED_LAYERS["linux"])
    assert not (tmp_path / "host-data" / "written-by-worker.txt").exists()
    assert _refused_by(steps) == _FULL_SANDBOX


_FULL_SANDBOX = {
    "kernel-refuses-read-outside-bundle": "landlock-fs", "kernel-refuses-write-outside-tmp": "landlock-fs",
    "kernel-refuses-tcp-connect-loopback": "seccomp", "kernel-refuses-ptrace-host": "seccomp",
    "kernel-refuses-exec-shell": "seccomp",
}  # fmt: skip


def _refused_by(steps: list[dict[str, object]]) -> dict[str, str | None]:
    """Each passed step's refusing layer, as its detail names it; ``None`` for a failed step."""
    out: dict[str, str | None] = {}
    for step in steps:
        detail = str(step["detail"])
        out[str(step["id"])] = detail.split(" by ", 1)[1].split(";", 1)[0] if step["passed"] else None
    return out


_DROP_LAYER = """
import sys
import skillhost.os_sandbox._linux as linux
from skillhost.os_sandbox._interface import layer
drop = {drop!r}
def removed(name):
    return layer(name, applied=False, detail="removed by the test")
if drop == "seccomp":
    linux._seccomp = lambda libc, no_new_privs: removed("seccomp")
elif drop == "landlock":
    linux._landlock = lambda libc, roots, tmp: [removed(n) for n in ("landlock-fs", "landlock-net", "landlock-scope")]
elif drop == "user-net-namespace":
    linux._namespaces = lambda libc: removed("user-net-namespace")
from skillhost._cli import main
sys.exit(main(["worker", *sys.argv[1:]]))
"""


@pytest.mark.parametrize(("drop", "changed"), [
    # Without seccomp, Landlock still refuses the connect (landlock-net) and the exec (landlock-fs); the
    # ptrace is refused by the kernel's own ptrace check, which no reported layer accounts for: it fails.
    ("seccomp", {"kernel-refuses-tcp-connect-loopback": "landlock-net", "kernel-refuses-ptrace-host": None,
                 "kernel-refuses-exec-shell": "landlock-fs"}),
    # Without Landlock, the host's files are open to the worker: exactly the two file steps fail.
    ("landlock", {"kernel-refuses-read-outside-bundle": None, "kernel-refuses-write-outside-tmp": None}),
    # The namespace owns no step on its own: seccomp refuses the socket before the empty network matters.
    ("user-net-namespace", {}),
])  # fmt: skip
def test_removing_a_layer_changes_exactly_the_steps_it_owns(
    monkeypatch, tmp_path: Path, drop: str, changed: dict[str, str | None]
) -> None:
    import skillhost.journey._kernel as journey_kernel

    monkeypatch.setattr(journey_kernel, "worker_command", lambda: [sys.executable, "-c", _DROP_LAYER.format(drop=drop)])
    steps, layers = kernel_steps(tmp_path)
    assert {e["name"] for e in layers if not e["applied"]} >= ({drop} if drop != "landlock" else {"landlock-fs"})
    assert _refused_by(steps) == {**_FULL_SANDBOX, **changed}
    # The steps the removed layer owned and no other layer took over are exactly the failed ones.
    assert {s["id"] for s in steps if not s["passed"]} == {sid for sid, by in changed.items() if by is None}


_OUTSIDE_THE_TABLE = """
import ctypes, json, os, sys
libc = ctypes.CDLL(None, use_errno=True)
if sys.argv[1] == "confined":
    from skillhost.os_sandbox._dispatch import confine
    confine(os.getcwd())
calls = {"personality": (135, 0xFFFFFFFF), "keyctl": (250, 0, 0), "userfaultfd": (323, 0),
         "memfd_create": (319, b"x", 0), "getrandom": (318, ctypes.create_string_buffer(8), 8, 0),
         "clone": (56, 17, 0, 0, 0, 0)}
res = {}
for name, (nr, *args) in calls.items():
    got = libc.syscall(nr, *args)
    res[name] = "ok" if got >= 0 else os.strerror(ctypes.get_errno())
    if name == "clone" and got == 0:
        os._exit(0)  # the child of a clone the kernel ran
print(json.dumps(res))
"""


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="x86_64 syscall numbers")
def test_a_call_outside_the_allow_list_is_refused(tmp_path: Path) -> None:
    """personality, keyctl, userfaultfd, memfd_create (the first step of an exec from memory), getrandom and
    clone: none is on the table, so each answers EPERM under the filter; unconfined, the kernel runs them."""

    def run(mode: str) -> dict[str, str]:
        out = subprocess.run(
            [sys.executable, "-c", _OUTSIDE_THE_TABLE, mode],
            cwd=tmp_path,
            capture_output=True,
            env={"PYTHONPATH": str(APP_DIR)},
            timeout=30,
            check=True,
        ).stdout
        return json.loads(out.decode().splitlines()[-1])

    assert run("confined") == dict.fromkeys(
        ("personality", "keyctl", "userfaultfd", "memfd_create", "getrandom", "clone"), os.strerror(errno.EPERM)
    )
    free = run("unconfined")
    assert free["personality"] == free["memfd_create"] == free["getrandom"] == free["clone"] == "ok", free


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace measures the filtered workers' calls")
def test_the_journeys_workers_make_no_call_the_allow_list_refuses_but_the_hostile_ones() -> None:
    """Traced, the journey's workers call only listed functions; the filter's EPERMs are the hostile
    self-test's own escapes (socket, ptrace, execve) and the selector probe ``import socket`` makes."""
    sys.path.insert(0, str(APP_DIR / "tools"))
    try:
        from trace_worker_syscalls import trace
    finally:
        sys.path.remove(str(APP_DIR / "tools"))
    env = {"PYTHONPATH": str(APP_DIR), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    got = trace([sys.executable, "-s", "-B", "-m", "skillhost", "journey"], env)
    assert got["processes"] >= 10  # every external run and the hostile worker installed the filter
    calls, refused = got["calls"], got["refused"]
    assert isinstance(calls, dict)
    assert isinstance(refused, dict)
    eperm = {name for name, errs in refused.items() if "EPERM" in errs}
    hostile = {"socket", "ptrace", "execve"}
    # ``import socket`` probes which selector works: epoll, then poll, each refused, so it settles on select.
    selector_probe = {"epoll_create1", "poll", "ppoll"}
    assert hostile <= eperm, refused
    assert eperm - hostile <= selector_probe, refused
    assert set(calls) - eperm <= set(ALLOWED)


_DROP_SECCOMP = """
import sys
import skillhost.os_sandbox._linux as linux
from skillhost.os_sandbox._interface import layer
linux._seccomp = lambda libc, no_new_privs: layer("seccomp", applied=False, detail="removed by the test")
from skillhost._cli import main
sys.exit(main(["worker", *sys.argv[1:]]))
"""


def _worker_without_seccomp() -> list[str]:
    return [sys.executable, "-c", _DROP_SECCOMP]


def test_a_worker_without_a_required_layer_refuses_external_code_bundled_still_runs(monkeypatch, tmp_path):
    from skillhost.host._host import HostConfig, SkillHost
    from skillhost.journey._rows import _write_skill
    from skillhost.packaging._signing import TrustStore, new_key

    monkeypatch.setattr(runner, "worker_command", _worker_without_seccomp)
    key = new_key()
    trust_path = tmp_path / "trust.json"
    trust_path.write_bytes(TrustStore.from_public_keys([key.public_key()]).dump())
    workspace = tmp_path / "ws"
    (workspace / "skills").mkdir(parents=True)
    _write_skill(
        workspace / "skills", "greeter", "def run(ports, args):\n    return {'hi': 1}\n", ("runtime:time",), key
    )
    host = SkillHost(HostConfig(workspace=workspace, trust=TrustStore.load(trust_path)))
    with pytest.raises(SkillError) as refused:
        host.run("greeter", {})
    assert refused.value.code == "CC_SKILL_ISOLATION_UNAVAILABLE"
    assert "seccomp" in refused.value.message
    assert host.run("clock", {"label": "x"}).tier == "bundled"


def test_the_probe_refuses_to_start_without_a_required_layer(monkeypatch, capsys):
    import skillhost._probe as probe
    from skillhost._cli import main

    monkeypatch.setattr(runner, "worker_command", _worker_without_seccomp)
    monkeypatch.setattr(probe, "worker_command", _worker_without_seccomp)
    assert main(["probe"]) == 3
    out = json.loads(capsys.readouterr().out)
    assert out["code"] == "CC_SKILL_ISOLATION_UNAVAILABLE"
    assert "seccomp" in out["message"]


def test_the_probe_reports_the_applied_layers(capsys):
    from skillhost._cli import main

    assert main(["probe"]) == 0
    layers = json.loads(capsys.readouterr().out)["isolation_layers"]
    assert [entry["name"] for entry in layers] == list(LINUX_LAYERS)
    assert all(entry["applied"] for entry in layers if entry["name"] in REQUIRED_LAYERS["linux"])


_ONE_LAYER = """
import ctypes, json, os, socket, sys
import skillhost.os_sandbox._linux as L
libc = L._libc()
nnp = L._no_new_privs(libc)
if sys.argv[1] == "landlock":
    applied = [e["applied"] for e in L._landlock(libc, [sys.argv[2]], os.getcwd())]
else:
    applied = [L._seccomp(libc, no_new_privs=nnp["applied"])["applied"]]
res = {"applied": all(applied)}
for name, fn in (("read-outside", lambda: open(sys.argv[3], "rb").read()),
                 ("socket", lambda: socket.socket(socket.AF_INET).close())):
    try:
        fn(); res[name] = "ok"
    except OSError as exc:
        res[name] = exc.errno
print(json.dumps(res))
"""


@pytest.mark.parametrize(
    ("only", "expected"),
    [
        ("landlock", {"applied": True, "read-outside": 13, "socket": "ok"}),
        ("seccomp", {"applied": True, "read-outside": "ok", "socket": 1}),
    ],
)
def test_each_refusal_comes_from_the_layer_its_errno_names(tmp_path: Path, only: str, expected: dict[str, object]):
    """Landlock alone refuses the file (EACCES) and not the socket; seccomp alone the socket (EPERM), not the file.

    The file is this test's own, so no permission check but the sandbox's can refuse it."""
    outside = tmp_path / "outside.txt"
    outside.write_text("host data", encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()
    out = subprocess.run(
        [sys.executable, "-c", _ONE_LAYER, only, str(APP_DIR), str(outside)],
        cwd=work,
        env={"PYTHONPATH": str(APP_DIR)},
        capture_output=True,
        timeout=30,
        check=True,
    ).stdout
    assert json.loads(out) == expected
