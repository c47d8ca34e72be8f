"""Windows: grant the worker's install capability read and execute on the folders it reads, once.

What an installer of the app runs after it copied the files, with the rights to
change the folder's ACL (an MSI custom action, NSIS's ``ExecWait``), and what a
developer runs once on a source checkout and the base interpreter's folder
(an all-users Python needs an elevated prompt, as its installer did). The host
never writes these ACLs itself: it only checks them at each start
(``skillhost.os_sandbox._windows_grant``).

    python tools/grant_install_folder.py [--run] [FOLDER ...]

Without folders: the ones this interpreter's worker reads (``worker_read_roots``:
the bundle when frozen; the app source and the base interpreter's folder from
source). Without ``--run`` the commands are only printed.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

# Run as a script from anywhere (an installer's custom action): the app's package is beside this folder.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from skillhost.os_sandbox import worker_read_roots
from skillhost.os_sandbox._windows_grant import grant_command


def main(argv: Sequence[str] | None = None, run: Callable[[list[str]], int] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="grant_install_folder", description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", action="store_true", help="run the icacls commands, not only print them")
    parser.add_argument("folders", nargs="*", help="the folders to grant (default: the ones the worker reads)")
    options = parser.parse_args(argv)
    runner = run or (lambda command: subprocess.run(command, check=False).returncode)
    for folder in options.folders or worker_read_roots():
        command = grant_command(folder)
        print(subprocess.list2cmdline(command))
        if options.run and (code := runner(command)) != 0:
            print(f"icacls failed for {folder} (exit {code})", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
