"""cnet-hub plugin (placeholder)."""
