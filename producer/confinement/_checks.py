"""Checks the macOS and Windows adapters share: the paths and environment they hand to app code.

Standard library only. A stage's paths reach a sandbox profile (macOS) or an ``icacls`` command line
(Windows), and its environment reaches the child verbatim, so both are refused here rather than
escaped into something that means another thing: a path with a control character, a relative path, a
bound path that is or holds a protected one, an environment name that is not a plain identifier, and
the names that carry the job's credentials (the OIDC request, the runtime and API tokens), whatever
the caller's allow-list said.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path, PurePath

from ._stage import ConfinementError, StageSandbox, exposes, inside

# A variable name env(1) and Windows' environment block both take as a name, never as an option or a value.
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# The job's credentials: no app stage may be handed these, whatever the policy's allow-list adds.
_NEVER = frozenset({"ACTIONS_ID_TOKEN_REQUEST_TOKEN", "ACTIONS_ID_TOKEN_REQUEST_URL", "ACTIONS_RUNTIME_TOKEN",
                    "ACTIONS_RUNTIME_URL", "ACTIONS_CACHE_URL", "GITHUB_TOKEN", "GH_TOKEN"})
_SECRET_WORDS = ("TOKEN", "SECRET", "PASSWORD", "PRIVATE_KEY", "CREDENTIAL")


def clean_path(path: PurePath, what: str) -> str:
    """``path`` as text, refused when it is relative or holds a control character (a profile or command line
    cannot then say something else than the path)."""
    text = str(path)
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in text):
        raise ConfinementError(f"the {what} path {text!r} holds a control character")
    if not path.is_absolute():
        raise ConfinementError(f"the {what} path {text} is not absolute")
    return text


def bound_paths(sandbox: StageSandbox) -> list[tuple[str, Path]]:
    """Every path the stage is given, with what it is, each checked: none is or holds a protected path."""
    for path in sandbox.protected:
        clean_path(path, "protected")
    bound: list[tuple[str, Path]] = []
    for what, paths in (("toolchain", sandbox.toolchain), ("readable", sandbox.readable),
                        ("writable", sandbox.writable), ("socket", sandbox.sockets)):
        for path in paths:
            clean_path(path, what)
            shown = exposes(path, sandbox.protected)
            if shown is not None:
                raise ConfinementError(f"giving app code the {what} path {path} would show {shown}")
            bound.append((what, path))
    if not any(inside(sandbox.home, w) for w in sandbox.writable) \
            or not any(inside(sandbox.tmp, w) for w in sandbox.writable):
        raise ConfinementError("the stage's HOME and TMPDIR must lie in its writable folders")
    return bound


def stage_environment(env: Mapping[str, str], private: Mapping[str, str]) -> dict[str, str]:
    """``env`` with the stage's private folders (``private``) laid over it, every name and value checked."""
    merged = {**env, **private}
    for name, value in merged.items():
        if not _ENV_NAME.fullmatch(name):
            raise ConfinementError(f"the environment name {name!r} is not a plain identifier")
        upper = name.upper()
        if upper in _NEVER or any(word in upper for word in _SECRET_WORDS):
            raise ConfinementError(f"{name} carries a credential: app code is never given it")
        if "\0" in value:
            raise ConfinementError(f"the value of {name} holds a NUL character")
    return merged


__all__ = ["bound_paths", "clean_path", "stage_environment"]
