"""The harness caps the size of any file written under mutmut, so a mutant that makes a copy loop endless is killed
by the cap rather than filling the disk (docs/mutation.md)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from mutation import mutants

pytestmark = pytest.mark.skipif(os.name != "posix", reason="RLIMIT_FSIZE is POSIX")


def test_mutmut_and_its_children_run_under_the_file_size_cap() -> None:
    probe = "import resource; print(resource.getrlimit(resource.RLIMIT_FSIZE)[0])"
    shown = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                           preexec_fn=mutants._cap_file_size)  # the hook mutants.mutmut gives its child
    assert int(shown.stdout) == mutants.FILE_SIZE_CAP == 16 << 30



def test_the_cap_leaves_room_for_a_sparse_candidate_past_the_default_candidate_cap() -> None:
    # test_regular_files.py refuses a sparse candidate one byte past the default cap; under a smaller file size cap
    # its truncate fails, mutmut's clean run fails and no mutant runs at all.
    from desktop_qualify.qualify_policy._model import DEFAULT_MAX_CANDIDATE_BYTES

    assert mutants.FILE_SIZE_CAP > DEFAULT_MAX_CANDIDATE_BYTES + 1
