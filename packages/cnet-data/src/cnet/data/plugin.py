"""cnet-data plugin (placeholder)."""
