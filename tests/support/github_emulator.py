"""A loopback GitHub REST API for tests: GitHub-shaped JSON from a thread on 127.0.0.1.

Configure the state per test (branches, protection, rulesets, workflow runs,
artifacts with zip bodies, releases and assets), inject faults (an error status,
a rate limit with ``Retry-After``, a body cut short, a slow answer), and point
PyGithub at :attr:`GitHubEmulator.api_url`. Every request is recorded so a test
can assert what was asked and with which credentials. Nothing leaves the host.

Like python-tuf's repository simulator, it is a small real server, not a mock
of the client library: the client under test speaks real HTTP to it.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import io
import json
import re
import threading
import urllib.parse
import zipfile
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DEFAULT_TOKEN = "ghs_emulatorTestToken0123456789abcdef"  # a test value, not a credential


def zip_bytes(files: dict[str, bytes]) -> bytes:
    """A zip archive as GitHub serves an artifact download."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def rule(rule_type: str, ruleset_id: int = 1, source: str = "") -> dict[str, Any]:
    """One entry of ``GET /repos/{owner}/{repo}/rules/branches/{branch}``."""
    return {"type": rule_type, "ruleset_source_type": "Repository", "ruleset_source": source,
            "ruleset_id": ruleset_id, "parameters": {}}


@dataclass
class Branch:
    sha: str
    protected: bool = False
    # Classic protection with enforced required status checks (visible to readers).
    required_checks: bool = False


@dataclass
class Artifact:
    id: int
    name: str
    body: bytes
    expired: bool = False
    # None: the correct "sha256:..." of body; "" : omit the field (older artifacts).
    digest: str | None = None

    def reported_digest(self) -> str | None:
        if self.digest == "":
            return None
        return self.digest or f"sha256:{hashlib.sha256(self.body).hexdigest()}"


@dataclass
class Asset:
    id: int
    name: str
    body: bytes
    digest: str | None = None


@dataclass
class Release:
    id: int
    tag_name: str
    assets: list[Asset] = field(default_factory=list)
    draft: bool = False
    prerelease: bool = False
    # ``created_at`` as GitHub answers it; None: a time that grows with ``id`` (a later release, a later time).
    created_at: str | None = None


@dataclass
class Run:
    id: int
    path: str
    event: str
    head_branch: str
    head_sha: str
    run_attempt: int = 1
    status: str = "completed"
    conclusion: str | None = "success"


@dataclass
class Repo:
    branches: dict[str, Branch] = field(default_factory=dict)
    rules: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    runs: dict[int, Run] = field(default_factory=dict)
    artifacts: dict[int, list[Artifact]] = field(default_factory=dict)
    releases: list[Release] = field(default_factory=list)
    # POST /repos/{owner}/{repo}/attestations: each stored Sigstore bundle (parsed JSON), by id.
    attestations: dict[int, dict[str, Any]] = field(default_factory=dict)
    # False: list attestations by bundle_url only, as newer API versions may.
    attestations_inline: bool = True
    # Tag name -> the commit it names; a tag in ``annotated`` points at a tag object that names the commit.
    tags: dict[str, str] = field(default_factory=dict)
    annotated: set[str] = field(default_factory=set)
    # The commit graph the compare endpoint answers from: commit -> its parents.
    commits: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def history(self, *shas: str) -> None:
        """A line of commits, oldest first: each one's parent is the one before it."""
        for parent, sha in zip((None, *shas), shas, strict=False):
            self.commits[sha] = () if parent is None else (parent,)


@dataclass
class Fault:
    """What to do instead of (or to) the normal answer.

    ``status`` set: answer that status with a GitHub error body. ``truncate``:
    declare the full length, send half, close. ``delay``: wait first.
    ``raw_body``: send these bytes (with ``status`` or 200) instead of JSON.
    ``echo_authorization``: put the received Authorization header in the error
    message, to prove the client scrubs it.
    """

    status: int | None = None
    message: str = "Server Error"
    headers: dict[str, str] = field(default_factory=dict)
    truncate: bool = False
    delay: float = 0.0
    raw_body: bytes | None = None
    echo_authorization: bool = False


@dataclass(frozen=True)
class Recorded:
    method: str
    path: str
    query: dict[str, list[str]]
    authorization: str | None
    accept: str | None


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    emulator: GitHubEmulator


