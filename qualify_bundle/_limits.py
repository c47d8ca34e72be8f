"""What a qualification bundle may hold: a handful of small files, so every cap is tight."""

from __future__ import annotations

from desktop_qualify.evidence_schemas import MAX_BUNDLE_MEMBERS

MAX_MEMBERS = MAX_BUNDLE_MEMBERS
# A Sigstore bundle with its certificate chain and log proofs is tens of KiB; a trusted root a few hundred.
MAX_MEMBER_BYTES = 4 * 1024**2
MAX_TOTAL_BYTES = 16 * 1024**2
# The archive file itself, before anything in it is read.
MAX_ARCHIVE_BYTES = 16 * 1024**2
MANIFEST = "manifest.json"
EVIDENCE_FOLDER = "evidence"
POLICY_FOLDER = "policies"
# The release asset's name ends so: `qualify audit` takes such files as bundles, anything else as a folder.
BUNDLE_SUFFIX = ".qualify-bundle.zip"
# zip's earliest date, fixed: the same run gives the same bundle bytes but for the manifest's time.
ZIP_DATE = (1980, 1, 1, 0, 0, 0)
