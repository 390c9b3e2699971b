"""cnet.hub"""
