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
