"""The update journey on the real bundle: the last qualification, bundled, is the previous release.

The session's chain (policies/local.toml) is bundled as an auditor receives it; the same
repository then runs the producer under policies/local-update.toml, which requires the
update journey, with that bundle and artifact as the previous release. The run ends
QUALIFIED; a previous release that does not audit is refused before the job starts.
"""

from __future__ import annotations

import json
import shutil
import sys
import zipfile
from pathlib import Path

import pytest
from support.chain import Chain, qualify

pytestmark = [pytest.mark.slow, pytest.mark.skipif(sys.platform != "linux", reason="the chain runs per host; "
                                                   "this test pins the linux platform")]


def _previous(chain: Chain, tmp_path: Path) -> tuple[Path, Path]:
    bundle = tmp_path / "previous.qualify-bundle.zip"
    made = qualify("bundle", "--policy", chain.policy, "--evidence", chain.evidence, "--out", bundle)
    assert made.returncode == 0, made.stderr
    folder = tmp_path / "previous-artifacts"
    folder.mkdir()
    artifact = folder / chain.artifacts[0].name
    shutil.copyfile(chain.artifacts[0], artifact)
    return bundle, artifact


def test_update_journey_from_the_last_qualification_ends_qualified(chain: Chain, tmp_path: Path) -> None:
    bundle, artifact = _previous(chain, tmp_path)
    policy = chain.source_repo / "policies" / "local-update.toml"
    out = tmp_path / "out"
    produced = qualify("produce", "--policy", policy, "--platform", "linux", "--out", out, "--run-id", "e2e-update",
                       "--previous-bundle", bundle, "--previous-artifact", artifact)
    assert produced.returncode == 0, f"{produced.stdout}\n{produced.stderr}"
    assert "[produce linux] update journey" in produced.stderr
    record = json.loads((out / "records" / "linux" / "update.json").read_text())
    assert record["passed"] is True
    assert record["failed_steps"] == []
    written = record["write_state"]["report"]["state_sha256"]
    for step in ("upgrade_check", "rollback_check", "downgrade_check"):
        assert record[step]["report"]["state_sha256"] == written
    assert record["upgrade_check"]["report"]["build_sha"] == chain.sha
    aggregated = qualify("aggregate", "--policy", policy, "--evidence", out / "evidence", "--out", out / "evidence")
    assert aggregated.returncode == 0, aggregated.stderr
    verified = qualify("verify", "--policy", policy, "--evidence", out / "evidence",
                       *[arg for path in sorted((out / "artifacts").iterdir()) for arg in ("--artifact", path)])
    assert verified.returncode == 0, verified.stdout
    assert "QUALIFIED" in verified.stdout
    # The same evidence under the default policy, which asks for no update journey, is refused.
    plain = qualify("verify", "--policy", chain.policy, "--evidence", out / "evidence")
    assert plain.returncode == 1
    assert "QE_UPDATE_FAILED" in plain.stdout


def test_a_previous_release_that_does_not_audit_is_refused_before_the_job(chain: Chain, tmp_path: Path) -> None:
    bundle, artifact = _previous(chain, tmp_path)
    # One byte of the bundled platform statement changed: its signature no longer verifies.
    tampered = tmp_path / "tampered.qualify-bundle.zip"
    with zipfile.ZipFile(bundle) as src, zipfile.ZipFile(tampered, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename.endswith("platform-linux.dsse.json"):
                data = data.replace(b'"payload": "', b'"payload": "A', 1) if b'"payload": "' in data else \
                    data.replace(b'"payload":"', b'"payload":"A', 1)
            dst.writestr(info, data)
    policy = chain.source_repo / "policies" / "local-update.toml"
    out = tmp_path / "out"
    refused = qualify("produce", "--policy", policy, "--platform", "linux", "--out", out, "--run-id", "e2e-upd-2",
                      "--previous-bundle", tampered, "--previous-artifact", artifact)
    assert refused.returncode == 1, refused.stderr
    assert "QE_PREVIOUS_RELEASE_UNQUALIFIED" in refused.stderr + refused.stdout
    assert not out.exists()
    # The right bundle with another artifact: not the audited bytes.
    other = tmp_path / "other" / artifact.name
    other.parent.mkdir()
    other.write_bytes(artifact.read_bytes() + b"\0")
    refused = qualify("produce", "--policy", policy, "--platform", "linux", "--out", out, "--run-id", "e2e-upd-3",
                      "--previous-bundle", bundle, "--previous-artifact", other)
    assert refused.returncode == 1
    assert "QE_PREVIOUS_RELEASE_UNQUALIFIED" in refused.stderr + refused.stdout
    assert not out.exists()
