"""macOS, held at its ctypes seam (no Mac here): a refusal is credited to ``sandbox-exec`` only when the
sandbox's own ``sandbox_check`` says the profile denies that operation on that argument, never from the errno
alone; and the worker's layer report reads the profile back by probing it (``READ_BACK_PROBES``).

``sandbox_check`` is a recorder that answers what each case says; every attempt's own operation is replaced by
a refusal with the case's errno, so nothing here touches the host.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
import skillhost.journey._kernel as journey_kernel
import skillhost.os_sandbox._macos as macos
import skillhost.worker._hostile as hostile
from desktop_qualify.evidence_schemas import AppStep, IsolationLayer
from desktop_qualify.qualify_policy import load_policy
from desktop_qualify.qualify_verify import journey_facts
from skillhost.journey._run import observed
from skillhost.os_sandbox._interface import layer
from skillhost.worker._hostile import OPERATIONS
from skillhost_testutil import REPO, FakeSandboxLib

TARGETS = {"read_path": "/Users/u/host-data/host-secret.txt", "write_path": "/Users/u/host-data/written.txt",
           "tcp_port": 50123}  # fmt: skip
# What each attempt must ask the sandbox: the operation (as sandbox_check names it) and its argument.
EXPECTED_CHECKS: dict[str, tuple[bytes, int, bytes | None]] = {
    "read-outside-bundle": (b"file-read-data", macos.SANDBOX_FILTER_PATH, TARGETS["read_path"].encode()),
    "write-outside-tmp": (b"file-write-create", macos.SANDBOX_FILTER_PATH, TARGETS["write_path"].encode()),
    "tcp-connect-loopback": (b"network-outbound", macos.SANDBOX_FILTER_NONE, None),
    "ptrace-host": (b"mach-priv-task-port", macos.SANDBOX_FILTER_NONE, None),
    "exec-shell": (b"process-exec*", macos.SANDBOX_FILTER_PATH, b"/bin/sh"),
}


def _checks(lib: FakeSandboxLib) -> list[tuple[object, ...]]:
    return lib.sandbox_check.calls


@pytest.fixture
def on_macos(monkeypatch: pytest.MonkeyPatch) -> Callable[[int], FakeSandboxLib]:
    """The worker as on macOS, its ``sandbox_check`` answering ``answer``; every attempt refused (``refuse``)."""

    def setup(answer: int, refuse: int = errno.EPERM) -> FakeSandboxLib:
        lib = FakeSandboxLib(lambda _op: answer)
        monkeypatch.setattr(hostile, "_sandbox_denies", lambda: lambda op, arg: macos.sandbox_denies(op, arg, libc=lib))  # type: ignore[arg-type]
        _refuse_everything(monkeypatch, refuse)
        return lib

    return setup  # type: ignore[return-value]


def _refuse_everything(monkeypatch: pytest.MonkeyPatch, code: int) -> None:
    def refused(*_args: object, **_kw: object) -> None:
        raise OSError(code, os.strerror(code))

    for name in ("_read", "_write", "_connect", "_ptrace_parent"):
        monkeypatch.setattr(hostile, name, refused)
    monkeypatch.setattr(hostile.os, "execv", refused)


def _run_all() -> dict[str, hostile.Attempt]:
    found = {op: hostile.attempt(op, dict(TARGETS)) for op in OPERATIONS if op != "exec-shell"}
    found["exec-shell"] = hostile.exec_shell()
    return found


# -- the worker asks the sandbox, per attempt ---------------------------------------------------------------


def test_each_attempt_has_its_operation_in_the_one_table() -> None:
    assert set(hostile.SANDBOX_OPERATIONS) == set(OPERATIONS)
    assert {op: (operation.encode(), key) for op, (operation, key) in hostile.SANDBOX_OPERATIONS.items()} == {
        "read-outside-bundle": (b"file-read-data", "read_path"), "write-outside-tmp": (b"file-write-create",
        "write_path"), "tcp-connect-loopback": (b"network-outbound", None), "ptrace-host": (b"mach-priv-task-port",
        None), "exec-shell": (b"process-exec*", "shell")}  # fmt: skip


@pytest.mark.parametrize("refuse", [errno.EPERM, errno.EACCES])
def test_a_refusal_is_the_sandboxs_when_sandbox_check_says_deny(on_macos, refuse) -> None:
    lib = on_macos(1, refuse)
    found = _run_all()
    assert {op: (a["ok"], a["errno"], a.get("layer")) for op, a in found.items()} == dict.fromkeys(
        OPERATIONS, (False, errno.errorcode[refuse], "sandbox-exec")
    )
    # Exactly one check per attempt, in order: its own operation on its own argument, this process's pid.
    pid = os.getpid()
    assert _checks(lib) == [
        (pid, name, kind, *(() if arg is None else (arg,)))
        for name, kind, arg in (EXPECTED_CHECKS[op] for op in OPERATIONS)
    ]


def test_an_eperm_the_sandbox_allows_is_not_credited_to_it(on_macos) -> None:
    """A hardened-runtime host refuses ptrace with EPERM under no sandbox: sandbox_check=0 credits no layer."""
    lib = on_macos(0)
    found = _run_all()
    assert {op: (a["errno"], a.get("layer", "missing")) for op, a in found.items()} == dict.fromkeys(
        OPERATIONS, ("EPERM", None)
    )
    assert len(_checks(lib)) == len(OPERATIONS)


def test_an_error_from_sandbox_check_credits_no_layer(on_macos) -> None:
    on_macos(-1)
    assert {a.get("layer", "missing") for a in _run_all().values()} == {None}


def test_no_sandbox_check_for_an_errno_no_sandbox_gives(on_macos) -> None:
    lib = on_macos(1, errno.ENOENT)
    assert {a.get("layer", "missing") for a in _run_all().values()} == {None}
    assert _checks(lib) == []


def test_an_allowed_attempt_asks_nothing(on_macos, monkeypatch) -> None:
    lib = on_macos(1)
    monkeypatch.setattr(hostile, "_read", lambda _path: None)
    assert hostile.attempt("read-outside-bundle", dict(TARGETS)) == {
        "op": "read-outside-bundle",
        "ok": True,
        "errno": None,
        "layer": None,
    }
    assert _checks(lib) == []


def test_linux_and_windows_attempts_carry_no_attribution(monkeypatch) -> None:
    """Off macOS the worker asks no sandbox and the attempt is what it was: op, ok, errno."""
    monkeypatch.setattr(hostile, "_sandbox_denies", lambda: None)
    _refuse_everything(monkeypatch, errno.EACCES)
    assert _run_all() == {op: {"op": op, "ok": False, "errno": "EACCES"} for op in OPERATIONS}


def test_off_macos_the_worker_looks_for_no_sandbox_check() -> None:
    assert hostile.sys.platform != "darwin"
    assert hostile._sandbox_denies() is None


# -- the journey's macOS rule requires that attribution -----------------------------------------------------

APPLIED = [layer("sandbox-exec", applied=True, detail="")]


def _step(monkeypatch: pytest.MonkeyPatch, platform: str, found: Mapping[str, object], tmp_path: Path,
          layers: list[Any] = APPLIED) -> Any:  # fmt: skip
    monkeypatch.setattr(journey_kernel, "platform_key", lambda: platform)
    return journey_kernel._attempt_step(str(found["op"]), dict(found), tmp_path / "absent", layers)


@pytest.mark.parametrize("said", ["missing", None])
def test_macos_eperm_without_the_sandboxs_word_is_inconclusive(monkeypatch, tmp_path, said) -> None:
    found: dict[str, object] = {"op": "ptrace-host", "ok": False, "errno": "EPERM"}
    if said != "missing":
        found["layer"] = said
    step = _step(monkeypatch, "macos", found, tmp_path)
    assert (step["layer"], step["observed_code"], step["passed"]) == (None, journey_kernel.INCONCLUSIVE_CODE, False)
    assert step["detail"] == (
        "ptrace-host: refused with EPERM, but the worker's sandbox_check does not name sandbox-exec"
    )


@pytest.mark.parametrize("err", ["EPERM", "EACCES"])
def test_macos_credits_the_sandbox_when_its_sandbox_check_said_so(monkeypatch, tmp_path, err) -> None:
    step = _step(
        monkeypatch, "macos", {"op": "exec-shell", "ok": False, "errno": err, "layer": "sandbox-exec"}, tmp_path
    )
    assert (step["layer"], step["observed_code"], step["passed"]) == ("sandbox-exec", journey_kernel.DENIED_CODE, True)


def test_macos_the_workers_word_alone_is_not_enough(monkeypatch, tmp_path) -> None:
    said = {"op": "exec-shell", "ok": False, "layer": "sandbox-exec"}
    # Not a sandbox's errno, or the layer not applied: still no layer.
    assert _step(monkeypatch, "macos", {**said, "errno": "ENOENT"}, tmp_path)["layer"] is None
    assert _step(monkeypatch, "macos", {**said, "errno": "EPERM"}, tmp_path, layers=[])["layer"] is None
    assert journey_kernel.credited_layer("macos", "exec-shell", "EPERM", APPLIED, "landlock-fs") is None


def test_linux_and_windows_layers_stay_read_from_the_errno(monkeypatch, tmp_path) -> None:
    linux = [layer(n, applied=True, detail="") for n in ("landlock-fs", "seccomp")]
    step = _step(monkeypatch, "linux", {"op": "read-outside-bundle", "ok": False, "errno": "EACCES"}, tmp_path, linux)
    assert step["layer"] == "landlock-fs"
    windows = [layer("appcontainer", applied=True, detail="")]
    step = _step(monkeypatch, "windows", {"op": "ptrace-host", "ok": False, "errno": "EACCES"}, tmp_path, windows)
    assert step["layer"] == "appcontainer"


RELEASE = load_policy(REPO / "policies" / "release.toml").file


def _judge(steps: list[Any]) -> Any:
    table = {sid: want for sid, want in RELEASE.journey.steps.items() if sid.startswith("kernel-refuses-")}
    assert RELEASE.isolation is not None
    return journey_facts(
        steps=[AppStep.model_validate(observed(s)) for s in steps],
        expected=table,
        code_pattern=RELEASE.app.codes.pattern,
        exit_code=0,
        timed_out=False,
        app_build_sha="0" * 40,
        sha="0" * 40,
        platform="macos",
        layers=[IsolationLayer.model_validate(e) for e in APPLIED],
        required_layers=None,
        refuses_with=RELEASE.isolation.refuses_with,
        probe_layers=None,
    )


def test_the_release_policy_passes_macos_only_on_the_sandboxs_word(on_macos, monkeypatch, tmp_path) -> None:
    """The worker's real attempts (refused with EPERM) through the journey's real step builder and the verifier."""
    monkeypatch.setattr(journey_kernel, "platform_key", lambda: "macos")
    for answer, passed in ((1, True), (0, False)):
        on_macos(answer)
        found = _run_all()
        steps = [journey_kernel._attempt_step(op, found[op], tmp_path / "absent", APPLIED) for op in OPERATIONS]
        facts = _judge(steps)
        if passed:
            assert facts.passed, facts.problems
        else:
            assert set(facts.failed) == {f"kernel-refuses-{op}" for op in OPERATIONS}


# -- the read-back: the applied profile, probed --------------------------------------------------------------


def _reporting(allowed: frozenset[bytes] = frozenset(), sandboxed: int = 1,
               error: bytes | None = None) -> FakeSandboxLib:
    def answer(op: bytes | None) -> int:
        if op is None:
            return sandboxed
        return -1 if op == error else 0 if op in allowed else 1

    return FakeSandboxLib(answer)


def test_the_probe_list_is_named_and_each_has_no_allow_rule_in_the_profile() -> None:
    assert [op for op, _why in macos.READ_BACK_PROBES] == [
        "process-info-listpids",
        "nvram-get",
        "iokit-get-properties",
        "network-outbound",
        "process-fork",
    ]
    assert all(len(why) > 15 for _op, why in macos.READ_BACK_PROBES)
    allowed_ops = [line.split()[1].rstrip(")") for line in macos.PROFILE.splitlines() if line.startswith("(allow ")]
    for op, _why in macos.READ_BACK_PROBES:
        assert not any(a == op or (a.endswith("*") and op.startswith(a[:-1])) for a in allowed_ops), op


def test_the_layer_is_applied_when_the_sandbox_denies_every_probe() -> None:
    lib = _reporting()
    assert (
        macos.self_report(1, lib)
        == [  # type: ignore[arg-type]
            layer(
                "sandbox-exec", applied=True, detail=f"sandbox_check=1, profile sha256 {macos.profile_digest(1)[:16]}"
            )
        ]
    )
    pid = os.getpid()
    assert _checks(lib) == [
        (pid, None, 0),
        *((pid, op.encode(), macos.SANDBOX_FILTER_NONE) for op, _why in macos.READ_BACK_PROBES),
    ]


@pytest.mark.parametrize("op", [op for op, _why in macos.READ_BACK_PROBES])
def test_a_profile_that_allows_one_probe_is_not_this_one(op) -> None:
    lib = _reporting(allowed=frozenset({op.encode()}))
    assert macos.self_report(1, lib) == [  # type: ignore[arg-type]
        layer("sandbox-exec", applied=False, detail=f"sandbox_check=1, not denied: {op}")
    ]


def test_an_allow_default_profile_fails_every_probe_and_a_check_error_counts_as_not_denied() -> None:
    every = frozenset(op.encode() for op, _why in macos.READ_BACK_PROBES)
    (report,) = macos.self_report(1, _reporting(allowed=every))  # type: ignore[arg-type]
    assert not report["applied"]
    assert report["detail"].startswith("sandbox_check=1, not denied: process-info-listpids, nvram-get")
    (report,) = macos.self_report(1, _reporting(error=b"nvram-get"))  # type: ignore[arg-type]
    assert (report["applied"], report["detail"]) == (False, "sandbox_check=1, not denied: nvram-get")


def test_an_unsandboxed_worker_probes_nothing() -> None:
    lib = _reporting(sandboxed=0)
    assert macos.self_report(1, lib) == [layer("sandbox-exec", applied=False, detail="not sandboxed")]  # type: ignore[arg-type]
    assert _checks(lib) == [(os.getpid(), None, 0)]
