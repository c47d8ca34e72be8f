"""A loopback HTTPS server with a certificate made for one run (journey and tests).

The certificate is self-signed for one DNS name and generated in memory with
``cryptography``; the client trusts exactly that certificate through the
``ssl.SSLContext`` returned here. Nothing is reachable beyond 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import datetime
import errno
import os
import shutil
import socket
import ssl
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

SERVER_NAME = "skillhost-journey.test"
# Another name of the same server, never on the journey's static allow-list: reachable only through a decision.
DECIDED_NAME = "decided.skillhost-journey.test"
# How long a held request waits for its release at most (the journey releases it in a few hundred ms).
HOLD_SECONDS = 10.0
# A public unicast address (outside every special-purpose range) standing in for this server's real one.
STAND_IN_ADDRESS = "203.0.114.7"
BIG_BODY = 200 * 1024


def make_cert(name: str, *aliases: str) -> tuple[bytes, bytes]:
    """Return (certificate PEM, private key PEM) valid for ``name`` and ``aliases`` for one day."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in (name, *aliases)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


class _RecordingServer(ThreadingHTTPServer):
    """Remembers the path of every request it answered, so a step can tell what a broker really asked for."""

    paths: list[str]


class _HoldingServer(ThreadingHTTPServer):
    """Answers ``/held`` only once ``held`` is set: a call that outlives its run's deadline, on demand."""

    held: threading.Event


class _Handler(BaseHTTPRequestHandler):
    server_version = "skillhost-loopback"
    sys_version = ""

    def log_message(self, format: str, *args: object) -> None:
        return

    def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        held = getattr(self.server, "held", None)
        if self.path == "/held" and isinstance(held, threading.Event):
            held.wait(HOLD_SECONDS)
        port = self.server.server_port  # type: ignore[attr-defined]  # HTTPServer's, not BaseServer's
        routes = {
            "/hello": (200, b"hello from the loopback server", {}),
            "/host": (200, f"host={self.headers.get('Host', '')}".encode(), {}),
            "/redirect-in": (302, b"", {"Location": "/hello"}),
            "/redirect-out": (302, b"", {"Location": "https://not-allowed.test/steal"}),
            "/redirect-http": (302, b"", {"Location": f"http://{SERVER_NAME}/hello"}),
            "/redirect-loop": (302, b"", {"Location": "/redirect-loop"}),
            "/redirect-decided": (302, b"", {"Location": f"https://{DECIDED_NAME}:{port}/hello"}),
            "/held": (200, b"released", {}) if isinstance(held, threading.Event) else (404, b"not found", {}),
            "/big": (200, b"x" * BIG_BODY, {}),
        }
        status, body, headers = routes.get(self.path, (404, b"not found", {}))
        seen = getattr(self.server, "paths", None)
        if isinstance(seen, list) and len(seen) < 256:
            seen.append(self.path[:200])
        with contextlib.suppress(OSError):
            self._send(status, body, headers)


class LoopbackHTTPServer:
    """Plain HTTP on 127.0.0.1 with the same routes: a local service such as a model server."""

    def __init__(self) -> None:
        self._httpd = _RecordingServer(("127.0.0.1", 0), _Handler)
        self._httpd.paths = []
        self._httpd.daemon_threads = True
        self.port = int(self._httpd.server_address[1])
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def paths(self) -> list[str]:
        """The paths requested so far, in order."""
        return list(self._httpd.paths)

    def __enter__(self) -> LoopbackHTTPServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(OSError):
            if self._thread.is_alive():
                self._httpd.shutdown()
            self._httpd.server_close()


class LoopbackTLSServer:
    """``with LoopbackTLSServer() as srv:`` -> ``srv.port``, ``srv.client_context()``, ``srv.resolver``."""

    def __init__(self, name: str = SERVER_NAME, aliases: tuple[str, ...] = (DECIDED_NAME,)) -> None:
        self.name = name
        self.names = frozenset({name, *aliases})
        self._cert, key = make_cert(name, *aliases)
        self._dir = tempfile.mkdtemp(prefix="skillhost-tls-")
        # ssl only loads a chain from files; the key file is private to this user and removed on close.
        cert_path, key_path = Path(self._dir, "cert.pem"), Path(self._dir, "key.pem")
        cert_path.write_bytes(self._cert)
        fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(key)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        ctx.load_cert_chain(str(cert_path), str(key_path))
        self._httpd = _HoldingServer(("127.0.0.1", 0), _Handler)
        self._httpd.held = threading.Event()
        self._httpd.daemon_threads = True
        self._httpd.socket = ctx.wrap_socket(self._httpd.socket, server_side=True)
        self.port = int(self._httpd.server_address[1])
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def client_context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cadata=self._cert.decode("ascii"))
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        return ctx

    def resolver(self, host: str, port: int) -> list[str]:
        """Resolve only this server's names, to loopback; everything else does not resolve."""
        return ["127.0.0.1"] if host in self.names else []

    def public_resolver(self, host: str, port: int) -> list[str]:
        """Resolve only this server's names, to a public stand-in address that ``connect`` routes here."""
        return [STAND_IN_ADDRESS] if host in self.names else []

    def release(self) -> None:
        """Answer every ``/held`` request, waiting or to come."""
        self._httpd.held.set()

    def connect(self, address: tuple[str, int], timeout: float) -> socket.socket:
        """Reach this server for exactly (stand-in address, its port); any other destination is unreachable.

        Public egress refuses loopback addresses, so a test or the journey reaches this server the way a
        real one is reached: a public answer from the resolver, a pinned connection to that answer.
        """
        if address != (STAND_IN_ADDRESS, self.port):
            raise OSError(errno.ENETUNREACH, "only the stand-in address is routed in this run")
        return socket.create_connection(("127.0.0.1", self.port), timeout=timeout)

    def __enter__(self) -> LoopbackTLSServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.release()
        with contextlib.suppress(OSError):
            if self._thread.is_alive():
                self._httpd.shutdown()
            self._httpd.server_close()
        shutil.rmtree(self._dir, ignore_errors=True)
