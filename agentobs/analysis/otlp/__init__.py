"""otlp."""
