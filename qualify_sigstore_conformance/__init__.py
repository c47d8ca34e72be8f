"""A sigstore-conformance client (verify-bundle) built on the project's verification layer."""
