"""Helpers shared by the journey modules: step records, throw-away skill packages, symlinks."""

import json
from collections.abc import Iterable
from pathlib import Path
from typing import TypedDict

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from skillhost._package import build_lock, read_package, sign_package
from skillhost._signing import LOCK_NAME, SIG_NAME, sign_lock

MAX_DETAIL = 400

GREETER_MD = """---
id: {id}
name: Greeter
execution-capabilities:
{caps}
{extra}---

External test skill written by the skill host journey.
"""


class Step(TypedDict):
    """One journey step: what was expected, what was observed, and a bounded free-text detail."""

    id: str
    expected: str
    expected_code: str | None
    observed: str
    observed_code: str | None
    passed: bool
    detail: str
    # The operating system's refusal (``EACCES``, ``EPERM``...) where a step is one; else None.
    errno: str | None
    # The applied isolation layer that refusal comes from (``_journey_kernel.refusing_layer``); else None.
    layer: str | None


def _caps_yaml(caps: Iterable[str]) -> str:
    return "\n".join(f"  - {c}" for c in caps)


def _write_skill(  # noqa: PLR0917
    root: Path,
    skill_id: str,
    handler: str | None,
    caps: Iterable[str],
    key: Ed25519PrivateKey | None = None,
    extra_md: str = "",
) -> Path:
    """Write (and sign, given a key) a flat skill package; ``handler=None`` makes it prompt-only."""
    d = root / skill_id
    d.mkdir()
    md = GREETER_MD.format(id=skill_id, caps=_caps_yaml(caps), extra=extra_md)
    (d / "SKILL.md").write_text(md, encoding="utf-8", newline="\n")
    if handler is not None:
        (d / "handler.py").write_text(handler, encoding="utf-8", newline="\n")
    if key is not None and extra_md:
        # sign_package refuses invalid manifests; a hostile publisher signs whatever it likes.
        _, files, _ = read_package(d)
        lock = build_lock(skill_id, files)
        (d / LOCK_NAME).write_bytes(json.dumps(lock, sort_keys=True).encode())
        (d / SIG_NAME).write_bytes(json.dumps(sign_lock(key, lock), sort_keys=True).encode())
    elif key is not None:
        sign_package(d, key)
    else:
        _, files, _ = read_package(d)
        (d / ".skill-lock.json").write_bytes(json.dumps(build_lock(skill_id, files), sort_keys=True).encode())
    return d


def _step(  # noqa: PLR0917
    sid: str,
    expected: str,
    expected_code: str | None,
    observed: str,
    observed_code: str | None,
    detail: object,
    extra_ok: bool = True,
    errno: str | None = None,
    layer: str | None = None,
) -> Step:
    passed = expected == observed and expected_code == observed_code and extra_ok
    return {
        "id": sid,
        "expected": expected,
        "expected_code": expected_code,
        "observed": observed,
        "observed_code": observed_code,
        "passed": bool(passed),
        "detail": str(detail)[:MAX_DETAIL],
        "errno": errno,
        "layer": layer,
    }


def _try_symlink(link: Path, target: Path) -> str | None:
    """Create ``link``; return why not where the platform or user lacks the right (the step then fails)."""
    try:
        link.symlink_to(target)
    except (OSError, NotImplementedError) as exc:
        return f"could not create a symlink here: {exc.__class__.__name__}"
    return None
