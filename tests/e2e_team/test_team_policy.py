"""A team's policy: [producer.builder] pins desktop-qualify's workflows at a release tag; what the loader refuses."""

from __future__ import annotations

from pathlib import Path

import pytest
from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.qualify_policy import load_policy
from desktop_qualify.qualify_trust._sigstore_expected import ExpectedWorkflow
from support.github_team import BUILDER_COMMIT, BUILDER_REF, TEAM_APP, team_policy_text

ROOT_SHA = "0" * 64


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "release.toml"
    path.write_text(text, encoding="utf-8")
    return path


def _team(**kwargs: object) -> str:
    return team_policy_text("trusted_root.json", ROOT_SHA, app_source=TEAM_APP.as_posix(), **kwargs)  # type: ignore[arg-type]


def test_the_team_policy_pins_the_builder_at_the_tag_and_the_teams_source(tmp_path: Path) -> None:
    expected = ExpectedWorkflow.from_policy(load_policy(_write(tmp_path, _team())))
    assert expected.signer_uri("linux") == \
        f"https://github.com/desktop-qualify/desktop-qualify/.github/workflows/produce-linux.yml@{BUILDER_REF}"
    assert expected.signer_uri("aggregate").endswith(f"/aggregate.yml@{BUILDER_REF}")
    assert expected.workflow_uri == "https://github.com/acme-team/notes/.github/workflows/qualify.yml@refs/heads/main"
    assert (expected.repository_uri, expected.builder_commit) == ("https://github.com/acme-team/notes", BUILDER_COMMIT)


@pytest.mark.parametrize(("edit", "why"), [
    # A branch moves under the team without its review: only a release tag.
    (lambda t: t.replace(f'ref = "{BUILDER_REF}"', 'ref = "refs/heads/main"', 1), "builder.ref"),
    (lambda t: t.replace(f'ref = "{BUILDER_REF}"', 'ref = "refs/tags/v1.2.3-rc1"', 1), "builder.ref"),
    (lambda t: t.replace(f'commit = "{BUILDER_COMMIT}"', 'commit = "main"'), "builder.commit"),
    # The gate's certificate names the team's caller (.18) and the builder's gate (.9): both are needed.
    (lambda t: t.replace('caller = ".github/workflows/release.yml"\n', ""), "caller is required"),
])
def test_a_team_policy_that_pins_nothing_exact_is_refused(tmp_path: Path, edit, why: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(QualificationError) as refused:
        load_policy(_write(tmp_path, edit(_team())))
    assert refused.value.code == Code.POLICY_INVALID
    assert why in str(refused.value)


def test_the_commit_pin_is_optional(tmp_path: Path) -> None:
    expected = ExpectedWorkflow.from_policy(load_policy(_write(tmp_path, _team(builder_commit=None))))
    assert (expected.builder_ref, expected.builder_commit) == (BUILDER_REF, None)


@pytest.mark.parametrize("bad", [
    {"repository": "acme-team/notes\n[trust]"}, {"repository": "notes"}, {"tag": "main"}, {"tag": "v1.2.3.4"},
    {"commit": "HEAD"}, {"trusted_root": 'root.json"\nmode = "ed25519'}, {"trusted_root_sha256": "0" * 63},
])
def test_the_policy_identity_is_written_for_exact_values_only(bad: dict[str, str]) -> None:
    """What `qualify init` writes into a team's policy: nothing that could end a TOML string or pin nothing."""
    from desktop_qualify.qualify_trust.team_workflows import policy_identity

    values = {"repository": "acme-team/notes", "tag": "v1.2.3", "commit": "a" * 40, "trusted_root": "root.json",
              "trusted_root_sha256": "0" * 64, **bad}
    with pytest.raises(QualificationError) as refused:
        policy_identity(values.pop("repository"), values.pop("tag"), **values)
    assert refused.value.code == Code.USAGE
