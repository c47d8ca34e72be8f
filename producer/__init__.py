"""The producer: one job per platform, from the source gate to a signed platform statement."""

from ._cli import build_parser, main, run
from ._gate_cli import build_gate_parser, run_gate
from ._pipeline import ProduceResult, produce

__all__ = ["ProduceResult", "build_gate_parser", "build_parser", "main", "produce", "run", "run_gate"]
