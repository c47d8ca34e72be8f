"""Confinement in factory evidence: the policies' ``[confinement]`` section and the records that satisfy it.

``policies/release.toml``'s layers per platform; the build keeps the network, every other stage runs in a
network namespace on Linux. ``confined()`` is a predicate edit that records one passing entry per app stage the
predicate shows ran (the factory's policy names no ``[app.build] tools``, so no ``build-tools`` stage);
``require_confinement()`` appends the section to an evidence's policy and signs the provenance and the aggregate
again over it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from support.evidence_factory import Evidence, PredicateEdit

LAYERS: dict[str, list[str]] = {
    "linux": ["user-namespace", "pid-namespace", "mount-namespace", "network-namespace", "no-capabilities",
              "private-home", "private-tmp", "dies-with-stage"],
    "macos": ["sandbox-profile", "separate-account", "private-home", "private-tmp", "dies-with-stage"],
    "windows": ["job-object", "kill-on-job-close", "restricted-token", "private-home", "private-tmp",
                "dies-with-stage"],
}
MECHANISMS = {"linux": "bubblewrap", "macos": "sandbox-exec", "windows": "job-object"}
NETWORK_STAGES = ("build",)


def confinement_section(platforms: Sequence[str] = ("linux", "macos", "windows"),
                        network: Sequence[str] = NETWORK_STAGES) -> str:
    """The policy's ``[confinement]`` table requiring ``LAYERS`` on ``platforms``."""
    lines = ["", "[confinement]"]
    lines += [f"{platform} = {json.dumps(LAYERS[platform])}" for platform in platforms]
    lines.append(f"network = {json.dumps(list(network))}")
    return "\n".join(lines) + "\n"


def entry(platform: str, stage: str) -> dict[str, Any]:
    """One passing record: the platform's mechanism and layers; the network only for a stage that keeps it."""
    network = stage in NETWORK_STAGES
    layers = [layer for layer in LAYERS[platform] if not (network and layer == "network-namespace")]
    return {"stage": stage, "mechanism": MECHANISMS[platform], "layers": layers, "network": network,
            "detail": f"{stage} confined"}


def stages_of(pred: dict[str, Any], extra: Sequence[str] = ()) -> list[str]:
    """The app stages a predicate (as JSON data) shows ran, in the chain's order, plus ``extra``."""
    ran = ["build"]
    if pred["build"].get("reproduction") is not None:
        ran.append("build-reproduction")
    ran += [*extra, "probe", "journey"]
    if pred.get("update") is not None:
        ran.append("update")
    return ran


def confined(edit: PredicateEdit | None = None, *, extra: Sequence[str] = ()) -> PredicateEdit:
    """A predicate edit recording a passing confinement for each stage that ran, then ``edit`` (to spoil it)."""

    def apply(pred: dict[str, Any]) -> None:
        pred["confinement"] = [entry(pred["platform"], stage) for stage in stages_of(pred, extra)]
        if edit is not None:
            edit(pred)

    return apply


def passing_confinement(pred: dict[str, Any], tools: bool) -> list[dict[str, Any]]:
    """A passing record of each stage a predicate (as JSON data) shows ran; ``tools``: the policy names
    ``[app.build] tools`` (so their version commands ran as a stage of their own)."""
    return [entry(pred["platform"], stage) for stage in stages_of(pred, ("build-tools",) if tools else ())]


def require_confinement(ev: Evidence, platforms: Sequence[str] = ("linux", "macos", "windows"),
                        network: Sequence[str] = NETWORK_STAGES) -> None:
    """Append ``[confinement]`` to the evidence's policy, then sign its provenance and aggregate again over it."""
    with ev.policy_path.open("a", encoding="utf-8") as policy:
        policy.write(confinement_section(platforms, network))
    ev.rebind_provenance()
    ev.write_aggregate()
