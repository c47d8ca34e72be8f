import json
import os

import pytest
from skillhost._errors import SkillError
from skillhost.brokers._broker import default_ports
from skillhost.host._runner import run_external
from skillhost.packaging import KNOWN_CAPABILITIES
from skillhost.packaging._package import VerifiedSkill, discover, sign_package, verify_for_execution
from skillhost.packaging._signing import TrustStore, new_key

GOOD = "def run(ports, args):\n    return {'now': ports.time.now(), 'x': args.get('x')}\n"


@pytest.fixture
def keys():
    return new_key(), new_key()


@pytest.fixture
def trust(keys):
    return TrustStore.from_public_keys([keys[0].public_key()])


def make(tmp_path, handler=GOOD, caps=("runtime:time",), key=None, sid="demo"):
    d = tmp_path / sid
    d.mkdir()
    caps_yaml = "".join(f"  - {c}\n" for c in caps)
    (d / "SKILL.md").write_text(f"---\nid: {sid}\nname: Demo\nexecution-capabilities:\n{caps_yaml}---\n")
    (d / "handler.py").write_text(handler)
    if key is not None:
        sign_package(d, key)
    return d


def code_of(fn):
    with pytest.raises(SkillError) as ei:
        fn()
    return ei.value.code


def run(d, trust, **kw):
    verified = verify_for_execution(discover(d), trust)
    return run_external(verified, default_ports([], env_values={"K": "secret-value"}), granted=KNOWN_CAPABILITIES, **kw)


def run_unaudited(src, caps=("runtime:time",), **kw):
    """Hand source straight to the worker, skipping the host's static audit, to test the worker's own guards."""
    verified = VerifiedSkill("demo", sorted(caps), src, "0" * 64, "test")
    return run_external(verified, default_ports([]), granted=KNOWN_CAPABILITIES, **kw)


def test_signed_runs_in_worker(tmp_path, keys, trust):
    out = run(make(tmp_path, key=keys[0]), trust, args={"x": 7})
    assert out.ok, (out.code, out.message)
    assert out.value["x"] == 7
    assert out.worker_pid != os.getpid()
    assert out.reaped
    assert [a["event"] for a in out.audit] == ["start", "done"]


def test_unsigned(tmp_path, trust, keys):
    d = make(tmp_path, key=keys[0])
    (d / ".skill-signature.json").unlink()
    assert code_of(lambda: verify_for_execution(discover(d), trust)) == "CC_SKILL_SIGNATURE_MISSING"


def test_lock_missing(tmp_path, trust):
    d = make(tmp_path)
    assert code_of(lambda: verify_for_execution(discover(d), trust)) == "CC_SKILL_LOCK_MISSING"


def test_unknown_signer(tmp_path, keys, trust):
    d = make(tmp_path, key=keys[1])
    assert code_of(lambda: verify_for_execution(discover(d), trust)) == "CC_SKILL_SIGNER_UNKNOWN"


def test_tampered_lock_signature_invalid(tmp_path, keys, trust):
    d = make(tmp_path, key=keys[0])
    lock = json.loads((d / ".skill-lock.json").read_text())
    lock["skill_id"] = "other"
    (d / ".skill-lock.json").write_text(json.dumps(lock))
    assert code_of(lambda: verify_for_execution(discover(d), trust)) == "CC_SKILL_SIGNATURE_INVALID"


def test_digest_drift_after_discovery(tmp_path, keys, trust):
    d = make(tmp_path, key=keys[0])
    cand = discover(d)
    (d / "handler.py").write_text("def run(ports, args):\n    return 'evil'\n")
    assert code_of(lambda: verify_for_execution(cand, trust)) == "CC_SKILL_DIGEST_DRIFT"


def test_extra_file_is_drift(tmp_path, keys, trust):
    d = make(tmp_path, key=keys[0])
    (d / "notes.md").write_text("added later")
    assert code_of(lambda: verify_for_execution(discover(d), trust)) == "CC_SKILL_DIGEST_DRIFT"


