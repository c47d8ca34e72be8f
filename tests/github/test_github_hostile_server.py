"""A hostile or broken API server: loops, malformed shapes, trickling downloads, cleartext tokens."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.qualify_github import ClientConfig, GitHubClient
from desktop_qualify.qualify_github._download import download
from gh_testenv import FAST_RETRY

Handler = Callable[[BaseHTTPRequestHandler], None]


@pytest.fixture
def serve() -> Iterator[Callable[[Handler], str]]:
    servers: list[ThreadingHTTPServer] = []

    def start(answer: Handler) -> str:
        class _H(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                answer(self)

            def log_message(self, format: str, *args: object) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), _H)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def _json(handler: BaseHTTPRequestHandler, body: object, headers: dict[str, str] | None = None) -> None:
    data = json.dumps(body).encode()
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    for key, value in (headers or {}).items():
        handler.send_header(key, value)
    handler.end_headers()
    handler.wfile.write(data)


def _client(url: str) -> GitHubClient:
    return GitHubClient(ClientConfig(api_url=url, timeout=5, retry=FAST_RETRY, seconds_between_requests=0), "t0ken")


def test_rules_pagination_that_links_to_itself_ends(serve: Callable[[Handler], str]) -> None:
    def answer(h: BaseHTTPRequestHandler) -> None:
        _json(h, [], {"Link": f'<http://{h.headers["Host"]}{h.path}>; rel="next"'})

    url = serve(answer)
    started = time.monotonic()
    with pytest.raises(QualificationError) as refused:
        _client(url).branch_rules("o/r", "main")
    assert refused.value.code is Code.ENVIRONMENT
    assert time.monotonic() - started < 10


def test_branch_answer_with_a_null_commit_is_an_environment_error(serve: Callable[[Handler], str]) -> None:
    url = serve(lambda h: _json(h, {"name": "main", "commit": None, "protected": True}))
    with pytest.raises(QualificationError) as refused:
        _client(url).branch("o/r", "main")
    assert refused.value.code is Code.ENVIRONMENT
    assert "t0ken" not in refused.value.message


def test_plain_http_is_refused_for_a_non_loopback_api() -> None:
    with pytest.raises(QualificationError) as refused:
        ClientConfig(api_url="http://ghes.example.invalid/api/v3")
    assert refused.value.code is Code.USAGE


def test_trickling_download_hits_its_deadline(serve: Callable[[Handler], str], tmp_path: Path) -> None:
    def answer(h: BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Length", str(10_000))
        h.end_headers()
        for _ in range(100):
            h.wfile.write(b"x" * 100)
            h.wfile.flush()
            time.sleep(0.1)

    url = serve(answer)
    started = time.monotonic()
    with pytest.raises(QualificationError) as refused:
        download(f"{url}/blob", tmp_path / "out.bin", token=None, max_bytes=1 << 20, timeout=5, max_seconds=1.0,
                 what="artifact")
    assert refused.value.code is Code.ENVIRONMENT
    assert time.monotonic() - started < 4
