"""The four quantum-shortcut models: substrate formulas against direct loops, initialisation, training,
causality, save/load through the registry, generation, and errors."""

import dataclasses
import math

import pytest
import torch
import torch.nn.functional as F

import cnet.models as cm
import cnet.models.registry as registry_module
from cnet.core import ops
from cnet.core.plugins import registries
from cnet.core.registry import NameRegistry
from cnet.models import shortcut
from cnet.models.shortcut import (
    BornScoreAttention,
    HMambaConfig,
    HTransformerConfig,
    MambaConfig,
    PhaseStateRecurrence,
    SelectiveScan,
    TransformerConfig,
)
from cnet.models.shortcut.hmamba import base_frequencies
from cnet.models.shortcut.htransformer import rope_real

SMALL = {
    "h-mamba": dict(d_model=16, d_inner=32, num_layers=2, num_heads=2, d_state=4, chunk=4),
    "mamba": dict(d_model=16, d_inner=32, num_layers=2, d_state=4, ffn_dim=16),
    "h-transformer": dict(d_model=16, d_inner=32, num_layers=2, num_heads=2, head_dim=4, attn_chunk=4),
    "transformer": dict(d_model=16, num_layers=2, num_heads=2, ffn_dim=32),
}


@pytest.fixture
def models(monkeypatch):
    """A model registry holding the installed models plus the four shortcut models (added unless already there)."""
    real = registries()
    fresh = NameRegistry("model")
    for name in real.models.names():
        entry = dict(real.models.get(name))
        entry.pop("name")
        fresh.add(name, entry.pop("obj"), **entry)
    missing = NameRegistry("model")
    shortcut.register(missing)
    for name in missing.names():
        if name not in fresh:
            entry = dict(missing.get(name))
            entry.pop("name")
            fresh.add(name, entry.pop("obj"), **entry)
    monkeypatch.setattr(registry_module, "registries", lambda: dataclasses.replace(real, models=fresh))
    return fresh


def _batch(vocab=11, t=12, b=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, vocab, (b, t + 1), generator=g)


def _randomise(module, std=0.5, seed=0):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            if p.is_complex():
                torch.view_as_real(p).copy_(torch.randn(torch.view_as_real(p).shape, generator=g, dtype=p.real.dtype))
            else:
                p.copy_(std * torch.randn(p.shape, generator=g, dtype=p.dtype))


# ---------------------------------------------------------------- substrates against direct formulas (float64)

@pytest.mark.parametrize("prior,readout,mode", [("unit_modulus", "complex", "min"), ("unit_norm", "real", "max"),
                                                ("zero", "complex", "min")])
