"""OS signing, complete: the identity's import and removal, the after-sign notarization hook, their command lines.

Only Linux runs here, so every macOS and Windows tool is a recorded command
line; a fake runner answers as the tool would (exit code and stdout).
"""

from __future__ import annotations

import base64
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.producer.os_signing._notarize import (
    NoNotarizer,
    NotaryCredentials,
    NotarytoolNotarizer,
    parse_submission,
)
from desktop_qualify.producer.os_signing._platform_signing import (
    CodesignSigner,
    SigntoolSigner,
    is_macho_executable,
    platform_signer_from_env,
)
from desktop_qualify.producer.os_signing._signing_identity import TemporaryKeychain, UserStorePfx

SUBMISSION = "2efe2717-52ef-43a5-96dc-0797e4ca1041"
ID = "Developer ID Application: Example (TEAMID)"
P12 = base64.b64encode(b"not really a p12").decode()
# A thin little-endian 64-bit Mach-O header: magic, cputype, cpusubtype, filetype.
MH_EXECUTE = b"\xcf\xfa\xed\xfe" + b"\x07\x00\x00\x01" + b"\x03\x00\x00\x00" + b"\x02\x00\x00\x00"
MH_DYLIB = b"\xcf\xfa\xed\xfe" + b"\x07\x00\x00\x01" + b"\x03\x00\x00\x00" + b"\x06\x00\x00\x00"
# What `codesign -dvv` prints (to stderr) for a Developer ID signature with the hardened runtime and a timestamp.
DISPLAY = (b"Executable=/x/skillhost\nIdentifier=skillhost\nFormat=Mach-O thin (arm64)\n"
           b"CodeDirectory v=20500 size=1234 flags=0x10000(runtime) hashes=30+7 location=embedded\n"
           b"Signature size=9000\nAuthority=Developer ID Application: Example (TEAMID)\n"
           b"Timestamp=Jan 1, 2024 at 10:00:00 AM\nTeamIdentifier=TEAMID\nRuntime Version=14.0.0\n")
CREDENTIALS = NotaryCredentials(Path("/tmp/key.p8"), "KEYID1234", "11111111-2222-3333-4444-555555555555")


def _answer(status: str, submission: str | None = SUBMISSION) -> bytes:
    return json.dumps({"id": submission, "status": status, "message": "Processing complete"}).encode()


