"""cnet-models plugin (placeholder)."""
