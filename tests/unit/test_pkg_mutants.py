"""producer/installers/_pkg.py, function by function: what the pkg installer asks of pkgutil and what it records.

pkgutil cannot run on this host; what is held here, through an injected runner, is exactly what the producer would
ask of it: ``--check-signature`` run in the prefix's parent folder with its own bounded time (120 s) and bounded
output (16 KiB), of which only the first 16 KiB are read for the ``Status:`` line; ``--expand-full`` run in the same
folder with the tool's default bounds, its failure quoted under its own name. A pkgutil that cannot be started, or
that does not finish its check, is recorded as an ``invalid`` signature with exact words (an OSError's words
bounded to 200 characters), and refused where the policy accepts only signed builds; the install record's detail
is bounded to 300 characters. Written for the mutants of the module that survived the fast test set
(docs/mutation.md).
"""

from __future__ import annotations

import errno
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.producer.installers._installers import INSTALLERS, install_with
from desktop_qualify.producer.installers._pkg import PKGUTIL, PackageSignature, PkgInstaller, read_signature
from desktop_qualify.producer.installers._tools import ToolResult

CHECK_CAP = 16 * 1024
SAID = "the tool's own words"


@dataclass(frozen=True)
class Call:
    command: Sequence[str] | str
    cwd: Path
    timeout: float
    stdout_cap: int


# An effect acts as pkgutil: its exit code (None: killed at the timeout) and what it printed, or an OSError raised.
Effect = Callable[[Sequence[str] | str], "tuple[int | None, str]"]


class Recorder:
    """A runner that records each call with its keyword arguments and lets a test act as pkgutil."""

    def __init__(self, effect: Effect) -> None:
        self.calls: list[Call] = []
        self._effect = effect

    def __call__(self, command: Sequence[str] | str, *, cwd: Path, timeout: float, stdout_cap: int) -> ToolResult:
        self.calls.append(Call(command, cwd, timeout, stdout_cap))
        code, said = self._effect(command)
        return ToolResult(code, said, stdout_truncated=False, output=said or (SAID if code else ""))


def _prefix(tmp_path: Path) -> Path:
    return tmp_path / "work" / "install"


def _install(installer: PkgInstaller, copy: Path, prefix: Path) -> None:
    install_with("pkg", copy, prefix, installers={**INSTALLERS, "pkg": installer})


def _expands(command: Sequence[str] | str) -> tuple[int, str]:
    if command[1] == "--check-signature":
        return 1, 'Package "Notes-1.0.pkg":\n   Status: no signature\n'
    Path(command[-1]).mkdir()
    (Path(command[-1]) / "Payload").mkdir()
    return 0, ""


# --- how pkgutil is run ---------------------------------------------------------------------------------------------


def test_both_pkgutil_runs_are_in_the_prefixs_parent_the_check_with_its_own_time_and_output_bounds(
        tmp_path: Path) -> None:
    runner = Recorder(_expands)
    copy, prefix = tmp_path / "Notes-1.0.pkg", _prefix(tmp_path)
    _install(PkgInstaller(runner), copy, prefix)
    assert runner.calls == [
        Call([PKGUTIL, "--check-signature", str(copy)], prefix.parent, 120.0, CHECK_CAP),
        Call([PKGUTIL, "--expand-full", str(copy), str(prefix)], prefix.parent, 600.0, 64 * 1024),
    ]
    assert (prefix / "Payload").is_dir()


def test_a_failed_expansion_is_an_install_failure_naming_pkgutil_expand_full_and_quoting_it(tmp_path: Path) -> None:
    def pkgutil(command: Sequence[str] | str) -> tuple[int, str]:
        return (1, "   Status: no signature\n") if command[1] == "--check-signature" else (3, "")

    prefix = _prefix(tmp_path)
    with pytest.raises(QualificationError) as caught:
        _install(PkgInstaller(Recorder(pkgutil)), tmp_path / "x.pkg", prefix)
    assert caught.value.code is Code.INSTALL_FAILED
    assert caught.value.message == f"pkgutil --expand-full failed (exit 3): {SAID}"
    assert not prefix.exists()


# --- a check that cannot be made ------------------------------------------------------------------------------------


def _refused(tmp_path: Path, effect: Effect) -> tuple[PkgInstaller, QualificationError, Recorder]:
    runner = Recorder(effect)
    installer = PkgInstaller(runner, require_signed=True)
    with pytest.raises(QualificationError) as caught:
        _install(installer, tmp_path / "x.pkg", _prefix(tmp_path))
    assert caught.value.code is Code.INSTALL_FAILED
    return installer, caught.value, runner


