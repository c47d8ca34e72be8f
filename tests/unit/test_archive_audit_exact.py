"""The installed-tree audit and the archive's link and name rules, held to their exact refusals and bounds.

``test_tree_audit.py`` and the corpus hold what is refused; these hold the exact message each refusal gives (the
member named, the target shown and cut at 120 characters), the caps at their boundary, and the lexical and
resolved link checks case by case: written for the mutants of ``qualify_archive`` that survived the other tests
(docs/mutation.md).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path, PurePosixPath

import pytest
from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.qualify_archive import _limits, audit_tree
from desktop_qualify.qualify_archive._audit import check_link_target

POSIX_ONLY = pytest.mark.skipif(sys.platform == "win32", reason="POSIX file types and links")
APP = b"#!/bin/sh\n"  # 10 bytes


def _tree(tmp_path: Path) -> Path:
    root = tmp_path / "prefix"
    (root / "opt" / "app").mkdir(parents=True)
    (root / "opt" / "app" / "app").write_bytes(APP)
    (root / "usr" / "bin").mkdir(parents=True)
    (root / "usr" / "bin" / "app").symlink_to("../../opt/app/app")
    return root


def _refusal(root: Path) -> QualificationError:
    with pytest.raises(QualificationError) as caught:
        audit_tree(root)
    assert caught.value.code is Code.INSTALL_FAILED
    return caught.value


LONG = "/" + "a" * 200


@POSIX_ONLY
@pytest.mark.parametrize(("make", "message"), [
    (lambda root: os.mkfifo(root / "opt" / "pipe"), "archive member 'opt/pipe' is a device, fifo or socket"),
    (lambda root: (root / "opt" / "app" / "app").chmod(0o4755),
     "archive member 'opt/app/app' has a set-user-id or set-group-id bit"),
    # Both names of a hard link are refused; the walk meets opt/app/app first.
    (lambda root: os.link(root / "opt" / "app" / "app", root / "opt" / "twin"),
     "archive member 'opt/app/app' is a hard link"),
    (lambda root: (root / "opt" / "passwd").symlink_to("/etc/passwd"),
     "archive member 'opt/passwd' is a link to '/etc/passwd', outside the installed tree"),
    (lambda root: (root / "opt" / "long").symlink_to(LONG),
     f"archive member 'opt/long' is a link to {LONG[:120]!r}, outside the installed tree"),
    (lambda root: (root / "opt" / "bell").symlink_to("app\x07"),
     "archive member 'opt/bell' is a link whose target contains a control or format character"),
    (lambda root: (root / "opt" / "dangling").symlink_to("nowhere"),
     "archive member 'opt/dangling' is a link that resolves outside the installed tree (or nowhere)"),
])
def test_each_refusal_names_the_member_and_why(tmp_path: Path, make: Callable[[Path], object], message: str) -> None:
    root = _tree(tmp_path)
    make(root)
    assert _refusal(root).message == message


def test_an_unreadable_tree_is_an_install_failure(tmp_path: Path) -> None:
    missing = tmp_path / "never-installed"
    error = _refusal(missing)
    assert error.message.startswith("the installed tree cannot be read: ")
    assert str(missing) in error.message


@POSIX_ONLY
def test_the_member_cap_counts_every_entry_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _tree(tmp_path)  # 6 entries: opt, opt/app, opt/app/app, usr, usr/bin, usr/bin/app
    monkeypatch.setattr(_limits, "MAX_MEMBERS", 6)
    assert audit_tree(root) == 6
    monkeypatch.setattr(_limits, "MAX_MEMBERS", 5)
    assert _refusal(root).message == "archive has more than 5 members"


@POSIX_ONLY
def test_the_byte_cap_counts_every_files_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _tree(tmp_path)
    (root / "opt" / "app" / "data").write_bytes(b"12345")  # 10 + 5 bytes in all
    monkeypatch.setattr(_limits, "MAX_UNPACKED_BYTES", 15)
    assert audit_tree(root) == 7
    monkeypatch.setattr(_limits, "MAX_UNPACKED_BYTES", 14)
    assert _refusal(root).message == "archive unpacks to more than 14 bytes"
    # Larger than either file alone: only the sum exceeds it.
    monkeypatch.setattr(_limits, "MAX_UNPACKED_BYTES", 12)
    assert _refusal(root).message == "archive unpacks to more than 12 bytes"


@pytest.mark.parametrize(("name", "target", "message"), [
    ("usr/bin/app", "../../opt/app/app", None),
    ("usr/bin/app", "../../../etc/passwd", "archive member 'usr/bin/app' is a link to '../../../etc/passwd', "
                                             "outside the installed tree"),
    ("usr/bin/app", "bad\udcff", "archive member 'usr/bin/app' is a link whose target is not valid UTF-8"),
    ("app", "", "archive member 'app' is a link to '', outside the installed tree"),
])
def test_a_link_target_is_checked_against_the_whole_tree(name: str, target: str, message: str | None) -> None:
    if message is None:
        check_link_target(PurePosixPath(name), target)
        return
    with pytest.raises(QualificationError) as caught:
        check_link_target(PurePosixPath(name), target)
    assert caught.value.code is Code.INSTALL_FAILED
    assert caught.value.message == message


# --- links: lexical and resolved confinement, and where a link may be placed ---------------------------------------


@pytest.mark.parametrize(("link_dir", "target", "inside"), [
    ((), "a\\b", False),             # a backslash, a drive colon or a NUL is never a relative POSIX target
    ((), "a:b", False),
    ((), "a\0b", False),
    (("top",), "X", True),           # any other character is fine
    (("top",), "a" * 1024, True),    # at the length cap
    (("top",), "a" * 1025, False),   # past it
    ((), "a//../../x", False),       # an empty part is no folder to climb out of
    ((), "./..", False),             # nor is "."
    (("top",), "./../top/x", True),
    (("top", "sub"), "../../top", True),
    (("top", "sub"), "../../../x", False),
])
def test_a_target_stays_inside_by_its_parts(link_dir: tuple[str, ...], target: str, inside: bool) -> None:
    from desktop_qualify.qualify_archive._links import stays_inside

    assert stays_inside(link_dir, target) is inside


@POSIX_ONLY
def test_a_root_that_does_not_resolve_strictly_contains_nothing(tmp_path: Path) -> None:
    from desktop_qualify.qualify_archive._links import resolves_inside

    (tmp_path / "file").write_text("x")
    # Lexically this root is tmp_path itself; strictly, a path through a missing folder resolves nowhere.
    assert resolves_inside(tmp_path / "file", tmp_path)
    assert not resolves_inside(tmp_path / "file", tmp_path / "missing" / "..")


LONG_PART = "p" * 130


@POSIX_ONLY
@pytest.mark.parametrize(("confined", "where"), [(True, "the installed tree"), (False, "the bundle")])
def test_a_placed_link_that_resolves_nowhere_names_what_it_must_stay_in(tmp_path: Path, confined: bool,
                                                                          where: str) -> None:
    from desktop_qualify.qualify_archive._links import place_links

    (tmp_path / "top").mkdir()
    with pytest.raises(QualificationError) as caught:
        place_links(tmp_path, {PurePosixPath("top/l"): "nowhere"}, confined_to_tree=confined)
    assert caught.value.message == f"archive member 'top/l' is a link that resolves outside {where} (or nowhere)"


@POSIX_ONLY
def test_a_link_is_placed_only_in_real_folders_the_archive_made(tmp_path: Path) -> None:
    from desktop_qualify.qualify_archive._links import place_links

    (tmp_path / "top").mkdir()
    missing = PurePosixPath("top", LONG_PART, "l")
    with pytest.raises(QualificationError) as caught:
        place_links(tmp_path, {missing: "x"})
    assert caught.value.message == (f"archive member {str(missing)[:120]!r} is a link in {LONG_PART[:120]!r}, "
                                    "a folder the archive does not make")
    (tmp_path / "top" / LONG_PART).write_text("a file, not a folder")
    with pytest.raises(QualificationError) as caught:
        place_links(tmp_path, {missing: "x"})
    assert caught.value.message == (f"archive member {str(missing)[:120]!r} is a link below {LONG_PART[:120]!r}, "
                                    "which is not a real folder")


@pytest.mark.parametrize(("name", "target", "message"), [
    ("l", "x", "archive member 'l' is a link at the top level"),
    ("top/l", "bad\udcff", "archive member 'top/l' is a link whose target is not valid UTF-8"),
    ("top/l", LONG, f"archive member 'top/l' is a link to {LONG[:120]!r}, outside the bundle"),
])
def test_a_bundle_link_member_is_refused_with_its_reason(name: str, target: str, message: str) -> None:
    from desktop_qualify.qualify_archive._links import check_link_member

    with pytest.raises(QualificationError) as caught:
        check_link_member(PurePosixPath(name), target)
    assert caught.value.message == message


# --- names and the layout of one archive ---------------------------------------------------------------------------


def test_a_name_may_be_as_long_as_a_manifest_records() -> None:
    from desktop_qualify.qualify_archive._names import name_problem

    assert name_problem("a" * 512) is None
    assert name_problem("a" * 513) == "is longer than 512 characters"


def test_a_refusal_shows_at_most_120_characters_of_the_name() -> None:
    from desktop_qualify.qualify_archive._names import refuse

    error = refuse("n" * 200, "why")
    assert error.code is Code.INSTALL_FAILED
    assert error.message == f"archive member {'n' * 120!r} why"


def _layout_refusal(*members: tuple[str, str]) -> str:
    from desktop_qualify.qualify_archive._names import Layout

    layout = Layout()
    *first, (last, last_kind) = members
    for name, kind in first:
        layout.add(PurePosixPath(name), kind)  # type: ignore[arg-type]
    with pytest.raises(QualificationError) as caught:
        layout.add(PurePosixPath(last), last_kind)  # type: ignore[arg-type]
    return caught.value.message


LONG_FOLDER = "F" * 130


@pytest.mark.parametrize(("members", "message"), [
    ((("a/Readme", "file"), ("a/README", "file")),
     "archive member 'a/README' collides with 'a/Readme' on a case-insensitive or normalising file system"),
    (((f"{LONG_FOLDER}/x", "file"), (f"{LONG_FOLDER.lower()}/y", "file")),
     f"archive member {(LONG_FOLDER.lower() + '/y')[:120]!r} collides with {LONG_FOLDER[:120]!r} on a "
     "case-insensitive or normalising file system"),
    ((("a/x", "file"), ("a/x", "file")), "archive member 'a/x' is listed twice"),
    ((("a/x", "link"), ("a/x", "file")), "archive member 'a/x' is both a link and a file or folder"),
    ((("a/x", "file"), ("a/x", "link")), "archive member 'a/x' is both a link and a file or folder"),
    ((("a/x", "file"), ("a/x", "dir")), "archive member 'a/x' is both a file and a folder"),
    # At the top level too: the first folder of a name is checked like any other.
    ((("l", "link"), ("l/x", "file")), "archive member 'l/x' goes through the link 'l'"),
    ((("f", "file"), ("f/x", "file")), "archive member 'f/x' is below the file 'f'"),
    (((LONG_FOLDER, "link"), (f"{LONG_FOLDER}/x", "file")),
     f"archive member {(LONG_FOLDER + '/x')[:120]!r} goes through the link {LONG_FOLDER[:120]!r}"),
    (((LONG_FOLDER, "file"), (f"{LONG_FOLDER}/x", "file")),
     f"archive member {(LONG_FOLDER + '/x')[:120]!r} is below the file {LONG_FOLDER[:120]!r}"),
    # The member below arrives first.
    ((("l/x", "file"), ("l", "link")), "archive member 'l/x' goes through the link 'l'"),
    ((("f/x", "file"), ("f", "file")), "archive member 'f' is a file, but 'f/x' is below it"),
    (((f"{LONG_FOLDER}/x", "file"), (LONG_FOLDER, "link")),
     f"archive member {(LONG_FOLDER + '/x')[:120]!r} goes through the link {LONG_FOLDER[:120]!r}"),
    (((f"{LONG_FOLDER}/x", "file"), (LONG_FOLDER, "file")),
     f"archive member {LONG_FOLDER[:120]!r} is a file, but {(LONG_FOLDER + '/x')[:120]!r} is below it"),
])
def test_each_layout_refusal_names_both_members(members: tuple[tuple[str, str], ...], message: str) -> None:
    assert _layout_refusal(*members) == message


def test_a_folder_may_hold_what_is_below_it_in_any_order() -> None:
    from desktop_qualify.qualify_archive._names import Layout

    layout = Layout()
    for name, kind in (("a/b/c", "file"), ("a/b", "dir"), ("a", "dir"), ("a/l", "link"), ("a/b/d", "file")):
        layout.add(PurePosixPath(name), kind)  # type: ignore[arg-type]
