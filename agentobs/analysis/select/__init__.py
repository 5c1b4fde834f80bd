"""select."""
