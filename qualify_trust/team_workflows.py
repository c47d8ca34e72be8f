"""The caller workflows a team commits to run this project's reusable workflows at a release tag.

Canonical text for ``qualify init`` (which writes them into a team's repository) and for the offline team
chain; docs/examples/team-qualify.yml and team-release.yml are these templates as committed, checked
equal by tests/workflows/test_team_caller.py. ``vX.Y.Z`` is their one blank: :func:`caller_workflow`
fills in a release tag, the same on every ``uses:`` line, as the team's policy pins it in
``[producer.builder] ref = "refs/tags/vX.Y.Z"`` (docs/trust-modes.md, "A team's repository").
"""

from __future__ import annotations

import re

from desktop_qualify.evidence_schemas import GIT_SHA_PATTERN, Code, QualificationError

__all__ = ["BUILDER_REPOSITORY", "GATE", "SIGNERS", "TAG_PLACEHOLDER", "TEAM_QUALIFY_PATH", "TEAM_RELEASE_PATH",
           "caller_workflow", "policy_identity"]

#: whose reusable workflows a team calls (and its policy's [producer.builder] repository)
BUILDER_REPOSITORY = "desktop-qualify/desktop-qualify"
TAG_PLACEHOLDER = "vX.Y.Z"
#: where each caller goes in the team's repository
TEAM_QUALIFY_PATH = ".github/workflows/qualify.yml"
TEAM_RELEASE_PATH = ".github/workflows/release.yml"
# The policy's builder ref pattern, without refs/tags/: a release tag, never a branch or a pre-release.
_TAG = re.compile(r"v[0-9]{1,4}\.[0-9]{1,4}\.[0-9]{1,4}", re.ASCII)
# The policy model's OWNER/REPO, a commit, a SHA-256, and a relative path a TOML string holds as it is.
_REPOSITORY = re.compile(r"[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}", re.ASCII)
_COMMIT = re.compile(GIT_SHA_PATTERN)
_SHA256 = re.compile(r"[0-9a-f]{64}")
_PATH = re.compile(r"[A-Za-z0-9_./-]{1,512}", re.ASCII)
#: the builder's files that sign for a team ([producer.signers]) and its release gate ([verifier] workflow)
SIGNERS = {**{p: f".github/workflows/produce-{p}.yml" for p in ("linux", "macos", "windows")},
           "aggregate": ".github/workflows/aggregate.yml"}
GATE = ".github/workflows/release-gate.yml"

_QUALIFY = '''\
# A team's one caller workflow (`qualify init` writes it as .github/workflows/qualify.yml).
#
# It calls desktop-qualify's reusable workflows at one release tag, the same tag on every line, as
# slsa-github-generator's callers name `generator_generic_slsa3.yml@vX.Y.Z`. Fulcio then writes
# desktop-qualify's file at refs/tags/vX.Y.Z into each certificate's build signer URI (and its commit
# into the build signer digest), and this repository, main and the commit into the source fields.
# policies/release.toml, at that conventional path in this repository, pins both: [producer] names this
# repository and this file, [producer.builder] desktop-qualify at refs/tags/vX.Y.Z (and that tag's
# commit). A statement signed by these workflows at another tag, or for another repository, is refused.
# To move to another release, change the tag here and in [producer.builder] in one reviewed commit.
#
# Nothing is passed to the called workflows but the OS code-signing secrets: they check out this
# repository at the triggering commit (the app and the policy) and desktop-qualify at the commit they
# were called at, and read the policy from its conventional path. zizmor's unpinned-uses audit asks for
# a commit SHA here and is silenced line by line: the tag is what the certificates name (a SHA call
# would name the SHA, which no policy pins as a release), and [producer.builder] commit, the tag's
# commit as the certificates' build signer digest, is what holds the tag in place.
name: qualify

on:
  push:
    branches: [main]
  workflow_dispatch:

permissions: {}

concurrency:
  group: qualify-${{ github.sha }}
  cancel-in-progress: false

jobs:
  linux:
    uses: desktop-qualify/desktop-qualify/.github/workflows/produce-linux.yml@vX.Y.Z # zizmor: ignore[unpinned-uses]
    permissions:
      contents: read
      id-token: write # for the called workflow's detect and sign jobs; its run job asks for contents: read alone

  macos:
    uses: desktop-qualify/desktop-qualify/.github/workflows/produce-macos.yml@vX.Y.Z # zizmor: ignore[unpinned-uses]
    permissions:
      contents: read
      id-token: write
    secrets:
      QUALIFY_CODESIGN_IDENTITY: ${{ secrets.QUALIFY_CODESIGN_IDENTITY }}
      QUALIFY_CODESIGN_P12_BASE64: ${{ secrets.QUALIFY_CODESIGN_P12_BASE64 }}
      QUALIFY_CODESIGN_P12_PASSWORD: ${{ secrets.QUALIFY_CODESIGN_P12_PASSWORD }}
      QUALIFY_NOTARY_KEY_BASE64: ${{ secrets.QUALIFY_NOTARY_KEY_BASE64 }}
      QUALIFY_NOTARY_KEY_ID: ${{ secrets.QUALIFY_NOTARY_KEY_ID }}
      QUALIFY_NOTARY_ISSUER: ${{ secrets.QUALIFY_NOTARY_ISSUER }}

  windows:
    uses: desktop-qualify/desktop-qualify/.github/workflows/produce-windows.yml@vX.Y.Z # zizmor: ignore[unpinned-uses]
    permissions:
      contents: read
      id-token: write
    secrets:
      QUALIFY_SIGNTOOL_CERT_SHA1: ${{ secrets.QUALIFY_SIGNTOOL_CERT_SHA1 }}
      QUALIFY_SIGNTOOL_PFX_BASE64: ${{ secrets.QUALIFY_SIGNTOOL_PFX_BASE64 }}
      QUALIFY_SIGNTOOL_PFX_PASSWORD: ${{ secrets.QUALIFY_SIGNTOOL_PFX_PASSWORD }}

  aggregate:
    needs: [linux, macos, windows]
    uses: desktop-qualify/desktop-qualify/.github/workflows/aggregate.yml@vX.Y.Z # zizmor: ignore[unpinned-uses]
    permissions:
      contents: read
      id-token: write
      attestations: write # the aggregate stores the verified statements as GitHub attestations
'''