def test_phase_state_recurrence_equals_the_direct_recurrence(prior, readout, mode):
    h, n, d, t = 2, 3, 6, 11
    m = PhaseStateRecurrence(d, h, n, chunk=4, prior=prior, readout=readout, dt_clamp_mode=mode).double()
    _randomise(m, seed=1)
    u = torch.randn(2, t, d, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    p = (u @ m.proj.weight.T + m.proj.bias).view(2, t, h, 6 * n + 1)
    delta, dt_logit, gate = p[..., :n], p[..., n:n + 1], p[..., n + 1:2 * n + 1]
    b = torch.complex(p[..., 2 * n + 1:3 * n + 1], p[..., 3 * n + 1:4 * n + 1])
    c = torch.complex(p[..., 4 * n + 1:5 * n + 1], p[..., 5 * n + 1:])
    dt = F.softplus(dt_logit)
    dt = dt.clamp(min=0.1) if mode == "min" else dt.clamp(max=0.1)
    phi = dt * (delta + m.omega) / 2
    a = torch.sigmoid(gate) * (1 + 1j * phi) / (1 - 1j * phi)
    state = torch.zeros(2, h, n, dtype=torch.complex128)
    if prior != "zero":
        p0 = m.prior.to(torch.complex128)  # complex parameters stay complex64 under .double()
        norm = p0.abs() if prior == "unit_modulus" else p0.abs().square().sum(-1, keepdim=True).sqrt()
        state = state + p0 / norm
    outs = []
    for i in range(t):
        state = a[:, i] * state + b[:, i]
        o = c[:, i] * state
        outs.append(torch.cat([o.real, o.imag], -1) if readout == "complex" else o.real)
    expected = torch.stack(outs, 1).reshape(2, t, -1) @ m.back.weight.T + m.back.bias
    torch.testing.assert_close(m(u), expected, atol=1e-10, rtol=1e-10)


def _direct_born(m, u, eps):
    """Eq. 5 written out: |<q~_i|k~_j>|^2 / (D tau_i), causal running-sum normalisation, bilinear read-out."""
    bsz, t, _ = u.shape
    h, d = m.num_heads, m.head_dim
    p = (u @ m.proj.weight.T + m.proj.bias).view(bsz, t, h, 6 * d + 1)
    q = torch.complex(p[..., :d], p[..., d:2 * d])
    k = torch.complex(p[..., 2 * d:3 * d], p[..., 3 * d:4 * d])
    v = torch.complex(p[..., 4 * d:5 * d], p[..., 5 * d:6 * d])
    tau = F.softplus(p[..., 6 * d]) + 1e-4
    pos = torch.arange(t, dtype=torch.float64)[:, None, None]
    freqs = 1e4 ** (-torch.arange(d, dtype=torch.float64) / d)
    rot = torch.polar(torch.ones(t, 1, d, dtype=torch.float64), pos * freqs)
    qr, kr = q * rot, k * rot
    out = torch.zeros_like(q)
    for i in range(t):
        s = (qr[:, i, None].conj() * kr[:, : i + 1]).sum(-1).abs().square() / (d * tau[:, i, None])  # [B, j, H]
        psi = (s[..., None] * v[:, : i + 1]).sum(1) / (s.sum(1)[..., None] + eps)
        out[:, i] = m.measure * q[:, i].conj() * psi
    feats = torch.cat([out.real, out.imag], -1).reshape(bsz, t, -1)
    return feats @ m.back.weight.T + m.back.bias


@pytest.mark.parametrize("mode", ["linear", "quadratic"])
@pytest.mark.parametrize("eps", [0.0, 0.3])
def test_born_score_attention_equals_equation_5(mode, eps):
    m = BornScoreAttention(6, 2, 3, mode=mode, chunk=4, eps=eps).double()
    _randomise(m, std=0.4, seed=3)
    u = torch.randn(2, 9, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(4))
    torch.testing.assert_close(m(u), _direct_born(m, u, eps), atol=1e-10, rtol=1e-10)


def test_temperature_cancels_without_eps_and_acts_with_it():
    u = torch.randn(1, 7, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(5))
    for eps, same in ((0.0, True), (0.5, False)):
        m = BornScoreAttention(6, 2, 3, mode="quadratic", eps=eps).double()
        _randomise(m, std=0.4, seed=6)
        before = m(u)
        with torch.no_grad():
            m.proj.bias.view(2, 19)[:, 18] += 3.0  # every temperature logit
        assert torch.allclose(before, m(u), atol=1e-12) == same


def test_selective_scan_equals_the_mamba_recurrence():
    d, n, r, t = 5, 3, 2, 70  # 70 steps: three chunks of the real scan (32), the last one padded
    m = SelectiveScan(d, n, r).double()
    u = torch.randn(2, t, d, dtype=torch.float64, generator=torch.Generator().manual_seed(7))
    dbc = u @ m.x_proj.weight.T
    dt = F.softplus(dbc[..., :r] @ m.dt_proj.weight.T + m.dt_proj.bias)
    bm, cm_ = dbc[..., r:r + n], dbc[..., r + n:]
    a_mat = -torch.exp(m.A_log)
    state = torch.zeros(2, d, n, dtype=torch.float64)
    ys = []
    for i in range(t):
        state = torch.exp(dt[:, i, :, None] * a_mat) * state + dt[:, i, :, None] * bm[:, i, None, :] * u[:, i, :, None]
        ys.append((state * cm_[:, i, None, :]).sum(-1) + m.D * u[:, i])
    torch.testing.assert_close(m(u), torch.stack(ys, 1), atol=1e-12, rtol=1e-12)


def test_real_rope_is_the_complex_rotary_on_feature_pairs():
    x = torch.randn(2, 3, 7, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(8))
    z = ops.rotary(torch.complex(x[..., :4], x[..., 4:]), base=100.0)
    torch.testing.assert_close(rope_real(x, 100.0), torch.cat([z.real, z.imag], -1), atol=1e-12, rtol=0)


# ---------------------------------------------------------------- initialisation (paper section 5.6)

def test_hmamba_initialisation():
    m = PhaseStateRecurrence(8, 3, 6)
    omega = base_frequencies(6, 0.01, 1.0)
    assert omega.tolist()[:2] == pytest.approx([0.01, -0.01 * 100 ** 0.2])
    assert (omega[::2] > 0).all() and (omega[1::2] < 0).all()
    assert omega.abs().max() / omega.abs().min() == pytest.approx(100.0, rel=1e-5)  # two decades
    torch.testing.assert_close(m.omega, omega.expand(3, 6))
    alpha = torch.sigmoid(m.proj.bias.view(3, 37)[:, 7:13])
    torch.testing.assert_close(alpha[:, 0], torch.full((3,), 0.999), atol=1e-6, rtol=0)
    torch.testing.assert_close(alpha[:, -1], torch.full((3,), 0.9), atol=1e-6, rtol=0)
    assert (alpha.diff(dim=-1) < 0).all()
    assert m.proj.bias.view(3, 37)[:, :7].abs().max() == 0 and m.proj.bias.view(3, 37)[:, 13:].abs().max() == 0
    torch.testing.assert_close(m.initial_state(4, torch.complex64).abs(), torch.ones(4, 3, 6))
    assert m.prior.angle().std() > 0.5  # random phases, not on the real axis
    # the transition of zero modulation at the floor dt = 0.1 turns by 2 arctan(0.05 omega) with modulus alpha
    a = m.transition(torch.zeros(1, 1, 3, 6), torch.full((1, 1, 3, 1), -5.0), torch.zeros(1, 1, 3, 6))
    torch.testing.assert_close(a.angle()[0, 0], 2 * torch.atan(0.05 * m.omega), atol=1e-6, rtol=0)
    torch.testing.assert_close(a.abs(), torch.full_like(a.abs(), 0.5), atol=1e-6, rtol=0)


def test_mamba_and_transformer_initialisation():
    torch.manual_seed(0)
    s = SelectiveScan(64, 4, 3)
    dt = F.softplus(s.dt_proj.bias)
    assert 0.001 <= dt.min() and dt.max() <= 0.1 and dt.max() / dt.min() > 10
    torch.testing.assert_close(s.A_log[5], torch.log(torch.arange(1.0, 5.0)))
    model = cm.shortcut.Transformer(TransformerConfig(**SMALL["transformer"]))
    assert model.blocks[0].qkv.weight.std().item() == pytest.approx(0.02, rel=0.2)
    assert model.embed.weight.data_ptr() == dict(model.named_parameters())["embed.weight"].data_ptr()


# ---------------------------------------------------------------- whole models

@pytest.mark.parametrize("name", sorted(SMALL))
def test_logits_shape_loss_and_tied_head(models, name):
    torch.manual_seed(0)
    m = cm.create(name, vocab_size=11, context=12, **SMALL[name])
    w = _batch()
    out = m(w[:, :-1], w[:, 1:])
    assert out.logits.shape == (3, 12, 11) and out.amplitudes is None
    assert abs(out.loss.item() - math.log(11)) < 0.1  # tiny tied logits: close to uniform
    assert "head.weight" not in m.state_dict() and m.state_dict()["embed.weight"].shape == (11, 16)


@pytest.mark.parametrize("name", sorted(SMALL))
def test_default_models_start_uniform_over_bytes(models, name):
    # a tied head with a 0.02 embedding would make the current byte the favourite (H-Transformer: ~7.5 nats)
    torch.manual_seed(0)
    m = cm.create(name)
    w = _batch(256, t=24, b=1, seed=2)
    with torch.no_grad():
        out = m(w[:, :-1], w[:, 1:])
    assert out.logits.shape == (1, 24, 256)
    assert abs(out.loss.item() - math.log(256)) < 0.05


@pytest.mark.parametrize("name", sorted(SMALL))
def test_loss_falls_on_a_tiny_batch(models, name):
    torch.manual_seed(0)
    m = cm.create(name, vocab_size=11, context=12, **SMALL[name])
    w = _batch(seed=1)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-2)
    first = None
    for _ in range(50):
        loss = m(w[:, :-1], w[:, 1:]).loss
        first = loss.item() if first is None else first
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.item() < 0.4 * first


