"""The workflow tests import their rules from workflow_rules beside this file."""
