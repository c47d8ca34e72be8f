"""The worker's Linux sandbox: each layer applied and reported, each escape refused by the kernel, and the
same escapes succeeding without the sandbox (so the journey's kernel steps can fail)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import skillhost._runner as runner
from skillhost._errors import SkillError
from skillhost._hostile import EXEC_OK_LINE, OPERATIONS
from skillhost._journey_kernel import DENIED_CODE, kernel_steps
from skillhost._os_sandbox import REQUIRED_LAYERS
from skillhost._sandbox_linux import LINUX_LAYERS
from skillhost_testutil import APP_DIR

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the Linux sandbox")


def _python(code: str, *, stdin: bytes = b"", cwd: Path | None = None, timeout: float = 30) -> bytes:
    env = {"PYTHONPATH": str(APP_DIR), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], input=stdin, capture_output=True, env=env,
                          cwd=cwd, timeout=timeout, check=True).stdout


def test_every_linux_layer_is_applied_on_this_machine(tmp_path: Path) -> None:
    out = _python("""
        import json, os
        from skillhost._os_sandbox import confine
        print(json.dumps(confine(os.getcwd())))
    """, cwd=tmp_path)
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
    out = _python(f"""
        import json, os, socket
        from skillhost._os_sandbox import confine
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
    """, cwd=work)
    assert json.loads(out) == {"read-bundle": "ok", "write-tmp": "ok", "read-outside": 13, "socket": 1,
                               "unshare": 1}


def _kernel_ops_unconfined(tmp_path: Path) -> tuple[dict[str, dict[str, object]], Path]:
    """The hostile operations in an unconfined worker-like child of a small host process (dumpable, any
    ptracer), against the same kinds of targets the journey gives the sandboxed worker."""
    secret = tmp_path / "host-secret.txt"
    secret.write_text("host data\n", encoding="utf-8")
    written = tmp_path / "written.txt"
    child = textwrap.dedent(f"""
        import json, sys
        from skillhost._hostile import OPERATIONS, attempt, exec_shell
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
        "kernel-refuses-read-outside-bundle": "EACCES", "kernel-refuses-write-outside-tmp": "EACCES",
        "kernel-refuses-tcp-connect-loopback": "EPERM", "kernel-refuses-ptrace-host": "EPERM",
        "kernel-refuses-exec-shell": "EPERM",
    }
    assert {entry["name"] for entry in layers if entry["applied"]} >= set(REQUIRED_LAYERS["linux"])
    assert not (tmp_path / "host-data" / "written-by-worker.txt").exists()


_DROP_SECCOMP = """
import sys
import skillhost._sandbox_linux as linux
from skillhost._os_sandbox import layer
linux._seccomp = lambda libc, no_new_privs: layer("seccomp", applied=False, detail="removed by the test")
from skillhost._cli import main
sys.exit(main(["worker", *sys.argv[1:]]))
"""


def _worker_without_seccomp() -> list[str]:
    return [sys.executable, "-c", _DROP_SECCOMP]


def test_a_worker_without_a_required_layer_refuses_external_code_bundled_still_runs(monkeypatch, tmp_path):
    from skillhost._host import HostConfig, SkillHost
    from skillhost._journey_util import _write_skill
    from skillhost._signing import TrustStore, new_key

    monkeypatch.setattr(runner, "worker_command", _worker_without_seccomp)
    key = new_key()
    trust_path = tmp_path / "trust.json"
    trust_path.write_bytes(TrustStore.from_public_keys([key.public_key()]).dump())
    workspace = tmp_path / "ws"
    (workspace / "skills").mkdir(parents=True)
    _write_skill(workspace / "skills", "greeter", "def run(ports, args):\n    return {'hi': 1}\n",
                 ("runtime:time",), key)
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
import skillhost._sandbox_linux as L
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


@pytest.mark.parametrize(("only", "expected"), [
    ("landlock", {"applied": True, "read-outside": 13, "socket": "ok"}),
    ("seccomp", {"applied": True, "read-outside": "ok", "socket": 1}),
])
def test_each_refusal_comes_from_the_layer_its_errno_names(tmp_path: Path, only: str, expected: dict[str, object]):
    """Landlock alone refuses the file (EACCES) and not the socket; seccomp alone the socket (EPERM), not the file.

    The file is this test's own, so no permission check but the sandbox's can refuse it."""
    outside = tmp_path / "outside.txt"
    outside.write_text("host data", encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()
    out = subprocess.run([sys.executable, "-c", _ONE_LAYER, only, str(APP_DIR), str(outside)], cwd=work,
                         env={"PYTHONPATH": str(APP_DIR)}, capture_output=True, timeout=30, check=True).stdout
    assert json.loads(out) == expected
