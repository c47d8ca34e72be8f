"""Journey steps run through a ``SkillHost``: bundled skills in this process, external ones in the worker.

The broker and package phases drive the same host API that ``run-skill`` uses,
so their steps prove the host's own tier decisions, not a test double's.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from skillhost._errors import SkillError
from skillhost.brokers import AuditEvent
from skillhost.host import MAX_DURATION, SkillHost
from skillhost.journey._rows import RejectRow, RowRunner, abort_timer
from skillhost.journey._step import Step, _step


# A bundled handler returns whatever JSON it builds; each step's check knows the shape it expects.
def _bundled_step(host: SkillHost, sid: str, skill_id: str, args: dict[str, Any], check: Callable[[Any], bool]) -> Step:
    try:
        value, broker = host.run_bundled(skill_id, args)
    except SkillError as exc:
        return _step(sid, "allow", None, "reject", exc.code, exc.message)
    events = [(a["event"], a["target"]) for a in broker.audit]
    return _step(
        sid, "allow", None, "allow", None, f"host pid={os.getpid()} value={value} audit={events}", check(value)
    )


def _bundled_refusal(host: SkillHost, sid: str, skill_id: str, args: dict[str, Any], code: str) -> Step:
    try:
        value, _ = host.run_bundled(skill_id, args)
    except SkillError as exc:
        return _step(sid, "reject", code, "reject", exc.code, exc.message)
    return _step(sid, "reject", code, "allow", None, f"unexpectedly allowed: {str(value)[:120]}")


def _external(
    host: SkillHost,
    sid: str,
    skill_dir: Path,
    code: str | None,
    *,
    cancel: threading.Event | None = None,
    protocol_version: int | None = None,
    max_duration: float = MAX_DURATION,
    check: Callable[[Any, list[AuditEvent]], tuple[bool, str]] | None = None,
) -> Step:
    """``code=None`` expects the run to be allowed; otherwise a refusal with that code.

    ``check`` judges an allowed run's value and audit against what the service or tool really answered (and
    says why): an allow step passes on the right answer, not on any answer."""
    expected = "allow" if code is None else "reject"
    try:
        out = host.run_external(skill_dir, cancel=cancel, protocol_version=protocol_version, max_duration=max_duration)
    except SkillError as exc:
        return _step(sid, expected, code, "reject", exc.code, f"refused before any worker: {exc.message}")
    detail = (
        f"worker_pid={out.worker_pid} reaped={out.reaped} rc={out.returncode} requests={out.requests} "
        f"ms={out.duration_ms} {out.message}"
    )
    # Whatever the verdict, a worker that ran must be a separate process that was reaped.
    ok = out.reaped and out.worker_pid != os.getpid() and out.returncode is not None
    if out.ok:
        if check is None:
            return _step(sid, expected, code, "allow", None, f"{detail} value={out.value}", ok)
        right, why = check(out.value, out.audit)
        return _step(sid, expected, code, "allow", None, f"{why[:120]}; {detail}", ok and right)
    return _step(sid, expected, code, "reject", out.code, detail, ok)


def on_host(host: SkillHost) -> RowRunner:
    """The runner for tables walked against ``host``."""

    def run(row: RejectRow, skill_dir: Path) -> Step:
        if row.mutate is not None:
            # SkillHost verifies right after discovery; only the journey's signed runner opens that window.
            raise ValueError(f"{row.sid}: a host-run row cannot mutate between discovery and verification")
        with abort_timer(row.abort_after) as cancel:
            return _external(
                host,
                row.sid,
                skill_dir,
                row.code,
                cancel=cancel,
                protocol_version=row.protocol_version,
                max_duration=row.max_duration,
            )

    return run