class GitHubEmulator:
    def __init__(self, *, token: str | None = DEFAULT_TOKEN, prefix: str = "/api/v3") -> None:
        self.token = token
        self.prefix = prefix
        self.repos: dict[str, Repo] = {}
        self.requests: list[Recorded] = []
        self._faults: list[tuple[re.Pattern[str], Fault, list[int]]] = []
        self._lock = threading.Lock()
        self.stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------------------

    def start(self) -> GitHubEmulator:
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.emulator = self
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    @property
    def origin(self) -> str:
        assert self._server is not None, "start() the emulator first"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def api_url(self) -> str:
        return f"{self.origin}{self.prefix}"

    # -- configuration -----------------------------------------------------------------------------------

    def repo(self, full_name: str) -> Repo:
        return self.repos.setdefault(full_name, Repo())

    def inject(self, path_pattern: str, fault: Fault, *, times: int = 1, after: int = 0) -> None:
        """Apply ``fault`` to the next ``times`` requests whose API path (no prefix, no query) matches, once
        ``after`` such requests were answered normally (a later page of a listing)."""
        with self._lock:
            self._faults.append((re.compile(path_pattern), fault, [times, after]))

    def calls(self, path_pattern: str) -> list[Recorded]:
        pattern = re.compile(path_pattern)
        return [r for r in self.requests if pattern.search(r.path)]

    def take_fault(self, path: str) -> Fault | None:
        with self._lock:
            for pattern, fault, left in self._faults:
                if left[0] > 0 and pattern.search(path):
                    if left[1] > 0:
                        left[1] -= 1
                        continue
                    left[0] -= 1
                    return fault
        return None


@dataclass
class _Reply:
    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)


class _ReplyError(Exception):
    """Raised to answer early with an error status."""

    def __init__(self, reply: _Reply) -> None:
        super().__init__(reply.status)
        self.reply = reply


def _not_found(message: str = "Not Found") -> _ReplyError:
    return _ReplyError(_Reply(404, {"message": message, "documentation_url": "https://docs.github.com/rest"}))


