"""sigstore-conformance's bundle-verify cases through the conformance client, in process."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from desktop_qualify.qualify_sigstore_conformance import main
from support.conformance_cases import (
    CASES,
    UPSTREAM_EXCEPTIONS,
    artifact_of,
    case_folders,
    must_fail,
    verify_argv,
)


def _cases() -> list[object]:
    if not CASES.is_dir():
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"conformance vectors not present at {CASES}"))]
    params: list[object] = []
    for case in case_folders():
        marks = []
        if case.name in UPSTREAM_EXCEPTIONS:
            marks.append(pytest.mark.xfail(reason=UPSTREAM_EXCEPTIONS[case.name], strict=True))
        params.append(pytest.param(case, id=case.name, marks=marks))
    return params


@pytest.mark.parametrize("case", _cases())
def test_conformance_case(case: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status = main(verify_argv(case, str(artifact_of(case))))
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert "QE_INTERNAL" not in err
    if must_fail(case):
        assert status != 0, f"{case.name} must fail verification"
        assert err.startswith("QE_"), err
    else:
        assert status == 0, err


@pytest.mark.parametrize("case", _cases())
def test_conformance_case_by_digest(case: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The protocol's sha256:DIGEST form gives the same verdict as the file."""
    digest = hashlib.sha256(artifact_of(case).read_bytes()).hexdigest()
    status = main(verify_argv(case, f"sha256:{digest}"))
    err = capsys.readouterr().err
    assert (status != 0) is must_fail(case), err


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bundle = tmp_path / "b.json"
    bundle.write_text("{}")
    assert main(["verify-bundle", "--bundle", str(bundle), "--certificate-identity", "x", str(bundle)]) == 2
    assert main(["verify-bundle", "--bundle", str(bundle), "--certificate-identity", "x",
                 "--certificate-oidc-issuer", "y", "sha256:abc"]) == 2
    with pytest.raises(SystemExit) as info:
        main(["sign-bundle", "--bundle", str(bundle), str(bundle)])
    assert info.value.code == 2
    assert "QE_USAGE" in capsys.readouterr().err


def test_missing_artifact_is_a_rejection(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    status = main(["verify-bundle", "--bundle", str(tmp_path / "absent.json"), "--certificate-identity", "x",
                   "--certificate-oidc-issuer", "y", str(tmp_path / "absent.txt")])
    assert status == 1
    assert "QE_ARTIFACT_MISSING" in capsys.readouterr().err


def test_pinned_default_roots_are_used_offline(capsys: pytest.CaptureFixture[str]) -> None:
    if not CASES.is_dir():
        pytest.skip(f"conformance vectors not present at {CASES}")
    case = CASES / "happy-path-v0.3"
    assert main(verify_argv(case, str(CASES / "a.txt"))) == 0
    # The same production bundle does not verify under the pinned staging root.
    assert main([*verify_argv(case, str(CASES / "a.txt"))[:-1], "--staging", str(CASES / "a.txt")]) == 1
    assert "QE_SIGNATURE_INVALID" in capsys.readouterr().err
