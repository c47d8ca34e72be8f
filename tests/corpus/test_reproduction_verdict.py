"""The verifier's view of a second build: a reproduced build under a policy that requires it qualifies."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from corpus_local import one, reproduced_as, reproducible_required


def test_a_required_reproduction_whose_digests_agree_qualifies(tmp_path: Path, qualify: Any) -> None:
    result = qualify(reproducible_required(reproduced_as())(tmp_path))
    assert result.status == 0, result.text


def test_a_second_build_that_differs_is_only_information_where_the_policy_does_not_require_it(
        tmp_path: Path, qualify: Any) -> None:
    result = qualify(one(reproduced_as(second="e" * 64, reproduced=False))(tmp_path))
    assert result.status == 0, result.text
