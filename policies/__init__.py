"""The committed policies and pinned trusted roots, shipped as package data (read with importlib.resources)."""
