"""macOS: app code runs as a separate unprivileged account, under a deny-by-default ``sandbox-exec`` profile.

Two layers, each enough against a different mistake in the other:

* the account (``_macos_account``): app code is never the runner user, so the runner's files are closed to it
  by their modes; the protected paths (checkout, key folders, the producer's output) are refused unless only
  their owner can open them (no group or other bit, no ACL entry allowing anyone else);
* the profile (``_macos_profile``): whatever the modes say, the stage reads only its toolchain, inputs,
  own folders and the system's libraries, writes only its own folders, and the protected paths are denied
  last.

The command line is ``sudo -n -u ACCOUNT -- env -i K=V... sandbox-exec -p PROFILE sh -c 'cd...' sh DIR argv``:
sudo resets the environment, so the stage's is given explicitly and nothing of sudo's reaches app code; the
fixed ``sh`` script only changes to the stage's folder (its arguments are never parsed as script). The
account gets an inherited ACL entry on each writable folder, and a ``search``-only entry on the folders
above each path it is given where others may not pass. ``finish`` kills every process of the account
(``pkill -KILL`` by real and effective uid, then ``pgrep`` until none is left), never a process group.
Never run here (no Mac): the tests hold the command lines, the profile text and the read-back.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from ._checks import bound_paths, stage_environment
from ._macos_account import SUDO, Account, Accounts, Runner, run
from ._macos_profile import profile
from ._stage import ConfinedCommand, Confinement, ConfinementError, ConfinementFacts, StageSandbox, sealed

SANDBOX_EXEC = "/usr/bin/sandbox-exec"
ENV, SH, CHMOD, LS, ID = "/usr/bin/env", "/bin/sh", "/bin/chmod", "/bin/ls", "/usr/bin/id"
PKILL, PGREP = "/usr/bin/pkill", "/usr/bin/pgrep"
# Changes to the stage's folder, then runs the stage: "$1" is the folder, the rest the command, never parsed.
CHDIR_SCRIPT = 'cd -- "$1" || exit 125; shift; exec "$@"'
# What the account may do in its writable folders, inherited by what it creates there; the runner's own entry
# beside it keeps the producer's access to what app code leaves (to sign it, to remove it).
APP_RIGHTS = ("read,write,append,execute,delete,delete_child,readattr,writeattr,readextattr,writeextattr,"
              "readsecurity,file_inherit,directory_inherit")
RUNNER_RIGHTS = APP_RIGHTS.replace("readsecurity,", "readsecurity,writesecurity,chown,")
SWEEP_ATTEMPTS, SWEEP_PAUSE = 10, 0.2
_SUDO_ENV = {"PATH": "/usr/bin:/bin:/usr/sbin:/sbin"}


class SandboxExecConfinement(Confinement):
    """The macOS adapter (module docstring)."""

    mechanism = "sandbox-exec"

    def __init__(self, runner: Runner | None = None, *, platform: str = sys.platform,
                 exists: Callable[[str], bool] = os.path.exists, stat_path: Callable[[Path], os.stat_result] = os.stat,
                 runner_user: str | None = None, runner_uid: int | None = None,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self._runner: Runner = runner if runner is not None else subprocess.run
        self._platform, self._exists, self._stat, self._sleep = platform, exists, stat_path, sleep
        self._uid = runner_uid if runner_uid is not None else getattr(os, "getuid", lambda: -1)()
        self._user = runner_user
        self._accounts = Accounts(self._runner)
        self._searchable: set[tuple[str, str]] = set()

    def unavailable(self) -> str | None:
        """What is missing: macOS itself, ``sandbox-exec``, or the passwordless sudo that makes the account."""
        if self._platform != "darwin":
            return "sandbox-exec confines app code on macOS only"
        if not self._exists(SANDBOX_EXEC):
            return f"{SANDBOX_EXEC} is missing"
        if run(self._runner, [SUDO, "-n", "/usr/bin/true"]).returncode != 0:
            return "app code runs as an account of its own, made and used through sudo: passwordless sudo is needed"
        return None

    def wrap(self, argv: Sequence[str], sandbox: StageSandbox, env: Mapping[str, str]) -> ConfinedCommand:
        """The confined command line (module docstring); the account is leased until ``close``."""
        why = self.unavailable()
        if why is not None:
            raise ConfinementError(why)
        if not argv:
            raise ConfinementError("no command to confine")
        text = profile(sandbox)
        self._check_protected(sandbox)
        account = self._accounts.lease()
        state = {"clean": False, "leased": True}
        try:
            child_env = stage_environment(env, {"HOME": str(sandbox.home), "TMPDIR": str(sandbox.tmp),
                                                "USER": account.name, "LOGNAME": account.name})
            self._sweep(account)  # whatever an earlier run of this account left
            self._grant(account, sandbox)
            self._preflight(account, text, sandbox)
        except BaseException:
            self._accounts.release(account, clean=False)
            raise
        start = [SUDO, "-n", "-u", account.name, "--", ENV, "-i", *(f"{k}={v}" for k, v in child_env.items()),
                 SANDBOX_EXEC, "-p", text, SH, "-c", CHDIR_SCRIPT, "sh", str(sandbox.cwd or sandbox.home), *argv]
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]

        def finish() -> ConfinementFacts:
            self._sweep(account)  # raises when a process of the account survives
            state["clean"] = True
            detail = (f"account {account.name} (uid {account.uid}); profile sha256 {digest}; writable: "
                      f"{', '.join(p.name for p in sandbox.writable)[:200]}; "
                      f"network: {'the machine' if sandbox.network else 'none'}")
            return ConfinementFacts(sandbox.stage, "sandbox-exec", ("sandbox-profile", "separate-account",
                                    "private-home", "private-tmp", "dies-with-stage"), sandbox.network, detail)

        def close() -> None:
            if not state["leased"]:
                return
            state["leased"] = False
            if not state["clean"]:
                with contextlib.suppress(ConfinementError):
                    self._sweep(account)
                    state["clean"] = True
            self._accounts.release(account, clean=state["clean"])

        return ConfinedCommand(argv=start, env=dict(_SUDO_ENV), finish=finish, release=close)

    # -- the account's view of the disk ----------------------------------------------------------------

    def _check_protected(self, sandbox: StageSandbox) -> None:
        """Refuse a protected path that anyone but its owner may open: the app account would be such a one."""
        for path in sealed(sandbox):
            try:
                mode = self._stat(path).st_mode
            except FileNotFoundError:
                continue  # nothing there to read
            if mode & (stat.S_IRWXG | stat.S_IRWXO):
                raise ConfinementError(f"the protected path {path} is open to its group or others (mode "
                                       f"{stat.filemode(mode)}): the app account could reach it; chmod go-rwx it")
            done = run(self._runner, [LS, "-lde", str(path)])
            for line in done.stdout.decode("utf-8", errors="replace").splitlines()[1:]:
                entry = line.strip().partition(": ")[2]
                if " allow " in f" {entry} " and not entry.startswith(f"user:{self._runner_name()} "):
                    raise ConfinementError(f"the protected path {path} has an ACL entry allowing others "
                                           f"({entry[:120]}): the app account could reach it")

    def _runner_name(self) -> str:
        if self._user is None:
            import pwd  # noqa: PLC0415 - POSIX only, and only when not given

            self._user = pwd.getpwuid(self._uid).pw_name
        return self._user

    def _grant(self, account: Account, sandbox: StageSandbox) -> None:
        """The account's entry on every folder of the writable trees; ``search`` on the folders above each path."""
        folders: list[str] = []
        for root in sandbox.writable:
            for top, dirs, _files in os.walk(root):  # never into a symbolic link: only real folders get an entry
                folders.append(top)
                dirs[:] = [d for d in dirs if not (Path(top) / d).is_symlink()]
        for who, rights in ((self._runner_name(), RUNNER_RIGHTS), (account.name, APP_RIGHTS)):
            if folders:
                _checked(run(self._runner, [CHMOD, "+a", f"{who} allow {rights}", *folders]), "chmod +a")
        above: dict[str, None] = {}
        for _what, path in bound_paths(sandbox):
            for parent in reversed(path.parents):
                above[str(parent)] = None
        for folder in above:
            if (account.name, folder) in self._searchable:
                continue
            info = self._stat(Path(folder))
            if not info.st_mode & stat.S_IXOTH:
                if info.st_uid != self._uid:
                    raise ConfinementError(f"{folder} is closed to other accounts and is not the runner's: the app "
                                           "account cannot reach the stage's folders below it")
                _checked(run(self._runner, [CHMOD, "+a", f"{account.name} allow search", folder]), "chmod +a")
            self._searchable.add((account.name, folder))

    def _as_account(self, account: Account, text: str, argv: list[str]) -> list[str]:
        return [SUDO, "-n", "-u", account.name, "--", ENV, "-i", SANDBOX_EXEC, "-p", text, *argv]

    def _preflight(self, account: Account, text: str, sandbox: StageSandbox) -> None:
        """The profile compiles and applies, the command runs as the account, and no protected path opens."""
        done = run(self._runner, self._as_account(account, text, [ID, "-u"]))
        said = done.stdout.decode("utf-8", errors="replace").strip()
        if done.returncode != 0 or said != str(account.uid):
            raise ConfinementError(f"sandbox-exec did not run as {account.name} (uid {account.uid}) under the "
                                   f"profile: exit {done.returncode}, said {said[:80]!r}")
        for path in sealed(sandbox):
            if run(self._runner, self._as_account(account, text, [LS, "-d", "--", str(path)])).returncode == 0:
                raise ConfinementError(f"the protected path {path} is visible under the profile")

    def _sweep(self, account: Account) -> None:
        """Kill every process of the account, by real and effective uid, until ``pgrep`` finds none."""
        left = ""
        for attempt in range(SWEEP_ATTEMPTS):
            if attempt:
                self._sleep(SWEEP_PAUSE)
            for flag in ("-U", "-u"):
                run(self._runner, [SUDO, "-n", PKILL, "-KILL", flag, account.name])
            found = [run(self._runner, [PGREP, flag, account.name]) for flag in ("-U", "-u")]
            if any(done.returncode not in (0, 1) for done in found):
                raise ConfinementError(f"pgrep could not list the processes of {account.name}")
            if all(done.returncode == 1 for done in found):
                return
            left = " ".join(" ".join(done.stdout.decode("ascii", errors="replace").split()) for done in found)
        raise ConfinementError(f"processes of {account.name} survived {SWEEP_ATTEMPTS} kills: {left[:200]}")


def _checked(done: subprocess.CompletedProcess[bytes], what: str) -> None:
    if done.returncode != 0:
        raise ConfinementError(f"{what} failed (exit {done.returncode})")


__all__ = ["CHDIR_SCRIPT", "SANDBOX_EXEC", "SandboxExecConfinement"]
