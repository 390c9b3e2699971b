"""PCT / PCR reference ops and layers: hand-computed values, Wirtinger gradchecks, formula checks, bad inputs."""

import cmath
import math

import pytest
import torch

from cnet.core.nn.phase import ComplexRMSNorm, ModReLU, PhaseCoherentRecurrence, TanhNorm, complex_glorot_
from cnet.core.ops.reference import pct
from cnet.core.ops.reference.pct import (
    EXAMPLES,
    GATE_KINDS,
    causal_conv,
    complex_dot_score,
    cosine_overlap,
    cosine_score,
    lru_kernel,
    mix_values,
    modrelu,
    score_gate,
    screening_gate,
    tanh_norm,
)
from cnet.core.testing import gradcheck

C128 = torch.complex128
F64 = torch.float64


def _qk():
    """One head, one query ``[1+i, 0]`` and one key ``[i, 1]`` (D = 2): ``<q, k> = (1 - i) i + 0 = 1 + i``."""
    q = torch.tensor([1 + 1j, 0], dtype=C128).reshape(1, 1, 1, 2)
    k = torch.tensor([1j, 1], dtype=C128).reshape(1, 1, 1, 2)
    return q, k


# ----------------------------------------------------------------------------------------------------- hand values
def test_cosine_score_by_hand():
    q, k = _qk()
    # |q|^2 = |k|^2 = 2, Re<q, k> = 1: cosine 1/2, times sqrt(D) = sqrt(2)
    assert cosine_score(q, k).item() == pytest.approx(0.5 * math.sqrt(2), rel=1e-7)
    assert cosine_score(q, k, scale=1.0).item() == pytest.approx(0.5, rel=1e-7)
    # invariant to positive scaling of either side and to one common phase on both
    rot = cmath.exp(0.7j)
    assert cosine_score(3 * q * rot, 0.1 * k * rot).item() == pytest.approx(0.5 * math.sqrt(2), rel=1e-6)
    # eps = 1e-8 is added to each squared norm: with a tiny key (|k|^2 = 2e-4) the score drops by 2.5e-5
    expected = math.sqrt(2) * 0.01 / (math.sqrt(2 + 1e-8) * math.sqrt(2e-4 + 1e-8))
    assert cosine_score(q, 0.01 * k).item() == pytest.approx(expected, rel=1e-12)
    assert expected / (0.5 * math.sqrt(2)) == pytest.approx(1 - 2.5e-5, abs=1e-8)
    # but not to a phase on one side only: e^{i pi/2} on k turns Re(1 + i) into Re(i (1 + i)) = -1
    assert cosine_score(q, 1j * k, scale=1.0).item() == pytest.approx(-0.5, rel=1e-7)


def test_cosine_overlap_and_unnormalised_score_by_hand():
    q, k = _qk()
    assert complex(cosine_overlap(q, k).item()) == pytest.approx(0.5 + 0.5j, rel=1e-7)
    # Re<q, k> / sqrt(2 D) = 1 / 2; with an explicit scale, Re<q, k> * scale
    assert complex_dot_score(q, k).item() == pytest.approx(0.5, rel=1e-12)
    assert complex_dot_score(10 * q, k).item() == pytest.approx(5.0, rel=1e-12)
    assert complex_dot_score(q, k, scale=math.sqrt(2)).item() == pytest.approx(math.sqrt(2), rel=1e-12)


