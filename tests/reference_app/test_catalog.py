import subprocess
import sys

import pytest
from skillhost._errors import SkillError
from skillhost.packaging._catalog import audit_handler, generate, verify
from skillhost_testutil import APP_DIR


def _gen(tools_dir, *args):
    return subprocess.run(
        [sys.executable, str(tools_dir / "generate_catalog.py"), *args],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def _assert_drift_everywhere(app_copy):
    """The generator's --check and the runtime catalog verification both refuse the copy."""
    proc = _gen(app_copy / "tools", "--check", "--package-dir", str(app_copy / "skillhost"))
    assert proc.returncode == 1
    assert "drift" in proc.stderr
    with pytest.raises(SkillError) as ei:
        verify(app_copy / "skillhost")
    assert ei.value.code == "CC_SKILL_CATALOG_DRIFT"


def test_checked_in_catalog_is_current():
    proc = _gen(APP_DIR / "tools", "--check")
    assert proc.returncode == 0, proc.stderr


def test_generator_is_stable_bytes(app_copy):
    cat = app_copy / "skillhost" / "capability_catalog.json"
    before = cat.read_bytes()
    proc = _gen(app_copy / "tools", "--package-dir", str(app_copy / "skillhost"))
    assert proc.returncode == 0, proc.stderr
    assert cat.read_bytes() == before


def test_check_fails_after_handler_byte_change(app_copy):
    handler = app_copy / "skillhost" / "bundled_skills" / "clock" / "handler.py"
    handler.write_bytes(handler.read_bytes().replace(b'"now"', b'"nov"', 1))
    _assert_drift_everywhere(app_copy)


def test_check_fails_on_under_declared_capability(app_copy):
    md = app_copy / "skillhost" / "bundled_skills" / "clock" / "SKILL.md"
    md.write_text(md.read_text().replace("  - host:logger\n", ""))
    proc = _gen(app_copy / "tools", "--check", "--package-dir", str(app_copy / "skillhost"))
    assert proc.returncode == 1
    assert "under-declared capability host:logger" in proc.stderr


def test_check_fails_on_over_declared_capability(app_copy):
    md = app_copy / "skillhost" / "bundled_skills" / "clock" / "SKILL.md"
    md.write_text(md.read_text().replace("  - host:logger\n", "  - host:logger\n  - network:https\n"))
    proc = _gen(app_copy / "tools", "--check", "--package-dir", str(app_copy / "skillhost"))
    assert proc.returncode == 1
    assert "over-declared capability network:https" in proc.stderr


def test_runtime_verify_catches_skill_md_drift(app_copy):
    md = app_copy / "skillhost" / "bundled_skills" / "clock" / "SKILL.md"
    md.write_text(md.read_text().replace("  - host:logger\n", "  - host:logger\n  - network:https\n"))
    with pytest.raises(SkillError) as ei:
        verify(app_copy / "skillhost")
    assert ei.value.code == "CC_SKILL_CATALOG_DRIFT"


@pytest.mark.parametrize(
    ("src", "problem"),
    [
        (b"import os\ndef run(ports, args):\n    return os.getcwd()\n", "raw module import os (environment/os)"),
        (b"import socket\ndef run(ports, args):\n    return 1\n", "raw module import socket (network)"),
        (
            b"from subprocess import run as r\ndef run(ports, args):\n    return 1\n",
            "raw module import subprocess (process)",
        ),
        (b"def run(ports, args):\n    return __import__('os')\n", "forbidden name __import__"),
        (b"def run(ports, args):\n    return getattr(ports, 'https')\n", "forbidden name getattr"),
        (
            b"def run(ports, args):\n    p = ports\n    return p.https.get('x')\n",
            "ports used other than as ports.<port>",
        ),
        (b"def run(ports, args):\n    return ports.gpu.go()\n", "unknown host port ports.gpu"),
        (b"def go(ports, args):\n    return 1\n", "no top-level def run(ports, args)"),
    ],
)
def test_audit_flags(src, problem):
    assert problem in audit_handler(src)["problems"]


def test_audit_maps_ports_to_capabilities():
    src = (
        b"def run(ports, args):\n    ports.fs.read('a')\n    ports.env.get('K')\n    ports.process.run('x')\n"
        b"    ports.https.get('u')\n    ports.time.now()\n    ports.logger.info('m')\n"
    )
    audit = audit_handler(src)
    assert audit["problems"] == []
    assert audit["capabilities"] == sorted(
        ["filesystem:read", "environment:read", "process:exec", "network:https", "runtime:time", "host:logger"]
    )


def test_generate_matches_checked_in():
    catalog, problems = generate(APP_DIR / "skillhost")
    assert problems == []
    caps = {s["id"]: s["capabilities"] for s in catalog["skills"]}
    assert caps == {
        "clock": ["host:logger", "runtime:time"],
        "fetch-status": ["network:https"],
        "host-info": ["environment:read"],
        "read-notes": ["filesystem:read"],
        "repo-status": ["process:exec"],
    }
    # five skills, each on a different broker
    assert len({tuple(c) for c in caps.values()}) == 5


RAW_IMPORTS = [
    ("import socket", "socket (network)"),
    ("import ssl", "ssl (network)"),
    ("import http.client", "http (network)"),
    ("from urllib.request import urlopen", "urllib (network)"),
    ("import dns.resolver", "dns (network)"),
    ("from asyncio import subprocess", "asyncio (network)"),
    ("import subprocess", "subprocess (process)"),
    ("import os", "os (environment/os)"),
    ("from os import environ", "os (environment/os)"),
    ("import ctypes", "ctypes (interpreter)"),
    ("import importlib", "importlib (interpreter)"),
]


@pytest.mark.parametrize(("stmt", "what"), RAW_IMPORTS)
def test_generator_fails_on_raw_import_in_bundled_handler(app_copy, stmt, what):
    handler = app_copy / "skillhost" / "bundled_skills" / "read-notes" / "handler.py"
    handler.write_text(f"{stmt}\n" + handler.read_text())
    for args in (["--check"], []):
        proc = _gen(app_copy / "tools", *args, "--package-dir", str(app_copy / "skillhost"))
        assert proc.returncode == 1
        assert f"read-notes: raw module import {what}" in proc.stderr
    with pytest.raises(SkillError) as ei:
        verify(app_copy / "skillhost")
    assert ei.value.code == "CC_SKILL_CATALOG_DRIFT"


def test_generator_fails_on_new_unlisted_bundled_skill(app_copy):
    new = app_copy / "skillhost" / "bundled_skills" / "extra"
    new.mkdir()
    (new / "SKILL.md").write_text("---\nid: extra\nexecution-capabilities:\n  - runtime:time\n---\n")
    (new / "handler.py").write_text("def run(ports, args):\n    return ports.time.now()\n")
    _assert_drift_everywhere(app_copy)


def test_bundled_run_refuses_drifted_handler(app_copy):
    from skillhost.host._bundled import run_bundled

    handler = app_copy / "skillhost" / "bundled_skills" / "clock" / "handler.py"
    handler.write_bytes(handler.read_bytes().replace(b"[:40]", b"[:41]"))
    with pytest.raises(SkillError) as ei:
        run_bundled(app_copy / "skillhost", "clock", {}, granted=frozenset())
    assert ei.value.code == "CC_SKILL_CATALOG_DRIFT"
