"""GitHub access on PyGithub: branches, protection, rulesets, workflow runs, artifacts, releases."""
