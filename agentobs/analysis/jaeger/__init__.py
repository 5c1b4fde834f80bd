"""jaeger."""
