"""load."""
