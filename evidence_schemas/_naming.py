"""The names the evidence gives things, as one convention the producer writes and the verifier re-derives."""

from __future__ import annotations


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
