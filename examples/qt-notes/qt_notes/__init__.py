"""Qt Notes: a small notes editor (PySide6), the second example app the pipeline qualifies end to end."""

__version__ = "0.3.0"
