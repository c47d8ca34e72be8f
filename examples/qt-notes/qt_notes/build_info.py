"""The build information the team's build embeds (from QUALIFY_BUILD_INFO) as a resource of the package."""

from __future__ import annotations

import json
from importlib import resources


def build_info() -> dict[str, str]:
    """The embedded build_sha and platform; a source checkout that was never built has none."""
    try:
        raw = resources.files("qt_notes").joinpath("build_info.json").read_text(encoding="utf-8")
    except FileNotFoundError:
        return {"build_sha": "0" * 40, "platform": "unbuilt"}
    data = json.loads(raw)
    return {"build_sha": str(data["build_sha"]), "platform": str(data["platform"])}
