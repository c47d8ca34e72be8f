"""The aggregate job: one signed statement over every verified platform statement of a run."""

from ._aggregate import AggregateResult, aggregate
from ._cli import build_parser, main, run

__all__ = ["AggregateResult", "aggregate", "build_parser", "main", "run"]
