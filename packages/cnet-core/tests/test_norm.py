"""token_norm (CNet's TokenNorm) and the TokenNorm layer, against direct computations and the paper's backward."""

import numpy as np
import pytest
import torch

from cnet.core import ops, wirtinger
from cnet.core.nn import TokenNorm
from cnet.core.ops import reference as ref
from cnet.core.testing import gradcheck

C128 = torch.complex128


def _randc(seed, *shape, dtype=C128):
    return torch.randn(*shape, dtype=dtype, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("shape", [(2, 7, 63), (1000,), (3, 1)])
@pytest.mark.parametrize("eps", [1e-5, 0.5])
def test_token_norm_matches_numpy(shape, eps):
    x = 3 * _randc(0, *shape)
    xn = x.numpy()
    want = xn / np.sqrt(np.mean(np.abs(xn) ** 2, axis=-1, keepdims=True) + eps)
    np.testing.assert_allclose(ref.token_norm(x, eps=eps).numpy(), want, rtol=1e-12, atol=1e-14)


def test_token_norm_eps_zero_gives_unit_power_and_phase_covariance():
    x = _randc(1, 4, 5, 9)
    y = ref.token_norm(x, eps=0.0)
    torch.testing.assert_close(y.abs().square().mean(-1), torch.ones(4, 5, dtype=torch.float64))
    a = torch.tensor(-2.0 + 0.5j, dtype=C128)  # y(a x) = (a / |a|) y(x): scale removed, phase kept
    torch.testing.assert_close(ref.token_norm(a * x, eps=0.0), a / a.abs() * y)


def test_token_norm_backward_is_the_papers_formula():
    # L = sum |y - c|^2 has dL/dconj(y) = y - c and dL/dy = conj(y - c). The paper gives, with
    # T = sum_i (dL/dy_i x_i + dL/dconj(y_i) conj(x_i)):  dL/dconj(x_i) = dL/dconj(y_i) / r - x_i T / (2 d r^3).
    eps, x, c = 0.1, _randc(2, 3, 7), _randc(3, 3, 7)
    leaf = x.clone().requires_grad_(True)
    y = ref.token_norm(leaf, eps=eps)
    dz, dconj = wirtinger.grads((y - c).abs().square().sum(), leaf)
    yd = y.detach()
    d = x.shape[-1]
    r = torch.sqrt(x.abs().square().mean(-1, keepdim=True) + eps)
    dl_dconj_y, dl_dy = yd - c, (yd - c).conj()
    t = (dl_dy * x + dl_dconj_y * x.conj()).sum(-1, keepdim=True)
    want = dl_dconj_y / r - x * t / (2 * d * r**3)
    torch.testing.assert_close(dconj, want, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(dz, want.conj(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("eps", [1e-5, 0.0])
def test_token_norm_gradcheck(eps):
    gradcheck(ref.token_norm, [_randc(4, 2, 3, 5)], {"eps": eps}).raise_if_failed()


def test_token_norm_rejects_bad_input():
    with pytest.raises(TypeError, match="token_norm: argument 'x' must be a complex tensor"):
        ref.token_norm(torch.randn(3, 4))
    with pytest.raises(ValueError, match="token_norm: argument 'x' must be c\\[..., d\\] with d >= 1"):
        ref.token_norm(torch.zeros(3, 0, dtype=C128))
    with pytest.raises(ValueError, match="token_norm: argument 'x' must be c\\[..., d\\]"):
        ref.token_norm(torch.tensor(1j))
    with pytest.raises(ValueError, match="token_norm: argument 'eps' must be a number >= 0"):
        ref.token_norm(_randc(5, 3), eps=-1e-3)
    with pytest.raises(ValueError, match="TokenNorm: argument 'eps'"):
        TokenNorm(eps=-1.0)


def test_token_norm_layer():
    x = _randc(6, 2, 3, 8, dtype=torch.complex64)
    layer = TokenNorm(eps=0.25)
    assert list(layer.parameters()) == []
    torch.testing.assert_close(layer(x), ref.token_norm(x, eps=0.25))
    torch.testing.assert_close(ops.token_norm(x), ref.token_norm(x, eps=1e-5))
    assert "eps=0.25" in repr(layer)
