"""The Linux confinement adapter (bubblewrap) and the stage runner: exact arguments, read-back, and real runs."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest
from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.producer.confinement import (
    ConfinementError,
    StageRunner,
    StageSandbox,
    Unconfined,
    choose_confinement,
)
from desktop_qualify.producer.confinement._bubblewrap import (
    SANDBOX_UID,
    BubblewrapConfinement,
    bind_arguments,
    facts_from_info,
    namespace_arguments,
    own_namespaces,
)


def _sandbox(tmp_path: Path, **changes: object) -> StageSandbox:
    stage = tmp_path / "stage"
    (stage / "home").mkdir(parents=True, exist_ok=True)
    (stage / "tmp").mkdir(exist_ok=True)
    values: dict[str, object] = {"stage": "journey", "home": stage / "home", "tmp": stage / "tmp",
                                 "writable": (stage,), "protected": (tmp_path / "checkout",)}
    values.update(changes)
    return StageSandbox(**values)  # type: ignore[arg-type]


def test_every_stage_gets_new_namespaces_no_capabilities_and_dies_with_the_producer() -> None:
    args = namespace_arguments(False, uid=1001)
    assert args == ["--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
                    "--unshare-net", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    # The network namespace is left out only for a stage the policy gives the network.
    assert "--unshare-net" not in namespace_arguments(True, uid=1001)
    # As root, app code runs as an unprivileged uid inside the user namespace.
    root = namespace_arguments(False, uid=0)
    assert root[root.index("--uid") + 1] == root[root.index("--gid") + 1] == str(SANDBOX_UID)


def test_the_binds_are_what_the_stage_names_and_parents_come_first(tmp_path: Path) -> None:
    fake_root = tmp_path / "root"
    for folder in ("usr/bin", "usr/lib", "etc"):
        (fake_root / folder).mkdir(parents=True)
    (fake_root / "bin").symlink_to("usr/bin")
    (fake_root / "etc" / "passwd").write_text("x")
    (fake_root / "etc" / "shadow").write_text("secret")
    (fake_root / "etc" / "resolv.conf").write_text("nameserver 127.0.0.53")
    sandbox = _sandbox(tmp_path, readable=(tmp_path / "stage" / "prefix",), toolchain=(tmp_path / "tool",))
    args = bind_arguments(sandbox, root=fake_root)
    pairs = [(args[i], args[i + 1]) for i in range(len(args) - 1) if args[i].startswith("--")]
    assert ("--symlink", "usr/bin") in pairs
    assert args[args.index("--ro-bind-try") + 1] == str(fake_root / "etc" / "passwd")
    assert str(fake_root / "etc" / "shadow") not in args  # only the named /etc files, never the whole folder
    assert str(fake_root / "etc" / "resolv.conf") not in args  # name resolution only with the network
    assert str(fake_root / "etc" / "resolv.conf") in bind_arguments(
        _sandbox(tmp_path, network=True), root=fake_root)
    bound = [args[i + 1] for i, a in enumerate(args) if (a in ("--bind", "--ro-bind") and
             args[i + 1].startswith(str(tmp_path / "stage"))) or (a in ("--bind", "--ro-bind") and
             args[i + 1] == str(tmp_path / "tool"))]
    # The stage folder (writable) is bound before the prefix inside it (read-only), so it cannot hide it.
    assert bound.index(str(tmp_path / "stage")) < bound.index(str(tmp_path / "stage" / "prefix"))
    flag_of = {args[i + 1]: a for i, a in enumerate(args) if a in ("--bind", "--ro-bind")}
    assert flag_of[str(tmp_path / "stage" / "prefix")] == "--ro-bind"
    assert flag_of[str(tmp_path / "tool")] == "--ro-bind"
    assert flag_of[str(tmp_path / "stage")] == "--bind"
    start = args.index("--proc")
    assert args[start:start + 6] == ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]


@pytest.mark.parametrize("field", ["writable", "readable", "toolchain", "sockets"])
def test_a_path_that_would_show_a_protected_one_is_refused(tmp_path: Path, field: str) -> None:
    # Binding the checkout's parent would show the checkout (and the keys in it).
    sandbox = _sandbox(tmp_path, **{field: (*getattr(_sandbox(tmp_path), field), tmp_path)})
    with pytest.raises(ConfinementError, match="would show"):
        bind_arguments(sandbox)


def test_home_and_tmpdir_must_be_the_stage_s_own(tmp_path: Path) -> None:
    with pytest.raises(ConfinementError, match="HOME and TMPDIR"):
        bind_arguments(_sandbox(tmp_path, home=tmp_path / "elsewhere"))


def test_the_layers_are_read_back_from_bubblewrap_s_report_never_the_command_line(tmp_path: Path) -> None:
    sandbox = _sandbox(tmp_path)
    mine = {"mnt": 1, "pid": 2, "ipc": 3, "uts": 4, "net": 5}
    info = {"child-pid": 7, "mnt-namespace": 11, "pid-namespace": 12, "ipc-namespace": 13, "uts-namespace": 14,
            "net-namespace": 15}
    facts = facts_from_info(sandbox, json.dumps(info).encode(), mine)
    assert facts.layers == ("user-namespace", "no-capabilities", "mount-namespace", "pid-namespace",
                            "ipc-namespace", "uts-namespace", "network-namespace", "dies-with-stage",
                            "private-home", "private-tmp")
    assert facts.network is False
    # A namespace with the producer's own id was not created; without a PID namespace nothing dies with it.
    shared = facts_from_info(sandbox, json.dumps({**info, "pid-namespace": 2, "net-namespace": 5}).encode(), mine)
    assert "pid-namespace" not in shared.layers
    assert "dies-with-stage" not in shared.layers
    assert shared.network is True
    for broken in (b"", b"not json", b'{"mnt-namespace": 11}'):
        assert facts_from_info(sandbox, broken, mine).layers == ()


def test_unavailable_says_what_to_install(tmp_path: Path) -> None:
    missing = BubblewrapConfinement(platform="linux", which=lambda name: None)
    assert "apt-get install bubblewrap" in (missing.unavailable() or "")
    assert "Linux only" in (BubblewrapConfinement(bwrap="/usr/bin/bwrap", platform="darwin").unavailable() or "")
    failing = tmp_path / "bwrap"
    failing.write_text("#!/bin/sh\necho 'No permissions to create new namespace' >&2\nexit 1\n")
    failing.chmod(0o755)
    why = BubblewrapConfinement(bwrap=str(failing), platform="linux").unavailable() or ""
    assert "No permissions" in why
    assert "apparmor_restrict_unprivileged_userns" in why


def test_a_required_confinement_that_cannot_run_stops_the_job() -> None:
    missing = BubblewrapConfinement(platform="linux", which=lambda name: None)
    with pytest.raises(QualificationError) as refused:
        choose_confinement("linux", required=True, adapter=missing)
    assert refused.value.code == Code.CONFINEMENT_UNAVAILABLE
    assert isinstance(choose_confinement("linux", required=False, adapter=missing), Unconfined)


def test_the_toolchain_leaves_out_what_would_show_a_protected_path(tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"
    (checkout / ".venv" / "bin").mkdir(parents=True)
    runner = StageRunner(Unconfined("test"), (checkout,))
    kept = runner.toolchain(path_variable=os.pathsep.join(
        [str(tmp_path), str(checkout / ".venv" / "bin"), "relative/bin", str(tmp_path / "missing")]))
    assert checkout / ".venv" / "bin" in kept
    assert tmp_path not in kept
    assert Path("relative/bin") not in kept


def test_an_unconfined_stage_says_it_had_nothing(tmp_path: Path) -> None:
    runner = StageRunner(Unconfined("no adapter here"), ())
    sandbox = runner.sandbox("probe", home=tmp_path, tmp=tmp_path, writable=[tmp_path], cwd=tmp_path)
    result = runner.run([sys.executable, "-c", "print('ran')"], sandbox, timeout=30, env=dict(os.environ))
    assert result.exit_code == 0
    [facts] = runner.facts
    assert (facts.stage, facts.mechanism, facts.layers) == ("probe", "none", ())
    assert "no adapter here" in facts.detail


# Real runs: bubblewrap on this machine.
needs_bwrap = pytest.mark.skipif(BubblewrapConfinement().unavailable() is not None,
                                 reason=f"bubblewrap cannot run here: {BubblewrapConfinement().unavailable()}")


def _runner(tmp_path: Path, secret: Path) -> tuple[StageRunner, StageSandbox]:
    runner = StageRunner(BubblewrapConfinement(), (secret.parent,), frozenset())
    stage = tmp_path / "stage"
    for folder in ("home", "tmp"):
        (stage / folder).mkdir(parents=True, exist_ok=True)
    sandbox = runner.sandbox("journey", home=stage / "home", tmp=stage / "tmp", writable=[stage],
                             toolchain=runner.toolchain(), cwd=stage)
    return runner, sandbox


@needs_bwrap
def test_a_confined_command_sees_no_protected_file_and_no_producer_process(tmp_path: Path) -> None:
    secret = tmp_path / "keys" / "platform.pem"
    secret.parent.mkdir()
    secret.write_text("PRIVATE KEY")
    runner, sandbox = _runner(tmp_path, secret)
    probe = (f"import os, pathlib, json; print(json.dumps({{'key': pathlib.Path({str(secret)!r}).exists(), "
             f"'producer': os.path.exists('/proc/{os.getpid()}'), 'pids': sorted(p for p in os.listdir('/proc') "
             "if p.isdigit())}))")
    result = runner.run([sys.executable, "-c", probe], sandbox, timeout=60, env={"PATH": "/usr/bin:/bin"})
    assert result.exit_code == 0, result.stderr
    seen = json.loads(result.stdout)
    assert seen["key"] is False
    assert seen["producer"] is False or os.getpid() <= 2
    assert len(seen["pids"]) <= 3  # bubblewrap's init, the command (and nothing of the machine's)
    [facts] = runner.facts
    assert {"pid-namespace", "mount-namespace", "network-namespace", "dies-with-stage"} <= set(facts.layers)


@needs_bwrap
def test_a_double_forked_helper_does_not_outlive_its_stage(tmp_path: Path) -> None:
    marker = tmp_path / "stage" / "alive"
    runner, sandbox = _runner(tmp_path, tmp_path / "keys" / "none")
    helper = ("import os, time, pathlib\n"
              "if os.fork() == 0:\n"
              "    os.setsid()\n"
              "    if os.fork() == 0:\n"
              "        time.sleep(1.5)\n"
              f"        pathlib.Path({str(marker)!r}).write_text('survived')\n"
              "    os._exit(0)\n"
              "os.wait()\n")
    result = runner.run([sys.executable, "-c", helper], sandbox, timeout=60, env={"PATH": "/usr/bin:/bin"})
    assert result.exit_code == 0, result.stderr
    time.sleep(2.5)
    assert not marker.exists()


@needs_bwrap
def test_the_real_report_matches_the_producer_s_namespaces(tmp_path: Path) -> None:
    runner, sandbox = _runner(tmp_path, tmp_path / "keys" / "none")
    runner.run(["/bin/true"], sandbox, timeout=60, env={"PATH": "/usr/bin:/bin"})
    [facts] = runner.facts
    assert own_namespaces()  # the producer's own ids were read, so the comparison meant something
    assert facts.mechanism == "bubblewrap"
    assert facts.network is False
