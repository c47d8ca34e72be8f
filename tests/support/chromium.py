"""Headless Chromium, driven over the DevTools protocol on a pipe: what a page shows, not what its source says.

``chromium --remote-debugging-pipe`` reads protocol messages on fd 3 and writes
them on fd 4, each a JSON object ended by NUL; no port is opened, nothing but
the page's own file:// URL is loaded, and every call is bounded by a deadline.
``find_chromium`` installs Debian's ``chromium`` package where it can (root
with apt-get) and otherwise says what is missing, for the caller to skip.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

_NAMES = ("chromium", "chromium-browser")
_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
          "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-extensions",
          "--hide-scrollbars", "--mute-audio", "--remote-debugging-pipe")


def _apt(*args: str, timeout: float) -> str | None:
    """Run apt-get; None when it worked, else its last line of complaint."""
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    try:
        done = subprocess.run(["apt-get", *args], capture_output=True, text=True, timeout=timeout, env=env,
                              check=False)
    except subprocess.TimeoutExpired:
        return f"apt-get {' '.join(args)} took over {timeout:.0f} s"
    if done.returncode == 0:
        return None
    lines = (done.stderr or done.stdout).strip().splitlines()
    return lines[-1] if lines else f"apt-get exited {done.returncode}"


def find_chromium() -> tuple[str | None, str]:
    """The chromium binary, installing Debian's package where this process may; else None and why not."""
    for name in _NAMES:
        if found := shutil.which(name):
            return found, ""
    if not shutil.which("apt-get"):
        return None, "no chromium on PATH and no apt-get to install Debian's chromium package"
    if os.geteuid() != 0:
        return None, "no chromium on PATH; installing Debian's chromium package needs root (apt-get install chromium)"
    why = _apt("install", "-y", "--no-install-recommends", "chromium", timeout=900)
    if why is not None:
        why = _apt("update", timeout=300) or _apt("install", "-y", "--no-install-recommends", "chromium",
                                                   timeout=900)
    found = next((f for f in map(shutil.which, _NAMES) if f), None)
    return found, "" if found else f"no chromium on PATH, and apt-get install chromium failed: {why}"


class Browser:
    """One headless Chromium process and one page in it; use as a context manager."""

    def __init__(self, binary: str, profile: Path, *, width: int = 1200, height: int = 900,
                 timeout: float = 60.0) -> None:
        self.deadline = time.monotonic() + timeout
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()
        # Out of the way of fds 3 and 4, onto which the child lays them before it runs chromium.
        ends = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in (to_child_r, from_child_w)]
        for fd in (to_child_r, from_child_w):
            os.close(fd)

        def lay_pipe() -> None:
            # dup2 clears close-on-exec on the copies; every other descriptor of ours is non-inheritable.
            os.dup2(ends[0], 3)
            os.dup2(ends[1], 4)

        argv = [binary, *_FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}", "about:blank"]
        self._proc = subprocess.Popen(argv, preexec_fn=lay_pipe, close_fds=False,  # noqa: PLW1509
                                      stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL)
        for fd in ends:
            os.close(fd)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []
        self.session = ""

    def __enter__(self) -> Browser:
        target = self.call("Target.createTarget", {"url": "about:blank"}, browser=True)["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True},
                                 browser=True)["sessionId"]
        self.call("Page.enable")
        self.call("Network.enable")
        return self

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(OSError, RuntimeError, TimeoutError):
            self.call("Browser.close", browser=True)
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait(timeout=10)
        os.close(self._to_child)
        os.close(self._from_child)

    def _read_message(self) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("Chromium did not answer in time")
            ready, _, _ = select.select([self._from_child], [], [], left)
            if ready:
                chunk = os.read(self._from_child, 1 << 20)
                if not chunk:
                    raise RuntimeError("Chromium closed its DevTools pipe")
                self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        parsed: dict[str, Any] = json.loads(message)
        return parsed

    def call(self, method: str, params: dict[str, Any] | None = None, *, browser: bool = False) -> dict[str, Any]:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if not browser:
            message["sessionId"] = self.session
        os.write(self._to_child, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._read_message()
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                result: dict[str, Any] = reply.get("result", {})
                return result
            self.events.append(reply)

    def wait_for(self, event: str) -> dict[str, Any]:
        while True:
            if found := next((e for e in self.events if e.get("method") == event), None):
                self.events.remove(found)
                return found
            self.events.append(self._read_message())

    def open(self, page: Path) -> None:
        self.call("Page.navigate", {"url": page.resolve().as_uri()})
        self.wait_for("Page.loadEventFired")

    def evaluate(self, expression: str) -> Any:
        """A value computed in the page (the test's own script; the page itself has none)."""
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression[:60]}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def requested_urls(self) -> list[str]:
        return [e["params"]["request"]["url"] for e in self.events if e.get("method") == "Network.requestWillBeSent"]

    def media(self, media: str) -> None:
        self.call("Emulation.setEmulatedMedia", {"media": media})

    def screenshot(self, out: Path, *, width: int, until: str | None = None) -> None:
        """The page from its top at ``width`` CSS pixels, as PNG: all of it, or down to the end of ``until``."""
        self.call("Emulation.setDeviceMetricsOverride", {"width": width, "height": 900, "deviceScaleFactor": 1,
                                                         "mobile": False})
        bottom = (f"document.querySelector({json.dumps(until)}).getBoundingClientRect().bottom + 16" if until
                  else "document.documentElement.scrollHeight")
        height = int(self.evaluate(f"Math.ceil({bottom})"))
        shot = self.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True,
                                                    "clip": {"x": 0, "y": 0, "width": width, "height": height,
                                                             "scale": 1}})
        out.write_bytes(base64.b64decode(shot["data"]))
