"""The scripted journey: each allow path and each fail-closed path, observed (the ``journey`` command).

``run_journey`` runs the ``PHASES`` in report order (``_run``). A step's data
goes forward through the modules: a phase (``_external``, ``_brokers`` with
``_authority`` and ``_packages``, ``_boundary``, ``_kernel``) declares its
steps, fail-closed ones as rows (``_rows``: build, sign, tamper); a runner runs
them (``_on_host`` through a ``SkillHost``); each outcome becomes a step record
(``_step``).
"""

from skillhost.journey._run import PHASES, run_journey

__all__ = ["PHASES", "run_journey"]
