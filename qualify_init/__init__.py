"""`qualify init`: adopt desktop-qualify from a team's own repository (docs/adopt.md, "Start from qualify init").

Writes a commented local policy (``policies/qualify.toml``), the caller workflow
(``.github/workflows/qualify.yml``, calling this project's reusable workflow at
the tag of this version), ``.qualify/.gitignore`` and a journey-runner
skeleton for the style chosen; ``--example`` adds a small app that qualifies
unchanged. It never overwrites a file: one existing target refuses the whole
run (``QE_USAGE``), and nothing is written.
"""

from ._cli import build_parser, run

__all__ = ["build_parser", "run"]
