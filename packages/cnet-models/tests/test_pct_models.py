"""The ``pct`` family: parameter budgets, initial operating points, score spread, every cell learns, bad inputs."""

import math

import pytest
import torch

import cnet.data
from cnet.models.base import count_parameters
from cnet.models.pct import CELLS, COMPLEX_CELLS, PCT, REAL_CELLS, PCRPathX, PCRPathXConfig, PCTConfig, register
from cnet.models.pct import score_spread as spread
from cnet.models.pct.cells import ComplexAttention

pytestmark = pytest.mark.usefixtures("one_thread")


def _tiny(cell, **kw):
    base = dict(cell=cell, context=24, embed_dim=16 if cell in COMPLEX_CELLS else 24, num_layers=1, num_heads=2)
    base.update(kw)
    return PCT(PCTConfig(**base))


@pytest.fixture(scope="module")
def listops_tiny():
    rows = cnet.data.load("listops", "train", max_depth=2, max_args=3, length=24, num_examples=16, seed=0)
    return torch.tensor(rows["input_ids"]), torch.tensor(rows["target"])


@pytest.fixture(scope="module")
def listops_embedded():
    rows = cnet.data.load("listops", "validation", length=256, num_examples=2, seed=0)
    return torch.tensor(rows["input_ids"])


def test_register_adds_both_models():
    added = {}

    class Registry:
        def add(self, name, obj, *, config, description):
            added[name] = (obj, config, description)

    register(Registry())
    assert added["pct"][:2] == (PCT, PCTConfig) and added["pcr-pathx"][:2] == (PCRPathX, PCRPathXConfig)


def test_paper_parameter_budgets():
    # PCT paper D.3, mid-scale Copy (16 ids, 16 classes per position): dim 256, depth 6, 8 heads of 32
    mid = dict(embed_dim=256, num_layers=6, num_heads=8, vocab_size=16, num_classes=16, task="tokens")
    assert count_parameters(PCT(PCTConfig(cell="complex_sigmoid", **mid)))["real_scalars"] == 9_475_612
    assert count_parameters(PCT(PCTConfig(cell="real_softmax", **mid)))["real_scalars"] == 4_737_808
    # small-scale suite: complex width 128 against real width 184 (head dim 32 against 46)
    small_c, small_r = PCT(PCTConfig()), PCT(PCTConfig(cell="real_softmax"))
    assert (small_c.config.embed_dim, small_r.config.embed_dim) == (128, 184)
    c, r = count_parameters(small_c), count_parameters(small_r)
    assert c["complex_parameters"] == pytest.approx(0.8e6, rel=0.02)  # "0.8M parameters (dim 128, depth 4)"
    assert abs(c["real_scalars"] - r["real_scalars"]) / r["real_scalars"] < 0.04
    assert r["complex_share"] == 0.0 and c["complex_share"] > 0.99


def test_gates_at_their_initial_operating_points():
    m = PCT(PCTConfig(context=1024))
    attn = m.blocks[0].attn
    assert attn.gate_bias.item() == pytest.approx(-math.log(1024))          # b = -ln N
    assert m.blocks[0].act.bias.item() == 0.0 and m.blocks[0].act.power == 2  # modReLU^2, bias 0
    assert PCT(PCTConfig(context=1024, gate_bias=0.0)).blocks[0].attn.gate_bias.item() == 0.0
    screen = PCT(PCTConfig(cell="complex_screen")).blocks[0].attn
    torch.testing.assert_close(screen.s_r.detach(), torch.full((4,), -3.0))
    assert screen.gate_act.bias.item() == 0.0
    assert PCT(PCTConfig(cell="complex_holographic_matched")).blocks[0].attn.alpha.item() == 1.0
    assert PCT(PCTConfig(cell="real_sigmoid", context=256)).blocks[0].attn.gate_bias.item() == pytest.approx(
        -math.log(256))
    # the sigmoid weights start inside [sigmoid(-sqrt(D) - ln N), sigmoid(sqrt(D) - ln N)], around 1/(N+1)
    x = torch.randint(0, 16, (2, 64), generator=torch.Generator().manual_seed(0))
    m = PCT(PCTConfig(context=64, num_layers=1))
    s = []
    m.blocks[0].attn.recorded = s
    m(x)
    a = torch.sigmoid(s[0][0] - math.log(64))
    lo, hi = 1 / (1 + math.exp(math.sqrt(32) + math.log(64))), 1 / (1 + math.exp(-math.sqrt(32) + math.log(64)))
    assert lo <= a.min() and a.max() <= hi
    assert a.mean().item() == pytest.approx(1 / 65, rel=0.3)


