"""GitHub failures as :class:`QualificationError`, with the token scrubbed from every word.

Network and API failures are environment errors (exit status 2): they say
nothing about the evidence. :class:`GitHubError` keeps the HTTP status so a
caller can turn, say, a 404 for a named artifact into its own rejection.
"""

from __future__ import annotations

from desktop_qualify.evidence_schemas import Code, QualificationError

_MAX_DETAIL = 300


class GitHubError(QualificationError):
    """A GitHub API or network failure; ``status`` is the HTTP status when there was one."""

    def __init__(self, code: Code, message: str, *, hint: str | None = None, status: int | None = None) -> None:
        super().__init__(code, message, hint=hint)
        self.status = status


def redact(text: str, secret: str | None) -> str:
    """``text`` bounded, with every occurrence of ``secret`` replaced."""
    if secret:
        text = text.replace(secret, "***")
    return text[:_MAX_DETAIL]


def for_status(what: str, status: int, detail: str, attempts: int) -> GitHubError:
    """The error for a final HTTP failure of ``what`` (a method and path, never a URL with a query)."""
    tried = f" after {attempts} attempts" if attempts > 1 else ""
    if status == 401:
        return GitHubError(Code.ENVIRONMENT, f"{what}: GitHub rejected the credentials (HTTP 401){tried}",
                           hint="set GITHUB_TOKEN to a valid token for this repository", status=status)
    if status == 404:
        return GitHubError(Code.ENVIRONMENT, f"{what}: not found (HTTP 404){tried}",
                           hint="check the name; GitHub answers 404 when the token cannot see a private resource",
                           status=status)
    if status in (403, 429):
        return GitHubError(Code.ENVIRONMENT, f"{what}: refused or rate limited (HTTP {status}){tried}: {detail}",
                           hint="check the token's permissions, or retry later", status=status)
    return GitHubError(Code.ENVIRONMENT, f"{what}: HTTP {status}{tried}: {detail}", status=status)
