"""The after-sign notarization hook (macOS): submit to Apple's notary service, wait, staple.

With App Store Connect API credentials in the job's environment, the target is
submitted with `xcrun notarytool submit --wait`: a `.dmg` or `.pkg` as it is
(notarytool takes both), a folder zipped first (`ditto`, the only archive it
takes for a folder). On acceptance the ticket is stapled, but only to what
can carry one: a `.dmg`, a `.pkg` or a `.app` bundle. A bare executable or a
plain folder cannot (stapler fails on it, so `stapled` was always false), so
no staple is attempted there and the detail says Gatekeeper checks online.
On `Invalid` the submission's log (`xcrun notarytool log ID`) is fetched and
its first issue kept in the detail. Without credentials nothing is submitted
and the result says `skipped: no credentials`. Whatever happens, the result is
bounded: an outcome, notarytool's submission id and status word, whether the
ticket was stapled and a short detail; never the tool's raw output.
"""

from __future__ import annotations

import json
import re
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from desktop_qualify.evidence_schemas import NotarizationRecord

Outcome = Literal["accepted", "rejected", "failed", "skipped"]
#: (argv) -> (exit code, stdout bytes): how a hook runs a tool (subprocess without a shell, bounded)
Runner = Callable[[list[str]], tuple[int, bytes]]

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_MAX_ANSWER = 64 * 1024
_STATUS = re.compile(r"[A-Za-z][A-Za-z ]{0,31}")
# What can carry a stapled ticket: a disk image, an installer package, an app bundle (folder).
STAPLEABLE_FILES = frozenset({".dmg", ".pkg"})
_UNPRINTABLE = re.compile(r"[^\x20-\x7e]+")
# notarytool's wait gives up on its own after this; the process deadline is a little longer.
NOTARY_TIMEOUT = "30m"


@dataclass(frozen=True)
class NotaryCredentials:
    """An App Store Connect API key: the .p8 file, its key id and the issuer id."""

    key_file: Path
    key_id: str
    issuer: str


def record(outcome: Outcome, detail: str, *, submission_id: str | None = None, status: str | None = None,
           stapled: bool = False) -> NotarizationRecord:
    return NotarizationRecord(outcome=outcome, submission_id=submission_id, status=status, stapled=stapled,
                              detail=detail[:200])


def parse_submission(stdout: bytes) -> tuple[str | None, str | None]:
    """(submission id, status word) from `notarytool submit --output-format json`, each None when unusable."""
    if len(stdout) > _MAX_ANSWER:
        return None, None
    try:
        answer = json.loads(stdout.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None, None
    if not isinstance(answer, dict):
        return None, None
    raw_id, raw_status = answer.get("id"), answer.get("status")
    submission = raw_id if isinstance(raw_id, str) and _UUID.fullmatch(raw_id) else None
    status = raw_status if isinstance(raw_status, str) and _STATUS.fullmatch(raw_status) else None
    return submission, status


def log_summary(stdout: bytes) -> str | None:
    """The first issue of `notarytool log` (JSON), printable and short; None when there is none usable."""
    if len(stdout) > 16 * _MAX_ANSWER:
        return None
    try:
        answer = json.loads(stdout.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    issues = answer.get("issues") if isinstance(answer, dict) else None
    if not isinstance(issues, list) or not issues or not isinstance(issues[0], dict):
        return None
    first = issues[0]
    words = " ".join(str(first.get(k)) for k in ("path", "message") if isinstance(first.get(k), str))
    # Apple's words about the team's file names: printable ASCII only, and short.
    text = _UNPRINTABLE.sub("?", words).strip()[:120]
    return f"{text} ({len(issues)} issue{'s' if len(issues) != 1 else ''})" if text else None


class Notarizer(ABC):
    @abstractmethod
    def notarize(self, bundle: Path, scratch: Path, run: Runner) -> NotarizationRecord:
        """Notarize ``bundle``: a signed folder, or a `.dmg`/`.pkg` (``scratch``: a private folder for the upload)."""


class NoNotarizer(Notarizer):
    """The job has no notarization credentials: nothing is submitted, and the record says so."""

    def notarize(self, bundle: Path, scratch: Path, run: Runner) -> NotarizationRecord:
        return record("skipped", "skipped: no credentials")


class NotarytoolNotarizer(Notarizer):
    def __init__(self, credentials: NotaryCredentials) -> None:
        self._credentials = credentials

    def zip_command(self, bundle: Path, upload: Path) -> list[str]:
        return ["ditto", "-c", "-k", "--sequesterRsrc", "--keepParent", str(bundle), str(upload)]

    def submit_command(self, upload: Path) -> list[str]:
        c = self._credentials
        return ["xcrun", "notarytool", "submit", str(upload), "--key", str(c.key_file), "--key-id", c.key_id,
                "--issuer", c.issuer, "--wait", "--timeout", NOTARY_TIMEOUT, "--output-format", "json"]

    def log_command(self, submission: str) -> list[str]:
        c = self._credentials
        return ["xcrun", "notarytool", "log", submission, "--key", str(c.key_file), "--key-id", c.key_id,
                "--issuer", c.issuer]

    def staple_commands(self, bundle: Path) -> list[list[str]]:
        return [["xcrun", "stapler", "staple", str(bundle)], ["xcrun", "stapler", "validate", str(bundle)]]

    @staticmethod
    def can_staple(target: Path) -> bool:
        return target.suffix.lower() in STAPLEABLE_FILES if target.is_file() else target.suffix.lower() == ".app"

    def notarize(self, bundle: Path, scratch: Path, run: Runner) -> NotarizationRecord:
        upload = bundle
        if not (bundle.is_file() and bundle.suffix.lower() in STAPLEABLE_FILES):
            upload = scratch / f"{bundle.name}.zip"
            code, _ = run(self.zip_command(bundle, upload))
            if code != 0:
                return record("failed", f"ditto could not zip the bundle (exit {code})")
        code, stdout = run(self.submit_command(upload))
        submission, status = parse_submission(stdout)
        if status is None:
            return record("failed", f"notarytool gave no usable answer (exit {code})", submission_id=submission)
        if code != 0 or status != "Accepted":
            outcome: Outcome = "rejected" if status in ("Invalid", "Rejected") else "failed"
            detail = f"notarytool: {status} (exit {code})"
            if status == "Invalid" and submission is not None:
                log_code, log = run(self.log_command(submission))
                summary = log_summary(log) if log_code == 0 else None
                detail += f"; log: {summary}" if summary else "; its log could not be read"
            return record(outcome, detail, submission_id=submission, status=status)
        if submission is None:
            return record("failed", "notarytool accepted a submission without a usable id", status=status)
        if not self.can_staple(bundle):
            return record("accepted", "accepted; not stapled: only a .dmg, .pkg or .app carries a ticket "
                                      "(Gatekeeper checks online)", submission_id=submission, status=status)
        stapled = all(run(argv)[0] == 0 for argv in self.staple_commands(bundle))
        detail = "accepted and stapled" if stapled else "accepted; stapling failed (Gatekeeper checks online)"
        return record("accepted", detail, submission_id=submission, status=status, stapled=stapled)
