"""Kind ``dmg`` (macOS): the app inside the team's disk image signed, the image made again, signed and notarized.

Apple notarizes the outermost container and staples the ticket to it, so the
``.app`` is signed (every Mach-O, deepest first, verified and displayed, as an
archive's bundle is) but not notarized on its own; the new image is.

1. The image is attached read-only at a private mount point under staging
   (``-nobrowse -noautoopen``: no Finder, no window), each top-level entry of
   the volume copied out with ``ditto`` (it keeps extended attributes, the
   resource forks and ACLs a code signature's seal reads, and links as links),
   a top-level link (the ``Applications`` alias of a drag-to-install window)
   made again as the same link, the volume's bookkeeping folders left out; the
   image is detached on every path out, with ``-force`` when busy.
2. The bundle is the first component of the executable's path (relative to
   the volume's root): a folder ending in ``.app`` holding the executable as a
   regular file; anything else is refused (QE_BUILD_FAILED).
3. Inside one identity's lifetime (``PlatformSigner.sign_in_container``): the
   ``.app`` signed and verified, ``hdiutil create -format UDZO`` makes the new
   image from the copy (its volume named after the team's image file), the
   image is signed with ``codesign --timestamp`` and verified, then notarized
   and stapled.

The commands are Apple's and run only on a macOS runner; on Linux they are
unit-tested as the exact command lines, through a fake process runner.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from desktop_qualify.evidence_schemas import Code, QualificationError

from ._signing_base import PlatformSigner, SigningOutcome, run_tool

# The same tools, by the same absolute paths, as the dmg installer's (producer/installers/_dmg.py), which this
# tier may not import.
HDIUTIL = "/usr/bin/hdiutil"
DITTO = "/usr/bin/ditto"
# Folders macOS keeps on every volume for itself: not the image's content, and not always readable.
_VOLUME_BOOKKEEPING = frozenset({".fseventsd", ".Trashes", ".Spotlight-V100", ".TemporaryItems"})
_DETACH_TIMEOUT = 120
_IMAGE_TIMEOUT = 1800  # a compressed image of a large app takes a while


def attach_argv(image: Path, mountpoint: Path) -> list[str]:
    return [HDIUTIL, "attach", "-readonly", "-nobrowse", "-noautoopen", "-mountpoint", str(mountpoint), str(image)]


def detach_argv(mountpoint: Path, *, force: bool = False) -> list[str]:
    return [HDIUTIL, "detach", str(mountpoint), *(["-force"] if force else [])]


def ditto_argv(source: Path, target: Path) -> list[str]:
    return [DITTO, str(source), str(target)]


def create_argv(volume_name: str, folder: Path, image: Path) -> list[str]:
    return [HDIUTIL, "create", "-volname", volume_name, "-srcfolder", str(folder), "-format", "UDZO", "-ov",
            str(image)]


def app_of(executable: str) -> str:
    """The ``.app`` folder that holds ``executable`` (a path relative to the volume's root), or refused."""
    parts = PurePosixPath(executable).parts
    if len(parts) < 2 or PurePosixPath(executable).is_absolute() or ".." in parts \
            or not parts[0].lower().endswith(".app"):
        raise QualificationError(Code.BUILD_FAILED, f"the executable {executable!r} is not inside a .app bundle at "
                                                    "the disk image's top level; the producer signs the .app a "
                                                    "disk image holds (e.g. 'Notes.app/Contents/MacOS/Notes')")
    return parts[0]


def _copy_entry(entry: Path, target: Path) -> bool:
    if entry.is_symlink():
        target.symlink_to(entry.readlink())
        return True
    return run_tool(ditto_argv(entry, target))[0] == 0


def _detached(mountpoint: Path) -> bool:
    for force in (False, True):
        try:
            if run_tool(detach_argv(mountpoint, force=force), _DETACH_TIMEOUT)[0] == 0:
                return True
        except QualificationError:
            continue
    return False


def copy_out(image: Path, mountpoint: Path, contents: Path) -> bool:
    """The image's volume copied into ``contents``; whether every step succeeded. Detached whatever happens."""
    mountpoint.mkdir()
    contents.mkdir()
    if run_tool(attach_argv(image, mountpoint))[0] != 0:
        return False
    copied = False
    try:
        entries = sorted(e for e in mountpoint.iterdir() if e.name not in _VOLUME_BOOKKEEPING)
        copied = all(_copy_entry(entry, contents / entry.name) for entry in entries)
    except OSError:
        copied = False
    finally:
        detached = _detached(mountpoint)
    return copied and detached


def _checked_bundle(contents: Path, executable: str) -> tuple[Path, Path]:
    bundle, main = contents / app_of(executable), contents / executable
    inside = bundle.is_dir() and not bundle.is_symlink() and main.is_file() and not main.is_symlink() \
        and main.resolve().is_relative_to(bundle.resolve())
    if not inside:
        raise QualificationError(Code.BUILD_FAILED, f"the disk image holds no .app folder {bundle.name!r} with the "
                                                    f"executable {executable!r} as a regular file inside it")
    return bundle, main


def sign_disk_image(image: Path, signer: PlatformSigner, executable: str, staging: Path) -> tuple[Path, SigningOutcome]:
    """``staging/signed.dmg`` (the image made again, its app and itself signed and notarized) and the outcome.

    ``staging`` is an empty folder. When the image cannot be copied out the outcome is 'failed' and the
    team's image is returned as it is; a failure after the new image exists returns that image, 'failed'.
    """
    app_of(executable)
    contents, signed = staging / "contents", staging / "signed.dmg"
    if not copy_out(image, staging / "volume", contents):
        return image, SigningOutcome(signer.tool, "failed")
    bundle, main = _checked_bundle(contents, executable)

    def seal() -> Path | None:
        code, _ = run_tool(create_argv(image.stem, contents, signed), _IMAGE_TIMEOUT)
        return signed if code == 0 and signed.is_file() else None

    outcome = signer.sign_in_container(bundle, main, seal)
    return (signed if signed.is_file() else image), outcome
