"""Generic tests over every registered model: shapes, finite loss, learning, save/load, generation."""

import json
import math

import pytest
import torch

import cnet.models as cm
from cnet.models.base import count_parameters

SMALL = {
    "born-lm": dict(embed_dim=16, num_layers=2, context=12, num_heads=2),
    "complex-fnet": dict(embed_dim=8, num_layers=2, context=12),
    "real-fnet": dict(embed_dim=8, num_layers=2, context=12, ffn_dim=32),
    "h-mamba": dict(d_model=16, d_inner=32, num_layers=2, num_heads=2, d_state=4, chunk=4, context=12),
    "mamba": dict(d_model=16, d_inner=32, num_layers=2, d_state=4, ffn_dim=16, context=12),
    "h-transformer": dict(d_model=16, d_inner=32, num_layers=2, num_heads=2, head_dim=4, attn_chunk=4, context=12),
    "transformer": dict(d_model=16, num_layers=2, num_heads=2, ffn_dim=32, context=12),
    "pct": dict(task="tokens", causal=True, num_classes=11, context=12, embed_dim=16, num_layers=2, num_heads=2),
}
NOT_LANGUAGE_MODELS = {"pcr-pathx"}   # classifiers, tested in their own files


def test_every_registered_model_has_small_config():
    assert set(cm.list_models()) >= {"born-lm", "complex-fnet", "real-fnet"}
    assert set(SMALL) | NOT_LANGUAGE_MODELS >= set(cm.list_models()), "add a small config for each new model"


def _batch(vocab, t=12, b=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, vocab, (b, t + 1), generator=g)


@pytest.mark.parametrize("name", sorted(SMALL))
def test_shapes_and_finite_loss(name):
    torch.manual_seed(0)
    m = cm.create(name, vocab_size=11, **SMALL[name])
    w = _batch(11)
    out = m(w[:, :-1], w[:, 1:])
    head = out.amplitudes if out.amplitudes is not None else out.logits
    assert head.shape == (3, 12, 11)
    assert torch.isfinite(out.loss)
    # an untrained real model is close to uniform, loss ~ ln(V); a Born head with Gaussian amplitudes has
    # exponentially distributed |z_y|^2, which adds Euler's gamma = 0.577 nats on average
    expected = math.log(11) + (0.5772 if out.amplitudes is not None else 0.0)
    assert abs(out.loss.item() - expected) < 0.5
    lp = out.log_probs()
    torch.testing.assert_close(lp.exp().sum(-1), torch.ones(3, 12), atol=1e-5, rtol=0)


@pytest.mark.parametrize("name", sorted(SMALL))
def test_loss_falls_on_a_tiny_batch(name):
    torch.manual_seed(0)
    m = cm.create(name, vocab_size=11, **SMALL[name])
    w = _batch(11, seed=1)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-2)
    first = None
    for _ in range(60):
        loss = m(w[:, :-1], w[:, 1:]).loss
        first = loss.item() if first is None else first
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.item() < 0.5 * first


@pytest.mark.parametrize("name", sorted(SMALL))
def test_causal(name):
    torch.manual_seed(0)
    m = cm.create(name, vocab_size=11, **SMALL[name]).eval()
    x = _batch(11)[:, :-1]
    y = x.clone()
    y[:, 7] = (y[:, 7] + 1) % 11
    a, b = m(x).log_probs(), m(y).log_probs()
    torch.testing.assert_close(a[:, :7], b[:, :7], atol=1e-5, rtol=1e-5)
    assert (a[:, 7:] - b[:, 7:]).abs().max() > 1e-6


@pytest.mark.parametrize("name", sorted(SMALL))
def test_save_load_round_trip(name, tmp_path):
    torch.manual_seed(0)
    m = cm.create(name, vocab_size=11, **SMALL[name]).eval()
    cm.save(m, tmp_path / "ck", sidecars={"vocab.json": {"chars": list("abcdefghijk")}})
    cfg = json.loads((tmp_path / "ck" / "config.json").read_text())
    assert cfg["model"] == name and cfg["config"]["vocab_size"] == 11
    m2 = cm.load(tmp_path / "ck").eval()
    x = _batch(11)[:, :-1]
    assert torch.equal(m(x).log_probs(), m2(x).log_probs())
    for (k, p), (k2, p2) in zip(m.state_dict().items(), m2.state_dict().items(), strict=False):
        assert k == k2 and p.dtype == p2.dtype and torch.equal(p, p2)


@pytest.mark.parametrize("name", sorted(SMALL))
def test_generate(name):
    torch.manual_seed(0)
    m = cm.create(name, vocab_size=11, **SMALL[name])
    prompt = torch.tensor([[1, 2, 3]])
    out = m.generate(prompt, 20, temperature=0.8, generator=torch.Generator().manual_seed(0))
    assert out.shape == (1, 23) and torch.equal(out[:, :3], prompt)
    assert int(out.min()) >= 0 and int(out.max()) < 11
    greedy1 = m.generate(prompt, 5, temperature=0)
    greedy2 = m.generate(prompt, 5, temperature=0)
    assert torch.equal(greedy1, greedy2)


