"""Helpers shared by the skill host tests (uniquely named to avoid clashing with other conftests)."""

import ctypes
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
APP_DIR = REPO / "reference_app"


def run_source(args, pythonpath=APP_DIR, env_extra=None, timeout=60):
    """Run ``python -m skillhost ARGS`` from source; return (rc, parsed single JSON line, raw stdout)."""
    env = {k: v for k, v in os.environ.items() if k != "QUALIFY_BUILD_INFO"}
    env["PYTHONPATH"] = str(pythonpath)
    env.update(env_extra or {})
    proc = subprocess.run(
        [sys.executable, "-m", "skillhost", *args],
        capture_output=True,
        env=env,
        check=False,
        timeout=timeout,
        cwd=str(REPO),
    )
    return proc.returncode, parse_single_line(proc.stdout), proc.stdout


def parse_single_line(stdout: bytes):
    assert len(stdout) < 64 * 1024
    text = stdout.decode("utf-8")
    assert text.endswith("\n"), text[:500]
    assert text.count("\n") == 1, text[:500]
    assert "Traceback" not in text
    obj = json.loads(text)
    assert text.strip() == json.dumps(obj, sort_keys=True, separators=(",", ":"))
    return obj


def write_signed_skill(ws, key, sid, src, caps):
    """An external skill package ``ws/skills/SID`` with ``src`` as its handler, signed by ``key``."""
    from skillhost.packaging._package import sign_package

    d = ws / "skills" / sid
    d.mkdir()
    caps_yaml = "".join(f"  - {c}\n" for c in caps)
    (d / "SKILL.md").write_text(f"---\nid: {sid}\nexecution-capabilities:\n{caps_yaml}---\n")
    (d / "handler.py").write_text(src)
    sign_package(d, key)
    return d


def contained_outcome(host, skill_dir, *, max_duration):
    """Run a hostile external skill; return (code, everything it could show, outcome or None when refused early).

    A run that got as far as the worker must have failed and had its worker reaped.
    """
    from skillhost._errors import SkillError

    try:
        out = host.run_external(skill_dir, max_duration=max_duration)
    except SkillError as exc:
        return exc.code, exc.message, None
    assert not out.ok, out.value
    assert out.reaped
    return out.code, json.dumps([out.value, out.message, out.audit], default=str), out


class FakeSandboxCheck:
    """libsystem_sandbox's ``sandbox_check``, recording its exact arguments; ``answer`` per operation (bytes)."""

    def __init__(self, answer: Callable[[bytes | None], int]) -> None:
        self.answer, self.calls = answer, list[tuple[object, ...]]()
        self.restype: object = None
        self.argtypes: object = None

    def __call__(self, *args: object) -> int:
        assert self.argtypes == [ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
        self.calls.append(tuple(a.value if isinstance(a, ctypes.c_char_p) else a for a in args))
        op = args[1]
        return self.answer(op if isinstance(op, bytes) or op is None else None)


class FakeSandboxLib:
    """The library ``sandbox_denies`` loads, holding one ``FakeSandboxCheck``."""

    def __init__(self, answer: Callable[[bytes | None], int]) -> None:
        self.sandbox_check = FakeSandboxCheck(answer)
