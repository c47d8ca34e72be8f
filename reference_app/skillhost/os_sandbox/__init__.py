"""The worker's operating-system sandbox: one interface, one module per platform (the lowest layer of the app).

Standard library only: the worker imports it before it reads its first frame.
The host starts each worker through ``launch_plan``; the worker calls
``confine`` on itself and reports one ``Layer`` per layer. The platform modules
(``_linux`` with ``_seccomp_bpf``, ``_macos``, ``_windows`` with its ``_api``,
``_structs`` and ``_process``) are loaded lazily by the dispatcher and import
only ``_interface``, never the dispatcher.
"""

from skillhost.os_sandbox._dispatch import (
    REQUIRED_LAYERS,
    confine,
    launch_plan,
    missing_layers,
    platform_key,
    sandbox_denies,
    valid_layers,
    worker_interpreter,
    worker_read_roots,
)
from skillhost.os_sandbox._interface import Layer, WorkerProcess

__all__ = [
    "REQUIRED_LAYERS", "Layer", "WorkerProcess", "confine", "launch_plan", "missing_layers", "platform_key",
    "sandbox_denies", "valid_layers", "worker_interpreter", "worker_read_roots",
]  # fmt: skip
