"""`nox -s qualify-team-offline`'s script: a scratch team repository ends QUALIFIED, and its log names the
signer identities (this project's workflows at refs/tags/v...) and the team's source repository."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from support.github_team import BUILDER_REF, BUILDER_REPOSITORY, TEAM_REPOSITORY

pytestmark = [pytest.mark.slow, pytest.mark.skipif(sys.platform != "linux", reason="builds the linux package")]

REPO = Path(__file__).resolve().parents[2]
BUILDER = f"https://github.com/{BUILDER_REPOSITORY}/.github/workflows"


def test_the_offline_team_chain_is_qualified_and_names_both_identities(tmp_path: Path) -> None:
    out = tmp_path / "qualification-out-team"
    done = subprocess.run([sys.executable, str(REPO / "tools" / "team_offline.py"), "--out", str(out)],
                          capture_output=True, text=True, check=False, timeout=600)
    log = done.stdout
    assert done.returncode == 0, log + done.stderr
    assert f"linux signer identity {BUILDER}/produce-linux.yml@{BUILDER_REF}" in log
    assert f"aggregate signer identity {BUILDER}/aggregate.yml@{BUILDER_REF}" in log
    assert f"source: https://github.com/{TEAM_REPOSITORY} ref refs/heads/main" in log
    assert f"uses: {BUILDER_REPOSITORY}/.github/workflows/produce-linux.yml@{BUILDER_REF.removeprefix('refs/tags/')}" \
        in log
    assert log.rstrip().splitlines()[-2].startswith("team-offline: QUALIFIED")
    assert json.loads((out / "decision.json").read_text(encoding="utf-8"))["decision"] == "QUALIFIED"
    identity = json.loads((out / "signer-identity.json").read_text(encoding="utf-8"))
    assert identity["sourceRepositoryURI"] == f"https://github.com/{TEAM_REPOSITORY}"
    assert set(identity["subjectAlternativeNames"].values()) == {f"{BUILDER}/produce-linux.yml@{BUILDER_REF}",
                                                                 f"{BUILDER}/aggregate.yml@{BUILDER_REF}"}
