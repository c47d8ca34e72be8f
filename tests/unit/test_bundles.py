"""`qualify bundle` and auditing bundles: a run packed for auditors, opened only when every byte is accounted for.

Each hostile bundle is the good one rewritten member by member, the way an
attacker with the archive (and, for the anchoring rows, with keys of their own)
would rewrite it.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import stat
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.qualify_bundle import open_bundle
from support.evidence_factory import Evidence, make_evidence

Members = dict[str, bytes]
REG = (stat.S_IFREG | 0o644) << 16


def _bundle(tmp_path: Path, qualify: Any, **kwargs: Any) -> tuple[Evidence, Path]:
    ev = make_evidence(tmp_path / "run", committed_layout=True, **kwargs)
    out = tmp_path / "run.qualify-bundle.zip"
    done = qualify(["bundle", "--policy", str(ev.policy_path), "--evidence", str(ev.evidence_dir), "--out", str(out)])
    assert done.status == 0, done.text
    return ev, out


def _members(bundle: Path) -> Members:
    with zipfile.ZipFile(bundle) as archive:
        return {info.filename: archive.read(info) for info in archive.infolist()}


def _write(path: Path, members: Members, attrs: dict[str, int] | None = None) -> Path:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = (attrs or {}).get(name, REG)
            archive.writestr(info, data)
    return path


def _manifest_for(members: Members) -> Members:
    """The manifest rewritten to account for the members as they now are: a manifest that tells the truth."""
    manifest = json.loads(members["manifest.json"])
    files = {k: v for k, v in members.items() if k != "manifest.json"}
    manifest["files"] = [{"path": k, "sha256": hashlib.sha256(v).hexdigest(), "size": len(v)}
                         for k, v in sorted(files.items())]
    return {**members, "manifest.json": json.dumps(manifest).encode()}


def _audit(qualify: Any, ev: Evidence, bundle: Path, *extra: str) -> Any:
    return qualify(["audit", "--policy", str(ev.policy_path), "--bundle", str(bundle), *extra])


def test_a_bundle_of_a_qualified_run_audits_offline_to_a_pass(tmp_path: Path, qualify: Any) -> None:
    ev, bundle = _bundle(tmp_path, qualify)
    assert sorted(_members(bundle)) == ["evidence/aggregate.dsse.json", "evidence/platform-linux.dsse.json",
                                        "evidence/provenance-linux.dsse.json", "manifest.json", "policies/local.toml",
                                        "trust/keyring.json"]
    report_path = tmp_path / "report.json"
    done = _audit(qualify, ev, bundle, "--json", str(report_path))
    assert done.status == 0, done.text
    report = json.loads(report_path.read_text())
    assert report["decision"] == "QUALIFIED"
    assert report["totals"]["qualified"] == 1
    [run] = report["runs"]
    assert run["evidence"] == str(bundle)
    assert run["identity"]["sha"] == ev.sha
    # The signers' keyring is named where the bundle holds it, not where this audit happened to unpack it.
    keyrings = {signer["keyring"] for signer in run["decision"]["signers"]}
    assert keyrings == {f"{bundle}:trust/keyring.json"}


def test_no_private_key_is_ever_bundled(tmp_path: Path, qualify: Any) -> None:
    ev, bundle = _bundle(tmp_path, qualify)
    private = {ev.keys.platform_path.read_bytes(), ev.keys.aggregate_path.read_bytes()}
    assert not private & set(_members(bundle).values())
    assert not any(b"PRIVATE KEY" in data for data in _members(bundle).values())


# Each row: what the attacker does to the members, and the code the audit must give.
Tamper = Callable[[Members], tuple[Members, dict[str, int]]]


def _plain(edit: Callable[[Members], Members]) -> Tamper:
    return lambda m: (edit(dict(m)), {})


def _flip(data: bytes) -> bytes:
    return data[:-2] + bytes([data[-2] ^ 1]) + data[-1:]


def _altered_statement(data: bytes) -> bytes:
    """The envelope with one claim changed in its payload and the signature kept."""
    envelope = json.loads(data)
    body = base64.b64decode(envelope["payload"]).replace(b'"passed":true', b'"passed":false', 1)
    envelope["payload"] = base64.b64encode(body).decode()
    return json.dumps(envelope).encode()


def _rename(members: Members, old: str, new: str) -> Members:
    return {new if k == old else k: v for k, v in members.items()}


TAMPERING: dict[str, tuple[Tamper, Code]] = {
    "member added": (_plain(lambda m: {**m, "evidence/platform-macos.dsse.json": b"{}"}),
                     Code.BUNDLE_MANIFEST_MISMATCH),
    "member removed": (_plain(lambda m: {k: v for k, v in m.items() if k != "evidence/aggregate.dsse.json"}),
                       Code.BUNDLE_MANIFEST_MISMATCH),
    "member renamed": (_plain(lambda m: _rename(m, "evidence/platform-linux.dsse.json",
                                                "evidence/platform-macos.dsse.json")), Code.BUNDLE_MANIFEST_MISMATCH),
    "member altered": (_plain(lambda m: {**m, "evidence/platform-linux.dsse.json":
                                         _flip(m["evidence/platform-linux.dsse.json"])}),
                       Code.BUNDLE_MANIFEST_MISMATCH),
    "policy altered": (_plain(lambda m: {**m, "policies/local.toml": m["policies/local.toml"] + b"\n# more\n"}),
                       Code.BUNDLE_MANIFEST_MISMATCH),
    "path escapes": (_plain(lambda m: {**m, "../escape.txt": b"x"}), Code.BUNDLE_INVALID),
    "absolute path": (_plain(lambda m: {**m, "/etc/escape": b"x"}), Code.BUNDLE_INVALID),
    "backslash path": (_plain(lambda m: {**m, "evidence\\..\\x": b"x"}), Code.BUNDLE_INVALID),
    "a link": (lambda m: ({**m, "evidence/link": b"/etc/passwd"},
                          {"evidence/link": (stat.S_IFLNK | 0o777) << 16}), Code.BUNDLE_INVALID),
    "a folder": (lambda m: ({**m, "evidence/sub/": b""}, {"evidence/sub/": (stat.S_IFDIR | 0o755) << 16 | 0x10}),
                 Code.BUNDLE_INVALID),
    "case alias": (_plain(lambda m: {**m, "Evidence/aggregate.dsse.json": b"{}"}), Code.BUNDLE_INVALID),
    "many tiny members": (_plain(lambda m: {**m, **{f"evidence/x{i}": b"" for i in range(40)}}),
                          Code.BUNDLE_INVALID),
    "one huge member": (_plain(lambda m: {**m, "evidence/huge": b"\0" * (5 * 1024 * 1024)}), Code.BUNDLE_INVALID),
    "no manifest": (_plain(lambda m: {k: v for k, v in m.items() if k != "manifest.json"}), Code.BUNDLE_INVALID),
    "manifest not json": (_plain(lambda m: {**m, "manifest.json": b"{"}), Code.BUNDLE_INVALID),
    # A manifest that lies: it accounts for an added member, but that member is neither policy, trust nor evidence.
    "manifest lies about roles": (_plain(lambda m: _manifest_for({**m, "notes.txt": b"trust me"})),
                                  Code.BUNDLE_MANIFEST_MISMATCH),
    # The manifest rewritten to match an altered statement: the bundle opens, the signature does not hold.
    "manifest re-made over an altered statement": (
        _plain(lambda m: _manifest_for({**m, "evidence/platform-linux.dsse.json":
                                        _altered_statement(m["evidence/platform-linux.dsse.json"])})),
        Code.SIGNATURE_INVALID),
}


@pytest.mark.parametrize("row", sorted(TAMPERING))
def test_a_tampered_bundle_is_refused_with_a_stable_code(row: str, tmp_path: Path, qualify: Any) -> None:
    ev, bundle = _bundle(tmp_path, qualify)
    tamper, code = TAMPERING[row]
    members, attrs = tamper(_members(bundle))
    hostile = _write(tmp_path / "hostile.qualify-bundle.zip", members, attrs)
    report_path = tmp_path / "report.json"
    done = _audit(qualify, ev, hostile, "--json", str(report_path))
    assert done.status == 1, done.text
    assert "Traceback" not in done.text
    report = json.loads(report_path.read_text())
    codes = [r["code"] for run in report["runs"] for r in run["decision"]["reasons"]]
    assert code.value in codes, (row, codes)


def test_a_refused_bundle_leaves_nothing_extracted(tmp_path: Path, qualify: Any) -> None:
    _, bundle = _bundle(tmp_path, qualify)
    hostile = _write(tmp_path / "hostile.qualify-bundle.zip", {**_members(bundle), "extra": b"x"})
    workspace = tmp_path / "work"
    with pytest.raises(QualificationError) as caught:
        open_bundle(hostile, workspace)
    assert caught.value.code == Code.BUNDLE_MANIFEST_MISMATCH
    assert not workspace.exists() or list(workspace.iterdir()) == []


def test_an_opened_bundle_is_removed_when_closed(tmp_path: Path, qualify: Any) -> None:
    _, bundle = _bundle(tmp_path, qualify)
    with open_bundle(bundle, tmp_path / "work") as opened:
        assert opened.policy_path.is_file()
        assert stat.S_IMODE(opened.root.stat().st_mode) == 0o700
    assert not opened.root.exists()


def test_one_corrupt_bundle_never_stops_the_others(tmp_path: Path, qualify: Any) -> None:
    ev, bundle = _bundle(tmp_path, qualify)
    corrupt = tmp_path / "corrupt.qualify-bundle.zip"
    corrupt.write_bytes(b"PK\x03\x04 not really")
    report_path = tmp_path / "report.json"
    done = qualify(["audit", "--policy", str(ev.policy_path), "--bundle", str(corrupt), str(bundle),
                    "--json", str(report_path)])
    assert done.status == 1
    report = json.loads(report_path.read_text())
    by_source = {Path(run["evidence"]).name: run["decision"] for run in report["runs"]}
    assert by_source[bundle.name]["decision"] == "QUALIFIED"
    assert by_source[corrupt.name]["decision"] == "REJECTED"
    assert by_source[corrupt.name]["reasons"][0]["code"] == Code.BUNDLE_INVALID.value


# -- anchoring: a bundle made with someone else's keys or policy proves nothing to this auditor ----------------

def test_a_bundle_signed_with_other_keys_is_unanchored(tmp_path: Path, qualify: Any) -> None:
    ev, _ = _bundle(tmp_path / "mine", qualify)
    # The attacker makes a complete, valid run with keys of their own and bundles it.
    _, theirs = _bundle(tmp_path / "theirs", qualify)
    done = _audit(qualify, ev, theirs)
    assert done.status == 1
    assert Code.BUNDLE_UNANCHORED.value in done.text


def test_a_bundle_whose_policy_is_not_the_auditors_is_unanchored(tmp_path: Path, qualify: Any) -> None:
    ev, bundle = _bundle(tmp_path, qualify)
    auditor = tmp_path / "auditor" / "policies" / "local.toml"
    auditor.parent.mkdir(parents=True)
    auditor.write_bytes(ev.policy_path.read_bytes().replace(b'name = "local"', b'name = "stricter"'))
    (tmp_path / "auditor" / "trust").mkdir()
    (tmp_path / "auditor" / "trust" / "keyring.json").write_bytes(ev.keys.keyring.read_bytes())
    done = qualify(["audit", "--policy", str(auditor), "--bundle", str(bundle)])
    assert done.status == 1
    assert Code.BUNDLE_UNANCHORED.value in done.text


def test_the_bundle_name_says_what_it_is(tmp_path: Path, qualify: Any) -> None:
    ev = make_evidence(tmp_path / "run", committed_layout=True)
    done = qualify(["bundle", "--policy", str(ev.policy_path), "--evidence", str(ev.evidence_dir),
                    "--out", str(tmp_path / "run.zip")])
    assert done.status == 2
    assert Code.USAGE.value in done.text


def test_an_absolute_trust_path_cannot_travel_in_a_bundle(tmp_path: Path, qualify: Any) -> None:
    ev = make_evidence(tmp_path / "run")  # the factory's default policy names its keyring by absolute path
    done = qualify(["bundle", "--policy", str(ev.policy_path), "--evidence", str(ev.evidence_dir),
                    "--out", str(tmp_path / "run.qualify-bundle.zip")])
    assert done.status == 2
    assert Code.POLICY_INVALID.value in done.text
    assert not (tmp_path / "run.qualify-bundle.zip").exists()


def test_bundle_bytes_carry_nothing_but_the_manifest_and_its_files(tmp_path: Path, qualify: Any) -> None:
    _, bundle = _bundle(tmp_path, qualify)
    members = _members(bundle)
    manifest = json.loads(members.pop("manifest.json"))
    assert {f["path"] for f in manifest["files"]} == set(members)
    assert io.BytesIO(bundle.read_bytes()).getbuffer().nbytes < 64 * 1024
