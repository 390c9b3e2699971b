"""born-lm options beyond the generic model tests: residual dropout."""

import pytest
import torch

import cnet.models


def _ids(seed=0):
    return torch.randint(0, 65, (2, 16), generator=torch.Generator().manual_seed(seed))


def test_dropout_is_stochastic_in_training_and_off_in_eval():
    model = cnet.models.create("born-lm", embed_dim=16, num_layers=2, context=16, dropout=0.3)
    ids = _ids()
    model.train()
    a, b = model(ids).amplitudes, model(ids).amplitudes
    assert not torch.allclose(a, b)
    model.eval()
    torch.testing.assert_close(model(ids).amplitudes, model(ids).amplitudes, rtol=0, atol=0)


def test_zero_dropout_is_the_identity_in_training():
    model = cnet.models.create("born-lm", embed_dim=16, num_layers=2, context=16)
    ids = _ids(1)
    model.train()
    train_out = model(ids).amplitudes
    model.eval()
    torch.testing.assert_close(train_out, model(ids).amplitudes, rtol=0, atol=0)


@pytest.mark.parametrize("p", [-0.1, 1.0])
def test_dropout_out_of_range_is_refused(p):
    with pytest.raises(ValueError, match="born-lm: dropout must be in"):
        cnet.models.create("born-lm", dropout=p)


def test_gla_mixer_trains_and_matches_its_layer():
    model = cnet.models.create("born-lm", embed_dim=16, num_layers=2, context=16, num_heads=2, mixer="gla")
    assert type(model.blocks[0].attn).__name__ == "MultiheadGatedLinearAttention"
    ids = _ids(2)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(15):
        out = model(ids[:, :-1], ids[:, 1:])
        opt.zero_grad()
        out.loss.backward()
        opt.step()
        losses.append(out.loss.item())
    assert losses[-1] < losses[0] - 0.3


def test_gla_mixer_is_causal():
    model = cnet.models.create("born-lm", embed_dim=16, num_layers=2, context=16, mixer="gla").eval()
    ids = _ids(3)
    changed = ids.clone()
    changed[:, 10:] = (changed[:, 10:] + 1) % 65
    torch.testing.assert_close(model(ids).amplitudes[:, :10], model(changed).amplitudes[:, :10])


def test_unknown_mixer_is_refused():
    with pytest.raises(ValueError, match="born-lm: mixer must be 'born' or 'gla', got 'softmax'"):
        cnet.models.create("born-lm", mixer="softmax")
