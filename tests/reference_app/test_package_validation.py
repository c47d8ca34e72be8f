"""Package validation before any code runs, safe mode, and the run-skill command."""

import json
import os

import pytest
from skillhost._errors import SkillError
from skillhost.host._host import HostConfig, SkillHost
from skillhost.packaging._package import discover, sign_package, verify_for_execution
from skillhost.packaging._signing import LOCK_NAME, TrustStore, new_key
from skillhost_testutil import run_source

GOOD = "def run(ports, args):\n    return {'t': ports.time.now()}\n"


@pytest.fixture
def key():
    return new_key()


@pytest.fixture
def trust(key):
    return TrustStore.from_public_keys([key.public_key()])


def make(root, sid="pkg", extra_md="", handler=GOOD):
    d = root / sid
    d.mkdir(parents=True)
    (d / "SKILL.md").write_text(f"---\nid: {sid}\nexecution-capabilities:\n  - runtime:time\n{extra_md}---\n")
    if handler is not None:
        (d / "handler.py").write_text(handler)
    return d


def code_of(fn):
    with pytest.raises(SkillError) as ei:
        fn()
    return ei.value.code


def _native(d):
    (d / "blob.json").write_bytes(b"\x7fELF\x02\x01\x01" + b"\0" * 32)


def _macho(d):
    (d / "blob.txt").write_bytes(b"\xcf\xfa\xed\xfe" + b"\0" * 32)


def _pe(d):
    (d / "tool.md").write_bytes(b"MZ\x90\x00" + b"\0" * 32)


def _zip(d):
    (d / "dep.json").write_bytes(b"PK\x03\x04" + b"\0" * 32)


def _shebang(d):
    (d / "notes.txt").write_text("#!/bin/sh\nrm -rf ~\n")


def _script(d):
    (d / "install.sh").write_text("echo hi\n")


def _setup_py(d):
    (d / "setup.py").write_text("print('install')\n")


def _subdir(d):
    (d / "lib").mkdir()


def _oversize(d):
    (d / "big.txt").write_bytes(b"a" * (33 * 1024))


def _lock_traversal(d):
    lock = {"version": 1, "skill_id": d.name, "files": [{"path": "../../etc/passwd", "sha256": "0" * 64, "size": 1}]}
    (d / LOCK_NAME).write_text(json.dumps(lock))


def _exec_bit(d):
    (d / "handler.py").chmod(0o755)


MUTATIONS = [
    ("native-elf", _native),
    ("native-macho", _macho),
    ("native-pe", _pe),
    ("zip-container", _zip),
    ("shebang-script", _shebang),
    ("install-script", _script),
    ("setup-py", _setup_py),
    ("subdirectory", _subdir),
    ("oversize", _oversize),
    ("lock-traversal", _lock_traversal),
]
if os.name == "posix":
    MUTATIONS.append(("exec-bit", _exec_bit))


@pytest.mark.parametrize(("name", "mutate"), MUTATIONS, ids=[m[0] for m in MUTATIONS])
def test_package_payloads_rejected_at_discovery(tmp_path, name, mutate):
    d = make(tmp_path)
    mutate(d)
    assert code_of(lambda: discover(d)) == "CC_SKILL_PACKAGE_INVALID"


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        ("postinstall: touch pwned\n", "unknown manifest field"),
        ("scripts:\n  - install.sh\n", "unknown manifest field"),
        ("entry: ../outside/handler.py\n", "path traversal"),
        ("entry: /abs/handler.py\n", "path traversal"),
        ("entry: main.py\n", "bad entry point"),
    ],
)
def test_manifest_fields_and_entry(tmp_path, extra, needle):
    d = make(tmp_path, extra_md=extra)
    with pytest.raises(SkillError) as ei:
        discover(d)
    assert ei.value.code == "CC_SKILL_PACKAGE_INVALID"
    assert needle in ei.value.message


def test_explicit_fixed_entry_and_shebang_handler_allowed(tmp_path, key, trust):
    d = make(tmp_path, extra_md="entry: handler.py\n", handler="#!/usr/bin/env python3\n" + GOOD)
    sign_package(d, key)
    assert verify_for_execution(discover(d), trust).skill_id == "pkg"


