"""Stage runners for tests that call the producer's build and launch code directly.

The producer runs app code only through a ``StageRunner`` (``producer/confinement``). A test of build or launch
*logic* runs it unconfined (``unconfined_runner``): the command runs as it is, and the runner still records
what it ran under. A test of what the app process can see (its environment, HOME, the files around it) runs it
under the platform's real adapter (``confined_runner``), skipped with the adapter's own reason where it cannot
confine on this machine.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pytest
from desktop_qualify.producer.confinement import StageRunner, Unconfined, platform_confinement
from desktop_qualify.qualify_policy import host_platform


def unconfined_runner(why: str = "unit test") -> StageRunner:
    """A runner that confines nothing (``Unconfined``) and protects nothing: for tests of build or launch logic."""
    return StageRunner(Unconfined(why), ())


def confined_runner(protected: Iterable[Path] = (), network: Iterable[str] = ("build",)) -> StageRunner:
    """The host platform's real adapter, with ``protected`` hidden from every stage; a skip where it cannot run.

    Only Linux's adapter (bubblewrap) is exercised by these tests; elsewhere the test is skipped.
    """
    platform = host_platform()
    if platform != "linux":
        pytest.skip(f"the confined tests use bubblewrap; this host is {platform}")
    adapter = platform_confinement(platform)
    why = adapter.unavailable()
    if why is not None:
        pytest.skip(f"app code cannot be confined here: {why}")
    return StageRunner(adapter, tuple(Path(p).resolve() for p in protected), frozenset(network))
