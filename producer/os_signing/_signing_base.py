"""The one OS-signing interface: set the identity up, sign, verify, the after-sign hook, tear the identity down.

``PlatformSigner.sign`` runs the exact command lines a platform's signer gives
(unit-tested as command lines, since only Linux runs here), without a shell and
with a deadline each, and holds the identity's teardown in a ``finally``. A signer
that can seal the signed bundle into a container (macOS: a disk image) signs,
verifies and notarizes that container in the bundle's stead, inside the same
identity's lifetime (``sign_in_container``).
"""

from __future__ import annotations

import subprocess
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from desktop_qualify.evidence_schemas import Code, NotarizationRecord, QualificationError
from desktop_qualify.qualify_archive import walk_tree

from ._signing_identity import PreinstalledIdentity, SigningIdentity, remove_scratch, scratch_folder

SigningState = Literal["unsigned", "signed", "notarized", "failed"]


@dataclass(frozen=True)
class SigningOutcome:
    tool: str
    state: SigningState
    # macOS: the notarization hook's bounded result; None where there is no such hook.
    notarization: NotarizationRecord | None = None


#: builds the job's signing identity inside a private scratch folder (where its secrets are written)
IdentityFactory = Callable[[Path], SigningIdentity]
#: puts the signed, verified bundle into its container and returns the container (None: that failed)
Seal = Callable[[], Path | None]


def run_tool(argv: list[str], timeout: int = 600, *, merged: bool = False) -> tuple[int, bytes]:
    """(exit code, stdout); ``merged``: stderr folded into it (``codesign -d`` writes its display to stderr)."""
    try:
        done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT if merged else subprocess.PIPE,
                              timeout=timeout, check=False, shell=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        # argv[0] only: later arguments may be passwords.
        raise QualificationError(Code.BUILD_FAILED, f"{argv[0]} could not run: {type(exc).__name__}") from exc
    return done.returncode, done.stdout


def deepest_first(bundle: Path, wanted: list[Path], executable: Path) -> list[Path]:
    """Nested code before what contains it, the main executable last: a signature seals what is inside it."""
    main = executable.relative_to(bundle)
    others = [path for path in wanted if path.relative_to(bundle) != main]
    others.sort(key=lambda p: (-len(p.relative_to(bundle).parts), p.relative_to(bundle).as_posix()))
    return [*others, executable]


def regular_files(bundle: Path) -> list[Path]:
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
    # The identity of the signing in progress (sign_commands may point the tool at it).
    _active: SigningIdentity = PreinstalledIdentity()

    def verified(self, bundle: Path, executable: Path, run: Callable[[list[str]], tuple[int, bytes]]) -> bool:
        """Whether the read-back passes; default: every verify command exits 0 (a signer may read their output)."""
        return all(run(argv)[0] == 0 for argv in self.verify_commands(bundle, executable))

    def make_identity(self, scratch: Path) -> SigningIdentity:
        """The identity to set up for this signing; default: already on the runner, nothing to do."""
        return PreinstalledIdentity()

    def after_sign(self, bundle: Path, scratch: Path) -> NotarizationRecord | None:
        """What runs once the bundle is signed and verified (macOS: notarization); None: nothing."""
        return None

    def state_after(self, notarization: NotarizationRecord | None) -> SigningState:
        return self.signed_state

    #: whether ``container_sign_commands`` can sign a disk image holding the signed bundle (macOS only)
    signs_disk_images: bool = False

    def container_sign_commands(self, container: Path) -> list[list[str]]:
        """The argv lists that sign the container (a disk image) the signed bundle was sealed into."""
        raise NotImplementedError(f"{self.tool} does not sign a container")

    def container_verify_commands(self, container: Path) -> list[list[str]]:
        """The argv lists that verify the container's signature afterwards."""
        raise NotImplementedError(f"{self.tool} does not sign a container")

    def _sealed(self, seal: Seal) -> Path | None:
        """The bundle sealed into its container, the container signed and verified; None when a step failed."""
        container = seal()
        if container is None or not all(run_tool(argv)[0] == 0 for argv in self.container_sign_commands(container)):
            return None
        verified = all(run_tool(argv, merged=True)[0] == 0 for argv in self.container_verify_commands(container))
        return container if verified else None

    def sign(self, bundle: Path, executable: Path) -> SigningOutcome:
        """Sign, then verify; any command that fails makes the outcome 'failed' (the policy decides).

        The identity is set up first and torn down last, whatever happens in between; a
        teardown that fails makes the outcome 'failed' too (the job cannot show it removed it).
        """
        return self._sign(bundle, executable, None)

    def sign_in_container(self, bundle: Path, executable: Path, seal: Seal) -> SigningOutcome:
        """``sign``, with the bundle sealed into its container, and the container signed and notarized.

        The bundle is not notarized on its own: once it verifies, ``seal`` puts it into its container,
        which is signed and verified with the same identity and goes to the after-sign hook instead
        (Apple notarizes the outermost container, and the ticket is stapled to it). Same guarantees as ``sign``.
        """
        if not self.signs_disk_images:
            raise NotImplementedError(f"{self.tool} does not sign a container")
        return self._sign(bundle, executable, seal)

    def _sign(self, bundle: Path, executable: Path, seal: Seal | None) -> SigningOutcome:
        if not executable.is_relative_to(bundle) or executable.is_symlink() or not executable.is_file():
            raise QualificationError(Code.BUILD_FAILED, f"{executable} is not a file inside the bundle {bundle}")
        scratch = scratch_folder()
        identity: SigningIdentity | None = None
        outcome = SigningOutcome(self.tool, "failed")
        try:
            identity = self.make_identity(scratch)
            self._active = identity
            if all(run_tool(argv)[0] == 0 for argv in [*identity.setup_commands(),
                                                        *self.sign_commands(bundle, executable)]) and \
                    self.verified(bundle, executable, lambda argv: run_tool(argv, merged=True)):
                target = bundle if seal is None else self._sealed(seal)
                if target is not None:
                    notarization = self.after_sign(target, scratch)
                    outcome = SigningOutcome(self.tool, self.state_after(notarization), notarization)
        finally:
            removed = identity is None or all(run_tool(argv)[0] == 0 for argv in identity.teardown_commands())
            remove_scratch(scratch)
            self._active = PreinstalledIdentity()
        return outcome if removed else SigningOutcome(self.tool, "failed", outcome.notarization)


class NoPlatformSigner(PlatformSigner):
    """No OS signing identity is configured: the honest state is 'unsigned'."""

    tool = "none"

    def sign_commands(self, bundle: Path, executable: Path) -> list[list[str]]:
        return []

    def verify_commands(self, bundle: Path, executable: Path) -> list[list[str]]:
        return []

    def sign(self, bundle: Path, executable: Path) -> SigningOutcome:
        return SigningOutcome(self.tool, "unsigned")


