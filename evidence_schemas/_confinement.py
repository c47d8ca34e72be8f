"""What each run of app-controlled code ran under: the confinement the evidence records per app stage.

App-controlled code (the app's build command, its ``[app.build] tools`` version commands, the second build of a
reproducibility check, the launch probe, the journey, the update journey's state verbs) runs confined: on Linux
in bubblewrap namespaces, on macOS under a sandbox-exec profile and a separate account, on Windows in a job
object with a restricted token. Each run leaves one ``StageConfinement`` in the platform predicate; the policy's
``[confinement]`` names the layers every stage on a platform must have had, and the verifier refuses a statement
whose stage ran with less (``QE_STAGE_UNCONFINED``).

The constants here are the canonical vocabulary: the producer's confinement adapters report exactly these names.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Literal, get_args

from pydantic import Field, field_validator

from ._types import Excerpt, Platform, Record

AppStage = Literal["build", "build-reproduction", "build-tools", "probe", "journey", "update"]
APP_STAGES: tuple[AppStage, ...] = ("build", "build-reproduction", "build-tools", "probe", "journey", "update")

ConfinementMechanism = Literal["bubblewrap", "sandbox-exec", "job-object", "none"]
CONFINEMENT_MECHANISMS: tuple[ConfinementMechanism, ...] = ("bubblewrap", "sandbox-exec", "job-object", "none")
# The one mechanism that confines app code on each platform; "none" confines nothing and satisfies no policy.
MECHANISM_OF_PLATFORM: Mapping[Platform, ConfinementMechanism] = MappingProxyType(
    {"linux": "bubblewrap", "macos": "sandbox-exec", "windows": "job-object"})

# The layer names an adapter may report, per platform (producer/confinement/_stage.py reports these).
LINUX_LAYERS: tuple[str, ...] = ("user-namespace", "pid-namespace", "mount-namespace", "network-namespace",
                                 "ipc-namespace", "uts-namespace", "no-capabilities", "private-home", "private-tmp",
                                 "dies-with-stage")
MACOS_LAYERS: tuple[str, ...] = ("sandbox-profile", "separate-account", "private-home", "private-tmp",
                                 "dies-with-stage")
WINDOWS_LAYERS: tuple[str, ...] = ("job-object", "kill-on-job-close", "restricted-token", "low-integrity",
                                   "private-home", "private-tmp", "dies-with-stage")
ConfinementLayer = Literal["user-namespace", "pid-namespace", "mount-namespace", "network-namespace",
                           "ipc-namespace", "uts-namespace", "no-capabilities", "private-home", "private-tmp",
                           "dies-with-stage", "sandbox-profile", "separate-account", "job-object",
                           "kill-on-job-close", "restricted-token", "low-integrity"]
# Every platform's layers, each once, in the order above (the producer's CONFINEMENT_LAYERS).
CONFINEMENT_LAYERS: tuple[ConfinementLayer, ...] = get_args(ConfinementLayer)
CONFINEMENT_LAYERS_BY_PLATFORM: Mapping[Platform, tuple[str, ...]] = MappingProxyType(
    {"linux": LINUX_LAYERS, "macos": MACOS_LAYERS, "windows": WINDOWS_LAYERS})
# The Linux layer that takes the machine's network away: a stage without it kept the network, and one with it
# did not (the verifier holds a record's ``network`` flag to this).
NETWORK_NAMESPACE = "network-namespace"
MAX_CONFINEMENT_LAYERS = 16
# One entry per run of app code: a build, its tools, a second build, the probe, the journey, the update's verbs.
MAX_CONFINED_RUNS = 64


class StageConfinement(Record):
    """How one run of app-controlled code was confined: the stage, the mechanism, the layers it ran under.

    The producer's confinement adapter reads these back once the stage and everything it started have ended.
    The verifier holds them to the policy's ``[confinement]``: the platform's mechanism, every required layer,
    and the network only where the policy gives it.
    """

    stage: AppStage
    """The app stage the code ran in (build, build-reproduction, build-tools, probe, journey, update)."""
    mechanism: ConfinementMechanism
    """What confined it: bubblewrap (Linux), sandbox-exec (macOS), a job object (Windows), or none."""
    layers: list[ConfinementLayer] = Field(max_length=MAX_CONFINEMENT_LAYERS, json_schema_extra={"uniqueItems": True})
    """The confinement layers the stage ran under, as the adapter observed them; each at most once."""
    network: bool
    """Whether the stage kept the machine's network (on Linux: it ran without a network namespace)."""
    detail: Excerpt = ""
    """What the adapter bound in and observed, for people (informational: no check reads it)."""

    @field_validator("layers")
    @classmethod
    def _each_layer_once(cls, layers: list[ConfinementLayer]) -> list[ConfinementLayer]:
        repeated = sorted({layer for layer in layers if layers.count(layer) > 1})
        if repeated:
            raise ValueError(f"layers repeat {', '.join(repeated)}: each layer is listed once")
        return layers