def test_a_pkgutil_that_cannot_be_started_is_an_invalid_signature_in_its_own_words(tmp_path: Path) -> None:
    def missing(command: Sequence[str] | str) -> tuple[int | None, str]:
        raise FileNotFoundError(errno.ENOENT, "No such file or directory", PKGUTIL)

    installer, error, runner = _refused(tmp_path, missing)
    assert installer.signature == PackageSignature("invalid", "pkgutil cannot be run: No such file or directory")
    assert error.message == "the package's own signature is refused: pkgutil cannot be run: No such file or directory"
    assert len(runner.calls) == 1  # nothing expanded
    checked = installer.checked()
    assert checked is not None
    assert (checked.tool, checked.state, checked.detail) == (
        "pkgutil", "failed", "pkgutil cannot be run: No such file or directory")


def test_an_oserror_without_its_own_words_is_quoted_whole_and_bounded_to_200_characters(tmp_path: Path) -> None:
    def short(command: Sequence[str] | str) -> tuple[int | None, str]:
        raise OSError("the runner refused")

    installer, _, _ = _refused(tmp_path, short)
    assert installer.signature == PackageSignature("invalid", "pkgutil cannot be run: the runner refused")

    def long(command: Sequence[str] | str) -> tuple[int | None, str]:
        raise OSError("w" * 400)

    installer, error, _ = _refused(tmp_path / "long", long)
    assert installer.signature is not None
    assert installer.signature.detail == ("pkgutil cannot be run: " + "w" * 400)[:200]
    assert len(installer.signature.detail) == 200
    assert error.message.endswith("w" * (200 - len("pkgutil cannot be run: ")))


def test_a_pkgutil_that_does_not_finish_its_check_is_an_invalid_signature_saying_so(tmp_path: Path) -> None:
    installer, error, runner = _refused(tmp_path, lambda command: (None, ""))
    assert installer.signature == PackageSignature("invalid", "pkgutil --check-signature did not finish")
    assert error.message == "the package's own signature is refused: pkgutil --check-signature did not finish"
    assert len(runner.calls) == 1
    checked = installer.checked()
    assert checked is not None
    assert (checked.state, checked.detail) == ("failed", "pkgutil --check-signature did not finish")


def test_a_check_that_cannot_be_made_is_recorded_invalid_even_when_unsigned_is_accepted(tmp_path: Path) -> None:
    def unstartable_check(command: Sequence[str] | str) -> tuple[int | None, str]:
        if command[1] == "--check-signature":
            raise PermissionError(errno.EACCES, "Permission denied", PKGUTIL)
        return _expands(command)

    installer = PkgInstaller(Recorder(unstartable_check))
    _install(installer, tmp_path / "x.pkg", _prefix(tmp_path))
    assert installer.signature == PackageSignature("invalid", "pkgutil cannot be run: Permission denied")

    def hung_check(command: Sequence[str] | str) -> tuple[int | None, str]:
        return (None, "") if command[1] == "--check-signature" else _expands(command)

    installer = PkgInstaller(Recorder(hung_check))
    _install(installer, tmp_path / "x.pkg", _prefix(tmp_path / "hung"))
    assert installer.signature == PackageSignature("invalid", "pkgutil --check-signature did not finish")


# --- what is read of pkgutil's answer -------------------------------------------------------------------------------


def _status_ending_at_the_bound(status: str, then: str) -> str:
    line = f"   Status: {status}"
    filler = "x" * (CHECK_CAP - len(line) - 1) + "\n"
    said = filler + line + then
    assert len(filler + line) == CHECK_CAP
    return said


def test_only_the_first_16_kib_of_pkgutils_answer_are_read_for_its_status() -> None:
    # The status line runs on past the bound: what is read is what lies within it.
    assert read_signature(1, _status_ending_at_the_bound("no signature", "!\n")) == PackageSignature(
        "unsigned", "no signature")
    assert read_signature(1, _status_ending_at_the_bound("no signatur", "e\n")) == PackageSignature(
        "invalid", "no signatur (exit 1)")
    # A status line that starts past the bound is not read.
    assert read_signature(0, "x" * CHECK_CAP + "\nStatus: signed by Apple\n") == PackageSignature(
        "invalid", "no status (exit 0)")


def test_the_install_records_detail_is_bounded_to_300_characters() -> None:
    installer = PkgInstaller(Recorder(_expands))
    assert installer.checked() is None
    installer.signature = PackageSignature("invalid", "d" * 301)
    checked = installer.checked()
    assert checked is not None
    assert checked.detail == "d" * 300
