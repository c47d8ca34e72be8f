"""consumer/_anchor.py's refusals, each on its own and word for word (mutants that survived the bundle corpus).

The corpus shows a bundle refused with QE_BUNDLE_UNANCHORED; these hold which refusal, and what it says: the
policy's digest prefix, the commit, the path in the repository, and why no history could anchor it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from desktop_qualify.consumer._anchor import (
    Anchor,
    KeyGrant,
    PolicyFacets,
    _history,
    _work_tree,
    check_policy_at,
    differences,
)
from desktop_qualify.evidence_schemas import Code, QualificationError

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="the policy's history is read with git")

POLICY = b"[trust]\nmode = 'local'\n"
DIGEST = hashlib.sha256(POLICY).hexdigest()
SOURCE = Path("old.qualify-bundle.zip")
FACETS = PolicyFacets(trust="t", signers="s", journey="j")


def _bundled(data: bytes = POLICY) -> Any:
    # check_policy_at reads only the bundled policy's digest.
    return SimpleNamespace(sha256=hashlib.sha256(data).hexdigest(), file=None)


def _anchor(repository: str | None, relative: str | None, *, exact_only: bool = False,
            no_history: str = "") -> Anchor:
    return Anchor("a" * 64, FACETS, repository, relative, None, exact_only, no_history)


def _repository(tmp_path: Path) -> tuple[Path, str]:
    root = tmp_path / "repo"
    (root / "policies").mkdir(parents=True)
    (root / "policies" / "local.toml").write_bytes(POLICY)
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.invalid", "PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)}
    for args in (["init", "-q", "-b", "main"], ["add", "."], ["commit", "-q", "-m", "policy"]):
        subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, env=env)
    sha = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], check=True, capture_output=True,
                         text=True).stdout.strip()
    return root, sha


def _refusal(why: str, bundled: Any = None) -> str:
    digest = (bundled or _bundled()).sha256
    return f"bundle {SOURCE}: its policy ({digest[:12]}) is not the auditor's --policy, and {why}"


def _refused(anchor: Anchor, commit: str | None, bundled: Any = None) -> str:
    with pytest.raises(QualificationError) as caught:
        check_policy_at(bundled or _bundled(), anchor, SOURCE, commit)
    assert caught.value.code == Code.BUNDLE_UNANCHORED
    return caught.value.message


@pytest.mark.parametrize(("repository", "relative", "exact_only"), [
    ("repo", "policies/local.toml", True),  # read-back: only the auditor's own policy
    (None, "policies/local.toml", False),  # no work tree
    ("repo", None, False),  # no path in it
])
def test_no_history_is_refused_before_any_commit_is_read(tmp_path: Path, repository: str | None,
                                                         relative: str | None, exact_only: bool) -> None:
    root, sha = _repository(tmp_path)
    anchor = _anchor(str(root) if repository else None, relative, exact_only=exact_only, no_history="WHY NOT")
    assert _refused(anchor, sha) == _refusal("no history can anchor it: WHY NOT")


@pytest.mark.parametrize("commit", [None, "a" * 39, "a" * 41, "A" * 40, "g" * 40])
def test_a_run_that_names_no_full_commit_is_refused(tmp_path: Path, commit: str | None) -> None:
    root, _ = _repository(tmp_path)
    anchor = _anchor(str(root), "policies/local.toml")
    assert _refused(anchor, commit) == _refusal("its verified statements name no commit to read the policy at")


def test_a_policy_path_absent_at_the_commit_is_refused(tmp_path: Path) -> None:
    root, sha = _repository(tmp_path)
    anchor = _anchor(str(root), "policies/other.toml")
    assert _refused(anchor, sha) == _refusal(f"policies/other.toml does not exist at commit {sha[:12]} (the commit "
                                             f"its verified statements name) in {root}")


def test_another_policy_version_is_refused(tmp_path: Path) -> None:
    root, sha = _repository(tmp_path)
    anchor = _anchor(str(root), "policies/local.toml")
    other = _bundled(POLICY + b"# laxer\n")
    assert _refused(anchor, sha, other) == _refusal(
        f"differs from policies/local.toml as committed at {sha[:12]} (the commit its verified statements name); "
        "no other version of the policy counts", other)


def test_the_policy_as_committed_is_anchored_and_named(tmp_path: Path) -> None:
    root, sha = _repository(tmp_path)
    line = check_policy_at(_bundled(), _anchor(str(root), "policies/local.toml"), SOURCE, sha)
    assert line == f"policy anchored at commit {sha}: policies/local.toml as committed there, in {root}"
    assert _bundled().sha256 == DIGEST


def test_differences_name_each_facet_that_differs() -> None:
    grants = {"k1": KeyGrant("platform", frozenset({"platform"}))}
    anchor = Anchor("a" * 64, FACETS, None, None, grants)
    same = SimpleNamespace(file=SimpleNamespace(
        trust=SimpleNamespace(mode="local", trusted_root_sha256=None),
        producer=SimpleNamespace(model_dump_json=lambda include: "s"),
        journey=SimpleNamespace(model_dump_json=lambda: "j")))
    # The facets of ``same`` are computed by policy_facets: trust differs from "t", signers and journey do not.
    line = differences(same, anchor, frozenset({"k1"}))  # type: ignore[arg-type]
    assert line == "the anchored policy differs from the auditor's in: trust root"
    line = differences(same, anchor, frozenset({"k2"}))  # type: ignore[arg-type]
    assert line == "the anchored policy differs from the auditor's in: trust root, keyring"
    plain = Anchor("a" * 64, PolicyFacets(trust='["local", null]', signers="s", journey="j"), None, None, grants)
    assert differences(same, plain, frozenset({"k1"})) == (  # type: ignore[arg-type]
        "the anchored policy's trust root, keyring, signers and journey are the auditor's")
    assert differences(same, plain, None) == (  # type: ignore[arg-type]
        "the anchored policy's trust root, keyring, signers and journey are the auditor's")


def test_a_policy_edited_in_its_checkout_has_no_history_and_says_how_to_give_one(tmp_path: Path) -> None:
    root, _ = _repository(tmp_path)
    path = root / "policies" / "local.toml"
    path.write_bytes(POLICY + b"# edited\n")
    edited = SimpleNamespace(root=None, path=path, sha256=hashlib.sha256(POLICY + b"# edited\n").hexdigest())
    assert _history(edited) == (None, None, (  # type: ignore[arg-type]
        f"{path} is not tracked, unchanged, in the git work tree {root.resolve()} (a copy or an edit has no history; "
        "pass --root with the checkout it belongs to)"))
    path.write_bytes(POLICY)
    tracked = SimpleNamespace(root=None, path=path, sha256=DIGEST)
    assert _history(tracked) == (str(root.resolve()), "policies/local.toml", "")  # type: ignore[arg-type]
    rooted = SimpleNamespace(root=root, path=path, sha256=DIGEST)
    assert _history(rooted) == (str(root.resolve()), "policies/local.toml", "")  # type: ignore[arg-type]


def test_a_work_tree_whose_name_is_not_utf8_is_still_found(tmp_path: Path) -> None:
    odd = tmp_path / os.fsdecode(b"checkout-\xff")
    try:
        odd.mkdir()
    except (OSError, UnicodeEncodeError):
        pytest.skip("this file system refuses a name that is not UTF-8")
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)}
    subprocess.run(["git", "-C", str(odd), "init", "-q"], check=True, capture_output=True, env=env)
    found = _work_tree(odd)
    assert found is not None
    assert found.name == "checkout-\ufffd"
