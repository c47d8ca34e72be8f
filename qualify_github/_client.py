"""The GitHub client: PyGithub's public API behind bounded, retried, token-safe reads."""

from __future__ import annotations

import os
import re
import urllib.parse
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from http import HTTPStatus
from pathlib import Path
from typing import Any, TypeVar

from desktop_qualify.evidence_schemas import GIT_SHA_PATTERN, Code, QualificationError
from github import Auth, Github, GithubException

from ._config import ClientConfig
from ._download import USER_AGENT, download
from ._errors import GitHubError
from ._models import ArtifactInfo, AssetInfo, BranchInfo, Downloaded, ReleaseInfo, RulesetRule, RunInfo
from ._retry import with_retries

T = TypeVar("T")
_REPOSITORY = re.compile(r"^[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}$")
_REF_NAME = re.compile(r"^[A-Za-z0-9_.][A-Za-z0-9_./-]{0,254}$")
_SHA = re.compile(GIT_SHA_PATTERN)
_COMPARE_STATUSES = frozenset({"ahead", "identical", "behind", "diverged"})
_NEXT_LINK = re.compile(r'<([^>]+)>\s*;\s*rel="next"')
# Annotated tags may point at annotated tags; a chain longer than this is not GitHub's shape.
_MAX_TAG_DEPTH = 4


def _check_repository(repository: str) -> str:
    if not _REPOSITORY.match(repository):
        raise QualificationError(Code.USAGE, f"{repository[:120]!r} is not an OWNER/REPO name")
    return repository


def _check_ref_name(name: str, kind: str) -> str:
    if not _REF_NAME.match(name) or ".." in name or name.endswith((".", "/", ".lock")):
        raise QualificationError(Code.USAGE, f"{name[:120]!r} is not a {kind} name")
    return name


def _required_checks_enforced(raw: object) -> bool:
    """Whether the branch payload shows enforced required status checks (classic protection)."""
    protection = raw.get("protection") if isinstance(raw, dict) else None
    checks = protection.get("required_status_checks") if isinstance(protection, dict) else None
    if not isinstance(checks, dict):
        return False
    contexts = checks.get("contexts")
    return checks.get("enforcement_level") in ("non_admins", "everyone") and isinstance(contexts, list) \
        and len(contexts) > 0


def _malformed(what: str, field: str) -> GitHubError:
    return GitHubError(Code.ENVIRONMENT, f"{what}: the answer's {field!r} is missing or not GitHub's shape")


def _str(value: object, what: str, field: str) -> str:
    if not isinstance(value, str) or not value or len(value) > 1024:
        raise _malformed(what, field)
    return value