def test_scores_over_several_keys_and_heads():
    g = torch.Generator().manual_seed(0)
    q = torch.randn(2, 3, 4, 5, dtype=C128, generator=g)
    k = torch.randn(2, 3, 6, 5, dtype=C128, generator=g)
    qh = q / q.abs().square().sum(-1, keepdim=True).add(1e-8).sqrt()
    kh = k / k.abs().square().sum(-1, keepdim=True).add(1e-8).sqrt()
    direct = torch.einsum("bhtd,bhsd->bhts", qh.conj(), kh)
    torch.testing.assert_close(cosine_overlap(q, k), direct, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(cosine_score(q, k), math.sqrt(5) * direct.real, rtol=1e-12, atol=1e-12)
    assert cosine_score(q, k).abs().max() <= math.sqrt(5)


def test_sigmoid_gate_starts_at_one_over_n_plus_one():
    n = 1024
    s = torch.zeros(1, 1, 3, 3, dtype=F64)
    a = score_gate(s, torch.tensor(-math.log(n), dtype=F64))
    torch.testing.assert_close(a, torch.full_like(s, 1 / (n + 1)), rtol=1e-12, atol=0)
    causal = score_gate(s, torch.tensor(-math.log(n), dtype=F64), causal=True)
    assert causal[0, 0, 0, 1] == 0 and causal[0, 0, 2, 0] == pytest.approx(1 / (n + 1))


@pytest.mark.parametrize("kind, expected", [
    ("relu", [0.0, 0.0, 0.5, 2.0]),
    ("clamped_relu", [0.0, 0.0, 0.5, 1.0]),
    ("square", [0.0, 0.0, 0.25, 4.0]),
    ("cubic", [0.0, 0.0, 0.125, 8.0]),
])
def test_isolation_gates_by_hand(kind, expected):
    s = torch.tensor([-1.0, 0.0, 1.0, 2.5], dtype=F64).reshape(1, 1, 1, 4)
    a = score_gate(s, torch.tensor(-0.5, dtype=F64), kind=kind)
    torch.testing.assert_close(a.flatten(), torch.tensor(expected, dtype=F64))


def test_causal_softmax_gate_by_hand():
    s = torch.tensor([[0.0, 5.0], [0.0, math.log(3)]], dtype=F64).reshape(1, 1, 2, 2)
    a = score_gate(s, None, kind="softmax", causal=True)
    torch.testing.assert_close(a.flatten(), torch.tensor([1.0, 0.0, 0.25, 0.75], dtype=F64))


def test_flat_gates_pass_no_gradient_below_zero():
    # PCT paper section 2.4: with b = -ln N and the score range [-sqrt(D), sqrt(D)] entirely below ln N, the
    # ReLU-type gates are identically 0 with identically 0 gradient; the sigmoid still passes gradient.
    d, n = 32, 1024
    s = (torch.rand(1, 2, 5, 5, dtype=F64) * 2 - 1) * math.sqrt(d)
    for kind in ("relu", "clamped_relu", "square", "cubic", "sigmoid"):
        ss = s.clone().requires_grad_(True)
        b = torch.tensor(-math.log(n), dtype=F64, requires_grad=True)
        score_gate(ss, b, kind=kind).sum().backward()
        dead = kind != "sigmoid"
        assert (ss.grad.abs().max() == 0) == dead and (b.grad.abs() == 0) == dead, kind


def test_screening_gate_by_hand():
    s = torch.tensor([0.5, 0.75, 1.0, -1.0], dtype=F64).reshape(1, 1, 1, 4)
    a = screening_gate(s, torch.tensor([0.0], dtype=F64))  # r = 2: alpha = max(1 - 2 (1 - s), 0)^2
    torch.testing.assert_close(a.flatten(), torch.tensor([0.0, 0.25, 1.0, 0.0], dtype=F64))
    # the initial s_r = -3: threshold t = 1 - 1 / (1 + e^-3) = 0.04743
    t = 1 - 1 / (1 + math.exp(-3))
    s = torch.tensor([t - 1e-9, t + 0.1], dtype=F64).reshape(1, 1, 1, 2)
    a = screening_gate(s, torch.tensor([-3.0], dtype=F64))
    assert a[0, 0, 0, 0] == 0
    assert a[0, 0, 0, 1].item() == pytest.approx((1 + math.exp(-3)) ** 2 * 0.01, rel=1e-9)


def test_mix_values_is_a_real_weighted_sum():
    a = torch.tensor([[0.5, 2.0]], dtype=F64).reshape(1, 1, 1, 2)
    v = torch.tensor([[1j, 1.0], [1 + 1j, -2.0]], dtype=C128).reshape(1, 1, 2, 2)
    out = mix_values(a, v).flatten()
    torch.testing.assert_close(out, torch.tensor([2 + 2.5j, -3.5], dtype=C128))


def test_tanh_norm_by_hand():
    h = torch.tensor([3.0, 4j], dtype=C128)
    torch.testing.assert_close(tanh_norm(h), h * math.tanh(5) / 5)
    assert tanh_norm(h).abs().square().sum().sqrt().item() == pytest.approx(math.tanh(5), rel=1e-12)
    r = torch.tensor([[0.0, 0.0], [6.0, -8.0]], dtype=F64)
    torch.testing.assert_close(tanh_norm(r), torch.tensor([[0.0, 0.0], [0.6, -0.8]], dtype=F64) * math.tanh(10))
    # the zero vector: output 0, Jacobian the identity (f(0) = 1)
    z = torch.zeros(3, dtype=C128, requires_grad=True)
    g = torch.tensor([1 + 2j, -1j, 0.5], dtype=C128)
    (tanh_norm(z) * g.conj()).real.sum().backward()
    torch.testing.assert_close(z.grad, g)


def test_tanh_norm_small_and_large_norms_agree_with_the_formula():
    for scale in (1e-3, 5e-3, 2e-2, 1.0, 30.0):
        h = torch.tensor([0.6, 0.8j], dtype=C128) * scale
        torch.testing.assert_close(tanh_norm(h), h * math.tanh(scale) / scale, rtol=1e-13, atol=1e-15)
    rep = gradcheck(tanh_norm, (torch.tensor([3e-3, 4e-3j, 1e-3], dtype=C128),), eps=1e-8, atol=1e-7)
    rep.raise_if_failed()


def test_modrelu_by_hand():
    z = torch.tensor([3 + 4j, 0.3 - 0.4j, 0j], dtype=C128)
    b = torch.tensor(-2.0, dtype=F64)
    torch.testing.assert_close(modrelu(z, b), torch.tensor([1.8 + 2.4j, 0, 0], dtype=C128))
    torch.testing.assert_close(modrelu(z, b, power=2), torch.tensor([5.4 + 7.2j, 0, 0], dtype=C128))
    # zero bias and power 1 is the identity away from 0
    torch.testing.assert_close(modrelu(z[:2], torch.tensor(0.0, dtype=F64)), z[:2])


# -------------------------------------------------------------------------------------------------------- recurrence
def test_lru_kernel_by_hand():
    # e^nu = 0.1, theta = pi/2: lambda = e^-0.1 i, gamma = sqrt(1 - e^-0.2)
    p = torch.tensor([complex(math.log(0.1), math.pi / 2)], dtype=C128)
    k = lru_kernel(p, 3)[0]
    gamma = math.sqrt(1 - math.exp(-0.2))
    expected = torch.tensor([gamma, gamma * math.exp(-0.1) * 1j, -gamma * math.exp(-0.2)], dtype=C128)
    torch.testing.assert_close(k, expected, rtol=1e-12, atol=1e-14)


def test_causal_conv_by_hand():
    u = torch.tensor([1.0, 2.0, 3.0], dtype=C128).reshape(1, 3, 1)
    k = torch.tensor([[1.0, 0.5, 0.25]], dtype=C128)
    torch.testing.assert_close(causal_conv(u, k).flatten(), torch.tensor([1.0, 2.5, 4.25], dtype=C128))


def test_fft_convolution_equals_the_recurrence_loop():
    # h_t = lambda h_{t-1} + gamma u_t from h_{-1} = 0, at an odd length, in complex128
    g = torch.Generator().manual_seed(1)
    n, length = 4, 63
    p = torch.complex(torch.rand(n, dtype=F64, generator=g) - 3, torch.rand(n, dtype=F64, generator=g))
    u = torch.randn(2, length, n, dtype=C128, generator=g)
    lam = torch.exp(torch.complex(-torch.exp(p.real), p.imag))
    gamma = torch.sqrt(1 - lam.abs().square())
    h = torch.zeros(2, n, dtype=C128)
    rows = []
    for t in range(length):
        h = lam * h + gamma * u[:, t]
        rows.append(h)
    torch.testing.assert_close(causal_conv(u, lru_kernel(p, length)), torch.stack(rows, 1), rtol=1e-10, atol=1e-12)


# ------------------------------------------------------------------------------------------------------- gradchecks
@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_gradcheck_examples(name):
    args, kwargs = EXAMPLES[name](C128, torch.device("cpu"), 0)
    gradcheck(getattr(pct, name), args, kwargs).raise_if_failed()


@pytest.mark.parametrize("kind", GATE_KINDS)
def test_gradcheck_every_gate(kind):
    g = torch.Generator().manual_seed(2)
    s = torch.randn(1, 2, 3, 3, dtype=F64, generator=g)
    gradcheck(score_gate, (s, torch.tensor(0.3, dtype=F64)), {"kind": kind, "causal": True}).raise_if_failed()


def test_gradcheck_score_options_and_modrelu_power_one():
    g = torch.Generator().manual_seed(3)
    q, k = torch.randn(1, 1, 3, 2, dtype=C128, generator=g), torch.randn(1, 1, 4, 2, dtype=C128, generator=g)
    gradcheck(cosine_score, (q, k), {"scale": 1.0}).raise_if_failed()
    gradcheck(complex_dot_score, (q, k), {"scale": 3.0}).raise_if_failed()
    s = torch.rand(1, 1, 3, 3, dtype=F64, generator=g) * 2 - 1
    gradcheck(screening_gate, (s, torch.tensor([-0.2], dtype=F64)), {"causal": True}).raise_if_failed()
    z = torch.randn(5, dtype=C128, generator=g)
    gradcheck(modrelu, (z, torch.tensor(-0.4, dtype=F64)), {"power": 1}).raise_if_failed()
    gradcheck(tanh_norm, (torch.randn(2, 3, dtype=F64, generator=g),)).raise_if_failed()


# ------------------------------------------------------------------------------------------------------- bad inputs
def test_bad_inputs():
    q, k = _qk()
    with pytest.raises(TypeError, match="complex"):
        cosine_score(q.real, k)
    with pytest.raises(ValueError, match="must agree"):
        cosine_score(q, torch.zeros(1, 1, 1, 3, dtype=C128))
    with pytest.raises(ValueError, match="scale"):
        cosine_score(q, k, scale=0.0)
    s = torch.zeros(1, 1, 2, 3, dtype=F64)
    with pytest.raises(ValueError, match="unknown gate kind 'tanh'; choose one of sigmoid, relu"):
        score_gate(s, kind="tanh")
    with pytest.raises(ValueError, match="T == S"):
        score_gate(s, causal=True)
    with pytest.raises(ValueError, match="does not broadcast"):
        score_gate(s, torch.zeros(4, dtype=F64))
    with pytest.raises(TypeError, match="real tensor"):
        score_gate(s.to(C128))
    with pytest.raises(ValueError, match="r\\[H\\]"):
        screening_gate(s, torch.zeros(2, dtype=F64))
    with pytest.raises(ValueError, match="power"):
        modrelu(q, torch.tensor(0.0, dtype=F64), power=0)
    with pytest.raises(TypeError, match="real dtype"):
        modrelu(q, torch.tensor(0.0, dtype=torch.float32))
    with pytest.raises(ValueError, match="kernel"):
        causal_conv(torch.zeros(1, 4, 2, dtype=C128), torch.zeros(2, 3, dtype=C128))
    with pytest.raises(ValueError, match="length"):
        lru_kernel(torch.zeros(2, dtype=C128), 0)
    with pytest.raises(TypeError):
        tanh_norm(torch.zeros(3, dtype=torch.int64))
    with pytest.raises(ValueError, match="disagree"):
        mix_values(torch.zeros(1, 1, 2, 3, dtype=F64), torch.zeros(1, 1, 2, 4, dtype=C128))


# ----------------------------------------------------------------------------------------------------------- layers
def test_complex_rms_norm_gains_and_phase():
    x = torch.randn(2, 3, 8, dtype=torch.complex64) * 7
    for gain, norm in (("inv_sqrt_dim", 8**-0.5), ("sqrt_dim", 8**0.5)):
        y = ComplexRMSNorm(8, gain=gain)(x)
        torch.testing.assert_close(y.abs().square().sum(-1).sqrt(), torch.full((2, 3), norm), rtol=1e-5, atol=0)
        torch.testing.assert_close(torch.angle(y), torch.angle(x), rtol=0, atol=1e-5)  # gain 1: phases kept
    with pytest.raises(ValueError, match="gain"):
        ComplexRMSNorm(8, gain="unit")


def test_glorot_modrelu_and_tanh_layers():
    w = complex_glorot_(torch.empty(300, 500, dtype=torch.complex64), torch.Generator().manual_seed(0))
    assert w.real.std().item() == pytest.approx(math.sqrt(1 / 800), rel=0.02)
    assert w.imag.std().item() == pytest.approx(math.sqrt(1 / 800), rel=0.02)
    act = ModReLU(power=2)
    assert act.bias.shape == () and act.bias.item() == 0.0
    z = torch.tensor([3 + 4j], dtype=torch.complex64)
    torch.testing.assert_close(act(z), torch.tensor([15 + 20j], dtype=torch.complex64))  # |z|^2 e^{i arg z}
    torch.testing.assert_close(TanhNorm()(z), z * math.tanh(5) / 5)


def test_pcr_layer_initialisation():
    layer = PhaseCoherentRecurrence(8, 64)
    for d in ("fwd", "bwd"):
        lam = layer.eigenvalues(d)
        assert lam.abs().min() >= 0.999 - 1e-6 and lam.abs().max() <= 0.9999 + 1e-6
        theta = torch.angle(lam)
        assert theta.min() >= 0 and theta.max() <= math.pi / 10 + 1e-6
    assert not torch.equal(layer.nu_theta_fwd, layer.nu_theta_bwd)
    assert all(p.is_complex() for n, p in layer.named_parameters() if n != "D")


def test_pcr_layer_equals_two_loops():
    torch.manual_seed(0)
    h_dim, n, length = 3, 5, 17
    layer = PhaseCoherentRecurrence(h_dim, n, r_min=0.5, r_max=0.9, max_phase=1.0)
    x = torch.randn(2, length, h_dim)

    def run(xs, p, b, c):
        p, b, c = p.detach().to(C128), b.detach().to(C128), c.detach().to(C128)
        lam = torch.exp(torch.complex(-torch.exp(p.real), p.imag))
        gamma = torch.sqrt(1 - lam.abs().square())
        h = torch.zeros(xs.shape[0], n, dtype=C128)
        out = []
        for t in range(xs.shape[1]):
            h = lam * h + gamma * (xs[:, t].to(C128) @ b.T)
            out.append((h @ c.T).real)
        return torch.stack(out, 1)

    xd = x.double()
    expected = run(xd, layer.nu_theta_fwd, layer.B_fwd, layer.C_fwd)
    expected = expected + run(xd.flip(1), layer.nu_theta_bwd, layer.B_bwd, layer.C_bwd).flip(1)
    expected = expected + layer.D.detach().double() * xd
    torch.testing.assert_close(layer(x).double(), expected, rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="r\\[B, L, 3\\]"):
        layer(x.to(torch.complex64))