_RELEASE = '''\
# A team's release gate caller (`qualify init` writes it as .github/workflows/release.yml), beside
# team-qualify.yml and at the same tag: desktop-qualify's release gate publishes a draft release only
# when the qualify run of main's head says QUALIFIED for exactly its assets, and signs its Verification
# Summary Attestations as release-gate.yml at refs/tags/vX.Y.Z, called by this file (the policy's
# [verifier] workflow and caller). The tag input chooses the draft; it is trusted for nothing.
name: release-gate

on:
  workflow_dispatch:
    inputs:
      tag:
        description: tag of the draft release to gate and publish
        required: true
        type: string

permissions: {}

jobs:
  gate:
    uses: desktop-qualify/desktop-qualify/.github/workflows/release-gate.yml@vX.Y.Z # zizmor: ignore[unpinned-uses]
    permissions:
      contents: write # to publish the draft once it is qualified
      actions: read # to find and download the qualify run's evidence
      attestations: write
      id-token: write
    with:
      tag: ${{ inputs.tag }}
'''

TEMPLATES = {TEAM_QUALIFY_PATH: _QUALIFY, TEAM_RELEASE_PATH: _RELEASE}


def caller_workflow(tag: str, path: str = TEAM_QUALIFY_PATH, *, builder: str = BUILDER_REPOSITORY) -> str:
    """The caller workflow for ``path`` (qualify.yml or release.yml) calling ``builder``'s files at ``tag``.

    ``builder`` is this project's repository, or the fork or mirror a team calls instead (``qualify init
    --upstream``): it replaces the repository on every ``uses:`` line, as :func:`policy_identity` pins it.
    """
    if _TAG.fullmatch(tag) is None:
        raise QualificationError(Code.USAGE, f"{tag[:40]!r} is not a release tag vX.Y.Z",
                                 hint="a team calls the reusable workflows at a release tag, never a branch")
    if path not in TEMPLATES:
        raise QualificationError(Code.USAGE, f"no caller workflow for {path[:80]!r}")
    _checked(builder, _REPOSITORY, "a GitHub repository OWNER/REPO")
    return TEMPLATES[path].replace(TAG_PLACEHOLDER, tag).replace(f"uses: {BUILDER_REPOSITORY}/.github/workflows/",
                                                                 f"uses: {builder}/.github/workflows/")


def _checked(value: str, pattern: re.Pattern[str], what: str) -> str:
    if pattern.fullmatch(value) is None:
        raise QualificationError(Code.USAGE, f"{value[:80]!r} is not {what}")
    return value


def policy_identity(repository: str, tag: str, *, commit: str | None, trusted_root: str,
                    trusted_root_sha256: str, builder: str = BUILDER_REPOSITORY) -> str:
    """The identity sections of a team's policy (``[producer]`` to ``[verifier]``), as TOML.

    ``repository`` is the team's (the source, with its caller workflows at their conventional paths);
    the signers are this project's files at ``tag`` (and, when given, the tag's ``commit``), exactly what
    :func:`caller_workflow` calls. The app's own sections (``[source]``, ``[app]``...) follow it. ``builder``
    is whose reusable workflows those are: this project's, or a fork or mirror a team calls instead.
    """
    _checked(repository, _REPOSITORY, "a GitHub repository OWNER/REPO")
    _checked(builder, _REPOSITORY, "a GitHub repository OWNER/REPO")
    _checked(tag, _TAG, "a release tag vX.Y.Z")
    _checked(trusted_root, _PATH, "a relative path to the trusted root")
    _checked(trusted_root_sha256, _SHA256, "a lowercase SHA-256")
    pin = "" if commit is None else f'commit = "{_checked(commit, _COMMIT, "a lowercase hex commit")}"\n'
    signers = "\n".join(f'{key} = "{path}"' for key, path in SIGNERS.items())
    return f"""[producer]
# The source: this repository, its main branch, and the caller workflow (certificate OID .18).
repository = "{repository}"
workflow = "{TEAM_QUALIFY_PATH}"
ref = "refs/heads/main"
allowed_triggers = ["push", "workflow_dispatch"]
runner_environment = "github-hosted"

[producer.signers]
# {builder}'s files (certificate OID .9, the SAN), one per platform and the aggregate's.
{signers}

[producer.builder]
# Whose files those are, and the release tag (and its commit, .10) {TEAM_QUALIFY_PATH} calls them at.
repository = "{builder}"
ref = "refs/tags/{tag}"
{pin}
[trust]
mode = "sigstore"
issuer = "https://token.actions.githubusercontent.com"
trusted_root = "{trusted_root}"
trusted_root_sha256 = "{trusted_root_sha256}"

[verifier]
# {builder}'s release gate at the tag, called by {TEAM_RELEASE_PATH}.
workflow = "{GATE}"
caller = "{TEAM_RELEASE_PATH}"
allowed_triggers = ["workflow_dispatch"]
"""
