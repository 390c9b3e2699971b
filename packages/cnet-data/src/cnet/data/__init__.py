"""cnet.data"""
