"""macOS: the unprivileged accounts app code runs as, created once per job through the runner's sudo.

Standard library only; every command goes through an injected runner with ``subprocess.run``'s shape, so the
tests hold each command line. One account per stage running at a time (a reproducibility check's second
build runs beside the first, and sweeping one stage's processes must not kill the other's): ``_qualify_app1``,
``_qualify_app2``..., each with a group of its own (never ``staff``, whose files the runner's are), a hidden
uid in 400-499 (below the 500 where the login window lists users), no shell, no home, no password. An
account whose processes could not all be killed is never leased again: the next stage gets a fresh one.
"""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ._stage import ConfinementError

Runner = Callable[..., "subprocess.CompletedProcess[bytes]"]

SUDO = "/usr/bin/sudo"
DSCL = "/usr/bin/dscl"
ACCOUNT_PREFIX = "_qualify_app"
HIDDEN_IDS = range(400, 500)
NO_SHELL = "/usr/bin/false"
NO_HOME = "/var/empty"
_TIMEOUT = 60


@dataclass(frozen=True)
class Account:
    """A leased app account: its name and its uid (which is also its own group's gid)."""

    name: str
    uid: int


def run(runner: Runner, argv: list[str]) -> subprocess.CompletedProcess[bytes]:
    """``argv`` through the runner: captured, bounded in time, no standard input, never raising on exit."""
    try:
        return runner(argv, capture_output=True, check=False, timeout=_TIMEOUT, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as exc:
        raise ConfinementError(f"{argv[0]} could not be run: {exc}") from exc


def _text(done: subprocess.CompletedProcess[Any]) -> str:
    out = done.stdout
    return out.decode("utf-8", errors="replace") if isinstance(out, bytes) else str(out or "")


def _fields(done: subprocess.CompletedProcess[Any]) -> dict[str, str]:
    """``dscl . -read``'s ``Key: value`` lines (one value each, as the keys read here have)."""
    found = {}
    for line in _text(done).splitlines():
        key, sep, value = line.partition(":")
        if sep and value.strip():
            found[key.strip()] = value.strip()
    return found


class Accounts:
    """The job's app accounts (module docstring): leased by one stage at a time, created when none is free."""

    def __init__(self, runner: Runner) -> None:
        self._runner = runner
        self._lock = threading.Lock()
        self._free: list[Account] = []
        self._leased: set[str] = set()
        self._poisoned: set[str] = set()

    def lease(self) -> Account:
        """A free account, created if none is."""
        with self._lock:
            account = self._free.pop(0) if self._free else self._ensure(self._next_name())
            self._leased.add(account.name)
            return account

    def release(self, account: Account, *, clean: bool) -> None:
        """Give ``account`` back; one with processes left (``clean`` false) is never leased again."""
        with self._lock:
            self._leased.discard(account.name)
            if clean:
                self._free.append(account)
            else:
                self._poisoned.add(account.name)

    def _next_name(self) -> str:
        known = self._leased | self._poisoned | {a.name for a in self._free}
        index = 1
        while f"{ACCOUNT_PREFIX}{index}" in known:
            index += 1
        return f"{ACCOUNT_PREFIX}{index}"

    def existing(self, name: str) -> Account | None:
        """The account ``name`` as the directory has it, or None; refused when it is not one this module made."""
        done = run(self._runner, [DSCL, ".", "-read", f"/Users/{name}", "UniqueID", "PrimaryGroupID", "UserShell"])
        if done.returncode != 0:
            return None
        fields = _fields(done)
        uid = fields.get("UniqueID", "")
        if not uid.isdigit() or int(uid) not in HIDDEN_IDS or fields.get("PrimaryGroupID") != uid \
                or fields.get("UserShell") != NO_SHELL:
            raise ConfinementError(f"an account named {name} exists but is not an app account of this job "
                                   f"(UniqueID {uid or '?'}, PrimaryGroupID {fields.get('PrimaryGroupID', '?')}, "
                                   f"shell {fields.get('UserShell', '?')})")
        return Account(name, int(uid))

    def _used_ids(self) -> set[int]:
        used: set[int] = set()
        for path, key in (("/Users", "UniqueID"), ("/Groups", "PrimaryGroupID")):
            done = run(self._runner, [DSCL, ".", "-list", path, key])
            if done.returncode != 0:
                raise ConfinementError(f"dscl could not list {path} ({done.returncode})")
            for line in _text(done).splitlines():
                parts = line.split()
                if len(parts) >= 2 and parts[-1].lstrip("-").isdigit():
                    used.add(int(parts[-1]))
        return used

    def _ensure(self, name: str) -> Account:
        found = self.existing(name)
        if found is not None:
            return found
        free = [i for i in HIDDEN_IDS if i not in self._used_ids()]
        if not free:
            raise ConfinementError("no uid between 400 and 499 is free for the app account")
        for argv in create_commands(name, free[0]):
            done = run(self._runner, argv)
            if done.returncode != 0:
                said = done.stderr.decode("utf-8", errors="replace").strip()[:200] if done.stderr else ""
                raise ConfinementError(f"creating the app account failed at {' '.join(argv[2:6])}: "
                                       f"{said or f'exit {done.returncode}'}")
        made = self.existing(name)
        if made is None or made.uid != free[0]:
            raise ConfinementError(f"the app account {name} was not found as created")
        return made


def create_commands(name: str, uid: int) -> list[list[str]]:
    """The ``dscl`` commands that make ``name``'s own group and then the account, hidden, with no shell or home."""
    group, user = f"/Groups/{name}", f"/Users/{name}"
    dscl = [SUDO, "-n", DSCL, "."]
    return [
        [*dscl, "-create", group],
        [*dscl, "-create", group, "PrimaryGroupID", str(uid)],
        [*dscl, "-create", group, "Password", "*"],
        [*dscl, "-create", user],
        [*dscl, "-create", user, "UniqueID", str(uid)],
        [*dscl, "-create", user, "PrimaryGroupID", str(uid)],
        [*dscl, "-create", user, "UserShell", NO_SHELL],
        [*dscl, "-create", user, "NFSHomeDirectory", NO_HOME],
        [*dscl, "-create", user, "RealName", "desktop-qualify app code"],
        [*dscl, "-create", user, "Password", "*"],
        [*dscl, "-create", user, "IsHidden", "1"],
    ]


__all__ = ["ACCOUNT_PREFIX", "Account", "Accounts", "HIDDEN_IDS", "Runner", "create_commands", "run"]
