"""Statements stored as GitHub attestations, so that `gh attestation verify` finds them.

``POST /repos/{owner}/{repo}/attestations`` with ``{"bundle": <the Sigstore
bundle>}`` stores one signed statement, indexed by GitHub under its subjects'
digests; ``GET /repos/{owner}/{repo}/attestations/sha256:HEX`` lists the
bundles stored for a digest. Only bundles this pipeline verified are stored
(the aggregate job stores after `qualify verify` passed); whoever reads them
back verifies them again, as for any evidence: GitHub's answer is a transport,
never a verdict.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from desktop_qualify.evidence_schemas import (
    MAX_SIGSTORE_BUNDLE_BYTES,
    Code,
    JsonBounds,
    QualificationError,
    load_json,
    read_bounded,
)

from ._client import GitHubClient, _check_repository
from ._errors import GitHubError

MAX_BUNDLE_BYTES = MAX_SIGSTORE_BUNDLE_BYTES
_DIGEST = re.compile(r"[0-9a-f]{64}")
_BUNDLE_MEDIA_TYPE = "application/vnd.dev.sigstore.bundle"


@dataclass(frozen=True)
class StoredAttestation:
    """A bundle GitHub's attestation API stored: the bundle file's name and the attestation id it got."""

    file: str
    attestation_id: int


def _bundle(path: Path) -> dict[str, object]:
    data = read_bounded(path, max_bytes=MAX_BUNDLE_BYTES, what=str(path))
    # Bounded like any evidence (size, depth, duplicate keys, NaN) before GitHub sees it.
    bundle = load_json(data, what=path.name, bounds=JsonBounds(max_bytes=MAX_BUNDLE_BYTES, max_depth=16))
    if not isinstance(bundle, dict) or not str(bundle.get("mediaType", "")).startswith(_BUNDLE_MEDIA_TYPE) \
            or "dsseEnvelope" not in bundle:
        raise QualificationError(Code.SCHEMA_INVALID, f"{path.name}: not a Sigstore bundle of a DSSE statement")
    return bundle


def store_attestation(client: GitHubClient, repository: str, bundle_file: Path) -> StoredAttestation:
    """``POST /repos/{owner}/{repo}/attestations`` for one bundle file; GitHub's new attestation id."""
    repo_name = _check_repository(repository)
    what = f"POST /repos/{repo_name}/attestations"
    answer = client.request_json(what, "POST", f"/repos/{repo_name}/attestations", {"bundle": _bundle(bundle_file)})
    attestation_id = answer.get("id") if isinstance(answer, dict) else None
    if not isinstance(attestation_id, int) or isinstance(attestation_id, bool) or attestation_id <= 0:
        raise GitHubError(Code.ENVIRONMENT, f"{what}: the answer's 'id' is missing or not GitHub's shape")
    return StoredAttestation(bundle_file.name, attestation_id)


def store_evidence(client: GitHubClient, repository: str, evidence: Path, *, suffix: str = ".sigstore.json",
                   ) -> list[StoredAttestation]:
    """Every Sigstore bundle of an evidence folder: the platform statements in name order, the aggregate last.

    Last, so that a store that fails part-way never leaves an aggregate standing without the statements it binds.
    """
    files = sorted((p for p in evidence.iterdir() if p.name.endswith(suffix) and p.is_file() and not p.is_symlink()),
                   key=lambda p: (p.name.startswith("aggregate"), p.name))
    if not files:
        raise QualificationError(Code.EVIDENCE_MISSING, f"{evidence}: no {suffix} statements to store")
    return [store_attestation(client, repository, path) for path in files]


def attestations_for(client: GitHubClient, repository: str, sha256_hex: str, *,
                     predicate_type: str | None = None) -> list[bytes]:
    """``GET /repos/{owner}/{repo}/attestations/sha256:HEX``: every stored bundle, as JSON bytes, to verify again.

    All pages (``Link: rel="next"``), bounded by the client's ``max_items``.
    ``predicate_type`` asks GitHub to filter; the caller still reads each
    statement's own type, since a filter is GitHub's answer too. GitHub hands
    each bundle back as a JSON object, not as the uploaded bytes: the signed
    bytes are the DSSE payload inside it, which survives re-serialisation, and
    that is what the aggregate binds.
    """
    repo_name = _check_repository(repository)
    if _DIGEST.fullmatch(sha256_hex) is None:
        raise QualificationError(Code.USAGE, f"{sha256_hex[:80]!r} is not a SHA-256 in lowercase hex")
    what = f"GET /repos/{repo_name}/attestations/sha256:{sha256_hex}"

    def items_of(page: object) -> list[object] | None:
        items = page.get("attestations") if isinstance(page, dict) else None
        return items if isinstance(items, list) else None

    params = {"predicate_type": predicate_type} if predicate_type else None
    # GitHub answers 404, not an empty list, when nothing is stored for the digest (gh reads it so too): on the
    # first page only; a later page's 404 is an error, never "nothing stored". A repository the token cannot see
    # answers 404 as well: the caller reads the repository first.
    items = client.paged_json(what, f"/repos/{repo_name}/attestations/sha256:{sha256_hex}", items_of,
                              field="attestations", params=params, first_404_is_empty=True)
    found = []
    for item in items:
        bundle = item.get("bundle") if isinstance(item, dict) else None
        if isinstance(bundle, dict):
            found.append(json.dumps(bundle, separators=(",", ":")).encode())
        elif isinstance(item, dict) and item.get("bundle_url"):
            # Newer API versions may list a URL instead of the bundle; this client reads inline bundles only.
            raise GitHubError(Code.ENVIRONMENT, f"{what}: an attestation listed by bundle_url only, without its "
                                                "bundle; this tool reads the bundles GitHub lists inline")
        else:
            raise GitHubError(Code.ENVIRONMENT, f"{what}: an attestation without a bundle")
    return found