@pytest.mark.parametrize("name", sorted(SMALL))
def test_prefix_scores_as_the_start_of_a_full_window(name):
    # generation and scoring feed windows shorter than the context; they must agree with the full window
    torch.manual_seed(0)
    m = cm.create(name, vocab_size=11, **SMALL[name]).eval()
    x = _batch(11)[:, :-1]
    torch.testing.assert_close(m(x[:, :5]).log_probs(), m(x).log_probs()[:, :5], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("embed_dim,num_layers", [(16, 1), (32, 2), (64, 3), (128, 6)])
def test_real_fnet_matches_complex_fnet_at_any_size(embed_dim, num_layers):
    c = count_parameters(cm.create("complex-fnet", embed_dim=embed_dim, num_layers=num_layers))
    r = count_parameters(cm.create("real-fnet", embed_dim=embed_dim, num_layers=num_layers))
    assert abs(c["real_scalars"] - r["real_scalars"]) / c["real_scalars"] < 0.01


def test_config_values_are_coerced_or_refused():
    m = cm.create("born-lm", vocab_size=11, embed_dim="16", rope="False", learned_positions="true", floor="0")
    assert m.config.embed_dim == 16 and m.config.rope is False and m.config.learned_positions is True
    assert m.config.floor == 0.0
    with pytest.raises(ValueError, match="field 'embed_dim' expects int, got 'big'"):
        cm.create("born-lm", embed_dim="big")
    with pytest.raises(ValueError, match="field 'rope' expects bool"):
        cm.create("born-lm", rope="maybe")
    for bad in (dict(embed_dim=0), dict(context=0), dict(init_std=0.0), dict(floor=1.0)):
        with pytest.raises(ValueError):
            cm.create("born-lm", **bad)
    with pytest.raises(ValueError, match="embed_dim"):
        cm.create("real-fnet", embed_dim=0)
    with pytest.raises(ValueError, match="context"):
        cm.create("complex-fnet", context=0)


def test_load_refuses_a_config_that_does_not_fit_the_weights(tmp_path):
    m = cm.create("born-lm", vocab_size=11, **SMALL["born-lm"])
    cm.save(m, tmp_path / "ck")
    cfg = json.loads((tmp_path / "ck" / "config.json").read_text())
    cfg["config"]["embed_dim"] = 24
    (tmp_path / "ck" / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match="corrupt checkpoint .*needs"):
        cm.load(tmp_path / "ck")
    cfg["config"]["embed_dim"] = "sixteen"
    (tmp_path / "ck" / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match="corrupt checkpoint .*embed_dim"):
        cm.load(tmp_path / "ck")


def test_generate_rejects_bad_arguments():
    m = cm.create("born-lm", vocab_size=11, **SMALL["born-lm"])
    with pytest.raises(ValueError, match="temperature"):
        m.generate(torch.tensor([[1]]), 3, temperature=float("nan"))
    with pytest.raises(TypeError, match="i\\[B, T0\\]"):
        m.generate(torch.tensor([1, 2]), 3)
    out = m.generate(torch.tensor([[1, 2]], dtype=torch.int8), 2, temperature=0)
    assert out.shape == (1, 4)


def test_fnet_twins_parameter_matched_within_one_percent():
    c = count_parameters(cm.create("complex-fnet"))
    r = count_parameters(cm.create("real-fnet"))
    assert abs(c["real_scalars"] - r["real_scalars"]) / c["real_scalars"] < 0.01
    assert c["complex_share"] > 0.99 and r["complex_share"] == 0.0
    # the paper's complex model has 1.62M real degrees of freedom
    assert 1.55e6 < c["real_scalars"] < 1.70e6


def test_born_lm_paper_configuration():
    m = cm.create("born-lm")
    assert (m.config.embed_dim, m.config.num_layers, m.config.context) == (160, 8, 64)
    assert m.config.rope and m.config.floor == 1e-3
    # ~2.1M complex parameters in the paper; E=160 with an E/2 attention width gives this count
    complex_params = sum(p.numel() for p in m.parameters() if p.is_complex())
    assert 1.8e6 < complex_params < 2.4e6


def test_bad_inputs():
    m = cm.create("born-lm", vocab_size=11, **SMALL["born-lm"])
    with pytest.raises(KeyError, match="unknown model 'nope'.*born-lm"):
        cm.create("nope")
    with pytest.raises(ValueError, match="no config field"):
        cm.create("born-lm", embed_dimension=3)
    with pytest.raises(ValueError, match="exceeds the model's context"):
        m(torch.zeros(1, 13, dtype=torch.long))
    with pytest.raises(TypeError, match="integer tensor"):
        m(torch.zeros(1, 5))
    with pytest.raises(ValueError, match="outside"):
        m(torch.full((1, 5), 11))
    with pytest.raises(ValueError, match="must divide"):
        cm.create("born-lm", embed_dim=16, num_heads=3)


def test_born_lm_linear_mode_is_the_same_model():
    torch.manual_seed(0)
    cfg = dict(vocab_size=11, embed_dim=16, num_layers=2, context=24, num_heads=2, attn_decay=0.9)
    quad = cm.create("born-lm", **cfg).eval()
    lin = cm.create("born-lm", attn_mode="linear", attn_chunk=8, **cfg).eval()
    lin.load_state_dict(quad.state_dict())
    x = _batch(11, t=24)[:, :-1]
    torch.testing.assert_close(lin(x).log_probs(), quad(x).log_probs(), atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(lin(x[:, :5]).log_probs(), quad(x[:, :5]).log_probs(), atol=1e-4, rtol=1e-4)
    assert torch.equal(lin.generate(x[:, :3], 6, temperature=0), quad.generate(x[:, :3], 6, temperature=0))
    with pytest.raises(ValueError, match="not a multiple of attn_chunk"):
        cm.create("born-lm", context=24, attn_mode="linear", attn_chunk=7)


def test_training_settings_are_checked():
    from cnet.models.train import TrainConfig

    for bad in (dict(grad_clip=-1.0), dict(max_minutes=-1.0), dict(lr=0.0), dict(steps=0)):
        with pytest.raises(ValueError):
            TrainConfig(**bad)
    assert cm.create("born-lm", vocab_size=11, embed_dim=16, num_layers=1, rope=0).config.rope is False
