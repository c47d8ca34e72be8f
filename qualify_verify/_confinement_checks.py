"""Each run of app-controlled code was confined as the policy requires for its platform (``[confinement]``).

The rule, for a platform whose policy lists confinement layers (docs/verifier.md):

* the statement records its confinement (``predicate.confinement`` is not None);
* every app stage that ran has at least one entry: ``build``, ``probe`` and ``journey`` always;
  ``build-reproduction`` when the build record holds a second build; ``build-tools`` when the policy's
  ``[app.build] tools`` names a tool; ``update`` when the statement holds an update journey. Which stages ran is
  re-derived from the predicate and the policy, never read from the entries;
* no entry names a stage that did not run;
* every entry's mechanism is the platform's (bubblewrap, sandbox-exec, job-object) and its layers are the
  platform's;
* every entry has every required layer: the policy's list, less ``network-namespace`` for a stage the policy
  gives the network (``[confinement] network``);
* no entry keeps the network for a stage the policy does not give it, on a platform whose required layers can
  cut the network (``CUTS_NETWORK``: Linux's network namespace, macOS's profile). Windows' job object and
  restricted token cannot, so a Windows stage keeps the network whatever ``[confinement] network`` says and
  records it (docs/boundaries.md);
* on Linux an entry's ``network`` flag agrees with its layers: a stage without ``network-namespace`` kept the
  network, and one with it did not; a record that says otherwise contradicts itself.

Every problem is ``QE_STAGE_UNCONFINED``. A platform the policy requires no confinement for is not checked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from desktop_qualify.evidence_schemas import (
    APP_STAGES,
    CONFINEMENT_LAYERS_BY_PLATFORM,
    MECHANISM_OF_PLATFORM,
    NETWORK_NAMESPACE,
    AppStage,
    Code,
    PlatformPredicate,
)

from ._expectations import Expectations
from ._findings import Findings

if TYPE_CHECKING:  # _platform_checks runs this check as one of its own
    from ._platform_checks import VerifiedPlatform


# The layer that takes the machine's network away from a stage, per platform; Windows has none.
CUTS_NETWORK = {"linux": NETWORK_NAMESPACE, "macos": "sandbox-profile"}


def stages_that_ran(p: PlatformPredicate, exp: Expectations) -> tuple[AppStage, ...]:
    """The app stages the statement says ran, in the chain's order, re-derived from its records and the policy."""
    ran: set[AppStage] = {"build", "probe", "journey"}
    if p.build.reproduction is not None:
        ran.add("build-reproduction")
    if exp.build_tools:
        ran.add("build-tools")
    if p.update is not None:
        ran.add("update")
    return tuple(stage for stage in APP_STAGES if stage in ran)


def required_layers(stage: AppStage, layers: tuple[str, ...], exp: Expectations) -> tuple[str, ...]:
    """The layers ``stage`` must have run under: the policy's, less ``network-namespace`` where it has the network."""
    if exp.stage_has_network(stage):
        return tuple(layer for layer in layers if layer != NETWORK_NAMESPACE)
    return layers


def confinement_problems(p: PlatformPredicate, exp: Expectations) -> list[str]:
    """Why the statement's app stages were not confined as the policy requires for its platform (module docstring);
    empty when they were, or when the policy requires no confinement there."""
    required = exp.confinement_layers(p.platform)
    if required is None:
        return []
    if p.confinement is None:
        return [f"no confinement recorded; the policy requires it on {p.platform}"]
    problems = []
    ran = stages_that_ran(p, exp)
    recorded = {entry.stage for entry in p.confinement}
    problems += [f"stage {stage} ran with no confinement recorded" for stage in ran if stage not in recorded]
    mechanism = MECHANISM_OF_PLATFORM[p.platform]
    own = CONFINEMENT_LAYERS_BY_PLATFORM[p.platform]
    for index, entry in enumerate(p.confinement):
        where = f"confinement[{index}] ({entry.stage})"
        if entry.stage not in ran:
            problems.append(f"{where}: stage {entry.stage} did not run in this statement")
        if entry.mechanism != mechanism:
            problems.append(f"{where}: confined by {entry.mechanism}, not {mechanism} ({p.platform}'s)")
        foreign = [layer for layer in entry.layers if layer not in own]
        if foreign:
            problems.append(f"{where}: reports {', '.join(foreign)}, not {p.platform} layers")
        missing = [layer for layer in required_layers(entry.stage, required, exp) if layer not in entry.layers]
        if missing:
            problems.append(f"{where}: ran without {', '.join(missing)}, which the policy requires on {p.platform}")
        if entry.network and not exp.stage_has_network(entry.stage) and CUTS_NETWORK.get(p.platform) in required:
            problems.append(f"{where}: kept the network, which the policy does not give stage {entry.stage}")
        if p.platform == "linux" and entry.network == (NETWORK_NAMESPACE in entry.layers):
            problems.append(f"{where}: says network={str(entry.network).lower()} "
                            f"{'with' if entry.network else 'without'} {NETWORK_NAMESPACE}: the record "
                            f"contradicts itself")
    return problems


def check_app_stages_confined(vp: VerifiedPlatform, exp: Expectations, findings: Findings) -> None:
    """Every app stage that ran was confined as the policy's [confinement] requires (``QE_STAGE_UNCONFINED``)."""
    for problem in confinement_problems(vp.statement.predicate, exp):
        findings.add(Code.STAGE_UNCONFINED, f"{vp.file_name}: {problem}", vp.platform)
