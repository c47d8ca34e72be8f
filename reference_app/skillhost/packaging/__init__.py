"""Skill packages: manifest, lock and signature, the bundled-skill catalog, the external-source audit."""