@pytest.mark.parametrize("name", sorted(SMALL))
def test_causal(models, name):
    torch.manual_seed(0)
    m = cm.create(name, vocab_size=11, context=12, **SMALL[name]).eval()
    _randomise(m, std=0.3, seed=9)
    x = _batch()[:, :-1]
    y = x.clone()
    y[:, 6] = (y[:, 6] + 1) % 11
    a, b = m(x).log_probs(), m(y).log_probs()
    torch.testing.assert_close(a[:, :6], b[:, :6], atol=1e-5, rtol=1e-5)
    assert (a[:, 6:] - b[:, 6:]).abs().amax(dim=(0, 2)).min() > 1e-6  # every later position feels the change


@pytest.mark.parametrize("name", sorted(SMALL))
def test_save_load_round_trip_and_generate(models, name, tmp_path):
    torch.manual_seed(0)
    m = cm.create(name, vocab_size=11, context=12, **SMALL[name]).eval()
    _randomise(m, std=0.2, seed=10)
    cm.save(m, tmp_path / "ck")
    back = cm.load(tmp_path / "ck").eval()
    assert cm.model_name(back) == name and back.config == m.config
    x = _batch()[:, :-1]
    torch.testing.assert_close(back(x).logits, m(x).logits, atol=0, rtol=0)
    g1, g2 = torch.Generator().manual_seed(1), torch.Generator().manual_seed(1)
    s1 = m.generate(x[:, :3], 14, generator=g1)  # runs past the context: windowed
    assert s1.shape == (3, 17) and torch.equal(s1[:, :3], x[:, :3]) and int(s1.max()) < 11
    assert torch.equal(s1, back.generate(x[:, :3], 14, generator=g2))


