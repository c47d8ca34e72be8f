"""The worker's operating-system sandbox: one interface, one module per platform."""
