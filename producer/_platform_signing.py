"""Operating-system code signing, one small interface per platform.

Local mode has no signing identity, so the bundle stays unsigned and says so.
On GitHub runners the macOS and Windows signers run the exact command lines
below (unit-tested as command lines, since only Linux runs here) over every
binary in the bundle folder, not only the main executable. They run in the
producer after PyInstaller has exited, so the build never sees the identity.
"""

from __future__ import annotations

import os
import subprocess
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.qualify_archive import walk_tree

SigningState = Literal["unsigned", "signed", "notarized", "failed"]

# Thin Mach-O, either byte order, 32 and 64 bit (mach-o/loader.h), as the first four bytes on disk.
_MACHO_MAGICS = frozenset({b"\xfe\xed\xfa\xce", b"\xce\xfa\xed\xfe", b"\xfe\xed\xfa\xcf", b"\xcf\xfa\xed\xfe"})
# Universal ("fat") binaries, always big-endian (mach-o/fat.h). 0xcafebabe also starts a Java class
# file, whose next word (the class version, >= 45) tells them apart, as file(1) does.
_FAT_MAGICS = frozenset({b"\xca\xfe\xba\xbe", b"\xca\xfe\xba\xbf"})
_MAX_FAT_ARCHS = 20
_WINDOWS_SIGNABLE = frozenset({".exe", ".dll", ".pyd"})


@dataclass(frozen=True)
class SigningOutcome:
    tool: str
    state: SigningState


