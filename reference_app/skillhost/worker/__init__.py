"""The worker process external skills run in (standard library and the OS sandbox only)."""
