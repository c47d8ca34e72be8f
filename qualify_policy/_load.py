"""Loading a policy: bounded read, TOML, strict validation, paths resolved against the file.

A policy's relative paths are written from the folder it is committed in
(``policies/``). A policy taken out of its checkout (``git show SHA:policies/x.toml >
x.toml``) travels with ``root``: the checkout it belongs to, whose ``policies/``
folder its paths then resolve from. A pinned trust file the policy names by
digest is also found in the copy shipped with the tool, since its bytes are
fixed by the policy either way.
"""

from __future__ import annotations

import hashlib
import platform as _platform
import sys
import tomllib
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path, PurePosixPath
from typing import Literal

from desktop_qualify.evidence_schemas import (
    MAX_POLICY_BYTES,
    PLATFORMS,
    AppStage,
    Code,
    DisplayKind,
    Platform,
    QualificationError,
    read_bounded,
    validate_model,
)

from ._app import InstallTarget
from ._model import DEFAULT_NETWORK_STAGES, Ed25519Trust, PolicyFile, SigningState, SigstoreTrust

# Where the policies are committed: a policy's relative paths are written from here.
POLICY_FOLDER = "policies"


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
    """This machine's architecture, with the usual aliases merged (amd64 is x86_64, aarch64 is arm64)."""
    machine = _platform.machine().lower()
    return {"amd64": "x86_64", "aarch64": "arm64"}.get(machine, machine) or "unknown"


@dataclass(frozen=True)
class Policy:
    """The one policy object: the validated file, where it lives, its digest and the platforms it requires.

    The producer, the verifier and the reports all read this. A part that differs
    by platform is read through the accessors below, never by attribute name.
    """

    path: Path
    sha256: str
    file: PolicyFile
    required_platforms: tuple[Platform, ...]
    # The checkout the policy belongs to, when given (--root): its paths resolve from root/policies.
    root: Path | None = None

    @property
    def mode(self) -> Literal["local", "github"]:
        """The evidence mode the trust mode implies: local Ed25519 keys, or GitHub's keyless Sigstore."""
        return "local" if self.file.trust.mode == "ed25519" else "github"

    def accepted_signing(self, platform: Platform) -> frozenset[SigningState]:
        """The signing states the policy accepts for this platform's artifact."""
        return self.file.signing.of(platform)

    def isolation_layers(self, platform: Platform) -> tuple[str, ...] | None:
        """The sandbox layers this platform's worker must report; None when the policy has no [isolation]."""
        return None if self.file.isolation is None else self.file.isolation.of(platform)

    def confinement_layers(self, platform: Platform) -> tuple[str, ...] | None:
        """The layers every app stage on this platform must have run under ([confinement]); None: none required.

        ``network-namespace`` among them applies only to the stages without the network (``stage_has_network``).
        """
        return None if self.file.confinement is None else self.file.confinement.of(platform)

    def stage_has_network(self, stage: AppStage) -> bool:
        """Whether the policy lets this app stage keep the machine's network ([confinement] network, default
        the build only)."""
        stages = DEFAULT_NETWORK_STAGES if self.file.confinement is None else self.file.confinement.network
        return stage in stages

    def install_target(self, platform: Platform) -> InstallTarget | None:
        """How this platform's artifact installs (its installer kind and executable), if the policy says."""
        return self.file.app.install.get(platform)

    def display(self, platform: Platform) -> DisplayKind:
        """The display the probe and journey run under on this platform."""
        return self.file.app.display.kind(platform)

    @property
    def base(self) -> Path:
        """The folder the policy's relative paths resolve from."""
        return self.root / POLICY_FOLDER if self.root is not None else self.path.parent

    def resolve(self, relative: str) -> Path:
        """A path named in the policy, relative to the folder the policy is committed in."""
        return (self.base / relative).resolve()

    def resolve_pinned(self, relative: str) -> Path:
        """A trust file the policy pins by SHA-256: where the policy says, else the copy shipped with the tool.

        Either copy must have the pinned bytes (the caller checks the digest), so taking
        the shipped one loses nothing; it is what lets a policy copied out of its
        checkout still find its trusted root.
        """
        path = self.resolve(relative)
        parts = PurePosixPath(relative).parts
        if path.exists() or self.root is not None or ".." in parts or PurePosixPath(relative).is_absolute():
            return path
        shipped = files("desktop_qualify.policies").joinpath(*parts)
        return shipped if isinstance(shipped, Path) and shipped.is_file() else path

    def repository_root(self) -> Path | None:
        """The checkout the policy belongs to: ``root`` when given, else the git work tree holding the file."""
        if self.root is not None:
            return self.root.resolve()
        for folder in self.path.parents:
            if (folder / ".git").exists():
                return folder
        return None

    @property
    def reproducible_platforms(self) -> frozenset[Platform]:
        """The platforms whose build the policy requires to reproduce (``host`` resolved to this machine's)."""
        return frozenset(host_platform() if choice == "host" else choice
                         for choice in self.file.reproducible.required)

    @property
    def ed25519(self) -> Ed25519Trust:
        """The local trust section; QE_POLICY_INVALID when the policy is GitHub mode."""
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
        """The Sigstore trust section, or None when the policy is local mode."""
        return self.file.trust if isinstance(self.file.trust, SigstoreTrust) else None


def _required(file: PolicyFile, where: str) -> tuple[Platform, ...]:
    resolved: list[Platform] = []
    for choice in file.platforms.required:
        name: Platform = host_platform() if choice == "host" else choice
        if name in resolved:
            raise QualificationError(Code.POLICY_INVALID, f"{where}: platform {name!r} is required twice")
        missing = file.app.missing_for(name)
        if missing:
            raise QualificationError(Code.POLICY_INVALID, f"{where}: platform {name!r} is required, but the policy "
                                                          f"has no {' and no '.join(missing)}")
        resolved.append(name)
    return tuple(p for p in PLATFORMS if p in resolved)


def load_policy(path: Path, root: Path | None = None) -> Policy:
    """``root``: the checkout a policy taken out of it belongs to (its paths resolve from root/policies)."""
    where = f"policy {path}"
    try:
        data = read_bounded(path, max_bytes=MAX_POLICY_BYTES, what=where)
    except QualificationError as exc:
        raise QualificationError(Code.POLICY_INVALID, exc.message) from exc
    try:
        raw = tomllib.loads(data.decode("utf-8"))
    except ValueError as exc:
        # Not UTF-8, not TOML, or an integer of more digits than Python converts (ValueError, like both others).
        raise QualificationError(Code.POLICY_INVALID, f"{where}: invalid TOML ({str(exc)[:200]})") from exc
    except RecursionError as exc:
        raise QualificationError(Code.POLICY_INVALID, f"{where}: nested too deeply") from exc
    try:
        file = validate_model(PolicyFile, raw, what=where)
    except QualificationError as exc:
        raise QualificationError(Code.POLICY_INVALID, exc.message) from exc
    return Policy(path.resolve(), hashlib.sha256(data).hexdigest(), file, _required(file, where),
                  root.resolve() if root is not None else None)
