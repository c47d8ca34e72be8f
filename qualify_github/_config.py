"""Where the API is and how patient to be with it: every bound in one frozen value.

The bounds follow python-tuf's habit of one config object for untrusted
downloads: a total cap on waiting, on attempts, on list lengths and on bytes.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass

from desktop_qualify.evidence_schemas import Code, QualificationError

DEFAULT_API_URL = "https://api.github.com"


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded retries for idempotent reads (5xx, rate limits, network errors)."""

    max_attempts: int = 4
    # Exponential backoff: base, 2*base, 4*base ... each capped at max_backoff.
    base_backoff: float = 1.0
    max_backoff: float = 16.0
    # A Retry-After or rate-limit reset beyond this total is not waited for:
    # a CI job that sleeps for an hour is worse than one that fails clearly.
    max_total_wait: float = 60.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1 or self.base_backoff < 0 or self.max_backoff < 0 or self.max_total_wait < 0:
            raise QualificationError(Code.USAGE, f"invalid retry policy {self!r}")

    def backoff(self, attempt: int) -> float:
        """The pause after failed attempt number ``attempt`` (1-based)."""
        return min(self.max_backoff, self.base_backoff * 2.0 ** (attempt - 1))


@dataclass(frozen=True)
class ClientConfig:
    """How the GitHub client talks to the API: base URL, time-outs, retries, paging and size limits."""

    api_url: str = DEFAULT_API_URL
    # Seconds per socket operation; PyGithub accepts whole seconds only.
    timeout: int = 20
    retry: RetryPolicy = RetryPolicy()
    per_page: int = 100
    # A listing longer than this is refused rather than silently truncated.
    max_items: int = 1000
    # PyGithub's own pause between requests (its default), kind to the API's
    # secondary rate limits; tests against the loopback server set it to 0.
    seconds_between_requests: float = 0.25
    # A download slower than this in total is abandoned, whatever the socket timeout.
    max_download_seconds: float = 600.0

    def __post_init__(self) -> None:
        parsed = urllib.parse.urlsplit(self.api_url)
        if parsed.scheme not in ("https", "http") or not parsed.hostname or parsed.query or parsed.fragment:
            raise QualificationError(Code.USAGE, f"GitHub API URL {self.api_url[:200]!r} is not an http(s) base URL")
        # The token travels with every request: plain http only to this machine (a test server).
        if parsed.scheme == "http" and parsed.hostname not in ("127.0.0.1", "::1", "localhost"):
            raise QualificationError(Code.USAGE, f"GitHub API URL {self.api_url[:200]!r}: plain http is allowed "
                                                 "only for a loopback test server")
        if self.timeout < 1 or not 1 <= self.per_page <= 100 or self.max_items < 1 or self.max_download_seconds <= 0 \
                or self.seconds_between_requests < 0:
            raise QualificationError(Code.USAGE, "invalid GitHub client bounds")

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> ClientConfig:
        """``GITHUB_API_URL`` when set (GitHub Enterprise Server), else api.github.com.

        Change the other bounds with :func:`dataclasses.replace`.
        """
        return cls(api_url=(env.get("GITHUB_API_URL") or DEFAULT_API_URL).rstrip("/"))
