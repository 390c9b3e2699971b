"""cnet.models"""