def test_hmamba_chunk_and_htransformer_mode_are_evaluation_details(models):
    torch.manual_seed(0)
    x = _batch(t=11)[:, :-1]
    for name, key, values in (("h-mamba", "chunk", (2, 3, 64)), ("h-transformer", "attn_mode", ("quadratic",))):
        ref = cm.create(name, vocab_size=11, context=12, **SMALL[name]).double()
        outs = []
        for v in values:
            other = cm.create(name, vocab_size=11, context=12, **{**SMALL[name], key: v}).double()
            other.load_state_dict(ref.state_dict())
            outs.append(other(x).logits)
        for o in outs:
            torch.testing.assert_close(o, ref(x).logits, atol=1e-10, rtol=1e-10)


@pytest.mark.parametrize("name,overrides,expected", [
    ("h-mamba", {}, "complex_scan"),
    ("h-transformer", {}, "born_attention_linear"),
    ("h-transformer", {"attn_mode": "quadratic"}, "born_attention"),
])
def test_complex_substrates_run_through_the_op_dispatcher(models, monkeypatch, name, overrides, expected):
    # the dispatcher is what hands CUDA inputs to the Triton backends of cnet-kernels
    registry = registries().ops
    called = []
    original = type(registry).select

    def spy(self, op, args, kwargs):
        called.append(op)
        return original(self, op, args, kwargs)

    monkeypatch.setattr(type(registry), "select", spy)
    m = cm.create(name, vocab_size=11, context=12, **{**SMALL[name], **overrides})
    m(_batch()[:, :-1]).logits.sum().backward()
    assert expected in called


# ---------------------------------------------------------------- errors

@pytest.mark.parametrize("cls,kwargs,match", [
    (TransformerConfig, dict(d_model=30, num_heads=4), "must divide d_model"),
    (TransformerConfig, dict(d_model=24, num_heads=8), "must be even"),
    (TransformerConfig, dict(ffn_dim=0), "ffn_dim"),
    (HMambaConfig, dict(dt_clamp_mode="floor"), "dt_clamp_mode"),
    (HMambaConfig, dict(omega_min=2.0, omega_max=1.0), "omega_min <= omega_max"),
    (HMambaConfig, dict(gate_init_max=1.0), "gate_init_max < 1"),
    (HMambaConfig, dict(prior="real"), "prior"),
    (HMambaConfig, dict(num_heads=0), "num_heads"),
    (HMambaConfig, dict(vocab_size=1), "vocab_size"),
    (HMambaConfig, dict(dt_clamp=0.0), "dt_clamp"),
    (MambaConfig, dict(ffn_dim=-1), "ffn_dim"),
    (MambaConfig, dict(dt_init_min=0.2), "dt_init_min <= dt_init_max"),
    (MambaConfig, dict(ffn_placement="serial"), "ffn_placement"),
    (HTransformerConfig, dict(attn_mode="flash"), "attn_mode"),
    (HTransformerConfig, dict(attn_eps=-1.0), "attn_eps"),
    (HTransformerConfig, dict(head_dim=2.5), "head_dim"),
])
def test_bad_configs(cls, kwargs, match):
    with pytest.raises(ValueError, match=match):
        cls(**kwargs)


def test_bad_inputs_and_overrides(models):
    m = cm.create("h-mamba", vocab_size=11, context=12, **SMALL["h-mamba"])
    with pytest.raises(ValueError, match="exceeds the model's context"):
        m(torch.zeros(1, 13, dtype=torch.long))
    with pytest.raises(ValueError, match="outside"):
        m(torch.full((1, 4), 11))
    with pytest.raises(TypeError, match="integer"):
        m(torch.zeros(1, 4))
    with pytest.raises(ValueError, match="shape of 'ids'"):
        m(torch.zeros(1, 4, dtype=torch.long), torch.zeros(1, 3, dtype=torch.long))
    with pytest.raises(ValueError, match="no config field"):
        cm.create("transformer", heads=4)
    with pytest.raises(ValueError, match="must divide"):
        cm.create("transformer", d_model=30, num_heads=4)
