"""Kind ``dmg``: the image's .app signed, the image made again, signed, notarized and stapled, as command lines.

Only Linux runs here, so hdiutil, ditto, security, codesign and notarytool are
a fake ``subprocess.run`` that records every argv and does what the tool
would do to the files: ``hdiutil attach`` fills the mount point with a
prepared volume, ``ditto`` copies, ``hdiutil detach`` empties it again and
``hdiutil create`` writes the image file.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.producer.os_signing import _codesign, _signing_base
from desktop_qualify.producer.os_signing._notarize import NotarytoolNotarizer
from desktop_qualify.producer.os_signing._output_signing import UNSIGNED, sign_output
from desktop_qualify.producer.os_signing._platform_signing import (
    CodesignSigner,
    NoPlatformSigner,
    PlatformSigner,
    SigntoolSigner,
)
from test_os_signing_hooks import CREDENTIALS, ID, MH_DYLIB, MH_EXECUTE, P12, SUBMISSION

# The same signer fixtures as the archive's signing tests; the display is an app bundle's.
DISPLAY = (b"Executable=/x/Notes\nIdentifier=com.example.notes\nFormat=app bundle with Mach-O thin (arm64)\n"
           b"CodeDirectory v=20500 size=1234 flags=0x10000(runtime) hashes=30+7 location=embedded\n"
           b"Authority=Developer ID Application: Example (TEAMID)\n"
           b"Timestamp=Jan 1, 2024 at 10:00:00 AM\nTeamIdentifier=TEAMID\n")
EXECUTABLE = "Notes.app/Contents/MacOS/Notes"
HDIUTIL, DITTO = "/usr/bin/hdiutil", "/usr/bin/ditto"
ACCEPTED = json.dumps({"id": SUBMISSION, "status": "Accepted", "message": "Processing complete"}).encode()


class FakeMac:
    """subprocess.run stand-in: records each argv, answers (exit code, stdout), and fakes the tools' effects.

    ``fail``: an argv whose space-joined words start with one of these exits 1 (and has no effect);
    ``exact``: so does an argv equal to one of these.
    """

    def __init__(self, volume: Path, fail: tuple[str, ...] = (), exact: tuple[list[str], ...] = ()) -> None:
        self.volume, self.fail, self.exact = volume, fail, exact
        self.calls: list[list[str]] = []

    def __call__(self, argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[bytes]:
        assert kwargs.get("shell") is False
        assert kwargs.get("timeout")
        self.calls.append(argv)
        line = " ".join(argv)
        if argv in self.exact or any(line.startswith(prefix) for prefix in self.fail):
            return subprocess.CompletedProcess(argv, 1, b"", b"")
        out = b""
        if argv[:2] == [HDIUTIL, "attach"]:
            shutil.copytree(self.volume, argv[-2], symlinks=True, dirs_exist_ok=True)
        elif argv[:2] == [HDIUTIL, "detach"]:
            for entry in Path(argv[2]).iterdir():
                shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()
        elif argv[0] == DITTO:
            source, target = Path(argv[1]), Path(argv[2])
            shutil.copytree(source, target, symlinks=True) if source.is_dir() else shutil.copy2(source, target)
        elif argv[:2] == [HDIUTIL, "create"]:
            Path(argv[-1]).write_bytes(b"koly")
        elif argv[:2] == ["codesign", "-dvv"]:
            out = DISPLAY
        elif argv[:3] == ["xcrun", "notarytool", "submit"]:
            out = ACCEPTED
        return subprocess.CompletedProcess(argv, 0, out, b"")


class Mac:
    """One test's macOS stand-in: the team's image, the volume it holds, the signing's folders, the fake tools."""

    def __init__(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.volume = tmp_path / "volume-image"
        self.dmg = tmp_path / "dist" / "Notes-1.0.dmg"
        self.staging = tmp_path / "signing"
        # The signing's private folder and keychain password, fixed so that every argv is known in advance.
        self.scratch = tmp_path / "scratch"
        self._monkeypatch = monkeypatch
        monkeypatch.setattr(_signing_base, "scratch_folder", self._made_scratch)
        monkeypatch.setattr(_codesign, "keychain_password", lambda: "kcpass")
        # What the team's image holds: the app, a read-me, the drag-to-install alias and a bookkeeping folder.
        app = self.volume / "Notes.app" / "Contents"
        (app / "MacOS").mkdir(parents=True)
        (app / "Frameworks").mkdir()
        (app / "MacOS" / "Notes").write_bytes(MH_EXECUTE + b"x")
        (app / "Frameworks" / "libqt.dylib").write_bytes(MH_DYLIB + b"x")
        (app / "Info.plist").write_bytes(b"<plist/>")
        (self.volume / "README.rtf").write_bytes(b"{\\rtf1}")
        (self.volume / "Applications").symlink_to("/Applications")
        (self.volume / ".fseventsd").mkdir()
        (self.volume / ".fseventsd" / "fseventsd-uuid").write_bytes(b"x")
        self.dmg.parent.mkdir()
        self.dmg.write_bytes(b"the team's image")

    def _made_scratch(self) -> Path:
        self.scratch.mkdir()
        return self.scratch

    def tools(self, fail: tuple[str, ...] = (), exact: tuple[list[str], ...] = ()) -> FakeMac:
        tools = FakeMac(self.volume, fail, exact)
        self._monkeypatch.setattr(subprocess, "run", tools)
        return tools

    def flow(self) -> list[list[str]]:
        return _flow(self.dmg, self.staging, self.scratch)


@pytest.fixture
def mac(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Mac:
    return Mac(tmp_path, monkeypatch)


def _signer() -> CodesignSigner:
    return CodesignSigner(ID, Path("/app.plist"), inherit_entitlements=Path("/inherit.plist"),
                          keychain=(P12, "p12pass"), notarizer=NotarytoolNotarizer(CREDENTIALS))


def _flow(dmg: Path, staging: Path, scratch: Path) -> list[list[str]]:
    """Every command of a dmg's signing that succeeds, in order."""
    mount, contents, signed = staging / "volume", staging / "contents", staging / "signed.dmg"
    app = contents / "Notes.app"
    lib, main = str(app / "Contents" / "Frameworks" / "libqt.dylib"), str(app / "Contents" / "MacOS" / "Notes")
    kc = str(scratch / "qualify-signing.keychain-db")
    keychain = ["--keychain", kc]
    notary = ["--key", "/tmp/key.p8", "--key-id", "KEYID1234", "--issuer", CREDENTIALS.issuer]
    return [
        [HDIUTIL, "attach", "-readonly", "-nobrowse", "-noautoopen", "-mountpoint", str(mount), str(dmg)],
        [DITTO, str(mount / "Notes.app"), str(contents / "Notes.app")],
        [DITTO, str(mount / "README.rtf"), str(contents / "README.rtf")],
        [HDIUTIL, "detach", str(mount)],
        ["security", "create-keychain", "-p", "kcpass", kc],
        ["security", "set-keychain-settings", "-lut", "21600", kc],
        ["security", "unlock-keychain", "-p", "kcpass", kc],
        ["security", "import", str(scratch / "QUALIFY_CODESIGN_P12_BASE64"), "-k", kc, "-f", "pkcs12",
         "-P", "p12pass", "-T", "/usr/bin/codesign"],
        ["security", "set-key-partition-list", "-S", "apple-tool:,apple:,codesign:", "-s", "-k", "kcpass", kc],
        ["codesign", "--force", "--options", "runtime", "--timestamp", *keychain, "--sign", ID, lib],
        ["codesign", "--force", "--options", "runtime", "--timestamp", *keychain, "--entitlements", "/app.plist",
         "--sign", ID, main],
        ["codesign", "--verify", "--strict", "--verbose=2", lib],
        ["codesign", "--verify", "--strict", "--deep", "--verbose=2", main],
        ["codesign", "-dvv", lib],
        ["codesign", "-dvv", main],
        [HDIUTIL, "create", "-volname", "Notes-1.0", "-srcfolder", str(contents), "-format", "UDZO", "-ov",
         str(signed)],
        ["codesign", "--force", "--timestamp", *keychain, "--sign", ID, str(signed)],
        ["codesign", "--verify", "--strict", "--verbose=2", str(signed)],
        ["xcrun", "notarytool", "submit", str(signed), *notary, "--wait", "--timeout", "30m",
         "--output-format", "json"],
        ["xcrun", "stapler", "staple", str(signed)],
        ["xcrun", "stapler", "validate", str(signed)],
        ["security", "delete-keychain", kc],
    ]


def test_a_dmg_is_copied_out_its_app_signed_and_the_new_image_signed_notarized_and_stapled(mac: Mac) -> None:
    tools = mac.tools()
    released, outcome = sign_output("dmg", mac.dmg, _signer(), EXECUTABLE, mac.staging)
    assert tools.calls == mac.flow()
    assert released == mac.staging / "signed.dmg"
    assert released.read_bytes() == b"koly"
    assert mac.dmg.read_bytes() == b"the team's image", "the team's image is never written"
    assert (outcome.tool, outcome.state) == ("codesign", "notarized")
    assert outcome.notarization is not None
    assert (outcome.notarization.outcome, outcome.notarization.submission_id, outcome.notarization.stapled) == (
        "accepted", SUBMISSION, True)
    # The new image's content: the drag-to-install link made again as the same link, no bookkeeping folder.
    contents = mac.staging / "contents"
    assert sorted(p.name for p in contents.iterdir()) == ["Applications", "Notes.app", "README.rtf"]
    assert (contents / "Applications").is_symlink()
    assert str((contents / "Applications").readlink()) == "/Applications"
    assert not mac.scratch.exists(), "the scratch folder (the .p12) is removed"


def test_the_image_not_the_app_is_what_notarytool_submits_and_stapler_staples(mac: Mac) -> None:
    tools = mac.tools()
    sign_output("dmg", mac.dmg, _signer(), EXECUTABLE, mac.staging)
    signed = str(mac.staging / "signed.dmg")
    notary = [argv for argv in tools.calls if argv[0] == "xcrun" or argv[:3] == ["ditto", "-c", "-k"]]
    assert [argv[:4] for argv in notary] == [
        ["xcrun", "notarytool", "submit", signed], ["xcrun", "stapler", "staple", signed],
        ["xcrun", "stapler", "validate", signed]], "the .app is not zipped nor notarized on its own"


def test_without_notary_credentials_the_signed_image_is_signed_not_notarized(mac: Mac) -> None:
    tools = mac.tools()
    released, outcome = sign_output("dmg", mac.dmg, CodesignSigner(ID, Path("/app.plist")), EXECUTABLE, mac.staging)
    assert released == mac.staging / "signed.dmg"
    assert outcome.state == "signed"
    assert outcome.notarization is not None
    assert outcome.notarization.outcome == "skipped"
    assert tools.calls[-2:] == [
        ["codesign", "--force", "--timestamp", "--sign", ID, str(released)],
        ["codesign", "--verify", "--strict", "--verbose=2", str(released)]]


# The step that fails (the first argv starting with it exits 1) -> the outcome's state, and how many commands of the
# whole flow ran as they would have (the keychain's removal always runs last).
STEPS = [
    ("security import", "failed", 8),
    ("codesign --force --options runtime", "failed", 10),
    ("codesign --verify --strict --deep", "failed", 13),
    ("codesign -dvv", "failed", 14),
    (f"{HDIUTIL} create", "failed", 16),
    ("codesign --force --timestamp", "failed", 17),
    ("codesign --verify --strict --verbose=2 {signed}", "failed", 18),
    # Apple said no (or was not reached): signed and verified, the notarization record says why.
    ("xcrun notarytool submit", "signed", 19),
    # Accepted but not stapled: notarized (Gatekeeper checks online), the record says stapled false.
    ("xcrun stapler staple", "notarized", 20),
]


@pytest.mark.parametrize(("failing", "state", "ran"), STEPS, ids=[s[0].split(" {")[0] for s in STEPS])
def test_a_failing_step_fails_the_signing_and_the_keychain_is_still_deleted(
        mac: Mac, failing: str, state: str, ran: int) -> None:
    tools = mac.tools(fail=(failing.format(signed=mac.staging / "signed.dmg"),))
    _, outcome = sign_output("dmg", mac.dmg, _signer(), EXECUTABLE, mac.staging)
    assert outcome.state == state
    flow = mac.flow()
    assert tools.calls[:ran] == flow[:ran]
    assert tools.calls[-1] == flow[-1] == ["security", "delete-keychain",
                                           str(mac.scratch / "qualify-signing.keychain-db")]
    assert not mac.scratch.exists()


def test_a_keychain_that_cannot_be_deleted_fails_the_dmg_signing(mac: Mac) -> None:
    tools = mac.tools(fail=("security delete-keychain",))
    _, outcome = sign_output("dmg", mac.dmg, _signer(), EXECUTABLE, mac.staging)
    assert tools.calls == mac.flow()
    assert outcome.state == "failed"
    assert outcome.notarization is not None
    assert outcome.notarization.outcome == "accepted"


@pytest.mark.parametrize("failing", [f"{HDIUTIL} attach", DITTO, f"{HDIUTIL} detach"])
def test_an_image_that_cannot_be_copied_out_is_failed_before_any_identity_is_set_up(mac: Mac, failing: str) -> None:
    tools = mac.tools(fail=(failing,))
    released, outcome = sign_output("dmg", mac.dmg, _signer(), EXECUTABLE, mac.staging)
    assert (released, outcome.tool, outcome.state) == (mac.dmg, "codesign", "failed")
    flow, detach = mac.flow(), [HDIUTIL, "detach", str(mac.staging / "volume")]
    assert tools.calls == {
        f"{HDIUTIL} attach": flow[:1],
        # ditto failed on the first entry: no other entry copied, the image still detached.
        DITTO: [*flow[:2], detach],
        # A volume that will not detach is detached with -force (here that fails too).
        f"{HDIUTIL} detach": [*flow[:4], [*detach, "-force"]],
    }[failing]
    assert not mac.scratch.exists(), "no identity was set up"


def test_a_busy_volume_is_detached_with_force_and_the_signing_goes_on(mac: Mac) -> None:
    plain = [HDIUTIL, "detach", str(mac.staging / "volume")]
    tools = mac.tools(exact=(plain,))
    _, outcome = sign_output("dmg", mac.dmg, _signer(), EXECUTABLE, mac.staging)
    flow = mac.flow()
    assert tools.calls == [*flow[:4], [*plain, "-force"], *flow[4:]]
    assert outcome.state == "notarized"


@pytest.mark.parametrize("executable", ["Notes/Contents/MacOS/Notes", "Notes", "../Notes.app/Contents/MacOS/Notes",
                                        "/Notes.app/Contents/MacOS/Notes"])
def test_an_executable_not_inside_a_dot_app_is_refused_before_anything_runs(mac: Mac, executable: str) -> None:
    tools = mac.tools()
    with pytest.raises(QualificationError) as refused:
        sign_output("dmg", mac.dmg, _signer(), executable, mac.staging)
    assert refused.value.code is Code.BUILD_FAILED
    assert ".app" in refused.value.message
    assert tools.calls == []


@pytest.mark.parametrize("layout", ["app is a file", "no executable", "executable is a link", "app is a link"])
def test_an_image_without_the_executable_inside_its_dot_app_is_refused_after_the_detach(mac: Mac, layout: str) -> None:
    app = mac.volume / "Notes.app"
    main = app / "Contents" / "MacOS" / "Notes"
    if layout == "app is a file":
        shutil.rmtree(app)
        app.write_bytes(MH_EXECUTE)
    elif layout == "no executable":
        main.unlink()
    elif layout == "executable is a link":
        main.rename(main.with_name("Real"))
        main.symlink_to("Real")
    else:
        app.rename(mac.volume / "Real.app")
        app.symlink_to("Real.app")
    tools = mac.tools()
    with pytest.raises(QualificationError) as refused:
        sign_output("dmg", mac.dmg, _signer(), EXECUTABLE, mac.staging)
    assert refused.value.code is Code.BUILD_FAILED
    assert ".app" in refused.value.message
    assert tools.calls[-1] == [HDIUTIL, "detach", str(mac.staging / "volume")]
    assert not any(argv[0] in {"security", "codesign"} for argv in tools.calls)


@pytest.mark.parametrize(("signer", "signed"), [
    (NoPlatformSigner(), False),
    (SigntoolSigner("ab" * 20, "http://ts.example.invalid"), False),
    (CodesignSigner(ID, Path("/app.plist")), True),
], ids=["no signer", "a Windows signer", "a macOS signer"])
def test_only_a_macos_signer_signs_a_dmg(mac: Mac, signer: PlatformSigner, signed: bool) -> None:
    """Without a macOS identity the image is released byte for byte and honestly 'unsigned'; nothing runs."""
    tools = mac.tools()
    released, outcome = sign_output("dmg", mac.dmg, signer, EXECUTABLE, mac.staging)
    if signed:
        assert (released, outcome.state) == (mac.staging / "signed.dmg", "signed")
        return
    assert (released, outcome) == (mac.dmg, UNSIGNED)
    assert mac.dmg.read_bytes() == b"the team's image"
    assert tools.calls == []
    assert not mac.staging.exists()


def test_a_pkg_is_still_released_unsigned(mac: Mac, tmp_path: Path) -> None:
    tools = mac.tools()
    package = tmp_path / "Notes-1.0.pkg"
    package.write_bytes(b"xar!")
    assert sign_output("pkg", package, _signer(), EXECUTABLE, mac.staging) == (package, UNSIGNED)
    assert tools.calls == []
