"""Progress on standard error, one stage at a time, never on standard output (which carries results and JSON).

Two forms, chosen by where standard error goes:

* **a terminal** (``isatty``, and no ``CI`` variable): the stage's start and end lines, and between them a live
  line drawn by rich: the stage, the time it has run, and what is running now (the command the stage runner
  started last). It is redrawn in place and erased when the stage ends, so a terminal's scroll-back holds the
  same lines a log does.
* **a log** (a pipe or file, or ``CI`` set, as GitHub Actions sets it): plain lines, each starting with the UTC
  time in ISO 8601 (``2026-12-03T20:15:00Z [produce linux] build ...``), and while a stage runs longer than
  ``heartbeat`` seconds a line of its own every ``heartbeat`` seconds, saying it is still running and what, so
  that a long build is told from a hung job in a CI log without a terminal.

A stage's lines are ``[label] <stage> ...`` when it starts, ``[label] <stage> <outcome>  (<s>s)`` when it ends
and ``[label] <stage> FAILED after <s>s`` when it raises; a heartbeat is ``[label] ... <stage> still running``,
so that a reader of stage lines never takes one for a stage's end. What the stage runner reports (an app's
command line) is shown escaped (``terminal_safe``): it is the app's text.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import IO, TYPE_CHECKING

from desktop_qualify.qualify_runtime import terminal_safe

if TYPE_CHECKING:  # rich loads only for a terminal: a log needs none of it
    from rich.console import Console
    from rich.text import Text

HEARTBEAT_SECONDS = 30.0
_DOING_CHARS = 160


def utc_stamp() -> str:
    """The time now, UTC, ISO 8601 to the second (``2026-12-03T20:15:00Z``)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def is_live_terminal(stream: IO[str], env: Mapping[str, str]) -> bool:
    """Whether ``stream`` is a terminal a person watches: a tty, and not a CI job (``CI`` unset or empty)."""
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):  # a closed or odd stream
        tty = False
    return tty and not env.get("CI")


class Progress:
    """Progress lines for one command (``label``: ``produce linux``, ``rebuild linux``), with each stage's timing.

    ``console``: draw the live line on this rich console (a test's, with ``force_terminal``); by default one is
    made only when ``stream`` (standard error) is a live terminal. ``clock`` and ``stamp`` are the monotonic
    clock and the wall clock's ISO text, replaceable in tests.
    """

    def __init__(self, label: str, *, stream: IO[str] | None = None, env: Mapping[str, str] | None = None,
                 console: Console | None = None, heartbeat: float = HEARTBEAT_SECONDS,
                 clock: Callable[[], float] = time.monotonic, stamp: Callable[[], str] = utc_stamp) -> None:
        self._label = label
        self._stream = stream if stream is not None else sys.stderr
        self._heartbeat = heartbeat
        self._clock, self._stamp = clock, stamp
        self._lock = threading.Lock()
        self._stage: str | None = None
        self._started = 0.0
        self._doing = ""
        self.timings: dict[str, float] = {}
        if console is None and is_live_terminal(self._stream, os.environ if env is None else env):
            from rich.console import Console  # noqa: PLC0415 - only a terminal draws a live line

            console = Console(file=self._stream, stderr=True, highlight=False, markup=False, emoji=False)
        self._console = console

    @property
    def live(self) -> bool:
        """Whether a live line is drawn (a terminal), rather than timestamped lines written (a log)."""
        return self._console is not None

    def say(self, text: str) -> None:
        """One line: as it is on a terminal, after the UTC time in a log."""
        line = f"[{self._label}] {text}"
        if self._console is not None:
            from rich.text import Text  # noqa: PLC0415

            self._console.print(Text(line), soft_wrap=True)
            return
        with self._lock:
            self._stream.write(f"{self._stamp()} {line}\n")
            self._stream.flush()

    def running(self, what: str) -> None:
        """What the stage runs now (a command line): shown on the live line and in the next heartbeat."""
        self._doing = terminal_safe(" ".join(what.split()))[:_DOING_CHARS]

    def elapsed(self) -> float:
        """Seconds the current stage has run (0 between stages)."""
        return self._clock() - self._started if self._stage is not None else 0.0

    def status(self) -> str:
        """The live line's text: the stage, its time so far, what is running."""
        if self._stage is None:
            return ""
        doing = f"  {self._doing}" if self._doing else ""
        return f"[{self._label}] {self._stage}  {_duration(self.elapsed())}{doing}"

    def __rich__(self) -> Text:
        """What rich's live display draws on each refresh (rich calls this)."""
        from rich.text import Text  # noqa: PLC0415

        return Text(self.status(), no_wrap=True, overflow="ellipsis")

    @contextmanager
    def stage(self, name: str) -> Iterator[list[str]]:
        """Time a stage; the body appends a short outcome to the yielded list."""
        outcome: list[str] = []
        self._stage, self._started, self._doing = name, self._clock(), ""
        self.say(f"{name:<13} ...")
        try:
            with self._showing(name):
                yield outcome
        except BaseException:
            self.say(f"{name:<13} FAILED after {self.elapsed():.1f}s")
            self._stage = None
            raise
        elapsed = self.elapsed()
        self._stage = None
        self.timings[name] = elapsed
        self.say(f"{name:<13} {' '.join(outcome) or 'ok'}  ({elapsed:.1f}s)")

    @contextmanager
    def _showing(self, name: str) -> Iterator[None]:
        """While the stage runs: rich's live line on a terminal, a heartbeat thread in a log."""
        if self._console is not None:
            from rich.live import Live  # noqa: PLC0415

            # transient: the live line is erased when the stage ends; its end line is printed after.
            with Live(self, console=self._console, refresh_per_second=4, transient=True,
                      redirect_stdout=False, redirect_stderr=False):
                yield
            return
        done = threading.Event()

        def beat() -> None:
            while not done.wait(self._heartbeat):
                doing = f": {self._doing}" if self._doing else ""
                self.say(f"... {name} still running ({_duration(self.elapsed())}){doing}")

        thread = threading.Thread(target=beat, name=f"progress-{name}", daemon=True)
        thread.start()
        try:
            yield
        finally:
            done.set()
            thread.join(timeout=5)


def _duration(seconds: float) -> str:
    whole = int(seconds)
    return f"{whole // 60}m{whole % 60:02d}s" if whole >= 60 else f"{whole}s"


__all__ = ["HEARTBEAT_SECONDS", "Progress", "is_live_terminal", "utc_stamp"]
