"""The host-boundary trap: executing an external skill's code in the host process is caught as it happens.

External handlers run only in the one-shot worker; the host reads their bytes,
hashes them and parses them (``_source_audit``), never compiles or runs them.
Looking for leftovers after a run cannot see code that ran and was dropped, so
the host watches its own interpreter instead: every package it reads registers
its real root and its handler's SHA-256 here, and a ``sys.addaudithook`` hook
records each

* ``compile`` of a handler's exact source under any file name, or of any source
  under a registered root or under the worker's handler file name (the host's
  own parse uses a file name of its own, ``PARSE_FILENAME``, and is exempt);
* ``exec`` of a code object compiled from a registered root or under either
  handler file name (a tree the host parsed and then compiled to code is one);
* ``import`` of a module from a registered root, or with a registered root on
  the module search path.

An audit hook cannot be removed, so it only records (bounded); the journey's
``host-boundary-external-not-loaded`` step fails on any record. It is a trap for
the host's own mistakes, not a sandbox: code already running in the host could
evade it.
"""

from __future__ import annotations

import hashlib
import os
import sys
import threading
from collections.abc import Sequence

# The worker compiles a handler under this name; the host never compiles anything under it.
HANDLER_FILENAME = "<external-skill>"
# The host parses (``ast.parse``, no code object) an external handler under this name only.
PARSE_FILENAME = "<external-skill-parse>"
MAX_HITS = 32

_lock = threading.Lock()
_roots: set[str] = set()
_digests: set[str] = set()
_hits: list[str] = []
_installed: list[bool] = []


def _under_root(path: object) -> bool:
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if not isinstance(path, str) or not path or not _roots:
        return False
    # Compared as written (each root is registered as given and resolved): no system call per event.
    return any(path == root or path.startswith(root + os.sep) for root in _roots)


def _hit(what: str) -> None:
    with _lock:
        if len(_hits) < MAX_HITS:
            _hits.append(what[:120])


def _on_compile(args: tuple[object, ...]) -> None:
    source, filename = (*args, None, None)[:2]
    name = os.fsdecode(filename) if isinstance(filename, bytes) else filename
    if name == PARSE_FILENAME:
        return
    if name == HANDLER_FILENAME or _under_root(name):
        _hit(f"compile {name}")
        return
    if isinstance(source, str):
        source = source.encode("utf-8", "surrogatepass")
    if isinstance(source, (bytes, bytearray)) and _digests and hashlib.sha256(source).hexdigest() in _digests:
        _hit(f"compile of an external handler's source as {str(name)[:60]}")


def _on_exec(args: tuple[object, ...]) -> None:
    name = getattr(args[0], "co_filename", None) if args else None
    if name in (HANDLER_FILENAME, PARSE_FILENAME) or _under_root(name):
        _hit(f"exec {name}")


def _on_import(args: tuple[object, ...]) -> None:
    module, filename = (*args, None, None)[:2]
    search = args[2] if len(args) > 2 else None
    if _under_root(filename):
        _hit(f"import {module} from {filename}")
    elif isinstance(search, Sequence) and not isinstance(search, str) and any(_under_root(p) for p in search):
        _hit(f"import {module} with an external skill on the module path")


_HANDLERS = {"compile": _on_compile, "exec": _on_exec, "import": _on_import}


def _hook(event: str, args: tuple[object, ...]) -> None:
    handler = _HANDLERS.get(event)
    if handler is None:
        return
    try:
        handler(args)
    except Exception:  # a hook must never break the operation it watches
        _hit(f"{event}: the trap could not inspect it")


def install() -> None:
    """Add the hook once per process (it cannot be removed; every later ``compile``/``exec``/``import`` is seen)."""
    with _lock:
        if _installed:
            return
        _installed.append(True)
    sys.addaudithook(_hook)


def register(root: str, handler: bytes | None) -> None:
    """An external package this process read: its root (as given and resolved), and its handler's digest."""
    install()
    with _lock:
        _roots.update({os.path.abspath(root), os.path.realpath(root)})  # noqa: PTH100 - strings, as events carry them
        if handler is not None:
            _digests.add(hashlib.sha256(handler).hexdigest())


def violations() -> list[str]:
    """What the trap saw: external code compiled, executed or imported in this process (at most ``MAX_HITS``)."""
    with _lock:
        return list(_hits)


def installed() -> bool:
    return bool(_installed)
