"""``pcr-pathx``: the published configuration, a smoke forward/backward on generated Pathfinder images, bad inputs."""

import math

import pytest
import torch

import cnet.data
from cnet.core.nn.phase import PhaseCoherentRecurrence
from cnet.models.base import count_parameters
from cnet.models.pct import PCRPathX, PCRPathXConfig
from cnet.models.pct.cells import ComplexAttention

pytestmark = pytest.mark.usefixtures("one_thread")


def test_published_configuration():
    m = PCRPathX(PCRPathXConfig())
    c = m.config
    assert (c.image_size**2, c.d_model, c.num_layers, c.d_state, c.screen_heads, c.screen_chunk) == (
        16384, 128, 6, 256, 4, 1024)
    kinds = ["pcr" if hasattr(b, "pcr") else "screen" for b in m.blocks]
    assert kinds == ["pcr", "pcr", "pcr", "screen", "pcr", "pcr", "screen", "pcr"]  # screening after PCR 3 and 5
    n = count_parameters(m)
    # per PCR block: 2 directions x (B 256x128 + C 128x256 complex + nu, theta 256 each) + D 128 + BatchNorm 256
    #                + GLU 128x128 + 128  = 280,064
    # per screening block: W_q, W_k, W_v, W_g 128x128 complex + s_r 4 + modReLU bias 1 + W_o 256x128 + 128
    #                + BatchNorm 256  = 164,229;   encoder 256, head 258
    assert n["real_scalars"] == 6 * 280_064 + 2 * 164_229 + 256 + 258 == 2_009_356   # paper: 2.01M
    assert n["complex_share"] == pytest.approx(1_841_152 / 2_009_356)                   # paper: 91.6%
    assert round(100 * n["complex_share"], 1) == 91.6


def test_ring_initialisation_and_parameter_groups():
    m = PCRPathX(PCRPathXConfig(image_size=32, num_layers=2, d_state=16, screen_after="2"))
    pcrs = [mod for mod in m.modules() if isinstance(mod, PhaseCoherentRecurrence)]
    for layer in pcrs:
        for d in ("fwd", "bwd"):
            lam = layer.eigenvalues(d)
            assert 0.999 - 1e-6 <= lam.abs().min() and lam.abs().max() <= 0.9999 + 1e-6
            assert 0 <= torch.angle(lam).min() and torch.angle(lam).max() <= math.pi / 10 + 1e-6
    groups = m.param_groups(4.5e-4)
    assert groups[0]["lr"] == pytest.approx(1.5e-4) and groups[0]["weight_decay"] == 0.0
    assert len(groups[0]["params"]) == 2 * 2 * 2  # nu_theta and B, two directions, two layers
    ids = [id(p) for g in groups for p in g["params"]]
    assert sorted(ids) == sorted(id(p) for p in m.parameters())


def test_smoke_forward_backward_on_generated_pathfinder_images():
    rows = cnet.data.load("pathfinder_synthetic", "train", resolution=32, num_examples=2, seed=0)
    pixels, labels = torch.tensor(rows["input_ids"]), torch.tensor(rows["label"])
    assert pixels.shape == (2, 1024)
    torch.manual_seed(0)
    m = PCRPathX(PCRPathXConfig(image_size=32))  # published widths, 32 x 32 images (1,024 tokens, one chunk)
    out = m(pixels, labels)
    assert out.logits.shape == (2, 2) and torch.isfinite(out.loss)
    assert abs(out.loss.item() - math.log(2)) < 2.0
    out.loss.backward()
    for name, p in m.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all(), name
        assert p.grad.abs().max() > 0, name


def test_chunked_screening_equals_screening_each_chunk():
    torch.manual_seed(0)
    whole = ComplexAttention(8, 2, "complex_screen", context=12, rope=False, real_io=True)
    chunked = ComplexAttention(8, 2, "complex_screen", context=12, rope=False, real_io=True, chunk=4)
    chunked.load_state_dict(whole.state_dict())
    x = torch.randn(2, 12, 8)
    expected = torch.cat([whole(x[:, i:i + 4]) for i in (0, 4, 8)], dim=1)
    torch.testing.assert_close(chunked(x), expected, atol=1e-5, rtol=1e-5)


def test_bad_inputs():
    m = PCRPathX(PCRPathXConfig(image_size=8, num_layers=1, d_state=4, d_model=8, screen_after="1",
                                screen_heads=2, screen_chunk=16))
    with pytest.raises(ValueError, match="sequence length 65 exceeds the configured image_size\\^2 = 64"):
        m(torch.zeros(1, 65, dtype=torch.long))
    with pytest.raises(ValueError, match="multiple"):
        m(torch.zeros(1, 40, dtype=torch.long))
    with pytest.raises(ValueError, match="0..255"):
        m(torch.full((1, 16), 256))
    with pytest.raises(TypeError, match="integer"):
        m(torch.zeros(1, 16))
    with pytest.raises(ValueError, match="targets"):
        m(torch.zeros(2, 16, dtype=torch.long), torch.tensor([0, 1, 1]))
    with pytest.raises(ValueError, match="screen_after"):
        PCRPathXConfig(screen_after="3,9")
    with pytest.raises(ValueError, match="r_min"):
        PCRPathXConfig(r_min=0.9999, r_max=0.999)
    assert m(torch.zeros(3, 48, dtype=torch.long)).logits.shape == (3, 2)  # 3 chunks of 16
