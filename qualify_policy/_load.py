"""Loading a policy: bounded read, TOML, strict validation, paths resolved against the file."""

from __future__ import annotations

import hashlib
import platform as _platform
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

from desktop_qualify.evidence_schemas import (
    MAX_POLICY_BYTES,
    PLATFORMS,
    Code,
    Platform,
    QualificationError,
    read_bounded,
    validate_model,
)

from ._model import Ed25519Trust, PolicyFile, SigstoreTrust


def host_platform() -> Platform:
    """This machine's platform in the evidence's vocabulary."""
    if sys.platform.startswith("linux"):
        return "linux"
    if sys.platform == "darwin":
        return "macos"
    if sys.platform in ("win32", "cygwin"):
        return "windows"
    raise QualificationError(Code.ENVIRONMENT, f"unsupported host platform {sys.platform!r}")


def host_arch() -> str:
    machine = _platform.machine().lower()
    return {"amd64": "x86_64", "aarch64": "arm64"}.get(machine, machine) or "unknown"


@dataclass(frozen=True)
class Policy:
    path: Path
    sha256: str
    file: PolicyFile
    required_platforms: tuple[Platform, ...]

    @property
    def base(self) -> Path:
        return self.path.parent

    def resolve(self, relative: str) -> Path:
        """A path named in the policy, relative to the policy file's folder."""
        return (self.base / relative).resolve()

    @property
    def ed25519(self) -> Ed25519Trust:
        trust = self.file.trust
        if not isinstance(trust, Ed25519Trust):
            raise QualificationError(
                Code.POLICY_INVALID,
                f"{self.path}: this step needs a local Ed25519 keyring, but the policy's trust mode is 'sigstore'",
                hint="local keys belong to policies/local.toml; a GitHub-mode policy signs keylessly",
            )
        return trust

    @property
    def sigstore(self) -> SigstoreTrust | None:
        return self.file.trust if isinstance(self.file.trust, SigstoreTrust) else None


def _required(file: PolicyFile, where: str) -> tuple[Platform, ...]:
    resolved: list[Platform] = []
    for choice in file.platforms.required:
        name: Platform = host_platform() if choice == "host" else choice
        if name in resolved:
            raise QualificationError(Code.POLICY_INVALID, f"{where}: platform {name!r} is required twice")
        resolved.append(name)
    return tuple(p for p in PLATFORMS if p in resolved)


def load_policy(path: Path) -> Policy:
    where = f"policy {path}"
    try:
        data = read_bounded(path, max_bytes=MAX_POLICY_BYTES, what=where)
    except QualificationError as exc:
        raise QualificationError(Code.POLICY_INVALID, exc.message) from exc
    try:
        raw = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise QualificationError(Code.POLICY_INVALID, f"{where}: invalid TOML ({exc})") from exc
    except RecursionError as exc:
        raise QualificationError(Code.POLICY_INVALID, f"{where}: nested too deeply") from exc
    try:
        file = validate_model(PolicyFile, raw, what=where)
    except QualificationError as exc:
        raise QualificationError(Code.POLICY_INVALID, exc.message) from exc
    return Policy(path.resolve(), hashlib.sha256(data).hexdigest(), file, _required(file, where))
