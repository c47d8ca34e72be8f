"""The names the evidence gives things, as one convention the producer writes and the verifier re-derives."""

from __future__ import annotations

import re

from ._app_contract import INSTALLER_SUFFIXES

# Each trust mode's statement files end so: a DSSE envelope (local Ed25519), a Sigstore bundle (GitHub).
STATEMENT_SUFFIXES = {"ed25519": ".dsse.json", "sigstore": ".sigstore.json"}
_PLATFORM_FILE = re.compile(r"^platform-([a-z0-9]{1,16})(\.[a-z0-9.]{1,24})$")
_PROVENANCE_FILE = re.compile(r"^provenance-([a-z0-9]{1,16})(\.[a-z0-9.]{1,24})$")


def artifact_stem(app: str, sha: str, platform: str, arch: str) -> str:
    """The artifact's name without its ending: app, commit, platform and architecture."""
    return f"{app}-{sha[:12]}-{platform}-{arch}"


def artifact_file_name(app: str, sha: str, platform: str, arch: str, suffix: str) -> str:
    """The artifact a producer job releases; ``suffix`` is the build output's ending (one its installer kind has)."""
    return artifact_stem(app, sha, platform, arch) + suffix


def installer_suffix(kind: str, file_name: str) -> str | None:
    """The ending of ``file_name`` that an artifact of installer ``kind`` may have (the longest), or None."""
    endings = [suffix for suffix in INSTALLER_SUFFIXES.get(kind, ()) if file_name.endswith(suffix)]
    return max(endings, key=len) if endings else None


def platform_file_name(platform: str, suffix: str) -> str:
    """A platform statement in an evidence folder; ``suffix`` is the trust mode's (``.dsse.json``, ...)."""
    return f"platform-{platform}{suffix}"


def unsigned_run_file_name(platform: str) -> str:
    """A run job's unsigned record for the signing job (GitHub mode); never part of an evidence folder."""
    return f"platform-{platform}.run.json"


def provenance_file_name(platform: str, suffix: str) -> str:
    """A platform's SLSA provenance in an evidence folder, beside its platform statement."""
    return f"provenance-{platform}{suffix}"


def provenance_platform(name: str) -> str | None:
    """The platform a provenance file's name claims (``provenance-linux.dsse.json`` -> ``linux``), else None."""
    match = _PROVENANCE_FILE.match(name)
    return match.group(1) if match else None


def aggregate_file_name(suffix: str) -> str:
    """The aggregate statement in an evidence folder."""
    return f"aggregate{suffix}"


def is_evidence_file_name(name: str, suffix: str) -> bool:
    """Whether ``name`` is a statement (a platform's, its provenance or the aggregate) an evidence folder of this
    mode may hold."""
    match = _PLATFORM_FILE.match(name) or _PROVENANCE_FILE.match(name)
    return name == aggregate_file_name(suffix) or (match is not None and match.group(2) == suffix)
