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
from desktop_qualify.qualify_verify import JourneyFacts, journey_facts
from skillhost._errors import SkillError
from skillhost.journey._kernel import DENIED_CODE, STEP_IDS, kernel_steps
from skillhost.journey._step import Step
from skillhost.os_sandbox import Layer
from skillhost.os_sandbox._dispatch import REQUIRED_LAYERS
from skillhost.os_sandbox._linux import LINUX_LAYERS
from skillhost.os_sandbox._seccomp_bpf import ALLOWED
from skillhost.worker._hostile import EXEC_OK_LINE, OPERATIONS
from skillhost_testutil import APP_DIR, REPO

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


def _kernel_refusals(tmp_path: Path) -> tuple[list[Step], list[Layer]]:
    """The five kernel-refusal steps and the layers (the own-folder step after them: test_worker_tmp_folder.py)."""
    steps, layers = kernel_steps(tmp_path)
    return [s for s in steps if s["id"] in STEP_IDS.values()], layers


def test_sandboxed_hostile_worker_is_refused_by_the_kernel_with_an_errno(tmp_path: Path) -> None:
    steps, layers = _kernel_refusals(tmp_path)
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


def _refused_by(steps: list[dict[str, object]]) -> dict[str, object]:
    """Each step's refusing layer as the step records it (``None`` where no applied layer accounts for it)."""
    return {str(step["id"]): step["layer"] for step in steps}


# The test-only switch that removes one layer: a bootstrap that patches the worker's own Linux sandbox module in
# a source worker before it confines itself. It lives here, not in the app, so no build and no qualification can
# reach it; the removed layer is reported not applied, so the verifier refuses any record made with it.
_DROP_LAYER = """
import sys
import skillhost.os_sandbox._linux as linux
from skillhost.os_sandbox._interface import layer
drop = {drop!r}
def removed(name):
    return layer(name, applied=False, detail="removed by the test")
def without(name, make):
    def apply(*args):
        return [removed(e["name"]) if e["name"] == name else e for e in make(*args)]
    return apply
if drop == "seccomp":
    linux._seccomp = lambda libc, no_new_privs: removed("seccomp")
elif drop == "landlock-fs":
    # A ruleset that handles no file access (TCP and scopes still enforced): nothing on the file system is denied.
    linux._fs_access = lambda abi: 0
    linux._add_path = lambda libc, ruleset, path, allowed: True
    linux._landlock = without("landlock-fs", linux._landlock)
elif drop == "landlock-net":
    linux._NET_TCP = 0
    linux._landlock = without("landlock-net", linux._landlock)
elif drop == "user-net-namespace":
    linux._namespaces = lambda libc: removed("user-net-namespace")
from skillhost._cli import main
sys.exit(main(["worker", *sys.argv[1:]]))
"""


def _kernel_steps_without(monkeypatch, tmp_path: Path, drop: str) -> tuple[list[dict[str, object]], list]:
    import skillhost.journey._kernel as journey_kernel

    monkeypatch.setattr(journey_kernel, "worker_command", lambda: [sys.executable, "-c", _DROP_LAYER.format(drop=drop)])
    steps, layers = _kernel_refusals(tmp_path)
    assert [e["name"] for e in layers if not e["applied"]] == [drop], layers
    return [dict(s) for s in steps], layers


def _judged(steps: list[dict[str, object]], layers: list) -> JourneyFacts:
    """The kernel steps and the worker's layers as the verifier judges them under policies/local.toml on Linux."""
    from desktop_qualify.evidence_schemas import AppStep, IsolationLayer
    from desktop_qualify.qualify_policy import load_policy
    from skillhost.journey._run import observed

    policy = load_policy(REPO / "policies" / "local.toml").file
    table = {sid: want for sid, want in policy.journey.steps.items() if sid.startswith("kernel-refuses-")}
    recorded = [IsolationLayer.model_validate(e) for e in layers]
    assert policy.isolation is not None
    return journey_facts(steps=[AppStep.model_validate(observed(s)) for s in steps], expected=table,
                         code_pattern=policy.app.codes.pattern, exit_code=0, timed_out=False, app_build_sha="0" * 40,
                         sha="0" * 40, platform="linux", layers=recorded, required_layers=policy.isolation.linux,
                         refuses_with=policy.isolation.refuses_with, probe_layers=recorded)


def _owned_by(layer_name: str) -> set[str]:
    """The kernel steps the committed policy says ``layer_name`` must refuse on Linux."""
    from desktop_qualify.qualify_policy import load_policy

    table = load_policy(REPO / "policies" / "local.toml").file.journey.steps
    return {sid for sid, want in table.items() if want.layer is not None and want.layer.linux == layer_name}


@pytest.mark.parametrize(("drop", "changed"), [
    # Without seccomp, Landlock still refuses the connect (landlock-net) and the exec (landlock-fs), and the
    # ptrace is refused by the kernel's own ptrace check, which no reported layer accounts for (None): all three
    # are refused, none by the layer the policy requires.
    ("seccomp", {"kernel-refuses-tcp-connect-loopback": "landlock-net", "kernel-refuses-ptrace-host": None,
                 "kernel-refuses-exec-shell": "landlock-fs"}),
    # Without Landlock's file rules, the host's files are open to the worker: the two file steps are allowed.
    ("landlock-fs", {"kernel-refuses-read-outside-bundle": None, "kernel-refuses-write-outside-tmp": None}),
    # Landlock's TCP rule owns no step: seccomp refuses the socket before a connect is tried.
    ("landlock-net", {}),
])  # fmt: skip
def test_removing_a_layer_fails_exactly_the_steps_it_owns(
    monkeypatch, tmp_path: Path, drop: str, changed: dict[str, str | None]
) -> None:
    """Each layer the policy requires on Linux, removed alone: the kernel steps the policy's table says it owns
    fail (refused by another layer, by none, or not at all), every other step still passes, and the verifier's
    rule refuses the record for the missing layer too."""
    steps, layers = _kernel_steps_without(monkeypatch, tmp_path, drop)
    assert _refused_by(steps) == {**_FULL_SANDBOX, **changed}
    facts = _judged(steps, layers)
    assert set(facts.failed) == _owned_by(drop) == set(changed)
    assert f"the journey's isolation: required isolation layer(s) not applied: {drop}" in facts.problems
    taken_over = {sid for sid, by in changed.items() if by is not None}
    assert {why.split(":", 1)[0] for why in facts.wrong_layers} == taken_over


def test_the_full_sandbox_passes_every_kernel_step_under_the_policy(tmp_path: Path) -> None:
    """The baseline the removals are measured against: nothing removed, every kernel step by its own layer."""
    steps, layers = _kernel_refusals(tmp_path)
    facts = _judged([dict(s) for s in steps], layers)
    assert facts.passed, facts.problems
    assert _refused_by([dict(s) for s in steps]) == _FULL_SANDBOX


def test_the_namespace_owns_no_step(monkeypatch, tmp_path: Path) -> None:
    """The namespace is not a policy layer and owns no step: seccomp refuses the socket before the empty network
    matters, so every kernel step keeps its layer (and a machine without user namespaces still qualifies)."""
    steps, layers = _kernel_steps_without(monkeypatch, tmp_path, "user-net-namespace")
    assert _refused_by(steps) == _FULL_SANDBOX
    assert _judged(steps, layers).passed


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
