"""Parameter counting and matching of the quantum-shortcut pairs (paper section 5.7: within 0.02%)."""

import dataclasses

import pytest

from cnet.models.shortcut import (
    HMambaConfig,
    HTransformerConfig,
    MambaConfig,
    TransformerConfig,
    match,
    pair_report,
    parameter_count,
)

SMALL_MAMBA = dict(d_model=32, d_inner=64, num_layers=2)
SMALL_ATTN = dict(d_model=24, num_layers=1)
PAPER = dict(d_model=1024, num_layers=24)


def _gap(a, b):
    return pair_report(a, b)["relative_gap"]


def test_counts_follow_the_closed_form():
    c = HMambaConfig(vocab_size=256, d_model=32, d_inner=64, num_layers=2, num_heads=4, d_state=8)
    d, di, h, n, k = 32, 64, 4, 8, 4
    per_block = (d * 2 * di + di * k + di + di * h * (6 * n + 1) + h * (6 * n + 1) + 2 * h * n * di + di
                 + di * d + d + h * n + 2 * h * n)  # ... + omega (real) + prior (complex: counted twice)
    count = parameter_count(c)
    assert count["real_scalars"] == 2 * per_block + 256 * d + d
    assert count["complex_parameters"] == 2 * h * n
    assert count["complex_share"] == pytest.approx(4 * h * n / count["real_scalars"])
    t = TransformerConfig(vocab_size=256, d_model=24, num_layers=3, num_heads=2, ffn_dim=50)
    assert parameter_count(t) == {"real_scalars": 3 * (4 * 24 * 24 + 2 * 24 * 50 + 2 * 24) + 256 * 24 + 24,
                                  "complex_parameters": 0, "complex_share": 0.0}


@pytest.mark.parametrize("cplx,real,width", [(HMambaConfig(), MambaConfig(), 1313),
                                             (HTransformerConfig(), TransformerConfig(), 2456)])
def test_default_pairs_are_matched(cplx, real, width):
    assert real.ffn_dim == width
    assert match(cplx, real) == real and match(real, cplx) == real  # either order; defaults already matched
    assert abs(_gap(cplx, real)) <= 2e-4
    assert 10e6 < parameter_count(cplx)["real_scalars"] < 20e6


@pytest.mark.parametrize("cplx,real,width", [
    (HMambaConfig(**SMALL_MAMBA, num_heads=4, d_state=8), MambaConfig(**SMALL_MAMBA, d_state=8), 157),
    (HTransformerConfig(**SMALL_ATTN, d_inner=48, num_heads=4, head_dim=8), TransformerConfig(**SMALL_ATTN,
                                                                                            num_heads=2), 295),
])
def test_small_pairs_are_matched(cplx, real, width):
    matched = match(cplx, real)
    assert matched.ffn_dim == width and matched == dataclasses.replace(real, ffn_dim=width)
    assert abs(_gap(cplx, matched)) <= 2e-4
    assert abs(_gap(cplx, dataclasses.replace(real, ffn_dim=width + 1))) > 2e-4  # one unit off is not


def test_paper_configuration_reproduces_the_published_widths():
    # 253M at d_model 1024, d_inner 2048, 24 layers; the paper's widths are 1258 (SwiGLU branch) and 3096 (FFN)
    hm, ht = HMambaConfig(**PAPER, d_inner=2048), HTransformerConfig(**PAPER, d_inner=2048)
    assert parameter_count(hm)["real_scalars"] == pytest.approx(253e6, rel=2e-3)
    mamba, transformer = match(hm, MambaConfig(**PAPER, d_inner=2048)), match(ht, TransformerConfig(**PAPER))
    assert abs(mamba.ffn_dim - 1258) <= 1 and abs(transformer.ffn_dim - 3096) <= 1
    assert abs(_gap(hm, mamba)) <= 2e-4 and abs(_gap(ht, transformer)) <= 2e-4
    assert parameter_count(hm)["complex_share"] < 1e-4  # only the priors are complex parameters


def test_unmatchable_pairs_raise():
    with pytest.raises(ValueError, match="cannot pair HMambaConfig with TransformerConfig"):
        match(HMambaConfig(), TransformerConfig())
    with pytest.raises(ValueError, match="cannot pair"):
        match(MambaConfig(), MambaConfig())
    with pytest.raises(ValueError, match=r"differs in d_inner \(768 vs 512\)"):
        match(HMambaConfig(), MambaConfig(d_inner=512))
    with pytest.raises(ValueError, match="more than the complex model"):
        match(HTransformerConfig(d_model=64, d_inner=2, num_heads=1, head_dim=1, num_layers=2),
              TransformerConfig(d_model=64, num_layers=2))
    with pytest.raises(ValueError, match="no feed-forward width matches"):  # one unit of width is 0.6% here
        match(HMambaConfig(d_model=16, d_inner=32, num_layers=1, num_heads=2, d_state=4),
              MambaConfig(d_model=16, d_inner=32, num_layers=1, d_state=4))
    with pytest.raises(ValueError, match="tolerance"):
        match(HMambaConfig(), MambaConfig(), tolerance=0)
    with pytest.raises(TypeError, match="quantum-shortcut config"):
        parameter_count(object())
