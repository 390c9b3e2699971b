"""cnet.kernels"""