def test_score_spread_unnormalised_is_flat_normalised_is_order_one(listops_embedded):
    x = listops_embedded
    assert PCTConfig().norm_gain == "inv_sqrt_dim"  # the scale of the paper's measurements (model.py docstring)
    torch.manual_seed(0)
    flat = spread(PCT(PCTConfig(cell="complex_softmax", context=256)), x)
    assert 1e-5 < flat < 1e-3                      # paper: 6.5e-5
    for cell in ("complex_sigmoid", "complex_softmax_l2", "complex_holographic_matched"):
        assert 0.3 < spread(PCT(PCTConfig(cell=cell, context=256)), x) < 1.5, cell   # paper: 0.61
    screen = spread(PCT(PCTConfig(cell="complex_screen", context=256)), x)     # plain cosine, no sqrt(D)
    assert 0.05 < screen < 0.5 and screen > 1000 * flat
    assert spread(PCT(PCTConfig(cell="real_softmax", context=256)), x) < 1e-3
    # the isolation cell: the same unnormalised score at the PCT scale sqrt(D) instead of 1 / sqrt(2 D), so its
    # first layer's spread is sqrt(32) sqrt(64) times the softmax cell's at the same weights, still about 1e-3
    first = {}
    for cell in ("complex_softmax", "complex_sigmoid_nol2"):
        torch.manual_seed(0)
        first[cell] = spread(PCT(PCTConfig(cell=cell, context=256)), x, per_layer=True)[0]
    assert first["complex_sigmoid_nol2"] / first["complex_softmax"] == pytest.approx(math.sqrt(32 * 64), rel=1e-4)
    assert first["complex_sigmoid_nol2"] < 1e-2


def test_row_spread_by_hand():
    from cnet.models.pct.diagnostics import _row_std

    s = torch.tensor([[[[1.0, 2.0, 3.0], [4.0, 4.0, 4.0], [0.0, 2.0, 4.0]]]])
    pop = [math.sqrt(2 / 3), 0.0, math.sqrt(8 / 3)]
    assert _row_std(s, causal=False).item() == pytest.approx(sum(pop) / 3)
    # causal: row 0 sees one key (skipped), row 1 sees (4, 4), row 2 sees (0, 2, 4)
    assert _row_std(s, causal=True).item() == pytest.approx((0.0 + math.sqrt(8 / 3)) / 2)


def test_score_spread_of_the_first_layer_scales_with_the_norm_gain(listops_embedded):
    # the first layer's input is Norm(embedding): its vectors have norm dim^-1/2 or dim^+1/2, so the bilinear
    # unnormalised score moves by dim^2 = 16384 between the two gains (the cosine score does not move)
    x = listops_embedded
    layers = {}
    for gain in ("inv_sqrt_dim", "sqrt_dim"):
        for cell in ("complex_softmax", "complex_sigmoid"):
            torch.manual_seed(0)
            m = PCT(PCTConfig(cell=cell, context=256, num_layers=1, norm_gain=gain))
            layers[gain, cell] = spread(m, x, per_layer=True)[0]
    assert layers["sqrt_dim", "complex_softmax"] / layers["inv_sqrt_dim", "complex_softmax"] == pytest.approx(
        128**2, rel=1e-3)
    assert layers["sqrt_dim", "complex_sigmoid"] == pytest.approx(layers["inv_sqrt_dim", "complex_sigmoid"],
                                                                  rel=1e-4)


@pytest.mark.parametrize("cell", CELLS)
def test_every_cell_runs_and_its_loss_falls(cell, listops_tiny):
    ids, target = listops_tiny
    torch.manual_seed(0)
    m = _tiny(cell)
    assert m.blocks[0].attn.q_proj.weight.is_complex() == (cell in COMPLEX_CELLS)
    feats = m.features(ids[:2])
    assert feats.dtype == (torch.complex64 if cell in COMPLEX_CELLS else torch.float32)
    opt = torch.optim.AdamW(m.parameters(), lr=3e-2)
    first = None
    for step in range(50):
        out = m(ids, target)
        assert out.logits.shape == (16, 10) and torch.isfinite(out.loss)
        first = out.loss.item() if first is None else first
        opt.zero_grad()
        out.loss.backward()
        if step == 0:
            assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in m.parameters())
        opt.step()
    assert out.loss.item() < 0.8 * first


def test_real_cells_are_real_networks():
    for cell in REAL_CELLS:
        m = PCT(PCTConfig(cell=cell, num_layers=1))
        assert not any(p.is_complex() for p in m.parameters()) and m.config.embed_dim == 184


