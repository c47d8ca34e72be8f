"""What the producer's log says about its stages (`QUALIFY_LOGLEVEL=INFO`), for the benchmarks that time them.

A stage prints ``[produce <platform>] <stage> ...`` when it starts and ``... (<seconds>s)`` when it ends; in a
log that is not a terminal (CI, a pipe) each line is prefixed with a UTC timestamp. The processes logger names
every child with its duration and its start.
"""

from __future__ import annotations

import re

# An optional ISO timestamp (a log, not a terminal), then the stage's name, then "..." or its result and time.
STAGE = re.compile(r"^(?:\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ )?\[produce \w+\] (\w[\w ]*?)\s+(\.\.\.|.*\((\d+\.\d)s\))$")
CHILD = re.compile(r"desktop_qualify\.producer\.processes\._process: child .*: (\d+\.\d+) s, "
                   r".*\(started at t=(\d+\.\d+) s\)$")
JOURNEY_STEPS = re.compile(r"\bjourney\s+(\d+)/(\d+) steps passed")


def stage_seconds(output: str, stage: str) -> float:
    """The time the producer printed for ``stage``'s end; a RuntimeError when it never ended."""
    for line in output.splitlines():
        found = STAGE.match(line)
        if found and found.group(1) == stage and found.group(3) is not None:
            return float(found.group(3))
    raise RuntimeError(f"the producer's log shows no end of its {stage} stage")


def child_spans(output: str, stage: str) -> list[tuple[float, float]]:
    """(start, end) of every child process the producer ran while ``stage`` was running."""
    inside, spans = False, []
    for line in output.splitlines():
        if found := STAGE.match(line):
            inside = found.group(1) == stage and found.group(2) == "..."
            continue
        if inside and (child := CHILD.search(line)):
            start = float(child.group(2))
            spans.append((start, start + float(child.group(1))))
    return spans


def union_seconds(spans: list[tuple[float, float]]) -> float:
    """Seconds covered by the union of ``spans`` (children that ran side by side count once)."""
    total, reached = 0.0, float("-inf")
    for start, end in sorted(spans):
        total += max(0.0, end - max(start, reached))
        reached = max(reached, end)
    return total


def journey_steps(output: str) -> int:
    """How many steps the journey stage reported."""
    found = JOURNEY_STEPS.search(output)
    if found is None:
        raise RuntimeError("the producer's log shows no journey step count")
    return int(found.group(2))
