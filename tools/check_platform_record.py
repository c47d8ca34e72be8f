"""Check one platform's frozen-app record against what the unit tests assumed about that platform (issue 35, 7).

The macOS and Windows sandboxes are unit-tested on Linux only (recorders and fake DLLs stand in for the
system). ci.yml's macOS and Windows jobs keep the frozen app's probe and journey output
(``SKILLHOST_RECORD_DIR``, written by tests/reference_app/test_frozen_build.py); once that record exists, this
script holds it to the same two things the unit tests hold the seams to, and lists every difference:

1. **the verifier's rule**: ``probe_facts`` and ``journey_facts`` (qualify_verify) under the release policy:
   every required check and step, every required layer applied, each kernel step refused with an errno the
   policy accepts, by the layer its table names for the platform, and the probe's and journey's layers alike;
2. **the layer attribution the unit tests assumed**: each kernel step's errno is one the app's ``REFUSED_BY``
   table lists for that operation on this platform, its layer is the one that table gives (so the app's
   errno table, not just the policy, is confirmed), every layer of the app's ``REQUIRED_LAYERS`` is applied,
   the own-folder step is allowed, and the read-backs say what the recorders fed: on Windows a Low integrity
   AppContainer token with the job's one-process limit and every UI limit, on macOS ``sandbox_check`` with the
   digest of the profile this build generates for a frozen worker.

    python tools/check_platform_record.py --platform windows --records DIR [--policy policies/release.toml]

Exit 0: no record yet (nothing to check), or the record matches; 1: each difference printed; 2: usage.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from desktop_qualify.evidence_schemas import AppJourneyRecord, AppProbeRecord, ProbeReport
from desktop_qualify.qualify_policy import load_policy
from desktop_qualify.qualify_verify import Expectations, journey_facts, probe_facts
from pydantic import ValidationError

_REPO = Path(__file__).resolve().parents[1]
# The app's own tables (its errno table, its required layers, its profile): the app is not an installed package.
sys.path.insert(0, str(_REPO / "reference_app"))

from skillhost.journey._kernel import REFUSED_BY, STEP_IDS  # noqa: E402 - the app's folder is on the path now
from skillhost.journey._tmp_folder import STEP_ID as OWN_FOLDER_STEP  # noqa: E402
from skillhost.os_sandbox._dispatch import REQUIRED_LAYERS  # noqa: E402
from skillhost.os_sandbox._macos import profile_digest  # noqa: E402

PLATFORMS = ("linux", "macos", "windows")
PROBE, JOURNEY = "probe.json", "journey.json"
# What the Windows recorders fed the worker's read-back (tests/reference_app/test_os_sandbox_windows.py).
_WINDOWS_DETAILS = {
    "appcontainer": ("S-1-15-2-", "integrity RID 0x1000"),  # an AppContainer SID, and a Low token
    "restricted-token": ("integrity RID 0x1000 (low)",),
    "job-object": ("active processes 1", "ui limits 0xff"),
    "no-child-process": ("child process policy flags 0x1",),
}


def _load(path: Path, model: Any) -> tuple[Any, str | None]:
    try:
        return model.model_validate_json(path.read_bytes()), None
    except (OSError, ValidationError) as exc:
        return None, f"{path.name}: not a valid record ({str(exc).splitlines()[0][:200]})"


def rule_differences(platform: str, probe: AppProbeRecord, journey: AppJourneyRecord,
                     expectations: Expectations) -> list[str]:
    """The verifier's own rule on the record, as the producer and the verifier apply it."""
    report = ProbeReport(app_version=probe.app_version, build_sha=probe.build_sha, platform=probe.platform,
                         executable_sha256=probe.executable_sha256, checks=probe.checks,
                         isolation_layers=probe.isolation_layers)
    probed = probe_facts(report=report, exit_code=0, timed_out=False, platform=platform, sha=probe.build_sha,
                         installed_executable_sha256=probe.executable_sha256,
                         required_checks=expectations.probe_checks,
                         required_layers=expectations.layers_for(platform))
    journeyed = journey_facts(steps=journey.steps, expected=expectations.steps,
                              code_pattern=expectations.code_pattern, exit_code=0, timed_out=False,
                              app_build_sha=journey.build_sha, sha=probe.build_sha, platform=platform,
                              layers=journey.isolation_layers,
                              required_layers=expectations.layers_for(platform),
                              refuses_with=expectations.refuses_with, probe_layers=probe.isolation_layers)
    return [f"probe: {why}" for why in probed.problems] + [f"journey: {why}" for why in journeyed.problems]


