"""Layers of the phase-coherent family: complex RMS norm with a complex gain, modReLU, TanhNorm, complex Glorot
initialisation, and the bidirectional phase-coherent recurrence (PCR) in the LRU parameterisation.

Sources: PCT paper sections 2-4 and appendix D; papers/NOTES.md "Phase-coherent transformers" and "LRU".
"""

from __future__ import annotations

import math

import torch
from torch import nn

from cnet.core import ops
from cnet.core.ops.reference.pct import causal_conv, lru_kernel, modrelu, tanh_norm
from cnet.core.validation import require_complex

__all__ = ["complex_glorot_", "ComplexRMSNorm", "ModReLU", "TanhNorm", "PhaseCoherentRecurrence", "PCR",
           "NORM_GAINS"]

NORM_GAINS = ("inv_sqrt_dim", "sqrt_dim")
"""Output scales of :class:`ComplexRMSNorm`: ``x / ||x||`` times ``dim^-1/2`` or ``dim^+1/2``."""


def complex_glorot_(tensor: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """Complex Glorot initialisation: real and imaginary parts each N(0, 1 / (fan_in + fan_out)), in place.

    For a weight ``c[out, in]``, ``E|w|^2 = 2 / (fan_in + fan_out)``, the variance of a real Glorot-normal weight.

    Args:
        tensor: ``c[out, in]`` complex parameter (``fan_out = out``, ``fan_in = in``).
        generator: optional :class:`torch.Generator` for reproducible draws.

    Returns:
        ``tensor`` itself.

    Raises:
        TypeError: not complex. ValueError: not 2-D.

    Source: papers/NOTES.md "Phase-coherent transformers" (projections: complex Glorot,
    std ``sqrt(1 / (fan_in + fan_out))`` per part).
    """
    require_complex("complex_glorot_", tensor=tensor)
    if tensor.dim() != 2:
        raise ValueError(f"complex_glorot_: argument 'tensor' must be c[out, in], got shape {tuple(tensor.shape)}")
    std = math.sqrt(1.0 / (tensor.shape[0] + tensor.shape[1]))
    with torch.no_grad():
        torch.view_as_real(tensor).normal_(0.0, std, generator=generator)
    return tensor


class ComplexRMSNorm(nn.Module):
    """Complex RMS norm with a complex per-feature gain: ``y = gamma * x / ||x|| * c``, ``c = dim^-1/2`` or ``dim^1/2``.

    ``x / ||x||`` is computed as ``token_norm(x, eps) / sqrt(dim)`` (:func:`cnet.core.ops.token_norm`, which divides
    by the root-mean-power) and the gain by :func:`cnet.core.ops.hadamard`, so both steps have explicit Wirtinger
    backwards. Dividing by a real modulus keeps every component's phase; ``gamma`` (``c[dim]``, init 1) may rotate.

    ``gain="inv_sqrt_dim"`` (default) leaves a token of norm ``dim^-1/2`` (per-feature RMS ``1/dim``), the complex
    RMS norm of the public complex-transformer code the PCT paper builds on; it is the scale at which the
    unnormalised complex score is row-constant to ~1e-4 at initialisation (PCT paper section 2.7).
    ``gain="sqrt_dim"`` gives unit per-feature RMS.

    Args:
        dim: feature count (> 0).
        gain: one of :data:`NORM_GAINS`.
        eps: ``>= 0`` added to the mean power inside ``token_norm``.

    Shapes: ``c[..., dim] -> c[..., dim]``.

    Raises:
        ValueError: bad ``dim``, ``gain`` or ``eps``; TypeError at call time on a real input.

    Source: papers/NOTES.md "Phase-coherent transformers" (complex RMSNorm, complex gain init 1); PCT paper D.4.
    """

    def __init__(self, dim: int, gain: str = "inv_sqrt_dim", eps: float = 1e-8) -> None:
        super().__init__()
        if isinstance(dim, bool) or not isinstance(dim, int) or dim <= 0:
            raise ValueError(f"ComplexRMSNorm: argument 'dim' must be a positive int, got {dim!r}")
        if gain not in NORM_GAINS:
            raise ValueError(f"ComplexRMSNorm: argument 'gain' must be one of {', '.join(NORM_GAINS)}, got {gain!r}")
        if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not eps >= 0:
            raise ValueError(f"ComplexRMSNorm: argument 'eps' must be a number >= 0, got {eps!r}")
        self.dim, self.gain, self.eps = dim, gain, eps
        self.scale = 1.0 / dim if gain == "inv_sqrt_dim" else 1.0  # token_norm already carries sqrt(dim)
        self.weight = nn.Parameter(torch.ones(dim, dtype=torch.complex64))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``c[..., dim] -> c[..., dim]``."""
        return ops.hadamard(ops.token_norm(x, eps=self.eps), self.weight) * self.scale

    def extra_repr(self) -> str:
        return f"dim={self.dim}, gain={self.gain!r}"


class ModReLU(nn.Module):
    """modReLU ``max(|z| + b, 0)^p e^{i arg z}`` with a learnable real bias ``b`` (scalar, or one per feature).

    Args:
        power: ``p`` (1: modReLU, 2: the PCT feed-forward's modReLU^2).
        num_features: ``None`` for one scalar bias (the PCT code's choice), else the size of the last dim.
        bias: initial bias value.

    Shapes: ``c[...] -> c[...]`` (``c[..., num_features]`` with per-feature biases). Computes
    :func:`cnet.core.ops.reference.modrelu`.

    Source: papers/NOTES.md "Phase-coherent transformers"; PCT paper D.2, D.4.
    """

    def __init__(self, power: int = 1, num_features: int | None = None, bias: float = 0.0) -> None:
        super().__init__()
        if isinstance(power, bool) or not isinstance(power, int) or power < 1:
            raise ValueError(f"ModReLU: argument 'power' must be an int >= 1, got {power!r}")
        self.power = power
        shape = () if num_features is None else (num_features,)
        self.bias = nn.Parameter(torch.full(shape, float(bias)))

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        """``c[...] -> c[...]``."""
        return modrelu(z, self.bias.to(z.real.dtype), self.power)

    def extra_repr(self) -> str:
        return f"power={self.power}, bias_shape={tuple(self.bias.shape)}"


class TanhNorm(nn.Module):
    """TanhNorm ``u = tanh(||h||) h / ||h||`` over the last dim; parameter-free; real or complex input.

    Shapes: ``c[..., D] -> c[..., D]`` (or ``r``). Computes :func:`cnet.core.ops.reference.tanh_norm`.

    Source: PCT paper D.2; papers/NOTES.md "Phase-coherent transformers" (complex screening).
    """

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        """``[..., D] -> [..., D]``, same dtype."""
        return tanh_norm(h)


class PhaseCoherentRecurrence(nn.Module):
    """Phase-coherent recurrence (PCR): a diagonal complex linear recurrence, run forwards and backwards.

    Per direction, with its own parameters: ``h_t = lambda * h_{t-1} + gamma * (B x_t)`` (state ``c[N]``),
    ``lambda = exp(-exp(nu) + i theta)``, ``gamma = sqrt(1 - |lambda|^2)``; evaluated as the causal convolution of
    ``B x`` with the kernel ``gamma lambda^t`` by zero-padded FFT of length ``2L``
    (:func:`~cnet.core.ops.reference.lru_kernel`, :func:`~cnet.core.ops.reference.causal_conv`). The backward
    direction runs on the time-flipped sequence and its output is flipped back. Output
    ``y = Re(C_f h_f) + Re(C_b h_b) + D * x`` (``D`` real, shared).

    Initialisation (LRU): ``|lambda|`` on the ring ``[r_min, r_max]`` with ``|lambda|^2`` uniform,
    ``theta ~ U[0, max_phase]``; ``B`` real and imaginary parts N(0, 1/(2H)); ``C`` parts N(0, 1/N); ``D ~ N(0, 1)``.
    ``nu`` and ``theta`` are stored together as one complex parameter ``nu_theta = nu + i theta`` (``c[N]``): they
    are the polar parameters of a complex eigenvalue, and parameter counts book them as complex.

    Args:
        d_model: ``H``, input and output features (> 0).
        d_state: ``N``, complex state size per direction (> 0).
        bidirectional: add the backward direction (its own ``nu_theta``, ``B``, ``C``).
        r_min, r_max: ring of initial ``|lambda|``, ``0 < r_min <= r_max < 1``.
        max_phase: initial ``theta`` range ``[0, max_phase]`` (> 0).

    Shapes: ``r[B, L, H] -> r[B, L, H]`` (float32 in, float32 out; the state is complex64).

    Raises:
        ValueError: bad sizes or ring; at call time, an input that is not ``r[B, L, H]``.

    Source: PCT paper section 4 and D.5; papers/NOTES.md "Phase-coherent transformers" (PCR) and "LRU".
    Alias: ``PCR``.
    """

    def __init__(self, d_model: int, d_state: int, bidirectional: bool = True, r_min: float = 0.999,
                 r_max: float = 0.9999, max_phase: float = math.pi / 10) -> None:
        super().__init__()
        for name, v in (("d_model", d_model), ("d_state", d_state)):
            if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                raise ValueError(f"PhaseCoherentRecurrence: argument '{name}' must be a positive int, got {v!r}")
        if not 0 < r_min <= r_max < 1:
            raise ValueError(f"PhaseCoherentRecurrence: need 0 < r_min <= r_max < 1, got {r_min}, {r_max}")
        if not max_phase > 0:
            raise ValueError(f"PhaseCoherentRecurrence: 'max_phase' must be > 0, got {max_phase}")
        self.d_model, self.d_state, self.bidirectional = d_model, d_state, bidirectional
        self.r_min, self.r_max, self.max_phase = r_min, r_max, max_phase
        dirs = ("fwd", "bwd") if bidirectional else ("fwd",)
        for d in dirs:
            self.register_parameter(f"nu_theta_{d}", nn.Parameter(torch.zeros(d_state, dtype=torch.complex64)))
            self.register_parameter(f"B_{d}", nn.Parameter(torch.zeros(d_state, d_model, dtype=torch.complex64)))
            self.register_parameter(f"C_{d}", nn.Parameter(torch.zeros(d_model, d_state, dtype=torch.complex64)))
        self.D = nn.Parameter(torch.zeros(d_model))
        self.reset_parameters()

    def _directions(self) -> tuple[str, ...]:
        return ("fwd", "bwd") if self.bidirectional else ("fwd",)

    def reset_parameters(self, generator: torch.Generator | None = None) -> None:
        """Redraw every parameter with the LRU initialisation described in the class docstring."""
        n, h = self.d_state, self.d_model
        with torch.no_grad():
            for d in self._directions():
                u1 = torch.rand(n, generator=generator, dtype=torch.float64)
                u2 = torch.rand(n, generator=generator, dtype=torch.float64)
                mod2 = u1 * (self.r_max**2 - self.r_min**2) + self.r_min**2  # |lambda|^2 uniform on the ring
                nu = torch.log(-0.5 * torch.log(mod2))
                getattr(self, f"nu_theta_{d}").copy_(torch.complex(nu, self.max_phase * u2))
                torch.view_as_real(getattr(self, f"B_{d}")).normal_(0.0, 1 / math.sqrt(2 * h), generator=generator)
                torch.view_as_real(getattr(self, f"C_{d}")).normal_(0.0, 1 / math.sqrt(n), generator=generator)
            self.D.normal_(0.0, 1.0, generator=generator)

    def eigenvalues(self, direction: str = "fwd") -> torch.Tensor:
        """``c[N]`` the current ``lambda = exp(-exp(nu) + i theta)`` of one direction (``"fwd"`` or ``"bwd"``)."""
        p = getattr(self, f"nu_theta_{direction}").detach()
        return torch.exp(torch.complex(-torch.exp(p.real), p.imag))

    def _run(self, xc: torch.Tensor, d: str) -> torch.Tensor:
        u = ops.linear(xc, getattr(self, f"B_{d}"))                     # c[B, L, N]
        h = causal_conv(u, lru_kernel(getattr(self, f"nu_theta_{d}"), xc.shape[1]))
        return ops.linear(h, getattr(self, f"C_{d}")).real              # r[B, L, H]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``r[B, L, H] -> r[B, L, H]``."""
        if not isinstance(x, torch.Tensor) or x.is_complex() or not x.is_floating_point() or x.dim() != 3 \
                or x.shape[-1] != self.d_model:
            raise ValueError(f"PhaseCoherentRecurrence: input must be a real tensor r[B, L, {self.d_model}], got "
                             f"{getattr(x, 'dtype', type(x).__name__)} {tuple(getattr(x, 'shape', ()))}")
        xc = x.to(self.B_fwd.dtype)
        y = self._run(xc, "fwd")
        if self.bidirectional:
            y = y + self._run(xc.flip(1), "bwd").flip(1)
        return y.to(x.dtype) + self.D.to(x.dtype) * x

    def extra_repr(self) -> str:
        return (f"d_model={self.d_model}, d_state={self.d_state}, bidirectional={self.bidirectional}, "
                f"ring=[{self.r_min}, {self.r_max}], max_phase={self.max_phase:.4g}")


PCR = PhaseCoherentRecurrence
