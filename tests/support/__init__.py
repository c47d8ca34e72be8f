"""Test helpers shared by the suites (loopback servers, evidence factories, test keys)."""