def _int(value: object, what: str, field: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise _malformed(what, field)
    return value


def _bool(value: object, what: str, field: str) -> bool:
    if not isinstance(value, bool):
        raise _malformed(what, field)
    return value


def _sha(value: object, what: str, field: str) -> str:
    if not isinstance(value, str) or not _SHA.match(value):
        raise _malformed(what, field)
    return value


def _optional_str(value: object, what: str, field: str) -> str | None:
    return None if value is None else _str(value, what, field)


def _rule(item: object, what: str) -> RulesetRule:
    if not isinstance(item, dict):
        raise _malformed(what, "rule")
    ruleset_id = item.get("ruleset_id")
    return RulesetRule(type=_str(item.get("type"), what, "type"),
                       ruleset_id=None if ruleset_id is None else _int(ruleset_id, what, "ruleset_id"),
                       source_type=str(item.get("ruleset_source_type", ""))[:64],
                       source=str(item.get("ruleset_source", ""))[:256])


class GitHubClient:
    """Read-only access to one GitHub (or GitHub Enterprise Server) API.

    Every method returns complete frozen values or raises :class:`GitHubError`;
    the token is sent only to the API origin and never appears in an error.
    """

    def __init__(self, config: ClientConfig, token: str | None) -> None:
        self._config = config
        self._token = token or None
        # urllib3 retries off: _retry owns the policy (see its docstring).
        # lazy=True: get_repo() makes no request; each read below is one call.
        self._github = Github(base_url=config.api_url, auth=Auth.Token(token) if token else None,
                              timeout=config.timeout, retry=0, per_page=config.per_page, lazy=True,
                              user_agent=USER_AGENT, seconds_between_requests=config.seconds_between_requests)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, *, config: ClientConfig | None = None) -> GitHubClient:
        """API base from ``GITHUB_API_URL``, token from ``GITHUB_TOKEN`` (anonymous when unset)."""
        env = os.environ if env is None else env
        return cls(config or ClientConfig.from_env(env), env.get("GITHUB_TOKEN") or None)

    def __repr__(self) -> str:
        return f"GitHubClient(api_url={self._config.api_url!r}, authenticated={self._token is not None})"

    def __enter__(self) -> GitHubClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close PyGithub's connection."""
        self._github.close()

    @property
    def api_url(self) -> str:
        """The REST API's base URL this client calls."""
        return self._config.api_url

    def _call(self, what: str, op: Callable[[], T]) -> T:
        return with_retries(what, op, policy=self._config.retry, secret=self._token)

    def request_json(self, what: str, verb: str, path: str, body: dict[str, Any] | None = None) -> object:
        """One API call PyGithub does not wrap (``Requester.requestJsonAndCheck``, its documented hook), retried."""
        return self._call(what, lambda: self._github.requester.requestJsonAndCheck(verb, path, input=body)[1])

    def _bounded(self, what: str, items: Iterable[Any], convert: Callable[[Any], T]) -> tuple[T, ...]:
        out: list[T] = []
        for item in items:
            if len(out) >= self._config.max_items:
                raise GitHubError(Code.ENVIRONMENT, f"{what}: more than {self._config.max_items} items")
            out.append(convert(item))
        return tuple(out)

    # -- branches ---------------------------------------------------------------------------------------

    def branch(self, repository: str, branch: str) -> BranchInfo:
        """``GET /repos/{owner}/{repo}/branches/{branch}``: the live head and the ``protected`` flag."""
        repo_name = _check_repository(repository)
        name = _check_ref_name(branch, "branch")
        what = f"GET /repos/{repo_name}/branches/{name}"

        def op() -> BranchInfo:
            found = self._github.get_repo(repo_name).get_branch(name)
            return BranchInfo(repo_name, _str(found.name, what, "name"), _sha(found.commit.sha, what, "commit.sha"),
                              _bool(found.protected, what, "protected"), _required_checks_enforced(found.raw_data))

        return self._call(what, op)

    def head_sha(self, repository: str, branch: str) -> str:
        """The commit at the head of ``branch``."""
        return self.branch(repository, branch).head_sha

    def is_protected(self, repository: str, branch: str) -> bool:
        """The branch's ``protected`` flag, as GitHub reports it."""
        return self.branch(repository, branch).protected

    def branch_rules(self, repository: str, branch: str) -> tuple[RulesetRule, ...]:
        """``GET /repos/{owner}/{repo}/rules/branches/{branch}``: the active rules that apply to a branch.

        PyGithub 2.10 has no method for this endpoint; it is read through
        ``Github.requester.requestJsonAndCheck`` (see :meth:`paged_json`).
        """
        repo_name = _check_repository(repository)
        name = _check_ref_name(branch, "branch")
        what = f"GET /repos/{repo_name}/rules/branches/{name}"
        rules = self.paged_json(what, f"/repos/{repo_name}/rules/branches/{urllib.parse.quote(name, safe='')}",
                                lambda page: page if isinstance(page, list) else None, field="rules")
        return tuple(_rule(item, what) for item in rules)

    def paged_json(self, what: str, path: str, items_of: Callable[[object], list[Any] | None], *, field: str,
                   params: Mapping[str, str] | None = None, first_404_is_empty: bool = False) -> tuple[Any, ...]:
        """Every item of a listing PyGithub does not wrap, following ``Link: rel="next"``, retried as a whole.

        ``Github.requester.requestJsonAndCheck`` is the public hook PyGithub
        documents for such endpoints. ``items_of`` picks a page's list out of its
        document (None: not GitHub's shape, named ``field``). More than
        ``max_items`` items is refused rather than silently truncated.
        ``first_404_is_empty``: a listing GitHub answers 404 for when it holds
        nothing; only the first page's 404 means that (a later page's is an error).
        """
        max_pages = -(-self._config.max_items // self._config.per_page) + 1

        def pages() -> Iterable[Any]:
            url: str | None = path
            query: dict[str, Any] | None = {**(params or {}), "per_page": self._config.per_page}
            # Empty pages linking onwards (or to themselves) must not loop forever.
            seen: set[str] = set()
            while url is not None:
                if url in seen or len(seen) >= max_pages:
                    raise _malformed(what, "pagination (a repeated page or too many pages)")
                first = not seen
                seen.add(url)
                try:
                    headers, data = self._github.requester.requestJsonAndCheck("GET", url, parameters=query)
                except GithubException as exc:
                    if first and first_404_is_empty and exc.status == HTTPStatus.NOT_FOUND:
                        return
                    raise
                items = items_of(data)
                if items is None:
                    raise _malformed(what, field)
                yield from items
                link = _NEXT_LINK.search(str(headers.get("link", "")))
                url, query = (link.group(1) if link else None), None

        return self._call(what, lambda: self._bounded(what, pages(), lambda item: item))

    # -- workflow runs and artifacts ----------------------------------------------------------------------

    def workflow_run(self, repository: str, run_id: int) -> RunInfo:
        """``GET /repos/{owner}/{repo}/actions/runs/{run_id}`` (the latest attempt)."""
        repo_name = _check_repository(repository)
        run_number = _check_run_id(run_id)
        what = f"GET /repos/{repo_name}/actions/runs/{run_number}"

        def op() -> RunInfo:
            run = self._github.get_repo(repo_name).get_workflow_run(run_number)
            return RunInfo(repo_name, _int(run.id, what, "id"), _str(run.path, what, "path"),
                           _str(run.event, what, "event"), _str(run.head_branch, what, "head_branch"),
                           _sha(run.head_sha, what, "head_sha"), _int(run.run_attempt, what, "run_attempt"),
                           _str(run.status, what, "status"), _optional_str(run.conclusion, what, "conclusion"))

        return self._call(what, op)

    def run_artifacts(self, repository: str, run_id: int) -> tuple[ArtifactInfo, ...]:
        """``GET /repos/{owner}/{repo}/actions/runs/{run_id}/artifacts``, every page."""
        repo_name = _check_repository(repository)
        run_number = _check_run_id(run_id)
        what = f"GET /repos/{repo_name}/actions/runs/{run_number}/artifacts"

        def convert(item: Any) -> ArtifactInfo:
            return ArtifactInfo(repo_name, _int(item.id, what, "id"), _str(item.name, what, "name"),
                                _int(item.size_in_bytes, what, "size_in_bytes"), _bool(item.expired, what, "expired"),
                                _optional_str(item.digest, what, "digest"))

        def op() -> tuple[ArtifactInfo, ...]:
            run = self._github.get_repo(repo_name).get_workflow_run(run_number)
            return self._bounded(what, run.get_artifacts(), convert)

        return self._call(what, op)

    def download_artifact(self, artifact: ArtifactInfo, dest: Path, *, max_bytes: int) -> Downloaded:
        """The artifact's zip archive into ``dest``: at most ``max_bytes``, digest checked when GitHub gives one."""
        what = f"GET /repos/{artifact.repository}/actions/artifacts/{artifact.id}/zip"
        if artifact.expired:
            raise GitHubError(Code.ENVIRONMENT, f"{what}: artifact {artifact.name!r} has expired", status=410,
                              hint="use the evidence bundle kept with the release")
        url = f"{self.api_url}/repos/{_check_repository(artifact.repository)}/actions/artifacts/{artifact.id}/zip"
        return self._download(what, url, dest, max_bytes, size=artifact.size_in_bytes, digest=artifact.digest)

    # -- releases -------------------------------------------------------------------------------------------

    def releases(self, repository: str) -> tuple[ReleaseInfo, ...]:
        """``GET /repos/{owner}/{repo}/releases``, every page, each with its assets."""
        repo_name = _check_repository(repository)
        what = f"GET /repos/{repo_name}/releases"
        return self._call(what, lambda: self._bounded(
            what, self._github.get_repo(repo_name).get_releases(), lambda r: self._release(repo_name, r, what)))

    def release_by_tag(self, repository: str, tag: str) -> ReleaseInfo:
        """``GET /repos/{owner}/{repo}/releases/tags/{tag}``: the release and its assets."""
        repo_name = _check_repository(repository)
        tag_name = _check_ref_name(tag, "tag")
        what = f"GET /repos/{repo_name}/releases/tags/{tag_name}"
        return self._call(what, lambda: self._release(
            repo_name, self._github.get_repo(repo_name).get_release(tag_name), what))

    def tag_commit(self, repository: str, tag: str) -> str:
        """The commit a tag names: ``GET /repos/{owner}/{repo}/git/ref/tags/{tag}``, through annotated tags."""
        repo_name = _check_repository(repository)
        tag_name = _check_ref_name(tag, "tag")
        what = f"GET /repos/{repo_name}/git/ref/tags/{tag_name}"

        def op() -> str:
            repo = self._github.get_repo(repo_name)
            target = repo.get_git_ref(f"tags/{tag_name}").object
            for _ in range(_MAX_TAG_DEPTH):
                kind, sha = _str(target.type, what, "object.type"), _sha(target.sha, what, "object.sha")
                if kind == "commit":
                    return sha
                if kind != "tag":
                    raise _malformed(what, "object.type")
                target = repo.get_git_tag(sha).object
            raise _malformed(what, f"tag chain (more than {_MAX_TAG_DEPTH} annotated tags deep)")

        return self._call(what, op)

    def compare(self, repository: str, base: str, head: str) -> str:
        """``GET /repos/{owner}/{repo}/compare/{base}...{head}``: where ``head`` stands against ``base``.

        GitHub's ``status``: ``"ahead"`` (base is an ancestor of head), ``"identical"``, ``"behind"`` (head is an
        ancestor of base) or ``"diverged"``; any other answer is not GitHub's shape. Both must be commit ids.
        """
        repo_name = _check_repository(repository)
        for name, sha in (("base", base), ("head", head)):
            if not isinstance(sha, str) or not _SHA.match(sha):
                raise QualificationError(Code.USAGE, f"compare {name} {str(sha)[:80]!r} is not a commit id")
        what = f"GET /repos/{repo_name}/compare/{base[:12]}...{head[:12]}"

        def op() -> str:
            status = self._github.get_repo(repo_name).compare(base, head).status
            if status not in _COMPARE_STATUSES:
                raise _malformed(what, "status")
            return str(status)

        return self._call(what, op)

    def download_asset(self, asset: AssetInfo, dest: Path, *, max_bytes: int) -> Downloaded:
        """Download a release asset to ``dest``: at most ``max_bytes``, its SHA-256 checked where GitHub reports one."""
        what = f"GET /repos/{asset.repository}/releases/assets/{asset.id}"
        url = f"{self.api_url}/repos/{_check_repository(asset.repository)}/releases/assets/{asset.id}"
        return self._download(what, url, dest, max_bytes, size=asset.size, digest=asset.digest)

    def _release(self, repo_name: str, release: Any, what: str) -> ReleaseInfo:
        assets = tuple(
            AssetInfo(repo_name, _int(a.id, what, "assets.id"), _str(a.name, what, "assets.name"),
                      _int(a.size, what, "assets.size"), _optional_str(a.digest, what, "assets.digest"))
            for a in release.assets[: self._config.max_items + 1])
        if len(assets) > self._config.max_items:
            raise GitHubError(Code.ENVIRONMENT, f"{what}: more than {self._config.max_items} assets")
        created = release.created_at
        if created is not None and not isinstance(created, datetime):
            raise _malformed(what, "created_at")
        return ReleaseInfo(repo_name, _int(release.id, what, "id"), _str(release.tag_name, what, "tag_name"),
                           _bool(release.draft, what, "draft"), _bool(release.prerelease, what, "prerelease"), assets,
                           created)

    def _download(self, what: str, url: str, dest: Path, max_bytes: int, *, size: int,
                  digest: str | None) -> Downloaded:
        if size > max_bytes:
            raise QualificationError(Code.EVIDENCE_TOO_LARGE, f"{what}: GitHub reports {size} bytes, "
                                                              f"the cap is {max_bytes}")
        got = self._call(what, lambda: download(url, dest, token=self._token, max_bytes=max_bytes,
                                                timeout=self._config.timeout,
                                                max_seconds=self._config.max_download_seconds, what=what))
        if digest is not None and digest.startswith("sha256:") and digest.removeprefix("sha256:") != got.sha256:
            got.path.unlink(missing_ok=True)
            raise QualificationError(Code.ARTIFACT_DIGEST_MISMATCH,
                                     f"{what}: downloaded bytes have sha256 {got.sha256}, GitHub reports {digest}")
        return got


def _check_run_id(run_id: int) -> int:
    if isinstance(run_id, bool) or not isinstance(run_id, int) or not 0 < run_id < 2**63:
        raise QualificationError(Code.USAGE, f"run id {run_id!r} is not a positive integer")
    return run_id
