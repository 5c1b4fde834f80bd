"""derive."""