@pytest.mark.skipif(os.name != "posix", reason="symlinks")
def test_symlinked_root_and_file(tmp_path):
    d = make(tmp_path)
    (tmp_path / "alias").symlink_to(d)
    assert code_of(lambda: discover(tmp_path / "alias")) == "CC_SKILL_PACKAGE_INVALID"
    (d / "x.md").symlink_to(d / "SKILL.md")
    assert code_of(lambda: discover(d)) == "CC_SKILL_PACKAGE_INVALID"


def test_safe_mode_reads_no_third_party_byte(tmp_path, trust, monkeypatch):
    import skillhost.host._host as host_mod

    def boom(*a, **k):
        raise AssertionError("discovery must not run in safe mode")

    monkeypatch.setattr(host_mod, "discover", boom)
    ws = tmp_path / "ws"
    ws.mkdir()
    host = SkillHost(HostConfig(workspace=ws, trust=trust, safe_mode=True))
    assert code_of(lambda: host.run_external(ws / "anything")) == "CC_SKILL_SAFE_MODE"
    value, _ = host.run_bundled("clock", {"label": "s"})
    assert value["label"] == "s"


def _workspace(tmp_path, key, trust):
    ws = tmp_path / "ws"
    (ws / "skills").mkdir(parents=True)
    (ws / "notes.txt").write_text("one\ntwo\nthree\n")
    d = make(ws / "skills", sid="greeter")
    sign_package(d, key)
    store = tmp_path / "trust.json"
    store.write_bytes(trust.dump())
    return ws, store


def test_cli_run_skill_external_bundled_and_safe_mode(tmp_path, key, trust):
    ws, store = _workspace(tmp_path, key, trust)
    base = ["run-skill", "--workspace", str(ws), "--trust-store", str(store)]
    rc, out, _ = run_source([*base, "greeter"])
    assert rc == 0, out
    assert (out["kind"], out["tier"], out["skill_id"]) == ("skillhost-run", "external", "greeter")
    assert [a["event"] for a in out["audit"]] == ["start", "done"]

    rc, out, _ = run_source([*base, "--args-json", '{"path": "notes.txt"}', "read-notes"])
    assert rc == 0, out
    assert out["tier"] == "bundled"
    assert out["value"] == {"lines": 3, "first": "one"}

    rc, out, _ = run_source([*base, "--safe-mode", "greeter"])
    assert rc == 3
    assert out["code"] == "CC_SKILL_SAFE_MODE"
    rc, out, _ = run_source([*base, "--safe-mode", "host-info"])
    assert rc == 0
    assert out["value"]["platform"] in ("linux", "macos", "windows")


@pytest.mark.parametrize(
    ("argv_tail", "rc", "code"),
    [
        (["no-such-skill"], 3, "CC_SKILL_NOT_FOUND"),
        (["Bad/Id"], 2, "CC_SKILL_USAGE"),
        (["--args-json", "[1]", "greeter"], 2, "CC_SKILL_USAGE"),
        (["--args-json", "{", "greeter"], 2, "CC_SKILL_USAGE"),
        (["--args-json", '{"path": "../../etc/passwd"}', "read-notes"], 3, "CC_SKILL_PATH_ESCAPE"),
    ],
)
def test_cli_run_skill_refusals(tmp_path, key, trust, argv_tail, rc, code):  # noqa: PLR0917 - fixtures + params
    ws, store = _workspace(tmp_path, key, trust)
    got_rc, out, _ = run_source(["run-skill", "--workspace", str(ws), "--trust-store", str(store), *argv_tail])
    assert (got_rc, out["code"]) == (rc, code), out


def test_cli_run_skill_untrusted_signer(tmp_path, key, trust):
    ws, _ = _workspace(tmp_path, key, trust)
    other = tmp_path / "other.json"
    other.write_bytes(TrustStore.from_public_keys([new_key().public_key()]).dump())
    rc, out, _ = run_source(["run-skill", "--workspace", str(ws), "--trust-store", str(other), "greeter"])
    assert (rc, out["code"]) == (3, "CC_SKILL_SIGNER_UNKNOWN")
