"""A short tour of cnet: an op and its gradient check, a layer, a model, a plugin.

    python examples/tour.py
"""

import torch

import cnet.core as cc
import cnet.models
from cnet.core import nn as cnn
from cnet.core.hookspecs import hookimpl
from cnet.core.plugins import plugin_manager, registries, reset
from cnet.core.testing import gradcheck

# 1. An op and its Wirtinger gradient check (complex128, central differences, both derivatives).
q, k, v = (torch.randn(1, 2, 7, 4, dtype=torch.complex128) for _ in range(3))
out = cc.ops.born_attention(q, k, v, causal=True)            # c[B, H, T, D]
print("born_attention:", tuple(out.shape), out.dtype)
gradcheck(cc.ops.reference.born_attention, (q, k, v)).raise_if_failed()
print("gradcheck ok")

# dL/dz and dL/dconj(z) of a real loss, in the convention of docs/wirtinger.md
z = torch.randn(5, dtype=torch.complex128, requires_grad=True)
d_z, d_conj = cc.wirtinger.grads((z.abs() ** 2).sum(), z)  # |z|^2: dL/dconj(z) = z
assert torch.allclose(d_conj, z.detach())

# 2. A layer: multi-head Born attention with RoPE over c[B, T, E].
layer = cnn.MultiheadBornAttention(embed_dim=32, num_heads=4)
x = torch.randn(2, 10, 32, dtype=torch.complex64)
print("MultiheadBornAttention:", tuple(layer(x).shape))

# 3. A model from the registry, its loss in nats per token, and sampling.
model = cnet.models.create("born-lm", vocab_size=65, embed_dim=32, num_layers=2)
ids = torch.randint(0, 65, (2, 16))
print("born-lm loss (nats/token):", model(ids[:, :-1], ids[:, 1:]).loss.item())
print("sample ids:", model.generate(ids[:1, :4], 8, temperature=0.8)[0].tolist())


# 4. A plugin: a new op with a reference, reachable as cnet.core.ops.<name> and checked by the same kit.
class _Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, z):
        ctx.save_for_backward(z)
        return z ** 3

    @staticmethod
    def backward(ctx, grad_out):       # holomorphic: grad_in = grad_out * conj(3 z^2)
        (z,) = ctx.saved_tensors
        return grad_out * (3 * z ** 2).conj()


class CubePlugin:
    @hookimpl
    def cnet_register_ops(self, ops):
        ops.add("cube", _Cube.apply, example=lambda dtype, device, seed: ((torch.randn(5, dtype=dtype),), {}))


reset()
plugin_manager().register(CubePlugin(), name="cube-demo")   # a package would use an entry point in group `cnet`
print("cube:", cc.ops.cube(torch.tensor([1 + 1j])))
print("registered ops:", ", ".join(registries().ops.names()))
