"""macOS code signing: codesign over every Mach-O of the bundle, a verify and a display of each, then notarization.

`codesign --verify --deep` follows nested code a bundle declares (frameworks,
helpers), not the loose dylibs and `.so` files PyInstaller puts beside the
executable: an unsigned or tampered one of those would pass. So each Mach-O
is verified on its own, and its `-dvv` display checked (``_codesign_display``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from desktop_qualify.evidence_schemas import NotarizationRecord
from desktop_qualify.qualify_files import NOFOLLOW

from ._codesign_display import display_argv, display_refusal, identity_team
from ._notarize import NoNotarizer, Notarizer
from ._signing_base import PlatformSigner, SigningState, deepest_first, regular_files, run_tool
from ._signing_identity import (
    PreinstalledIdentity,
    SigningIdentity,
    TemporaryKeychain,
    keychain_password,
    write_secret,
)

# Thin Mach-O, either byte order, 32 and 64 bit (mach-o/loader.h), as the first four bytes on disk.
_MACHO_MAGICS = frozenset({b"\xfe\xed\xfa\xce", b"\xce\xfa\xed\xfe", b"\xfe\xed\xfa\xcf", b"\xcf\xfa\xed\xfe"})
# Universal ("fat") binaries, always big-endian (mach-o/fat.h). 0xcafebabe also starts a Java class
# file, whose next word (the class version, >= 45) tells them apart, as file(1) does.
_FAT_MAGICS = frozenset({b"\xca\xfe\xba\xbe", b"\xca\xfe\xba\xbf"})
_MAX_FAT_ARCHS = 20
_NOTARY_DEADLINE = 2400  # seconds: notarytool's own --timeout (30 min) and some slack


def is_macho(path: Path) -> bool:
    """Whether ``path`` (a regular file, never followed if a link) is a Mach-O binary, thin or universal."""
    try:
        fd = os.open(path, os.O_RDONLY | NOFOLLOW)
    except OSError:
        return False
    with os.fdopen(fd, "rb") as handle:
        head = handle.read(8)
    if head[:4] in _MACHO_MAGICS:
        return True
    return head[:4] in _FAT_MAGICS and len(head) == 8 and 0 < int.from_bytes(head[4:], "big") < _MAX_FAT_ARCHS


_MH_EXECUTE = 2


def is_macho_executable(path: Path) -> bool:
    """Whether a thin Mach-O (or a universal one's first slice) is an executable (MH_EXECUTE), not a library."""
    try:
        fd = os.open(path, os.O_RDONLY | NOFOLLOW)
    except OSError:
        return False
    with os.fdopen(fd, "rb") as handle:
        head = handle.read(28)
        if head[:4] in _FAT_MAGICS and len(head) >= 28:
            # fat_header (8 bytes), then the first fat_arch: cputype, cpusubtype, offset, size, align.
            handle.seek(int.from_bytes(head[16:20], "big"))
            head = handle.read(16)
    if len(head) < 16 or head[:4] not in _MACHO_MAGICS:
        return False
    big = head[:4] in (b"\xfe\xed\xfa\xce", b"\xfe\xed\xfa\xcf")
    return int.from_bytes(head[12:16], "big" if big else "little") == _MH_EXECUTE


class CodesignSigner(PlatformSigner):
    """macOS: every Mach-O in the bundle, hardened runtime, then a strict deep verify; then notarization.

    Notarisation rejects a bundle with any unsigned binary, so the libraries
    and extension modules are signed too, deepest first. Entitlements: the main
    executable gets the app's file (the skill worker is that same executable
    relaunched as `skillhost worker`, so it runs with exactly these and no
    more); any other executable in the bundle gets the inherit file;
    libraries get none (entitlements apply to executables only).
    """

    tool = "codesign"

    def __init__(self, identity: str, entitlements: Path, *, inherit_entitlements: Path | None = None,
                 keychain: tuple[str, str] | None = None, notarizer: Notarizer | None = None) -> None:
        self._identity = identity
        self._entitlements = entitlements
        self._inherit = inherit_entitlements
        # (base64 .p12, its password): imported into a temporary keychain for the signing only.
        self._keychain = keychain
        self._notarizer = notarizer or NoNotarizer()

    def make_identity(self, scratch: Path) -> SigningIdentity:
        if self._keychain is None:
            return PreinstalledIdentity()
        p12 = write_secret(scratch, "QUALIFY_CODESIGN_P12_BASE64", self._keychain[0])
        return TemporaryKeychain(p12, self._keychain[1], scratch / "qualify-signing.keychain-db", keychain_password())

    def _sign_one(self, path: Path, *, entitlements: Path | None) -> list[str]:
        extra = ["--entitlements", str(entitlements)] if entitlements is not None else []
        return ["codesign", "--force", "--options", "runtime", "--timestamp", *self._active.codesign_options(),
                *extra, "--sign", self._identity, str(path)]

    def sign_commands(self, bundle: Path, executable: Path) -> list[list[str]]:
        *nested, main = self._signed(bundle, executable)
        return [*(self._sign_one(path, entitlements=self._inherit if is_macho_executable(path) else None)
                  for path in nested),
                self._sign_one(main, entitlements=self._entitlements)]

    def _signed(self, bundle: Path, executable: Path) -> list[Path]:
        return deepest_first(bundle, [path for path in regular_files(bundle) if is_macho(path)], executable)

    def verify_commands(self, bundle: Path, executable: Path) -> list[list[str]]:
        *nested, main = self._signed(bundle, executable)
        return [*(["codesign", "--verify", "--strict", "--verbose=2", str(path)] for path in nested),
                ["codesign", "--verify", "--strict", "--deep", "--verbose=2", str(main)]]

    def verified(self, bundle: Path, executable: Path, run: Callable[[list[str]], tuple[int, bytes]]) -> bool:
        if not all(run(argv)[0] == 0 for argv in self.verify_commands(bundle, executable)):
            return False
        team = identity_team(self._identity)
        for path in self._signed(bundle, executable):
            code, output = run(display_argv(str(path)))
            if code != 0 or display_refusal(output, team=team) is not None:
                return False
        return True

    # A disk image is signed as a whole (no hardened runtime or entitlements: those are for executables).
    signs_disk_images = True

    def container_sign_commands(self, container: Path) -> list[list[str]]:
        return [["codesign", "--force", "--timestamp", *self._active.codesign_options(), "--sign", self._identity,
                 str(container)]]

    def container_verify_commands(self, container: Path) -> list[list[str]]:
        return [["codesign", "--verify", "--strict", "--verbose=2", str(container)]]

    def after_sign(self, bundle: Path, scratch: Path) -> NotarizationRecord | None:
        return self._notarizer.notarize(bundle, scratch, lambda argv: run_tool(argv, _NOTARY_DEADLINE))

    def state_after(self, notarization: NotarizationRecord | None) -> SigningState:
        # Signed and verified either way; notarized only when Apple accepted this very bundle.
        return "notarized" if notarization is not None and notarization.outcome == "accepted" else "signed"
