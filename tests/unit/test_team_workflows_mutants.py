"""A team's caller workflows and policy identity, written in-process: each refusal by its code, message and hint.

``caller_workflow`` fills in the release tag (and the builder repository) of the workflows ``qualify init`` commits;
``policy_identity`` writes the ``[producer]`` to ``[verifier]`` sections of the team's policy. These tests hold every
refusal to ``Code.USAGE``, to a message that quotes the refused value (cut at its exact bound) and says what was
expected, and to the release-tag hint; and they parse the TOML ``policy_identity`` writes to check the builder's
``commit`` pin is written exactly when a commit is given. Written for the mutants of ``qualify_trust.team_workflows``
that survived the suite (docs/mutation.md).
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from typing import Any

import pytest
from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.qualify_trust.team_workflows import (
    BUILDER_REPOSITORY,
    SIGNERS,
    TEAM_QUALIFY_PATH,
    TEAM_RELEASE_PATH,
    caller_workflow,
    policy_identity,
)

TAG = "v1.4.2"
COMMIT = "a" * 40
ROOT = "policies/trusted_root.json"
ROOT_SHA256 = "0" * 64
TEAM = "acme/desktop-app"
TAG_HINT = "a team calls the reusable workflows at a release tag, never a branch"
REPOSITORY = "a GitHub repository OWNER/REPO"
# 85 characters no OWNER/REPO, path or SHA-256 pattern accepts (a space), so a message quotes only the first 80.
LONG = "bad value " * 8 + "12345"


def _refused(call: Callable[[], object]) -> QualificationError:
    with pytest.raises(QualificationError) as caught:
        call()
    assert caught.value.code == Code.USAGE
    return caught.value


def _identity(**changes: Any) -> str:
    args: dict[str, Any] = {"repository": TEAM, "tag": TAG, "commit": COMMIT, "trusted_root": ROOT,
                            "trusted_root_sha256": ROOT_SHA256, **changes}
    repository, tag = args.pop("repository"), args.pop("tag")
    return policy_identity(repository, tag, **args)


# -- caller_workflow -------------------------------------------------------------------------------------------


def test_a_branch_is_refused_as_no_release_tag_with_the_hint_to_call_a_release_tag() -> None:
    error = _refused(lambda: caller_workflow("main"))
    assert error.message == "'main' is not a release tag vX.Y.Z"
    assert error.hint == TAG_HINT
    assert "hint: " + TAG_HINT in error.diagnostics()


def test_a_refused_tag_is_quoted_up_to_its_first_40_characters_only() -> None:
    tag = "refs/heads/" + "x" * 29 + "!#-tail"
    error = _refused(lambda: caller_workflow(tag))
    assert error.message == f"{tag[:40]!r} is not a release tag vX.Y.Z"
    assert "!" not in error.message


def test_a_path_with_no_caller_workflow_is_refused_naming_the_path() -> None:
    error = _refused(lambda: caller_workflow(TAG, ".github/workflows/deploy.yml"))
    assert error.message == "no caller workflow for '.github/workflows/deploy.yml'"


def test_a_refused_path_is_quoted_up_to_its_first_80_characters_only() -> None:
    path = ".github/workflows/" + "p" * 62 + "!#.yml"
    error = _refused(lambda: caller_workflow(TAG, path))
    assert error.message == f"no caller workflow for {path[:80]!r}"
    assert "!" not in error.message


def test_a_builder_that_is_not_owner_repo_is_refused_saying_what_a_repository_is() -> None:
    error = _refused(lambda: caller_workflow(TAG, TEAM_RELEASE_PATH, builder="mallory"))
    assert error.message == f"'mallory' is not {REPOSITORY}"
    assert str(error) == f"{Code.USAGE.value}: 'mallory' is not {REPOSITORY}"


def test_a_refused_builder_is_quoted_up_to_its_first_80_characters_only() -> None:
    error = _refused(lambda: caller_workflow(TAG, builder=LONG))
    assert error.message == f"{LONG[:80]!r} is not {REPOSITORY}"
    assert "12345" not in error.message


def test_a_fork_replaces_the_builder_on_every_uses_line_at_the_tag() -> None:
    text = caller_workflow(TAG, TEAM_QUALIFY_PATH, builder="fork/dq")
    uses = [line.split("uses: ", 1)[1].split(" ", 1)[0] for line in text.splitlines() if "uses: " in line]
    assert uses == [f"fork/dq/{path}@{TAG}" for path in SIGNERS.values()]
    assert BUILDER_REPOSITORY + "/" not in text


# -- policy_identity -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("field", "value", "what"), [
    ("repository", "acme", REPOSITORY),
    ("builder", "desktop-qualify", REPOSITORY),
    ("tag", "v1.2", "a release tag vX.Y.Z"),
    ("trusted_root", "trusted root.json", "a relative path to the trusted root"),
    ("trusted_root_sha256", "A" * 64, "a lowercase SHA-256"),
    ("commit", "B" * 40, "a lowercase hex commit"),
])
def test_each_identity_field_is_refused_by_its_own_message(field: str, value: str, what: str) -> None:
    error = _refused(lambda: _identity(**{field: value}))
    assert error.message == f"{value[:80]!r} is not {what}"


@pytest.mark.parametrize("field", ["repository", "builder", "trusted_root", "trusted_root_sha256", "commit"])
def test_a_refused_identity_field_is_quoted_up_to_its_first_80_characters_only(field: str) -> None:
    error = _refused(lambda: _identity(**{field: LONG}))
    assert error.message.startswith(f"{LONG[:80]!r} is not ")
    assert "12345" not in error.message


def test_the_builder_is_pinned_at_the_tags_commit_when_one_is_given() -> None:
    policy = tomllib.loads(_identity(builder="fork/dq"))
    assert policy["producer"]["builder"] == {"repository": "fork/dq", "ref": f"refs/tags/{TAG}", "commit": COMMIT}
    assert policy["producer"]["repository"] == TEAM
    assert policy["producer"]["signers"] == SIGNERS
    assert policy["trust"]["trusted_root"] == ROOT
    assert policy["trust"]["trusted_root_sha256"] == ROOT_SHA256


def test_without_a_commit_the_builder_has_no_commit_pin() -> None:
    text = _identity(commit=None)
    policy = tomllib.loads(text)
    assert policy["producer"]["builder"] == {"repository": BUILDER_REPOSITORY, "ref": f"refs/tags/{TAG}"}
    assert f'ref = "refs/tags/{TAG}"\n\n[trust]' in text
    assert set(policy) == {"producer", "trust", "verifier"}
