"""The policy loader's host facts, pinned-file lookup and platform refusals, exactly.

``qualify_policy._load`` decides which platform "host" means, how this machine's architecture is named in evidence,
where a trust file pinned by digest is looked up (beside the policy, else the copy shipped with the tool, never for a
path that climbs out or is absolute, nor when the policy belongs to a checkout given with ``--root``), and what a
required platform the policy cannot qualify is told. These tests pin each of those outcomes and messages. Written for
the mutants of ``qualify_policy._load`` that survived the suite (docs/mutation.md).
"""

from __future__ import annotations

import re
import sys
import tomllib
from importlib.resources import files
from pathlib import Path

import pytest
from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.qualify_policy import _load, host_arch, host_platform, load_policy

REPO = Path(__file__).resolve().parents[2]
LOCAL = (REPO / "policies" / "local.toml").read_text(encoding="utf-8")
SHIPPED_ROOT = "sigstore/trusted_root.production.json"


@pytest.mark.parametrize(("sys_platform", "expected"), [("linux", "linux"), ("linux2", "linux"), ("darwin", "macos"),
                                                        ("win32", "windows"), ("cygwin", "windows")])
def test_the_host_platform_in_the_evidence_s_words(sys_platform: str, expected: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", sys_platform)
    assert host_platform() == expected


def test_an_unsupported_host_names_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "sunos5")
    with pytest.raises(QualificationError) as caught:
        host_platform()
    assert (caught.value.code, caught.value.message) == (Code.ENVIRONMENT, "unsupported host platform 'sunos5'")


@pytest.mark.parametrize(("machine", "expected"), [
    ("x86_64", "x86_64"), ("AMD64", "x86_64"), ("amd64", "x86_64"), ("aarch64", "arm64"), ("AARCH64", "arm64"),
    ("ARM64", "arm64"), ("riscv64", "riscv64"), ("", "unknown")])
def test_the_host_architecture_with_its_aliases_merged(machine: str, expected: str,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_load._platform, "machine", lambda: machine)
    assert host_arch() == expected


def _write(folder: Path, text: str = LOCAL) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "policy.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_policy_without_isolation_requires_no_layers(tmp_path: Path) -> None:
    text = LOCAL[:LOCAL.index("\n[isolation]\n") + 1] + LOCAL[LOCAL.index("\n[signing]\n") + 1:]
    # Without [isolation] no journey step may name a layer.
    text = re.sub(r", layer = \{[^}]*\}", "", text)
    policy = load_policy(_write(tmp_path, text))
    assert policy.isolation_layers("linux") is None
    assert load_policy(REPO / "policies" / "local.toml").isolation_layers("linux")


def test_a_pinned_file_beside_a_policy_copied_out_is_the_shipped_copy(tmp_path: Path) -> None:
    policy = load_policy(_write(tmp_path / "copied"))
    shipped = files("desktop_qualify.policies").joinpath(*SHIPPED_ROOT.split("/"))
    assert isinstance(shipped, Path)
    assert shipped.is_file()
    assert policy.resolve_pinned(SHIPPED_ROOT) == shipped


def test_a_pinned_file_present_beside_the_policy_is_taken_from_there(tmp_path: Path) -> None:
    policy = load_policy(_write(tmp_path / "copied"))
    (tmp_path / "copied" / "sigstore").mkdir()
    (tmp_path / "copied" / SHIPPED_ROOT).write_text("{}", encoding="utf-8")
    assert policy.resolve_pinned(SHIPPED_ROOT) == (tmp_path / "copied" / SHIPPED_ROOT).resolve()


@pytest.mark.parametrize("relative", ["sigstore/no-such-root.json", f"../policies/{SHIPPED_ROOT}",
                                      f"sigstore/../{SHIPPED_ROOT}"], ids=["not-shipped", "climbs-out", "climbs-in"])
def test_a_pinned_file_never_shipped_or_named_through_dotdot_stays_where_the_policy_says(
        relative: str, tmp_path: Path) -> None:
    policy = load_policy(_write(tmp_path / "copied"))
    assert policy.resolve_pinned(relative) == (tmp_path / "copied" / relative).resolve()


def test_an_absolute_pinned_path_is_never_looked_up_in_the_shipped_copy(tmp_path: Path) -> None:
    policy = load_policy(_write(tmp_path / "copied"))
    absolute = f"/{SHIPPED_ROOT}"
    assert policy.resolve_pinned(absolute) == Path(absolute).resolve()


def test_a_policy_of_a_given_checkout_resolves_pinned_files_there_only(tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"
    policy = load_policy(_write(tmp_path / "copied"), root=checkout)
    assert policy.resolve_pinned(SHIPPED_ROOT) == (checkout / "policies" / SHIPPED_ROOT).resolve()


def test_a_required_platform_with_neither_output_nor_installer_names_both(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "linux")
    text = LOCAL.replace('linux = "skillhost-*-linux.tar.gz"\n', "").replace(
        'linux = { kind = "archive", executable = "skillhost/skillhost" }\n', "")
    path = _write(tmp_path, text)
    with pytest.raises(QualificationError) as caught:
        load_policy(path)
    assert caught.value.code is Code.POLICY_INVALID
    assert caught.value.message == (f"policy {path}: platform 'linux' is required, but the policy has no "
                                    "[app.build.outputs] linux and no [app.install] linux")


def _refusal(path: Path) -> str:
    with pytest.raises(QualificationError) as caught:
        load_policy(path)
    assert caught.value.code is Code.POLICY_INVALID
    return caught.value.message


def test_an_absent_policy_is_named_as_the_policy(tmp_path: Path) -> None:
    absent = tmp_path / "absent.toml"
    assert _refusal(absent).startswith(f"policy {absent}")


def test_a_policy_over_its_cap_is_named_as_the_policy(tmp_path: Path) -> None:
    big = tmp_path / "big.toml"
    big.write_bytes(b"#" * (64 * 1024 + 1))
    assert _refusal(big).startswith(f"policy {big}")


def test_a_policy_that_is_not_toml_is_named_as_the_policy(tmp_path: Path) -> None:
    path = _write(tmp_path, "version = = 1\n")
    assert _refusal(path).startswith(f"policy {path}: invalid TOML (")


def test_invalid_toml_is_refused_with_the_parser_s_own_words(tmp_path: Path) -> None:
    text = "version = = 1\n"
    with pytest.raises(tomllib.TOMLDecodeError) as parsed:
        tomllib.loads(text)
    path = _write(tmp_path, text)
    assert _refusal(path) == f"policy {path}: invalid TOML ({parsed.value})"


def test_a_policy_nested_past_the_parser_s_depth_is_refused_as_such(tmp_path: Path) -> None:
    path = _write(tmp_path, "a = " + "[" * 20000 + "]" * 20000 + "\n")
    assert _refusal(path) == f"policy {path}: nested too deeply"


def test_a_policy_the_schema_refuses_is_named_as_the_policy(tmp_path: Path) -> None:
    path = _write(tmp_path, LOCAL.replace("version = 2", "version = 1"))
    assert _refusal(path).startswith(f"policy {path}: ")


def test_a_platform_required_twice_is_named_with_the_policy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "linux")
    path = _write(tmp_path, LOCAL.replace('required = ["host"]', 'required = ["host", "linux"]'))
    assert _refusal(path) == f"policy {path}: platform 'linux' is required twice"
