"""Running `qualify` in-process as a terminal would see it, for the property targets."""

from __future__ import annotations

import contextlib
import io
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .oracle import INTERNAL, PropertyViolationError, codes_in, expect, expect_stable_codes, is_usage_code

REPO = Path(__file__).resolve().parents[2]
_INTERNAL = re.compile(rf"^{INTERNAL}: unexpected (\w+)", re.MULTILINE)
_FRAME = re.compile(r'^  File "([^"]+)", line \d+, in (\S+)', re.MULTILINE)


@dataclass(frozen=True)
class CliRun:
    status: int
    out: str
    err: str


def _stream(errors: str) -> io.TextIOWrapper:
    # Like a UTF-8 terminal: stdout refuses what it cannot encode, stderr escapes it (Python's defaults).
    return io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors=errors, write_through=True)


def run_qualify(argv: Sequence[str]) -> CliRun:
    from desktop_qualify import qualify_cli
    out, err = _stream("strict"), _stream("backslashreplace")
    debug = os.environ.get("QUALIFY_DEBUG")
    os.environ["QUALIFY_DEBUG"] = "1"  # a caught bug then prints its traceback: the report needs the line
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                status = qualify_cli.main(list(argv))
            except SystemExit as exc:  # argparse's usage errors (and --help) exit this way: a status like others
                status = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    finally:
        if debug is None:
            del os.environ["QUALIFY_DEBUG"]
        else:
            os.environ["QUALIFY_DEBUG"] = debug
    return CliRun(status, _text(out), _text(err))


def _text(stream: io.TextIOWrapper) -> str:
    buffer = stream.buffer
    assert isinstance(buffer, io.BytesIO)
    return buffer.getvalue().decode("utf-8", "replace")


def _expect_no_internal_error(target: str, err: str) -> None:
    """QE_INTERNAL is the guard catching a bug: named by the exception and the project function that raised it."""
    caught = _INTERNAL.search(err)
    if caught is None:
        return
    frames = [(Path(path), function) for path, function in _FRAME.findall(err)]
    ours = [(path.relative_to(REPO), function) for path, function in frames
            if path.is_relative_to(REPO) and "tests" not in path.relative_to(REPO).parts[:1]
            and ".nox" not in path.parts and "site-packages" not in path.parts]
    where = f"@{ours[-1][0]}:{ours[-1][1]}" if ours else ""
    raise PropertyViolationError(f"{target}:internal-error:{caught.group(1)}{where}", err[-3000:])


def expect_cli_contract(target: str, run: CliRun) -> None:
    """Exit 0, 1 or 2; no caught bug; only documented codes; exit 2 says which usage or environment code it is."""
    _expect_no_internal_error(target, run.err)
    expect(run.status in (0, 1, 2), f"{target}:exit-status-{run.status}", run.err[-1000:])
    expect_stable_codes(target, run.out + run.err)
    if run.status == 2:
        expect(any(is_usage_code(code) for code in codes_in(run.err)), f"{target}:exit-2-without-usage-code",
               run.err[-1000:])
