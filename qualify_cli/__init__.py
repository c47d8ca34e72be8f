"""The `qualify` console script."""

from ._main import main

__all__ = ["main"]
