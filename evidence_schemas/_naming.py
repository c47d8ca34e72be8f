"""The names the evidence gives things, as one convention the producer writes and the verifier re-derives."""

from __future__ import annotations

import re

# Each trust mode's statement files end so: a DSSE envelope (local Ed25519), a Sigstore bundle (GitHub).
STATEMENT_SUFFIXES = {"ed25519": ".dsse.json", "sigstore": ".sigstore.json"}
_PLATFORM_FILE = re.compile(r"^platform-([a-z0-9]{1,16})(\.[a-z0-9.]{1,24})$")


def archive_suffix(platform: str) -> str:
    """A Windows bundle ships as a zip, the others as a reproducible tar.gz."""
    return ".zip" if platform == "windows" else ".tar.gz"


def artifact_file_name(app: str, sha: str, platform: str, arch: str) -> str:
    """The archive a producer job builds: app, commit, platform and architecture, all in the name."""
    return f"{app}-{sha[:12]}-{platform}-{arch}{archive_suffix(platform)}"


def executable_path(app: str, platform: str) -> str:
    """The app's executable relative to the install prefix (the bundle folder is named for the app)."""
    return f"{app}/{app}.exe" if platform == "windows" else f"{app}/{app}"


def platform_file_name(platform: str, suffix: str) -> str:
    """A platform statement in an evidence folder; ``suffix`` is the trust mode's (``.dsse.json``, ...)."""
    return f"platform-{platform}{suffix}"


def aggregate_file_name(suffix: str) -> str:
    """The aggregate statement in an evidence folder."""
    return f"aggregate{suffix}"


def is_evidence_file_name(name: str, suffix: str) -> bool:
    """Whether ``name`` is a statement (a platform's or the aggregate) an evidence folder of this mode may hold."""
    match = _PLATFORM_FILE.match(name)
    return name == aggregate_file_name(suffix) or (match is not None and match.group(2) == suffix)