def test_resigned_package_swapped_after_discovery_is_drift(tmp_path, keys, trust):
    d = make(tmp_path, key=keys[0])
    cand = discover(d)
    (d / "handler.py").write_text("def run(ports, args):\n    return 'other'\n")
    sign_package(d, keys[0])
    assert code_of(lambda: verify_for_execution(cand, trust)) == "CC_SKILL_DIGEST_DRIFT"


@pytest.mark.skipif(os.name != "posix", reason="symlinks")
def test_symlink_rejected(tmp_path, keys, trust):
    d = make(tmp_path, key=keys[0])
    (tmp_path / "outside.md").write_text("x")
    (d / "link.md").symlink_to(tmp_path / "outside.md")
    assert code_of(lambda: discover(d)) == "CC_SKILL_PACKAGE_INVALID"


def test_native_payload_and_subdir_rejected(tmp_path, keys, trust):
    d = make(tmp_path, key=keys[0])
    (d / "lib.so").write_bytes(b"\x7fELF....")
    assert code_of(lambda: discover(d)) == "CC_SKILL_PACKAGE_INVALID"
    (d / "lib.so").unlink()
    (d / "readme.txt").write_bytes(b"\x7fELF....")
    assert code_of(lambda: discover(d)) == "CC_SKILL_PACKAGE_INVALID"
    (d / "readme.txt").unlink()
    (d / "sub").mkdir()
    assert code_of(lambda: discover(d)) == "CC_SKILL_PACKAGE_INVALID"


def test_oversized_file_rejected(tmp_path, keys, trust):
    d = make(tmp_path, key=keys[0])
    (d / "big.txt").write_bytes(b"a" * (33 * 1024))
    assert code_of(lambda: discover(d)) == "CC_SKILL_PACKAGE_INVALID"


def test_missing_capabilities_list(tmp_path, keys, trust):
    d = tmp_path / "nocaps"
    d.mkdir()
    (d / "SKILL.md").write_text("---\nid: nocaps\n---\n")
    (d / "handler.py").write_text(GOOD)
    assert code_of(lambda: discover(d)) == "CC_SKILL_CAPABILITY_MISSING"


def test_unknown_capability(tmp_path):
    d = make(tmp_path, caps=("gpu:all",))
    assert code_of(lambda: discover(d)) == "CC_SKILL_CAPABILITY_UNKNOWN"


def test_prompt_only_gets_no_execution(tmp_path, keys, trust):
    d = make(tmp_path)
    (d / "handler.py").unlink()
    sign_package(d, keys[0])
    assert code_of(lambda: verify_for_execution(discover(d), trust)) == "CC_SKILL_PROMPT_ONLY"


def test_undeclared_capability_denied_and_audited(tmp_path, keys, trust):
    src = "def run(ports, args):\n    return ports.env.get('K')\n"
    out = run(make(tmp_path, handler=src, key=keys[0]), trust)
    assert not out.ok
    assert out.code == "CC_SKILL_CAPABILITY_UNDECLARED"
    assert out.reaped
    assert [(a["event"], a["code"]) for a in out.audit] == [("denied", "CC_SKILL_CAPABILITY_UNDECLARED")]
    assert "secret-value" not in json.dumps(out.audit)


def test_declared_env_key_allowed_but_value_not_audited(tmp_path, keys, trust):
    src = "def run(ports, args):\n    return {'n': len(ports.env.get('K'))}\n"
    out = run(make(tmp_path, handler=src, caps=("environment:read",), key=keys[0]), trust)
    assert out.ok
    assert out.value == {"n": len("secret-value")}
    assert "secret-value" not in json.dumps(out.audit)


def test_unapproved_port_denied(tmp_path, keys, trust):
    src = "def run(ports, args):\n    return ports.https.get('https://example.com')\n"
    out = run(make(tmp_path, handler=src, caps=("network:https",), key=keys[0]), trust)
    assert not out.ok
    assert out.code == "CC_SKILL_PORT_UNAPPROVED"


