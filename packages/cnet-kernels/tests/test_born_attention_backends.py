"""Backend parity of cnet-kernels' Born attention with the reference, and its registration."""

import pytest
import torch

from cnet.core.ops.reference import born_attention
from cnet.core.plugins import registries
from cnet.core.testing import check_parity
from cnet.kernels.born_attention import born_attention_planar, supports_planar


def _inputs(b, h, t, d, dv, dtype, device="cpu", seed=0):
    g = torch.Generator().manual_seed(seed)
    q, k = (torch.randn(b, h, t, d, dtype=dtype, generator=g) for _ in range(2))
    v = torch.randn(b, h, t, dv, dtype=dtype, generator=g)
    return [x.to(device) for x in (q, k, v)]


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("t", [1, 7, 63])
def test_planar_matches_reference_outputs_and_gradients(t, causal):
    args = _inputs(2, 3, t, 5, 4, torch.complex128)
    rep = check_parity(born_attention_planar, born_attention, args, {"causal": causal, "eps": 0.0},
                       atol=1e-10, rtol=1e-9)
    rep.raise_if_failed()


def test_planar_zero_rows_and_eps():
    q, k, v = _inputs(1, 1, 6, 3, 3, torch.complex128)
    q[:, :, 2] = 0  # a query orthogonal to everything: its row is 0/0 -> 0
    for eps in (0.0, 0.5):
        out = born_attention_planar(q, k, v, causal=True, eps=eps)
        torch.testing.assert_close(out, born_attention(q, k, v, causal=True, eps=eps), atol=1e-12, rtol=1e-10)
    assert torch.equal(out[:, :, 2], torch.zeros_like(out[:, :, 2]))


def test_registered_for_cuda_only_and_refuses_cpu():
    op = registries().ops.get("born_attention")
    assert [(b.name, b.device) for b in op.backends] == [("planar", "cuda")]
    ok, reason = supports_planar(*_inputs(1, 1, 4, 2, 2, torch.complex64))
    assert not ok and "CUDA" in reason
    # on CPU the dispatcher must fall back to the reference
    name, _ = registries().ops.select("born_attention", tuple(_inputs(1, 1, 4, 2, 2, torch.complex64)), {})
    assert name == "reference"


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("t", [64, 1000, 4096])
def test_planar_parity_on_gpu(t):
    args = _inputs(2, 4, t, 32, 32, torch.complex64, device="cuda")
    rep = check_parity(born_attention_planar, born_attention, args, {"causal": True}, atol=2e-4, rtol=2e-3)
    rep.raise_if_failed()
