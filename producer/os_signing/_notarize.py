"""The after-sign notarization hook (macOS): submit to Apple's notary service, wait, staple.

With App Store Connect API credentials in the job's environment, the signed
bundle is zipped (`ditto`, the only archive notarytool takes for a folder),
submitted with `xcrun notarytool submit --wait`, and on acceptance the ticket
is stapled with `xcrun stapler staple`. Without credentials nothing is
submitted and the result says `skipped: no credentials`. Whatever happens, the
result is bounded: an outcome, notarytool's submission id and status word, and
whether the ticket was stapled; never the tool's raw output.
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


class Notarizer(ABC):
    @abstractmethod
    def notarize(self, bundle: Path, scratch: Path, run: Runner) -> NotarizationRecord:
        """Notarize the signed ``bundle`` (``scratch`` is an empty private folder for the upload)."""


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

    def staple_commands(self, bundle: Path) -> list[list[str]]:
        return [["xcrun", "stapler", "staple", str(bundle)], ["xcrun", "stapler", "validate", str(bundle)]]

    def notarize(self, bundle: Path, scratch: Path, run: Runner) -> NotarizationRecord:
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
            return record(outcome, f"notarytool: {status} (exit {code})", submission_id=submission, status=status)
        if submission is None:
            return record("failed", "notarytool accepted a submission without a usable id", status=status)
        stapled = all(run(argv)[0] == 0 for argv in self.staple_commands(bundle))
        detail = "accepted and stapled" if stapled else "accepted; stapling failed (Gatekeeper checks online)"
        return record("accepted", detail, submission_id=submission, status=status, stapled=stapled)
