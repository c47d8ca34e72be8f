"""qualify_archive: names that alias on a case-insensitive or normalising file system (APFS, HFS+, NTFS).

The test machine's file system is case-sensitive, so an alias cannot happen
here; what is tested is that unpack refuses, before writing, every archive
that would produce one there, that links are never placed through a folder
that is not a real one, and that a refusal leaves nothing behind.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

import pytest
from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.qualify_archive import _links, unpack
from support.archives import Member, tgz, zip_of


def _refusal(archive: Path, prefix: Path) -> QualificationError:
    with pytest.raises(QualificationError) as caught:
        unpack(archive, prefix)
    assert caught.value.code is Code.INSTALL_FAILED
    return caught.value


def test_a_link_chain_that_aliases_under_case_folding_is_refused_and_leaves_nothing(tmp_path: Path) -> None:
    # On APFS, top/a1 *is* the link top/A1 -> ".", so these four links would put top/a1/a2/x/pwned/y (-> /etc)
    # in a folder created outside the bundle; each looks contained to a case-sensitive check.
    archive = tgz(tmp_path, [("d", "top", ""), ("l", "top/A1", "."), ("l", "top/a1/A2", "."),
                              ("l", "top/a1/a2/X", "../.."), ("l", "top/a1/a2/x/pwned/y", "../../../../etc")])
    refused = _refusal(archive, tmp_path / "prefix")
    assert "'top/a1/A2' collides with 'top/A1' on a case-insensitive" in refused.message
    assert [p.name for p in tmp_path.iterdir()] == [archive.name]


ALIASES: list[tuple[str, list[Member], str]] = [
    ("case-files", [("f", "top/A", ""), ("f", "top/a", "")], "'top/a' collides with 'top/A'"),
    # The same name in NFC and in NFD: APFS and HFS+ treat them as one.
    ("nfc-and-nfd", [("f", "top/caf\u00e9", ""), ("f", "top/cafe\u0301", "")], "collides with 'top/caf\u00e9'"),
    ("case-folders", [("f", "top/D/x", ""), ("f", "top/d/y", "")], "'top/d/y' collides with 'top/D'"),
    ("case-top-folder", [("f", "top/a", ""), ("f", "TOP/b", "")], "'TOP/b' collides with 'top'"),
    ("case-dir-and-link", [("d", "top/Lib", ""), ("l", "top/lib", "Lib")], "'top/lib' collides with 'top/Lib'"),
    ("file-below-a-case-link", [("d", "top/sub", ""), ("l", "top/L", "sub"), ("f", "top/l/evil", "")],
     "'top/l/evil' collides with 'top/L'"),
    ("case-link-above-an-earlier-file", [("f", "top/l/evil", ""), ("l", "top/L", ".")],
     "'top/L' collides with 'top/l'"),
    ("case-folded-expansion", [("f", "top/stra\u00dfe", ""), ("f", "top/STRASSE", "")], "collides with"),
]


@pytest.mark.parametrize(("members", "why"), [(m, w) for _, m, w in ALIASES], ids=[i for i, _, _ in ALIASES])
def test_names_that_alias_when_folded_are_refused(members: list[Member], why: str, tmp_path: Path) -> None:
    archive = tgz(tmp_path, members)
    refused = _refusal(archive, tmp_path / "prefix")
    assert why in refused.message
    assert [p.name for p in tmp_path.iterdir()] == [archive.name]


@pytest.mark.parametrize(("names", "why"), [(["top/A", "top/a"], "'top/a' collides with 'top/A'"),
                                            (["top/\u00c5/x", "top/A\u030a/y"], "collides with 'top/\u00c5'")],
                         ids=["case", "nfc-and-nfd-folder"])
def test_zip_names_that_alias_when_folded_are_refused(names: list[str], why: str, tmp_path: Path) -> None:
    archive = zip_of(tmp_path, names)
    assert why in _refusal(archive, tmp_path / "prefix").message
    assert [p.name for p in tmp_path.iterdir()] == [archive.name]


def test_one_folder_spelled_the_same_way_everywhere_is_accepted(tmp_path: Path) -> None:
    # Implied by files first, listed itself afterwards, and holding a link: one spelling, no alias.
    archive = tgz(tmp_path, [("f", "top/Lib/x", ""), ("d", "top/Lib", ""), ("l", "top/Lib/y", "x"),
                              ("f", "top/lib2", "")])
    unpack(archive, tmp_path / "prefix")
    assert (tmp_path / "prefix" / "top" / "Lib" / "y").readlink() == Path("x")


def test_a_link_is_never_placed_through_a_folder_that_is_a_link(tmp_path: Path) -> None:
    # What a case-insensitive file system does to top/a1 once top/A1 is a link, made visible here with a real link.
    prefix = tmp_path / "prefix"
    outside = tmp_path / "outside"
    (prefix / "top").mkdir(parents=True)
    outside.mkdir()
    (prefix / "top" / "a1").symlink_to(outside, target_is_directory=True)
    for name, why in [("top/a1/new/l", "which is not a real folder"), ("top/a1/l", "which is not a real folder")]:
        with pytest.raises(QualificationError) as caught:
            _links.place_links(prefix, {PurePosixPath(name): "."})
        assert why in caught.value.message
        assert list(outside.iterdir()) == []


def test_a_link_in_a_folder_the_archive_does_not_make_is_refused(tmp_path: Path) -> None:
    # No folder is created while placing links: a link's folder must come from a folder or file member.
    archive = tgz(tmp_path, [("d", "top", ""), ("f", "top/x", ""), ("l", "top/sub/l", "../x")])
    refused = _refusal(archive, tmp_path / "prefix")
    assert "a folder the archive does not make" in refused.message


@pytest.mark.parametrize("kind", ["tar", "zip"])
def test_a_refusal_after_files_were_written_removes_the_whole_prefix(kind: str, tmp_path: Path) -> None:
    names = [f"top/d{i}/f" for i in range(5)]
    archive = (tgz(tmp_path, [*(("f", n, "") for n in names), ("l", "top/esc", "../..")]) if kind == "tar"
               else zip_of(tmp_path, [*names, "top/../../esc"]))
    _refusal(archive, tmp_path / "prefix")
    assert [p.name for p in tmp_path.iterdir()] == [archive.name]
