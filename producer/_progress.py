"""Progress lines on stderr, one per stage, with its timing."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager


class Progress:
    def __init__(self, label: str) -> None:
        self._label = label
        self.timings: dict[str, float] = {}

    def say(self, text: str) -> None:
        print(f"[{self._label}] {text}", file=sys.stderr, flush=True)

    @contextmanager
    def stage(self, name: str) -> Iterator[list[str]]:
        """Time a stage; the body appends a short outcome to the yielded list."""
        outcome: list[str] = []
        started = time.monotonic()
        self.say(f"{name:<13} ...")
        try:
            yield outcome
        except BaseException:
            self.say(f"{name:<13} FAILED after {time.monotonic() - started:.1f}s")
            raise
        elapsed = time.monotonic() - started
        self.timings[name] = elapsed
        self.say(f"{name:<13} {' '.join(outcome) or 'ok'}  ({elapsed:.1f}s)")
