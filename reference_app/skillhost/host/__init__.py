"""The host: discovery, verification and the two ways a skill runs (bundled in-process, external in a worker)."""
