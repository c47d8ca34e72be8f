"""Bounded retries for idempotent GitHub reads.

PyGithub is built with urllib3 retries off (``retry=0``) and every read is
wrapped here instead, so that one loop decides: which failures are transient
(5xx, 429, a 403 that is a rate limit, network errors, a cut-off body), how
long to wait (``Retry-After`` first, then the rate-limit reset, then
exponential backoff), and when to stop (attempts and a cap on the total wait).
A read is retried whole, so a paginated listing is never half old, half new.
"""

from __future__ import annotations

import email.utils
import http.client
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from desktop_qualify.evidence_schemas import Code
from github.GithubException import BadAttributeException, GithubException

from ._config import RetryPolicy
from ._errors import GitHubError, for_status, redact

_log = logging.getLogger("qualify_github")
T = TypeVar("T")


class HttpStatusError(Exception):
    """An HTTP error status seen outside PyGithub (the download path)."""

    def __init__(self, status: int, headers: Mapping[str, str], message: str) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.headers = {k.lower(): v for k, v in headers.items()}
        self.message = message


def _retry_after(headers: Mapping[str, str], now: float) -> float | None:
    value = headers.get("retry-after")
    if value is not None:
        try:
            return max(0.0, float(value))
        except ValueError:
            try:
                return max(0.0, email.utils.parsedate_to_datetime(value).timestamp() - now)
            except (TypeError, ValueError):
                return None
    # A primary rate limit says when it resets instead.
    if headers.get("x-ratelimit-remaining") == "0" and "x-ratelimit-reset" in headers:
        try:
            return max(0.0, float(headers["x-ratelimit-reset"]) - now)
        except ValueError:
            return None
    return None


@dataclass(frozen=True)
class _Failure:
    status: int | None
    retryable: bool
    wait: float | None
    detail: str

    @classmethod
    def of_status(cls, status: int, headers: Mapping[str, str], message: str, now: float) -> _Failure:
        wait = _retry_after(headers, now)
        lowered = message.lower()
        rate_limited = status == 429 or (status == 403 and (
            wait is not None or "rate limit" in lowered or headers.get("x-ratelimit-remaining") == "0"))
        return cls(status, status >= 500 or rate_limited, wait, message)

    def error(self, what: str, attempts: int, secret: str | None) -> GitHubError:
        detail = redact(self.detail, secret)
        if self.status is None:
            tried = f" after {attempts} attempts" if attempts > 1 else ""
            return GitHubError(Code.ENVIRONMENT, f"{what}: network failure{tried}: {detail}",
                               hint="check the connection to the GitHub API (GITHUB_API_URL)")
        return for_status(what, self.status, detail, attempts)


def _message(data: Any) -> str:
    if isinstance(data, dict) and isinstance(data.get("message"), str):
        return str(data["message"])
    return ""


def with_retries(what: str, op: Callable[[], T], *, policy: RetryPolicy, secret: str | None,
                 sleep: Callable[[float], None] = time.sleep) -> T:
    """Run ``op`` until it succeeds or a bound is reached; every failure ends as :class:`GitHubError`."""
    waited = 0.0
    attempt = 0
    while True:
        attempt += 1
        try:
            return op()
        except GithubException as exc:
            headers = {k.lower(): str(v) for k, v in (exc.headers or {}).items()}
            failure = _Failure.of_status(exc.status, headers, _message(exc.data), time.time())
        except HttpStatusError as exc:
            failure = _Failure.of_status(exc.status, exc.headers, exc.message, time.time())
        # requests' errors are OSErrors; a body cut short is an IncompleteRead or
        # a JSON ValueError. All are worth another try.
        except (OSError, http.client.HTTPException, ValueError) as exc:
            failure = _Failure(None, True, None, f"{type(exc).__name__}: {exc}")
        # PyGithub checks server-supplied URLs with assert and types with
        # BadAttributeException; either means the answer is not GitHub's shape.
        except (BadAttributeException, AssertionError, RuntimeError, AttributeError, TypeError, KeyError) as exc:
            raise GitHubError(Code.ENVIRONMENT, f"{what}: unexpected answer from the GitHub API "
                                                f"({type(exc).__name__}: {redact(str(exc), secret)})") from None
        if not failure.retryable or attempt >= policy.max_attempts:
            raise failure.error(what, attempt, secret) from None
        delay = failure.wait if failure.wait is not None else policy.backoff(attempt)
        if waited + delay > policy.max_total_wait:
            raise GitHubError(
                Code.ENVIRONMENT,
                f"{what}: GitHub asks to wait {delay:.1f}s more (HTTP {failure.status or '-'}), beyond the "
                f"{policy.max_total_wait:.0f}s cap on waiting: {redact(failure.detail, secret)}",
                hint="rate limited: retry the job later", status=failure.status) from None
        _log.info("%s failed (attempt %d, %s); retrying in %.2fs", what, attempt, failure.status or "network", delay)
        sleep(delay)
        waited += delay
