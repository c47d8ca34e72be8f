"""The brokers: every capability a skill uses goes through one port the host audits."""