class FakeTools:
    """subprocess.run stand-in: each tool (by argv[0]/argv[1]) answers with an exit code and stdout."""

    def __init__(self, answers: dict[str, tuple[int, bytes]] | None = None) -> None:
        self.answers = answers or {}
        self.calls: list[list[str]] = []

    def key(self, argv: list[str]) -> str:
        if argv[:2] == ["codesign", "-dvv"]:
            return "codesign -dvv"
        return " ".join(argv[:3]) if argv[0] in ("xcrun", "security", "certutil") else argv[0]

    def __call__(self, argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[bytes]:
        assert kwargs.get("shell") is False
        assert kwargs.get("timeout")
        self.calls.append(argv)
        # A signature's display answers as a good one unless a test says otherwise.
        answers = {**self.answers, "codesign -dvv": self.answers.get("codesign -dvv", (0, DISPLAY))}
        code, out = next((v for k, v in answers.items() if self.key(argv).startswith(k)), (0, b""))
        return subprocess.CompletedProcess(argv, code, out, b"")

    def tools(self) -> list[str]:
        return [self.key(argv) for argv in self.calls]


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    root = tmp_path / "dist" / "skillhost"
    (root / "_internal").mkdir(parents=True)
    (root / "skillhost").write_bytes(MH_EXECUTE + b"x")
    (root / "_internal" / "helper").write_bytes(MH_EXECUTE + b"x")
    (root / "_internal" / "libpython3.11.dylib").write_bytes(MH_DYLIB + b"x")
    return root


def test_temporary_keychain_command_lines(tmp_path: Path) -> None:
    kc = TemporaryKeychain(tmp_path / "id.p12", "p12pass", tmp_path / "k.keychain-db", "kcpass")
    k = str(tmp_path / "k.keychain-db")
    assert kc.setup_commands() == [
        ["security", "create-keychain", "-p", "kcpass", k],
        ["security", "set-keychain-settings", "-lut", "21600", k],
        ["security", "unlock-keychain", "-p", "kcpass", k],
        ["security", "import", str(tmp_path / "id.p12"), "-k", k, "-f", "pkcs12", "-P", "p12pass",
         "-T", "/usr/bin/codesign"],
        ["security", "set-key-partition-list", "-S", "apple-tool:,apple:,codesign:", "-s", "-k", "kcpass", k],
    ]
    assert kc.teardown_commands() == [["security", "delete-keychain", k]]
    assert kc.codesign_options() == ["--keychain", k]


def test_user_store_pfx_command_lines(tmp_path: Path) -> None:
    pfx = UserStorePfx(tmp_path / "c.pfx", "pfxpass", "ab" * 20)
    assert pfx.setup_commands() == [["certutil", "-f", "-user", "-p", "pfxpass", "-importPFX", "My",
                                     str(tmp_path / "c.pfx"), "NoExport"]]
    assert pfx.teardown_commands() == [["certutil", "-user", "-delstore", "My", "ab" * 20]]


def test_notarytool_command_lines(tmp_path: Path) -> None:
    notary = NotarytoolNotarizer(CREDENTIALS)
    assert notary.zip_command(tmp_path / "skillhost", tmp_path / "up.zip") == [
        "ditto", "-c", "-k", "--sequesterRsrc", "--keepParent", str(tmp_path / "skillhost"), str(tmp_path / "up.zip")]
    assert notary.submit_command(tmp_path / "up.zip") == [
        "xcrun", "notarytool", "submit", str(tmp_path / "up.zip"), "--key", "/tmp/key.p8", "--key-id", "KEYID1234",
        "--issuer", CREDENTIALS.issuer, "--wait", "--timeout", "30m", "--output-format", "json"]
    assert notary.staple_commands(tmp_path / "skillhost") == [
        ["xcrun", "stapler", "staple", str(tmp_path / "skillhost")],
        ["xcrun", "stapler", "validate", str(tmp_path / "skillhost")]]


@pytest.mark.parametrize(("stdout", "expected"), [
    (_answer("Accepted"), (SUBMISSION, "Accepted")),
    (_answer("Invalid"), (SUBMISSION, "Invalid")),
    (_answer("Accepted", "not-a-uuid"), (None, "Accepted")),
    (_answer("Accepted\nInjected: yes"), (SUBMISSION, None)),
    (b"Error: HTTP status code: 401", (None, None)),
    (b"[1, 2]", (None, None)),
    (b"\xff\xfe", (None, None)),
    (b'{"id": "' + b"a" * 70000 + b'"}', (None, None)),
], ids=["accepted", "invalid", "bad id", "status with a newline", "not json", "not an object", "not utf-8",
        "oversized"])
def test_notarytool_answer_is_read_bounded(stdout: bytes, expected: tuple[str | None, str | None]) -> None:
    assert parse_submission(stdout) == expected


def _runner(tools: FakeTools) -> Any:
    def run(argv: list[str]) -> tuple[int, bytes]:
        done = tools(argv, shell=False, timeout=1)
        return done.returncode, done.stdout
    return run


@pytest.mark.parametrize(("answers", "outcome", "stapled"), [
    ({}, "failed", False),  # notarytool printed nothing usable
    ({"xcrun notarytool submit": (0, _answer("Accepted"))}, "accepted", True),
    ({"xcrun notarytool submit": (0, _answer("Accepted")), "xcrun stapler staple": (65, b"")}, "accepted", False),
    ({"xcrun notarytool submit": (1, _answer("Invalid"))}, "rejected", False),
    ({"xcrun notarytool submit": (1, _answer("Rejected"))}, "rejected", False),
    ({"xcrun notarytool submit": (0, _answer("In Progress"))}, "failed", False),
    ({"xcrun notarytool submit": (0, _answer("Accepted", None))}, "failed", False),
], ids=["no answer", "accepted", "stapling failed", "invalid", "rejected", "still in progress", "no id"])
def test_notarization_outcome(tmp_path: Path, answers: dict[str, tuple[int, bytes]], outcome: str,
                              stapled: bool) -> None:
    dmg = tmp_path / "Notes-1.0.dmg"
    dmg.write_bytes(b"koly")
    tools = FakeTools(answers)
    result = NotarytoolNotarizer(CREDENTIALS).notarize(dmg, tmp_path, _runner(tools))
    # The disk image itself is submitted (no zip of it) and, once accepted, the ticket stapled to it.
    assert "ditto" not in tools.tools()
    assert tools.calls[0][:4] == ["xcrun", "notarytool", "submit", str(dmg)]
    if outcome == "accepted":
        assert tools.calls[1:] == NotarytoolNotarizer(CREDENTIALS).staple_commands(dmg)[:len(tools.calls) - 1]
    assert (result.outcome, result.stapled) == (outcome, stapled)
    if outcome == "accepted":
        assert (result.submission_id, result.status) == (SUBMISSION, "Accepted")
    assert len(result.detail) <= 200


def test_a_folder_that_cannot_be_zipped_is_not_submitted(tmp_path: Path) -> None:
    tools = FakeTools({"ditto": (1, b"")})
    result = NotarytoolNotarizer(CREDENTIALS).notarize(tmp_path / "skillhost", tmp_path, _runner(tools))
    assert result.outcome == "failed"
    assert tools.tools() == ["ditto"]


@pytest.mark.parametrize(("name", "is_file", "stapled"), [
    ("skillhost", False, False), ("skillhost", True, False), ("Notes.app", False, True), ("Notes.pkg", True, True)],
    ids=["plain folder", "bare executable", "app bundle", "installer package"])
def test_only_what_can_carry_a_ticket_is_stapled(tmp_path: Path, name: str, is_file: bool, stapled: bool) -> None:
    target = tmp_path / name
    target.write_bytes(b"x") if is_file else target.mkdir()
    tools = FakeTools({"xcrun notarytool submit": (0, _answer("Accepted"))})
    result = NotarytoolNotarizer(CREDENTIALS).notarize(target, tmp_path / "scratch", _runner(tools))
    assert (result.outcome, result.stapled) == ("accepted", stapled)
    assert ("xcrun stapler staple" in tools.tools()) is stapled, "no staple attempted on what cannot carry one"
    if not stapled:
        assert "Gatekeeper checks online" in result.detail


def test_an_invalid_submission_fetches_its_log_into_the_bounded_record(tmp_path: Path) -> None:
    log = json.dumps({"status": "Invalid", "issues": [
        {"severity": "error", "path": "Notes-1.0.dmg/Notes.app/Contents/MacOS/Notes\u202e",
         "message": "The binary is not signed with a valid Developer ID certificate." + "x" * 300},
        {"severity": "error", "path": "b", "message": "The signature does not include a secure timestamp."}]})
    dmg = tmp_path / "Notes-1.0.dmg"
    dmg.write_bytes(b"koly")
    tools = FakeTools({"xcrun notarytool submit": (1, _answer("Invalid")), "xcrun notarytool log": (0, log.encode())})
    result = NotarytoolNotarizer(CREDENTIALS).notarize(dmg, tmp_path, _runner(tools))
    assert tools.calls[-1] == ["xcrun", "notarytool", "log", SUBMISSION, "--key", "/tmp/key.p8",
                               "--key-id", "KEYID1234", "--issuer", CREDENTIALS.issuer]
    assert result.outcome == "rejected"
    assert "not signed with a valid Developer ID" in result.detail
    assert "\u202e" not in result.detail
    assert len(result.detail) <= 200


def test_without_credentials_notarization_is_recorded_as_skipped(tmp_path: Path) -> None:
    result = NoNotarizer().notarize(tmp_path, tmp_path, lambda argv: pytest.fail(f"ran {argv}"))
    assert (result.outcome, result.detail, result.submission_id, result.stapled) == (
        "skipped", "skipped: no credentials", None, False)


def test_macos_signing_imports_signs_notarizes_and_deletes_the_keychain(
        bundle: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tools = FakeTools({"xcrun notarytool submit": (0, _answer("Accepted"))})
    monkeypatch.setattr(subprocess, "run", tools)
    signer = CodesignSigner(ID, Path("/app.plist"), inherit_entitlements=Path("/inherit.plist"),
                            keychain=(P12, "p12pass"), notarizer=NotarytoolNotarizer(CREDENTIALS))
    outcome = signer.sign(bundle, bundle / "skillhost")
    assert (outcome.tool, outcome.state) == ("codesign", "notarized")
    assert outcome.notarization is not None
    assert outcome.notarization.submission_id == SUBMISSION
    assert tools.tools() == [
        "security create-keychain -p", "security set-keychain-settings -lut", "security unlock-keychain -p",
        "security import " + tools.calls[3][2], "security set-key-partition-list -S",
        *["codesign"] * 6, *["codesign -dvv"] * 3,
        "ditto", "xcrun notarytool submit",  # a plain folder: nothing to staple a ticket to
        "security delete-keychain " + tools.calls[-1][2]]
    keychain = tools.calls[0][4]
    signs = tools.calls[5:8]
    # Every codesign looks in the temporary keychain only; entitlements: app file on the executable,
    # inherit file on the nested executable, none on the library.
    assert all(argv[5:7] == ["--keychain", keychain] for argv in signs)
    by_path = {argv[-1]: argv for argv in signs}
    assert "--entitlements" not in by_path[str(bundle / "_internal" / "libpython3.11.dylib")]
    helper = by_path[str(bundle / "_internal" / "helper")]
    assert helper[helper.index("--entitlements") + 1] == "/inherit.plist"
    main = by_path[str(bundle / "skillhost")]
    assert main[main.index("--entitlements") + 1] == "/app.plist"
    # The .p12 was written privately into the scratch folder, and the folder is gone.
    p12 = Path(tools.calls[3][2])
    assert p12.name == "QUALIFY_CODESIGN_P12_BASE64"
    assert not p12.parent.exists()


@pytest.mark.parametrize("failing", ["security import", "codesign", "xcrun notarytool submit"])
def test_the_keychain_is_deleted_whatever_happens(bundle: Path, monkeypatch: pytest.MonkeyPatch,
                                                  failing: str) -> None:
    tools = FakeTools({failing: (1, b"")})
    monkeypatch.setattr(subprocess, "run", tools)
    signer = CodesignSigner(ID, Path("/app.plist"), keychain=(P12, "p12pass"),
                            notarizer=NotarytoolNotarizer(CREDENTIALS))
    outcome = signer.sign(bundle, bundle / "skillhost")
    assert outcome.state == ("signed" if failing.startswith("xcrun") else "failed")
    assert tools.calls[-1][:2] == ["security", "delete-keychain"]


def test_a_keychain_that_cannot_be_deleted_fails_the_signing(bundle: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(subprocess, "run", FakeTools({"security delete-keychain": (1, b"")}))
    signer = CodesignSigner(ID, Path("/app.plist"), keychain=(P12, "p12pass"))
    assert signer.sign(bundle, bundle / "skillhost").state == "failed"


def test_every_macho_is_verified_on_its_own_and_displayed(bundle: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tools = FakeTools()
    monkeypatch.setattr(subprocess, "run", tools)
    assert CodesignSigner(ID, Path("/app.plist")).sign(bundle, bundle / "skillhost").state == "signed"
    helper, lib, main = (str(bundle / p) for p in ("_internal/helper", "_internal/libpython3.11.dylib", "skillhost"))
    assert tools.calls[3:] == [
        ["codesign", "--verify", "--strict", "--verbose=2", helper],
        ["codesign", "--verify", "--strict", "--verbose=2", lib],
        ["codesign", "--verify", "--strict", "--deep", "--verbose=2", main],
        ["codesign", "-dvv", helper], ["codesign", "-dvv", lib], ["codesign", "-dvv", main]]


@pytest.mark.parametrize("display", [
    DISPLAY.replace(b"TeamIdentifier=TEAMID", b"TeamIdentifier=not set"),
    DISPLAY.replace(b"TeamIdentifier=TEAMID", b"TeamIdentifier=OTHERTEAM"),
    DISPLAY.replace(b"flags=0x10000(runtime)", b"flags=0x0(none)"),
    DISPLAY.replace(b"Timestamp=", b"Signed Time="),
    b"",
], ids=["ad hoc", "another team", "no hardened runtime", "no secure timestamp", "nothing"])
def test_a_signature_without_team_runtime_or_timestamp_is_refused(
        bundle: Path, monkeypatch: pytest.MonkeyPatch, display: bytes) -> None:
    monkeypatch.setattr(subprocess, "run", FakeTools({"codesign -dvv": (0, display)}))
    assert CodesignSigner(ID, Path("/app.plist")).sign(bundle, bundle / "skillhost").state == "failed"


def test_a_loose_library_that_does_not_verify_fails_the_signing(bundle: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    class LibFails(FakeTools):
        def __call__(self, argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[bytes]:
            done = super().__call__(argv, **kwargs)
            bad = argv[1] == "--verify" and argv[-1].endswith(".dylib")
            return subprocess.CompletedProcess(argv, 1 if bad else done.returncode, done.stdout, b"")

    monkeypatch.setattr(subprocess, "run", LibFails())
    assert CodesignSigner(ID, Path("/app.plist")).sign(bundle, bundle / "skillhost").state == "failed"


def test_without_notarization_credentials_a_signed_bundle_says_skipped(bundle: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    tools = FakeTools()
    monkeypatch.setattr(subprocess, "run", tools)
    outcome = CodesignSigner(ID, Path("/app.plist")).sign(bundle, bundle / "skillhost")
    assert outcome.state == "signed"
    assert outcome.notarization is not None
    assert outcome.notarization.detail == "skipped: no credentials"
    assert "xcrun" not in {argv[0] for argv in tools.calls}
    assert "security" not in {argv[0] for argv in tools.calls}, "no keychain without a .p12"


@pytest.mark.parametrize("failing", ["", "signtool"])
def test_windows_imports_the_pfx_and_removes_it_whatever_happens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 failing: str) -> None:
    root = tmp_path / "skillhost"
    root.mkdir()
    (root / "skillhost.exe").write_bytes(b"MZ")
    tools = FakeTools({failing: (1, b"")} if failing else {})
    monkeypatch.setattr(subprocess, "run", tools)
    signer = SigntoolSigner("ab" * 20, "http://ts.example.invalid", pfx=(P12, "pfxpass"))
    outcome = signer.sign(root, root / "skillhost.exe")
    assert outcome.state == ("failed" if failing else "signed")
    assert outcome.notarization is None
    assert tools.calls[0][:4] == ["certutil", "-f", "-user", "-p"]
    assert tools.calls[1][:2] == ["signtool", "sign"]
    if not failing:
        assert tools.calls[2] == ["signtool", "verify", "/pa", "/tw", "/sha1", "ab" * 20, "/v",
                                  str(root / "skillhost.exe")]
    assert tools.calls[-1] == ["certutil", "-user", "-delstore", "My", "ab" * 20]


@pytest.mark.parametrize(("code", "said"), [
    (2, b"SignTool Warning: Signature is not timestamped.\n"),
    (0, b"Successfully verified: x.exe\nFile is not timestamped.\n"),
    (1, b"SignTool Error: No signature found.\n"),
], ids=["warned", "said not timestamped", "failed"])
def test_windows_verify_refuses_a_warning_or_no_timestamp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           code: int, said: bytes) -> None:
    root = tmp_path / "skillhost"
    root.mkdir()
    (root / "skillhost.exe").write_bytes(b"MZ")

    class Verify(FakeTools):
        def __call__(self, argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[bytes]:
            super().__call__(argv, **kwargs)
            answer = (code, said) if argv[1] == "verify" else (0, b"")
            return subprocess.CompletedProcess(argv, *answer, b"")

    monkeypatch.setattr(subprocess, "run", Verify())
    assert SigntoolSigner("ab" * 20, "http://ts.example.invalid").sign(root, root / "skillhost.exe").state == "failed"


def test_a_secret_that_is_not_base64_is_an_environment_error_that_does_not_echo_it(
        bundle: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(subprocess, "run", FakeTools())
    signer = CodesignSigner(ID, Path("/app.plist"), keychain=("s3cr3t!not-base64", "p12pass"))
    with pytest.raises(QualificationError) as refused:
        signer.sign(bundle, bundle / "skillhost")
    assert refused.value.code is Code.ENVIRONMENT
    assert "s3cr3t" not in str(refused.value)
    assert "QUALIFY_CODESIGN_P12_BASE64" in str(refused.value)


def test_signing_material_comes_from_the_job_environment() -> None:
    mac = platform_signer_from_env("macos", {
        "QUALIFY_CODESIGN_IDENTITY": ID, "QUALIFY_CODESIGN_ENTITLEMENTS": "/app.plist",
        "QUALIFY_CODESIGN_INHERIT_ENTITLEMENTS": "/inherit.plist", "QUALIFY_CODESIGN_P12_BASE64": P12,
        "QUALIFY_CODESIGN_P12_PASSWORD": "p", "QUALIFY_NOTARY_KEY_FILE": "/k.p8", "QUALIFY_NOTARY_KEY_ID": "K",
        "QUALIFY_NOTARY_ISSUER": "I"})
    assert isinstance(mac, CodesignSigner)
    assert isinstance(mac._notarizer, NotarytoolNotarizer)
    without = platform_signer_from_env("macos", {"QUALIFY_CODESIGN_IDENTITY": ID,
                                                 "QUALIFY_CODESIGN_ENTITLEMENTS": "/app.plist",
                                                 "QUALIFY_NOTARY_KEY_ID": "K"})
    assert isinstance(without, CodesignSigner)
    assert isinstance(without._notarizer, NoNotarizer), "a partial API key notarizes nothing"


def test_macho_executables_are_told_from_libraries(tmp_path: Path) -> None:
    (tmp_path / "exe").write_bytes(MH_EXECUTE)
    (tmp_path / "lib").write_bytes(MH_DYLIB)
    fat = b"\xca\xfe\xba\xbe\x00\x00\x00\x01" + b"\x01\x00\x00\x07\x00\x00\x00\x03" + (64).to_bytes(4, "big")
    (tmp_path / "fat").write_bytes(fat + b"\x00" * (64 - len(fat)) + MH_EXECUTE)
    (tmp_path / "short").write_bytes(b"\xcf\xfa")
    assert [is_macho_executable(tmp_path / n) for n in ("exe", "lib", "fat", "short", "missing")] == [
        True, False, True, False, False]


NOTARIZED = {"outcome": "accepted", "submission_id": SUBMISSION, "status": "Accepted", "stapled": True,
             "detail": "accepted and stapled"}


@pytest.mark.parametrize(("state", "notarization", "accepted"), [
    ("notarized", NOTARIZED, ["notarized"]),
    ("notarized", {**NOTARIZED, "stapled": False, "detail": "accepted; stapling failed"}, ["notarized"]),
    ("signed", {"outcome": "skipped", "stapled": False, "detail": "skipped: no credentials"}, ["signed", "notarized"]),
    ("signed", {"outcome": "rejected", "submission_id": SUBMISSION, "status": "Invalid", "stapled": False,
                "detail": "notarytool: Invalid (exit 1)"}, ["signed"]),
], ids=["notarized and stapled", "notarized, not stapled", "signed, notarization skipped", "signed, rejected"])
def test_a_consistent_notarization_record_qualifies_where_the_policy_accepts_its_state(
        tmp_path: Path, state: str, notarization: dict[str, object], accepted: list[str]) -> None:
    from support.evidence_factory import PlatformSpec, make_evidence

    from desktop_qualify import qualify_cli

    def sign(pred: dict[str, Any]) -> None:
        pred["signature"].update(platform_signing_state=state, platform_signing_tool="codesign",
                                 notarization=notarization)

    evidence = make_evidence(tmp_path, platforms=[PlatformSpec("macos", edit=sign)], signing={"macos": accepted})
    assert qualify_cli.main(evidence.verify_argv()) == 0
