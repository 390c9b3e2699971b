"""The shared argument checks (cnet.core.validation): what they accept and the messages they give."""

import pytest
import torch

from cnet.core import ops
from cnet.core.validation import require_complex


def test_require_complex_accepts_complex64_and_complex128():
    require_complex("op", a=torch.zeros(2, dtype=torch.complex64), b=torch.zeros(2, dtype=torch.complex128))


@pytest.mark.filterwarnings("ignore:ComplexHalf support is experimental")
def test_require_complex_refuses_complex32_naming_the_argument_and_dtype():
    half = torch.zeros(2, 3, dtype=torch.complex32)
    with pytest.raises(TypeError, match=r"^op: argument 'b' must be torch.complex64 or torch.complex128, "
                                        r"got torch.complex32; convert it with x.to\(torch.complex64\)$"):
        require_complex("op", a=torch.zeros(2, dtype=torch.complex64), b=half)
    # through an op, before the FFT would fail inside MKL
    with pytest.raises(TypeError, match="dft: argument 'x' must be torch.complex64 or torch.complex128, got "
                                        "torch.complex32"):
        ops.dft(half)


@pytest.mark.parametrize("value, got", [(torch.zeros(2), "got torch.float32; convert real data"), ([1j], "got list")])
def test_require_complex_refuses_real_tensors_and_non_tensors(value, got):
    with pytest.raises(TypeError, match=f"op: argument 'z' must be a complex .*{got}"):
        require_complex("op", z=value)


def test_require_broadcasts_to_names_both_arguments():
    from cnet.core.validation import require_broadcasts_to

    s = torch.zeros(2, 3, 4)
    require_broadcasts_to("op", "bias", torch.zeros(4), "s", s)
    require_broadcasts_to("op", "bias", torch.zeros(3, 1), "s", s)
    for bad in (torch.zeros(5), torch.zeros(2, 2, 3, 4)):   # does not broadcast / would enlarge 's'
        with pytest.raises(ValueError, match=r"op: 'bias' of shape .* does not broadcast to 's' \(2, 3, 4\)"):
            require_broadcasts_to("op", "bias", bad, "s", s)
