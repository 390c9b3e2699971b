"""cnet-kernels plugin (placeholder)."""