@pytest.mark.parametrize(
    ("src", "code", "kw"),
    [
        ("def run(ports, args):\n    while True:\n        pass\n", "CC_SKILL_TIMEOUT", {"max_duration": 1.0}),
        ("def run(ports, args):\n    return 'x' * 70000\n", "CC_SKILL_FRAME_TOO_LARGE", {}),
        ("def run(ports, args):\n    return 'x' * 17000\n", "CC_SKILL_RESULT_TOO_LARGE", {}),
        ("def run(ports, args):\n    [ports.time.now() for _ in range(40)]\n", "CC_SKILL_PROTOCOL_VIOLATION", {}),
        ("import subprocess\ndef run(ports, args):\n    return 1\n", "CC_SKILL_IMPORT_DENIED", {}),
        # The worker repeats the host's static rules before it compiles anything.
        ("def run(ports, args):\n    return open('/etc/passwd').read()\n", "CC_SKILL_HANDLER_REJECTED", {}),
        ("def run(ports, args):\n    return getattr(ports, 'x')\n", "CC_SKILL_HANDLER_REJECTED", {}),
        ("def run(ports, args):\n    return __import__('os').getcwd()\n", "CC_SKILL_HANDLER_REJECTED", {}),
        ("def run(ports, args):\n    raise SystemExit(0)\n", "CC_SKILL_PROTOCOL_VIOLATION", {}),
    ],
)
def test_worker_violations_kill_and_reap(src, code, kw):
    # The worker's own guards, with the host's static audit out of the way.
    out = run_unaudited(src, **kw)
    assert not out.ok, out.message
    assert out.code == code, out.message
    assert out.reaped
    assert out.returncode is not None


@pytest.mark.parametrize(
    ("src", "code"),
    [
        ("import subprocess\ndef run(ports, args):\n    return 1\n", "CC_SKILL_IMPORT_DENIED"),
        ("def run(ports, args):\n    return open('/etc/passwd').read()\n", "CC_SKILL_HANDLER_REJECTED"),
        ("def run(ports, args):\n    return ().__class__\n", "CC_SKILL_HANDLER_REJECTED"),
        ("def run(ports, args)\n    return 1\n", "CC_SKILL_HANDLER_INVALID"),
    ],
)
def test_static_audit_refuses_before_any_worker(tmp_path, keys, trust, src, code):
    d = make(tmp_path, handler=src, key=keys[0])
    assert code_of(lambda: verify_for_execution(discover(d), trust)) == code


def test_trust_store_roundtrip(tmp_path, trust, keys):
    p = tmp_path / "trust.json"
    p.write_bytes(trust.dump())
    loaded = TrustStore.load(p)
    assert loaded.dump() == trust.dump()
    p.write_text('{"version":1,"keys":[{"keyid":"00","public_key":"AAAA"}]}')
    assert code_of(lambda: TrustStore.load(p)) == "CC_SKILL_TRUST_STORE_INVALID"


def test_a_start_the_sandbox_refused_keeps_the_sandbox_code(monkeypatch):
    """Windows refuses to start a worker whose install folder lacks its grant: the outcome names that refusal."""
    import skillhost.host._runner as runner
    from skillhost.os_sandbox._windows_grant import GRANT_MISSING_CODE, InstallGrantMissingError

    def refuse(*_args, **_kw):
        raise InstallGrantMissingError("C:\\Program Files\\SkillHost", "no read and execute for the capability")

    monkeypatch.setattr(runner, "Worker", refuse)
    out = run_unaudited(GOOD)
    assert not out.ok
    assert out.code == GRANT_MISSING_CODE
    assert "icacls" in out.message


def test_a_broken_channel_is_a_protocol_violation(monkeypatch):
    import skillhost.host._runner as runner

    def broken(*_args, **_kw):
        raise BrokenPipeError

    monkeypatch.setattr(runner, "Worker", broken)
    out = run_unaudited(GOOD)
    assert (out.ok, out.code) == (False, "CC_SKILL_PROTOCOL_VIOLATION")