def _fault_reply(fault: Fault, authorization: str | None) -> _Reply:
    assert fault.status is not None
    message = fault.message + (f" (you sent {authorization})" if fault.echo_authorization else "")
    body = fault.raw_body if fault.raw_body is not None else {
        "message": message, "documentation_url": "https://docs.github.com/rest"}
    return _Reply(fault.status, body, dict(fault.headers))


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Buffered writes: headers and body leave in one segment (no delayed-ACK stalls).
    wbufsize = 64 * 1024
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        return

    def handle(self) -> None:
        try:
            super().handle()
        except (BrokenPipeError, ConnectionResetError, TimeoutError):
            return  # the client gave up (a timeout test): nothing to answer

    def do_GET(self) -> None:
        emu = self.server.emulator
        parsed = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(parsed.query)
        authorization = self.headers.get("Authorization")
        emu.requests.append(Recorded("GET", parsed.path, query, authorization, self.headers.get("Accept")))
        blob = parsed.path.startswith("/_blobs/")
        path = parsed.path if blob else parsed.path.removeprefix(emu.prefix)
        fault = emu.take_fault(path)
        if fault is not None and fault.delay:
            emu.stopping.wait(fault.delay)
        if fault is not None and fault.status is not None:
            reply = _fault_reply(fault, authorization)
        elif fault is not None and fault.raw_body is not None:
            reply = _Reply(200, fault.raw_body)
        else:
            try:
                if not blob:
                    self._authorize(authorization)
                reply = _route(emu, path, query, self.headers.get("Accept") or "")
            except _ReplyError as exc:
                reply = exc.reply
        self._send(reply, truncate=fault is not None and fault.truncate)

    def do_POST(self) -> None:
        """``POST /repos/{owner}/{repo}/attestations`` only, as GitHub answers it (201 and the new id)."""
        emu = self.server.emulator
        parsed = urllib.parse.urlsplit(self.path)
        authorization = self.headers.get("Authorization")
        emu.requests.append(Recorded("POST", parsed.path, {}, authorization, self.headers.get("Accept")))
        path = parsed.path.removeprefix(emu.prefix)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if 0 < length <= _MAX_POST else b""
        fault = emu.take_fault(path)
        if fault is not None and fault.status is not None:
            self._send(_fault_reply(fault, authorization), truncate=False)
            return
        try:
            self._authorize(authorization)
            reply = _store_attestation(emu, path, body)
        except _ReplyError as exc:
            reply = exc.reply
        self._send(reply, truncate=False)

    def _authorize(self, sent: str | None) -> None:
        token = self.server.emulator.token
        if token is not None and sent not in (f"token {token}", f"Bearer {token}"):
            raise _ReplyError(_Reply(401, {"message": "Bad credentials",
                                           "documentation_url": "https://docs.github.com/rest"}))

    def _send(self, reply: _Reply, *, truncate: bool) -> None:
        if isinstance(reply.body, bytes):
            data, kind = reply.body, "application/octet-stream"
        else:
            data, kind = json.dumps(reply.body).encode(), "application/json; charset=utf-8"
        self.send_response(reply.status)
        headers = {"Content-Type": kind, "X-RateLimit-Limit": "5000", "X-RateLimit-Remaining": "4999",
                   **reply.headers}
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        if truncate:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data[: len(data) // 2] if truncate else data)
        self.wfile.flush()
        if truncate:
            self.close_connection = True


@dataclass(frozen=True)
class _Ctx:
    emu: GitHubEmulator
    name: str
    repo: Repo
    path: str
    query: dict[str, list[str]]
    accept: str

    @property
    def api(self) -> str:
        return f"{self.emu.api_url}/repos/{self.name}"

    def page(self, items: list[Any]) -> tuple[list[Any], dict[str, str]]:
        """One page of ``items`` and its ``Link`` header, the way GitHub paginates."""
        per_page = min(100, int(self.query.get("per_page", ["30"])[0]))
        page = int(self.query.get("page", ["1"])[0])
        last = max(1, -(-len(items) // per_page))
        base = f"{self.emu.api_url}{self.path}"
        links = []
        if page < last:
            links.append(f'<{base}?per_page={per_page}&page={page + 1}>; rel="next"')
            links.append(f'<{base}?per_page={per_page}&page={last}>; rel="last"')
        return items[(page - 1) * per_page: page * per_page], ({"Link": ", ".join(links)} if links else {})


def _repository(ctx: _Ctx, _m: re.Match[str]) -> _Reply:
    return _Reply(200, {"id": 1, "full_name": ctx.name, "name": ctx.name.split("/")[1], "url": ctx.api,
                        "private": False})


def _branch(ctx: _Ctx, m: re.Match[str]) -> _Reply:
    name = urllib.parse.unquote(m.group(1))
    branch = ctx.repo.branches.get(name)
    if branch is None:
        raise _not_found("Branch not found")
    checks = {"enforcement_level": "everyone" if branch.required_checks else "off",
              "contexts": ["ci"] if branch.required_checks else []}
    return _Reply(200, {"name": name, "commit": {"sha": branch.sha, "url": f"{ctx.api}/commits/{branch.sha}"},
                        "protected": branch.protected, "protection_url": f"{ctx.api}/branches/{name}/protection",
                        "protection": {"enabled": branch.protected, "required_status_checks": checks}})


def _rules(ctx: _Ctx, m: re.Match[str]) -> _Reply:
    items, headers = ctx.page(ctx.repo.rules.get(urllib.parse.unquote(m.group(1)), []))
    return _Reply(200, items, headers)


def _run(ctx: _Ctx, m: re.Match[str]) -> _Reply:
    run = ctx.repo.runs.get(int(m.group(1)))
    if run is None:
        raise _not_found()
    return _Reply(200, {**run.__dict__, "name": "qualify", "url": f"{ctx.api}/actions/runs/{run.id}",
                        "artifacts_url": f"{ctx.api}/actions/runs/{run.id}/artifacts"})


def _run_artifacts(ctx: _Ctx, m: re.Match[str]) -> _Reply:
    if int(m.group(1)) not in ctx.repo.runs:
        raise _not_found()
    artifacts = [_artifact_json(ctx.api, a) for a in ctx.repo.artifacts.get(int(m.group(1)), [])]
    items, headers = ctx.page(artifacts)
    return _Reply(200, {"total_count": len(artifacts), "artifacts": items}, headers)


def _artifact_zip(ctx: _Ctx, m: re.Match[str]) -> _Reply:
    _find_artifact(ctx.repo, int(m.group(1)))
    return _Reply(302, b"", {"Location": f"{ctx.emu.origin}/_blobs/artifacts/{m.group(1)}?sig=presigned"})


def _releases(ctx: _Ctx, _m: re.Match[str]) -> _Reply:
    items, headers = ctx.page([_release_json(ctx.api, r) for r in ctx.repo.releases])
    return _Reply(200, items, headers)


def _release_by_tag(ctx: _Ctx, m: re.Match[str]) -> _Reply:
    for release in ctx.repo.releases:
        if release.tag_name == urllib.parse.unquote(m.group(1)):
            return _Reply(200, _release_json(ctx.api, release))
    raise _not_found()


def _asset(ctx: _Ctx, m: re.Match[str]) -> _Reply:
    asset = _find_asset(ctx.repo, int(m.group(1)))
    if "application/octet-stream" in ctx.accept:
        return _Reply(302, b"", {"Location": f"{ctx.emu.origin}/_blobs/assets/{asset.id}?sig=presigned"})
    return _Reply(200, _asset_json(ctx.api, asset))


def _tag_object_sha(name: str) -> str:
    return hashlib.sha1(f"tag {name}".encode()).hexdigest()  # noqa: S324 (a git object id, not security)


def _tag_ref(ctx: _Ctx, m: re.Match[str]) -> _Reply:
    name = urllib.parse.unquote(m.group(1))
    commit = ctx.repo.tags.get(name)
    if commit is None:
        raise _not_found()
    target = ({"type": "tag", "sha": _tag_object_sha(name), "url": f"{ctx.api}/git/tags/{_tag_object_sha(name)}"}
              if name in ctx.repo.annotated else
              {"type": "commit", "sha": commit, "url": f"{ctx.api}/git/commits/{commit}"})
    return _Reply(200, {"ref": f"refs/tags/{name}", "url": f"{ctx.api}/git/refs/tags/{name}", "object": target})


def _tag_object(ctx: _Ctx, m: re.Match[str]) -> _Reply:
    for name in ctx.repo.annotated:
        if _tag_object_sha(name) == m.group(1) and name in ctx.repo.tags:
            commit = ctx.repo.tags[name]
            return _Reply(200, {"sha": m.group(1), "tag": name, "message": name,
                                "url": f"{ctx.api}/git/tags/{m.group(1)}",
                                "object": {"type": "commit", "sha": commit, "url": f"{ctx.api}/git/commits/{commit}"}})
    raise _not_found()


def _ancestry(repo: Repo, sha: str) -> set[str]:
    """``sha`` and every commit it descends from."""
    seen, todo = set(), [sha]
    while todo:
        commit = todo.pop()
        if commit not in seen:
            seen.add(commit)
            todo.extend(repo.commits.get(commit, ()))
    return seen


def _compare(ctx: _Ctx, m: re.Match[str]) -> _Reply:
    """``GET /repos/{owner}/{repo}/compare/{base}...{head}``: where head stands against base, as GitHub says it."""
    base, head = urllib.parse.unquote(m.group(1)), urllib.parse.unquote(m.group(2))
    if base not in ctx.repo.commits or head not in ctx.repo.commits:
        raise _not_found()
    of_base, of_head = _ancestry(ctx.repo, base), _ancestry(ctx.repo, head)
    if base == head:
        status = "identical"
    elif base in of_head:
        status = "ahead"
    elif head in of_base:
        status = "behind"
    else:
        status = "diverged"
    return _Reply(200, {"url": f"{ctx.api}/compare/{base}...{head}", "status": status,
                        "ahead_by": len(of_head - of_base), "behind_by": len(of_base - of_head),
                        "total_commits": len(of_head - of_base), "commits": [], "files": []})


def _attestations(ctx: _Ctx, m: re.Match[str]) -> _Reply:
    """The stored bundles for one subject digest, oldest first, optionally of one predicate type.

    Pages by an opaque ``after`` cursor, the way GitHub pages this listing; the
    next link carries the query (the predicate type) along.
    """
    wanted = ctx.query.get("predicate_type", [None])[0]
    found = [(attestation_id, bundle) for attestation_id, bundle in sorted(ctx.repo.attestations.items())
             if m.group(1) in _subject_digests(bundle) and (wanted is None or _predicate_type(bundle) == wanted)]
    if not found:
        raise _not_found()  # GitHub's answer when nothing is stored for the digest, not an empty list
    per_page = min(100, int(ctx.query.get("per_page", ["30"])[0]))
    cursor = ctx.query.get("after", [""])[0]
    start = int(base64.urlsafe_b64decode(cursor).decode()) if cursor else 0
    page = found[start: start + per_page]
    headers = {}
    if start + per_page < len(found):
        query = {"per_page": str(per_page), "after": base64.urlsafe_b64encode(str(start + per_page).encode()).decode()}
        if wanted is not None:
            query["predicate_type"] = wanted
        headers["Link"] = f'<{ctx.emu.api_url}{ctx.path}?{urllib.parse.urlencode(query)}>; rel="next"'
    items = [{"repository_id": 1, "bundle_url": f"{ctx.emu.origin}/_blobs/attestations/{attestation_id}"}
             | ({"bundle": bundle} if ctx.repo.attestations_inline else {"bundle": None})
             for attestation_id, bundle in page]
    return _Reply(200, {"attestations": items}, headers)


_ROUTES = [
    (re.compile(r""), _repository),
    (re.compile(r"/branches/(.+)"), _branch),
    (re.compile(r"/rules/branches/(.+)"), _rules),
    (re.compile(r"/actions/runs/(\d+)"), _run),
    (re.compile(r"/actions/runs/(\d+)/artifacts"), _run_artifacts),
    (re.compile(r"/actions/artifacts/(\d+)/zip"), _artifact_zip),
    (re.compile(r"/releases"), _releases),
    (re.compile(r"/releases/tags/(.+)"), _release_by_tag),
    (re.compile(r"/releases/assets/(\d+)"), _asset),
    (re.compile(r"/attestations/(sha256:[0-9a-f]{64})"), _attestations),
    (re.compile(r"/git/ref/tags/(.+)"), _tag_ref),
    (re.compile(r"/git/tags/([0-9a-f]{40})"), _tag_object),
    (re.compile(r"/compare/([^/]+?)\.\.\.([^/]+)"), _compare),
]


_MAX_POST = 32 * 1024 * 1024


def _store_attestation(emu: GitHubEmulator, path: str, body: bytes) -> _Reply:
    match = re.fullmatch(r"/repos/([^/]+/[^/]+)/attestations", path)
    if not match or match.group(1) not in emu.repos:
        raise _not_found()
    try:
        data = json.loads(body)
    except ValueError as exc:
        raise _ReplyError(_Reply(400, {"message": "Problems parsing JSON"})) from exc
    bundle = data.get("bundle") if isinstance(data, dict) else None
    if not isinstance(bundle, dict) or not str(bundle.get("mediaType", "")).startswith(
            "application/vnd.dev.sigstore.bundle") or not _subject_digests(bundle):
        raise _ReplyError(_Reply(422, {"message": "Invalid bundle: a Sigstore bundle of an in-toto statement"}))
    repo = emu.repos[match.group(1)]
    attestation_id = len(repo.attestations) + 1
    # GitHub keeps the bundle as a document, not as the bytes sent: it comes back re-serialised.
    repo.attestations[attestation_id] = json.loads(json.dumps(bundle, sort_keys=True))
    return _Reply(201, {"id": attestation_id})


def _deep_payload_text(bundle: dict[str, Any]) -> str:
    """A payload nested deeper than Python's parser goes, as text: GitHub's own parser still indexes it."""
    try:
        return base64.b64decode(bundle["dsseEnvelope"]["payload"]).decode("utf-8", "replace")
    except (KeyError, TypeError, ValueError):
        return ""


def _predicate_type(bundle: dict[str, Any]) -> str | None:
    try:
        predicate_type = json.loads(base64.b64decode(bundle["dsseEnvelope"]["payload"]))["predicateType"]
    except (KeyError, TypeError, ValueError):
        return None
    except RecursionError:
        found = re.search(r'"predicateType":"([^"]*)"', _deep_payload_text(bundle))
        return found.group(1) if found else None
    return predicate_type if isinstance(predicate_type, str) else None


def _subject_digests(bundle: dict[str, Any]) -> set[str]:
    """The statement's subject digests, as GitHub indexes an attestation (``sha256:HEX``)."""
    try:
        statement = json.loads(base64.b64decode(bundle["dsseEnvelope"]["payload"]))
        return {f"sha256:{s['digest']['sha256']}" for s in statement["subject"]}
    except (KeyError, TypeError, ValueError):
        return set()
    except RecursionError:
        return {f"sha256:{digest}" for digest in re.findall(r'"sha256":"([0-9a-f]{64})"', _deep_payload_text(bundle))}


def _route(emu: GitHubEmulator, path: str, query: dict[str, list[str]], accept: str) -> _Reply:
    blob = re.fullmatch(r"/_blobs/(artifacts|assets)/(\d+)", path)
    if blob:
        return _Reply(200, _blob(emu, blob.group(1), int(blob.group(2))))
    match = re.fullmatch(r"/repos/([^/]+/[^/]+)(/.*)?", path)
    if not match or match.group(1) not in emu.repos:
        raise _not_found()
    ctx = _Ctx(emu, match.group(1), emu.repos[match.group(1)], path, query, accept)
    rest = match.group(2) or ""
    for pattern, handler in _ROUTES:
        if m := pattern.fullmatch(rest):
            return handler(ctx, m)
    raise _not_found()


def _find_artifact(repo: Repo, artifact_id: int) -> Artifact:
    for artifacts in repo.artifacts.values():
        for artifact in artifacts:
            if artifact.id == artifact_id:
                return artifact
    raise _not_found()


def _find_asset(repo: Repo, asset_id: int) -> Asset:
    for release in repo.releases:
        for asset in release.assets:
            if asset.id == asset_id:
                return asset
    raise _not_found()


def _blob(emu: GitHubEmulator, kind: str, blob_id: int) -> bytes:
    for repo in emu.repos.values():
        try:
            return _find_artifact(repo, blob_id).body if kind == "artifacts" else _find_asset(repo, blob_id).body
        except _ReplyError:
            continue
    raise _not_found()


def _artifact_json(api: str, artifact: Artifact) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": artifact.id, "node_id": f"A_{artifact.id}", "name": artifact.name,
        "size_in_bytes": len(artifact.body), "url": f"{api}/actions/artifacts/{artifact.id}",
        "archive_download_url": f"{api}/actions/artifacts/{artifact.id}/zip", "expired": artifact.expired,
        "created_at": "2025-01-01T00:00:00Z", "expires_at": "2025-04-01T00:00:00Z",
        "updated_at": "2025-01-01T00:00:00Z",
    }
    digest = artifact.reported_digest()
    if digest is not None:
        data["digest"] = digest
    return data


def _asset_json(api: str, asset: Asset) -> dict[str, Any]:
    return {"id": asset.id, "name": asset.name, "size": len(asset.body), "url": f"{api}/releases/assets/{asset.id}",
            "content_type": "application/octet-stream", "state": "uploaded",
            "digest": asset.digest or f"sha256:{hashlib.sha256(asset.body).hexdigest()}",
            "browser_download_url": f"https://github.invalid/download/{asset.name}"}


def _release_time(release_id: int) -> str:
    """A creation time that grows with the release's id: one minute apart, from 2025-01-01."""
    return (datetime.datetime(2025, 1, 1, tzinfo=datetime.UTC) + datetime.timedelta(minutes=release_id)
            ).strftime("%Y-%m-%dT%H:%M:%SZ")


def _release_json(api: str, release: Release) -> dict[str, Any]:
    return {"id": release.id, "tag_name": release.tag_name, "name": release.tag_name, "draft": release.draft,
            "prerelease": release.prerelease, "url": f"{api}/releases/{release.id}",
            "created_at": release.created_at or _release_time(release.id),
            "assets_url": f"{api}/releases/{release.id}/assets",
            "upload_url": f"{api}/releases/{release.id}/assets{{?name,label}}",
            "assets": [_asset_json(api, a) for a in release.assets]}
