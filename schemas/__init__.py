"""The committed JSON Schemas, exported from the models and shipped as package data."""
