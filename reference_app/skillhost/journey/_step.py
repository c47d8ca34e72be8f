"""The end of every journey step's path: its record (what was expected, what was observed, a detail)."""

from typing import TypedDict

MAX_DETAIL = 400


class Step(TypedDict):
    """One journey step: what was expected, what was observed, and a bounded free-text detail."""

    id: str
    expected: str
    expected_code: str | None
    observed: str
    observed_code: str | None
    passed: bool
    detail: str
    # The operating system's refusal (``EACCES``, ``EPERM``...) where a step is one; else None.
    errno: str | None
    # The applied isolation layer that refusal comes from (``journey._kernel``'s ``REFUSED_BY``; on macOS only when
    # the worker's ``sandbox_check`` names it too, ``WORKER_ATTRIBUTED``); else None.
    layer: str | None


def _step(  # noqa: PLR0917
    sid: str,
    expected: str,
    expected_code: str | None,
    observed: str,
    observed_code: str | None,
    detail: object,
    extra_ok: bool = True,
    errno: str | None = None,
    layer: str | None = None,
) -> Step:
    passed = expected == observed and expected_code == observed_code and extra_ok
    return {
        "id": sid,
        "expected": expected,
        "expected_code": expected_code,
        "observed": observed,
        "observed_code": observed_code,
        "passed": bool(passed),
        "detail": str(detail)[:MAX_DETAIL],
        "errno": errno,
        "layer": layer,
    }
