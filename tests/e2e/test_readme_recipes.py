"""The README's runnable recipes, run as written in a fresh clone after the set-up (issue 9).

The clone is the chain's repository (the committed app and policies, the keys
`qualify keygen` made in .qualify/) with the chain's output as
qualification-out/, and `qualify` on PATH as the README says. Each block marked
``<!-- readme: runnable -->`` must exit 0.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.chain import Chain
from support.readme import blocks

pytestmark = [pytest.mark.slow, pytest.mark.skipif(sys.platform != "linux", reason="the recipes use bash; the "
                                                   "chain fixture pins the linux platform")]
RUNNABLE = [b for b in blocks() if b.kind == "runnable"]


@pytest.fixture
def clone(chain: Chain, tmp_path: Path) -> Path:
    target = tmp_path / "clone"
    shutil.copytree(chain.source_repo, target, symlinks=True)
    (target / "qualification-out").symlink_to(chain.out, target_is_directory=True)
    return target


@pytest.mark.parametrize("block", RUNNABLE, ids=lambda b: f"{b.path.name}-line-{b.line}")
def test_runnable_readme_block_runs_in_a_fresh_clone(block, clone: Path) -> None:  # type: ignore[no-untyped-def]
    # `qualify` on PATH, as after `pip install .` in a virtual environment: this interpreter's scripts folder.
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", block.body], cwd=clone, env=env, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, f"{block.path.name} line {block.line}:\n{block.body}\n--\n{done.stdout}\n{done.stderr}"
    assert "Traceback" not in done.stdout + done.stderr
    if "qualify verify" in block.body or "qualify audit" in block.body:
        assert "QUALIFIED" in done.stdout
        assert "REJECTED" not in done.stdout
