"""The update journey under the verifier: a passing record qualifies, under either downgrade rule.

Its refusals are rows of the hostile corpus (tests/corpus/corpus_update.py), each a spoiled copy of this
record, re-signed and re-bound, naming the code it must produce. The producer's side of the same rules
(the real journey on the real bundle) is tests/e2e/test_update_chain.py.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from support.cli import CliRun
from support.update_evidence import evidence


def test_a_passing_update_journey_qualifies(tmp_path: Path, qualify: Callable[[list[str]], CliRun]) -> None:
    for downgrade in ("refuse", "allow"):
        ev = evidence(tmp_path / downgrade, downgrade=downgrade)
        done = qualify(ev.verify_argv())
        assert done.status == 0, done.text
        assert "QUALIFIED" in done.out


