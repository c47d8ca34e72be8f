"""Journey steps for package validation (before any code runs) and safe mode."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from skillhost.host import HostConfig, SkillHost
from skillhost.journey._authority import GRANTING, JOURNEY_AUTHORITIES
from skillhost.journey._on_host import _bundled_step, on_host
from skillhost.journey._rows import Package, PackageBuilder, RejectRow, _try_symlink, walk
from skillhost.journey._step import Step
from skillhost.packaging import TrustStore

GOOD_PY = "def run(ports, args):\n    return {'t': ports.time.now()}\n"
INVALID = "CC_SKILL_PACKAGE_INVALID"


def _add_native_binary(skill_dir: Path) -> str | None:
    # Added after signing, under an allowed name: the magic bytes, not the file type, must give it away.
    (skill_dir / "data.json").write_bytes(b"\x7fELF\x02\x01\x01" + b"\x00" * 57)
    return None


def _package_rows(workspace: Path) -> tuple[RejectRow, ...]:
    def add_symlink(skill_dir: Path) -> str | None:
        return _try_symlink(skill_dir / "notes.md", workspace / "notes.txt")

    return (
        RejectRow(
            "package-path-traversal-rejected",
            Package("traverser", GOOD_PY, extra_md="entry: ../outside/handler.py\n"),
            INVALID,
        ),
        RejectRow("package-symlink-rejected", Package("linker", GOOD_PY), INVALID, tamper=add_symlink),
        RejectRow("package-native-binary-rejected", Package("native", GOOD_PY), INVALID, tamper=_add_native_binary),
        RejectRow(
            "package-unknown-manifest-field-rejected",
            Package("installer", GOOD_PY, extra_md="postinstall: touch pwned\n"),
            INVALID,
        ),
        RejectRow("prompt-only-no-execution", Package("prompt-only", None, caps=()), "CC_SKILL_PROMPT_ONLY"),
    )


# Safe mode is decided before any third-party byte is read, whatever the package holds.
SAFE_MODE_REJECTS = (RejectRow("safe-mode-external-refused", Package("safe-greeter", GOOD_PY), "CC_SKILL_SAFE_MODE"),)


def package_steps(build: PackageBuilder, trust: TrustStore, workspace: Path) -> list[Step]:
    host = SkillHost(HostConfig(workspace=workspace, trust=trust, authority=GRANTING, authorities=JOURNEY_AUTHORITIES))
    steps = walk(_package_rows(workspace), build, on_host(host))
    # Safe mode: bundled skills keep working, third-party ones are refused.
    safe_host = SkillHost(replace(host.config, safe_mode=True))
    label = {"label": "safe"}
    steps.append(_bundled_step(safe_host, "safe-mode-bundled-runs", "clock", label, lambda v: v.get("label") == "safe"))
    steps += walk(SAFE_MODE_REJECTS, build, on_host(safe_host))
    return steps