def attribution_differences(platform: str, journey: AppJourneyRecord) -> list[str]:
    """Where the record differs from the app's own tables, which the unit tests fed the seams from."""
    out: list[str] = []
    applied = {entry.name: entry.detail for entry in journey.isolation_layers if entry.applied}
    out += [f"layer {name}: not applied (the app's REQUIRED_LAYERS)" for name in REQUIRED_LAYERS[platform]
            if name not in applied]
    table = REFUSED_BY[platform]
    steps = {step.id: step for step in journey.steps}
    for op, step_id in STEP_IDS.items():
        step = steps.get(step_id)
        if step is None:
            out.append(f"{step_id}: missing")
            continue
        assumed = sorted(errno for known_op, errno in table if known_op == op)
        if step.errno not in assumed:
            out.append(f"{step_id}: refused with {step.errno}, the unit tests assumed {' or '.join(assumed)}")
            continue
        want = table[(op, step.errno)]
        if step.layer != want:
            out.append(f"{step_id}: attributed to {step.layer}, the unit tests assumed {want}")
    own = steps.get(OWN_FOLDER_STEP)
    if own is None or own.observed != "allow":
        out.append(f"{OWN_FOLDER_STEP}: {'missing' if own is None else f'{own.observed} {own.code}: {own.detail}'}")
    if platform == "windows":
        for name, needles in _WINDOWS_DETAILS.items():
            detail = applied.get(name)
            if detail is not None and not all(needle in detail for needle in needles):
                out.append(f"layer {name}: read back {detail!r}, the unit tests assumed {' and '.join(needles)}")
    if platform == "macos":
        detail, want = applied.get("sandbox-exec"), f"sandbox_check=1, profile sha256 {profile_digest(1)[:16]}"
        if detail is not None and detail != want:
            out.append(f"layer sandbox-exec: read back {detail!r}, the frozen worker's profile gives {want!r}")
    return out


def check(platform: str, records: Path, policy: Path) -> tuple[int, list[str]]:
    """(exit code, lines): 0 with a notice when there is no record yet; 1 with every difference."""
    present = [name for name in (PROBE, JOURNEY) if (records / name).is_file()]
    if not present:
        return 0, [f"no {platform} record in {records} yet: nothing to check"]
    if len(present) == 1:
        return 1, [f"only {present[0]} in {records}: the probe and the journey are kept together"]
    probe, why_probe = _load(records / PROBE, AppProbeRecord)
    journey, why_journey = _load(records / JOURNEY, AppJourneyRecord)
    problems = [why for why in (why_probe, why_journey) if why]
    if probe is None or journey is None:
        return 1, problems
    problems += [f"{name}: the record is for {rec.platform}, not {platform}"
                 for name, rec in ((PROBE, probe), (JOURNEY, journey)) if rec.platform != platform]
    if not problems:
        problems += rule_differences(platform, probe, journey, Expectations.from_policy(load_policy(policy)))
        problems += attribution_differences(platform, journey)
    if problems:
        return 1, [f"{platform} record differs from what the unit tests assumed:", *(f"  {p}" for p in problems)]
    kernel = ", ".join(f"{s.id.removeprefix('kernel-refuses-')}={s.layer}/{s.errno}" for s in journey.steps
                       if s.id in STEP_IDS.values())
    return 0, [f"{platform} record matches: {kernel}; {OWN_FOLDER_STEP} allowed"]


def main(argv: Sequence[str] | None = None) -> int:
    """The command line (module docstring); the exit code."""
    parser = argparse.ArgumentParser(prog="check_platform_record", description=__doc__.split("\n\n")[0])
    parser.add_argument("--platform", required=True, choices=PLATFORMS)
    parser.add_argument("--records", required=True, type=Path, help="the folder holding probe.json, journey.json")
    parser.add_argument("--policy", type=Path, default=_REPO / "policies" / "release.toml")
    options = parser.parse_args(argv)
    code, lines = check(options.platform, options.records, options.policy)
    print("\n".join(lines), file=sys.stderr if code else sys.stdout)
    return code


if __name__ == "__main__":
    sys.exit(main())
