"""The scripted journey: each allow path and each fail-closed path, observed."""