def is_macho(path: Path) -> bool:
    """Whether ``path`` (a regular file, never followed if a link) is a Mach-O binary, thin or universal."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0))
    except OSError:
        return False
    with os.fdopen(fd, "rb") as handle:
        head = handle.read(8)
    if head[:4] in _MACHO_MAGICS:
        return True
    return head[:4] in _FAT_MAGICS and len(head) == 8 and 0 < int.from_bytes(head[4:], "big") < _MAX_FAT_ARCHS


def _deepest_first(bundle: Path, wanted: list[Path], executable: Path) -> list[Path]:
    """Nested code before what contains it, the main executable last: a signature seals what is inside it."""
    main = executable.relative_to(bundle)
    others = [path for path in wanted if path.relative_to(bundle) != main]
    others.sort(key=lambda p: (-len(p.relative_to(bundle).parts), p.relative_to(bundle).as_posix()))
    return [*others, executable]


def _regular_files(bundle: Path) -> list[Path]:
    # Links are skipped: each binary is signed once, at its real path inside the bundle.
    return [entry.path for entry in walk_tree(bundle) if entry.is_file]


class PlatformSigner(ABC):
    tool: str

    @abstractmethod
    def sign_commands(self, bundle: Path, executable: Path) -> list[list[str]]:
        """The argv lists that sign the binaries of ``bundle`` (``executable`` among them) in place."""

    @abstractmethod
    def verify_commands(self, bundle: Path, executable: Path) -> list[list[str]]:
        """The argv lists that verify the signatures afterwards (read-back)."""

    signed_state: SigningState = "signed"

    def sign(self, bundle: Path, executable: Path) -> SigningOutcome:
        """Sign, then verify; any command that fails makes the outcome 'failed' (the policy decides)."""
        if not executable.is_relative_to(bundle) or executable.is_symlink() or not executable.is_file():
            raise QualificationError(Code.BUILD_FAILED, f"{executable} is not a file inside the bundle {bundle}")
        for argv in [*self.sign_commands(bundle, executable), *self.verify_commands(bundle, executable)]:
            try:
                done = subprocess.run(argv, capture_output=True, timeout=600, check=False, shell=False)
            except (OSError, subprocess.TimeoutExpired) as exc:
                raise QualificationError(Code.BUILD_FAILED, f"{argv[0]} could not run: {exc}") from exc
            if done.returncode != 0:
                return SigningOutcome(self.tool, "failed")
        return SigningOutcome(self.tool, self.signed_state)


class NoPlatformSigner(PlatformSigner):
    """No OS signing identity is configured: the honest state is 'unsigned'."""

    tool = "none"

    def sign_commands(self, bundle: Path, executable: Path) -> list[list[str]]:
        return []

    def verify_commands(self, bundle: Path, executable: Path) -> list[list[str]]:
        return []

    def sign(self, bundle: Path, executable: Path) -> SigningOutcome:
        return SigningOutcome(self.tool, "unsigned")


class CodesignSigner(PlatformSigner):
    """macOS: every Mach-O in the bundle, hardened runtime, then a strict deep verify.

    Notarisation rejects a bundle with any unsigned binary, so the libraries
    and extension modules are signed too, deepest first; the entitlements
    belong to the main executable only.
    """

    tool = "codesign"

    def __init__(self, identity: str, entitlements: Path) -> None:
        self._identity = identity
        self._entitlements = entitlements

    def _sign_one(self, path: Path, *, entitlements: bool) -> list[str]:
        extra = ["--entitlements", str(self._entitlements)] if entitlements else []
        return ["codesign", "--force", "--options", "runtime", "--timestamp", *extra, "--sign", self._identity,
                str(path)]

    def sign_commands(self, bundle: Path, executable: Path) -> list[list[str]]:
        *nested, main = _deepest_first(bundle, [path for path in _regular_files(bundle) if is_macho(path)],
                                       executable)
        return [*(self._sign_one(path, entitlements=False) for path in nested),
                self._sign_one(main, entitlements=True)]

    def verify_commands(self, bundle: Path, executable: Path) -> list[list[str]]:
        return [["codesign", "--verify", "--strict", "--deep", "--verbose=2", str(executable)]]


class SigntoolSigner(PlatformSigner):
    """Windows: Authenticode SHA-256 with an RFC 3161 timestamp on every PE file, then a verify of each."""

    tool = "signtool"

    def __init__(self, certificate_sha1: str, timestamp_url: str, *, signtool: str = "signtool") -> None:
        self._thumbprint = certificate_sha1
        self._timestamp_url = timestamp_url
        # GitHub's Windows runners keep signtool in the Windows SDK folder, not on PATH.
        self._signtool = signtool

    def _signable(self, bundle: Path, executable: Path) -> list[Path]:
        wanted = [path for path in _regular_files(bundle) if path.suffix.lower() in _WINDOWS_SIGNABLE]
        return _deepest_first(bundle, wanted, executable)

    def sign_commands(self, bundle: Path, executable: Path) -> list[list[str]]:
        return [[self._signtool, "sign", "/sha1", self._thumbprint, "/fd", "SHA256", "/tr", self._timestamp_url,
                 "/td", "SHA256", str(path)] for path in self._signable(bundle, executable)]

    def verify_commands(self, bundle: Path, executable: Path) -> list[list[str]]:
        return [[self._signtool, "verify", "/pa", "/v", str(path)] for path in self._signable(bundle, executable)]


def platform_signer_from_env(platform: str, env: Mapping[str, str]) -> PlatformSigner:
    """The OS signer configured for this job by its environment (CI secrets), or none.

    Signing identities are secrets of the job, not trust decisions: what is
    accepted is the policy's `[signing]` section, checked on the outcome.
    """
    entitlements = env.get("QUALIFY_CODESIGN_ENTITLEMENTS")
    if platform == "macos":
        return signer_for(platform, identity=env.get("QUALIFY_CODESIGN_IDENTITY"),
                          entitlements=Path(entitlements) if entitlements else None, timestamp_url=None)
    if platform == "windows":
        identity, timestamp_url = env.get("QUALIFY_SIGNTOOL_CERT_SHA1"), env.get("QUALIFY_SIGNTOOL_TIMESTAMP_URL")
        if identity and timestamp_url:
            return SigntoolSigner(identity, timestamp_url, signtool=env.get("QUALIFY_SIGNTOOL_PATH") or "signtool")
    return NoPlatformSigner()


def signer_for(platform: str, *, identity: str | None, entitlements: Path | None,
               timestamp_url: str | None) -> PlatformSigner:
    """The signer a platform uses; without a configured identity, no signer."""
    if platform == "macos" and identity and entitlements:
        return CodesignSigner(identity, entitlements)
    if platform == "windows" and identity and timestamp_url:
        return SigntoolSigner(identity, timestamp_url)
    return NoPlatformSigner()