def test_flat_gates_at_minus_log_n_pass_no_gradient_to_the_match():
    # PCT paper section 2.4: the scaled cosine lies in [-sqrt(D), sqrt(D)] = [-2, 2] (D = 4), below ln 24 = 3.18,
    # so with b = -ln N the ReLU-type gates are identically zero: q, k and b get exactly zero gradient; with b = 0
    # they do get gradient. The sigmoid passes gradient at either bias.
    ids = torch.randint(0, 16, (3, 24), generator=torch.Generator().manual_seed(0))
    target = torch.tensor([1, 2, 3])
    for cell in ("complex_relu", "complex_clamped_relu", "complex_square", "complex_cubic", "complex_sigmoid"):
        for bias in (None, 0.0):
            torch.manual_seed(0)
            m = _tiny(cell, embed_dim=8, gate_bias=bias)
            m(ids, target).loss.backward()
            attn = m.blocks[0].attn
            g = max(attn.q_proj.weight.grad.abs().max(), attn.k_proj.weight.grad.abs().max(),
                    attn.gate_bias.grad.abs())
            dead = bias is None and cell != "complex_sigmoid"
            assert (g == 0) == dead, (cell, bias)


def test_per_position_head_on_copy_memory():
    rows = cnet.data.load("copy_memory", "train", delay=5, num_examples=8, seed=0)
    ids, labels = torch.tensor(rows["input_ids"]), torch.tensor(rows["labels"])
    torch.manual_seed(0)
    m = PCT(PCTConfig(cell="complex_softmax_l2", task="tokens", num_classes=16, context=25, embed_dim=16,
                      num_layers=1, num_heads=2))
    out = m(ids, labels)
    assert out.logits.shape == (8, 25, 16)
    manual = torch.nn.functional.cross_entropy(out.logits[:, -10:].reshape(-1, 16), labels[:, -10:].reshape(-1))
    torch.testing.assert_close(out.loss, manual)  # the -100 positions are not scored


@pytest.mark.parametrize("cell", ["complex_sigmoid", "complex_screen", "complex_holographic_matched",
                                  "real_softmax", "real_screen"])
def test_causal_option(cell):
    torch.manual_seed(0)
    m = _tiny(cell, task="tokens", causal=True, num_classes=16).eval()
    x = torch.randint(0, 16, (2, 12), generator=torch.Generator().manual_seed(1))
    y = x.clone()
    y[:, 7] = (y[:, 7] + 1) % 16
    a, b = m(x).logits, m(y).logits
    torch.testing.assert_close(a[:, :7], b[:, :7], atol=1e-5, rtol=1e-5)
    assert (a[:, 7:] - b[:, 7:]).abs().max() > 1e-6


def test_complex_value_input():
    z = torch.randn(3, 20, dtype=torch.complex64)
    for cell in ("complex_screen", "real_sigmoid"):
        m = _tiny(cell, input_kind="complex")
        out = m(z, torch.tensor([0, 1, 2]))
        assert out.logits.shape == (3, 10) and torch.isfinite(out.loss)
    with pytest.raises(TypeError, match="complex values"):
        _tiny("complex_sigmoid", input_kind="complex")(z.real)


def test_bad_inputs():
    with pytest.raises(ValueError, match="unknown cell 'complex_tanh'; choose one of complex_sigmoid, "
                                         "complex_softmax_l2, complex_screen"):
        PCTConfig(cell="complex_tanh")
    with pytest.raises(ValueError, match="task"):
        PCTConfig(task="lm")
    with pytest.raises(ValueError, match="must divide"):
        PCTConfig(embed_dim=130)
    with pytest.raises(ValueError, match="even head dim"):
        PCTConfig(cell="real_softmax", embed_dim=180, num_heads=4)
    m = _tiny("complex_sigmoid")
    with pytest.raises(ValueError, match="sequence length 25 exceeds the model's context 24"):
        m(torch.zeros(1, 25, dtype=torch.long))
    with pytest.raises(TypeError, match="integer tensor"):
        m(torch.zeros(1, 5))
    with pytest.raises(ValueError, match="outside"):
        m(torch.full((1, 5), 16))
    with pytest.raises(ValueError, match="targets"):
        m(torch.zeros(2, 5, dtype=torch.long), torch.zeros(2, 5, dtype=torch.long))
    with pytest.raises(ValueError, match="labels outside"):
        m(torch.zeros(2, 5, dtype=torch.long), torch.tensor([0, 10]))
    with pytest.raises(ValueError, match="next-token model"):
        m.generate(torch.zeros(1, 3, dtype=torch.long), 2)
    with pytest.raises(ValueError, match="unknown complex cell"):
        ComplexAttention(8, 2, "real_softmax", context=8)


def test_generate_from_a_causal_next_token_model():
    torch.manual_seed(0)
    m = _tiny("complex_sigmoid", task="tokens", causal=True, num_classes=16, vocab_size=16)
    out = m.generate(torch.tensor([[1, 2, 3]]), 4, temperature=0)
    assert out.shape == (1, 7) and torch.equal(out[:, :3], torch.tensor([[1, 2, 3]]))
