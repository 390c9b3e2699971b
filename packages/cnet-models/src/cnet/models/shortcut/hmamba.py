"""``h-mamba`` (complex phase-state recurrence in the Mamba block) and its real twin ``mamba``.

H-Mamba's substrate, per head ``h`` (``H`` heads, ``N`` complex state coordinates each; quantum-shortcut paper
section 5, NOTES.md "Quantum-shortcut models")::

    p_t = W_p u_t + b_p                      u: r[B, T, d_inner] (after conv + SiLU); p: r[B, T, H, 6N+1]
    (delta N | dt logit 1 | gate logit N | b 2N | C 2N) = p_t          (b = b_re + i b_im, C likewise)
    dt    = max(softplus(dt logit), 0.1)                                 dt_clamp_mode "min" (see below)
    phi   = dt (delta + omega) / 2                                       omega: r[H, N] base frequencies
    lam   = (1 + i phi) / (1 - i phi)        |lam| = 1 exactly, arg lam = 2 arctan(phi)      (eq. 3)
    a     = sigmoid(gate logit) * lam        |a| = alpha: forgetting in the modulus only
    h_t   = a_t * h_{t-1} + b_t,   h_{-1} = psi_0 (learned prior, unit modulus)              (eq. 2)
    y_t   = W_back [Re(C_t * h_t), Im(C_t * h_t)] + b_back                r[B, T, d_inner]

evaluated by :func:`~cnet.models.shortcut.scan.chunked_scan` (chunk 64). The block around it and the tied head are
:mod:`cnet.models.shortcut.blocks`.

Choices where the paper is silent (each a config field):

* ``dt_clamp_mode="min"``: "softplus of its logit, clamped at 0.1" is read as a floor, ``dt >= 0.1``. The per-head
  projection "starts with a small standard deviation", so the dt logit starts near 0 where softplus is 0.69; a
  ceiling at 0.1 would then hold dt at exactly 0.1 with zero gradient for every token, killing the step-size
  pathway, while a floor only acts once the logit falls below -2.25 and keeps the base rotation from stalling.
  ``"max"`` gives the ceiling reading.
* The per-head projection is one dense ``d_inner -> H (6N+1)`` map (with bias), and the read-out is ``C * h``
  coordinate-wise with both real and imaginary parts (``2N`` reals per head) projected back to the inner width
  (``readout="complex"``). These are the readings under which the paper's numbers close: per block at d_model 1024,
  d_inner 2048 the two projections hold 3.18M + 1.05M, Mamba's selective-scan parameters 0.36M, and the difference,
  3.866M, is what a SwiGLU branch of width 1258 holds (3 x 1024 x 1258 = 3.865M); ``match`` finds 1259 for
  the 253M configuration. A per-head slice of the inner width would be 16x smaller, a real-only read-out
  (``readout="real"``, ``Re(C * h)``) 0.52M smaller per block.
* ``omega``: magnitudes on a geometric grid from ``omega_min = 0.01`` to ``omega_max = 1`` (two decades; at the
  initial dt = 0.69 a step turns 0.007 to 0.67 rad), sign alternating ``+, -, +, ...`` across the N coordinates,
  the same grid in every head, learned (``learn_omega``).
* Gate: the projection bias starts the gates at ``alpha`` from ``gate_init_max = 0.999`` (coordinate 0, slowest
  rotation) down to ``gate_init_min = 0.9`` (coordinate N-1), geometric in ``1 - alpha``; other biases 0.
* Prior: ``psi_0 = p / |p|`` coordinate-wise (``prior="unit_modulus"``; ``"unit_norm"``: ``p / ||p||`` per head;
  ``"zero"``: no prior), ``p`` learned, drawn circularly symmetric. No ``D`` skip term and no input scaling of ``b``:
  the recurrence is eq. 2 as printed.

The real twin ``mamba`` is Mamba-1's selective scan in the same block (``dt_rank = ceil(d_model / 16)``,
``A = -exp(A_log)``, S4D-real init, ``D`` skip), plus the parameter-matching SwiGLU branch of ``ffn_dim``
(section 5.7, "Parameter matching"); the default ``ffn_dim`` matches the default ``h-mamba`` (see
:func:`cnet.models.shortcut.match.match`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from cnet.core import nn as cnn
from cnet.models.config import require_positive
from cnet.models.shortcut.blocks import MambaBlock, TiedByteLM, check_choice, check_sizes
from cnet.models.shortcut.scan import cayley_phase, chunked_scan, real_scan

__all__ = ["HMambaConfig", "HMamba", "PhaseStateRecurrence", "MambaConfig", "Mamba", "SelectiveScan",
           "base_frequencies"]


def _upcast(x: torch.Tensor) -> torch.Tensor:
    """Half-precision activations (autocast) to float32; float32/float64 unchanged."""
    return x.float() if x.dtype in (torch.float16, torch.bfloat16) else x


def base_frequencies(n: int, omega_min: float, omega_max: float) -> torch.Tensor:
    """``r[n]`` base frequencies: magnitudes geometric from ``omega_min`` to ``omega_max``, signs ``+, -, +, ...``.

    Source: quantum-shortcut paper section 5.6 (geometric grid spanning roughly two decades, alternating sign).
    """
    mags = torch.logspace(math.log10(omega_min), math.log10(omega_max), n, dtype=torch.float64)
    signs = 1.0 - 2.0 * (torch.arange(n) % 2).double()
    return (mags * signs).float()


@dataclass
class HMambaConfig:
    """Configuration of :class:`HMamba` (defaults: 14,961,888 real parameters; the paper's run is d_model 1024,
    d_inner 2048, 24 layers, 253M)."""

    vocab_size: int = 256         # bytes
    context: int = 1024           # maximum sequence length T
    d_model: int = 384            # residual width
    d_inner: int = 768            # signal / gate branch width
    num_layers: int = 6
    num_heads: int = 16           # H
    d_state: int = 16             # N, complex state coordinates per head
    d_conv: int = 4               # causal depthwise convolution width
    chunk: int = 64               # scan chunk length (evaluation detail; exact for any value)
    dt_clamp: float = 0.1         # step-size clamp value
    dt_clamp_mode: str = "min"    # "min": dt = max(softplus, dt_clamp) (floor); "max": dt = min(softplus, dt_clamp)
    omega_min: float = 0.01       # smallest |omega_k|
    omega_max: float = 1.0        # largest |omega_k|
    learn_omega: bool = True      # omega a parameter (else a saved buffer)
    gate_init_min: float = 0.9    # initial gates alpha span [gate_init_min, gate_init_max]
    gate_init_max: float = 0.999
    prior: str = "unit_modulus"   # "unit_modulus", "unit_norm" or "zero"
    readout: str = "complex"      # "complex": [Re, Im](C h) (2N per head) or "real": Re(C h) (N per head)
    proj_bias: bool = True        # biases in the per-head projection and the back projection
    init_std: float = 0.02        # N(0, std^2): back and output projections
    embed_init_std: float = 1e-3  # N(0, std^2) embedding (tied head; see blocks.py)
    proj_init_std: float = 0.02   # N(0, std^2): the per-head parameter projection ("small")
    norm_eps: float = 1e-5

    def __post_init__(self) -> None:
        where = "h-mamba"
        check_sizes(where, 2, vocab_size=self.vocab_size)
        check_sizes(where, context=self.context, d_model=self.d_model,
                    d_inner=self.d_inner, num_layers=self.num_layers, num_heads=self.num_heads,
                    d_state=self.d_state, d_conv=self.d_conv, chunk=self.chunk)
        require_positive(where, dt_clamp=self.dt_clamp, omega_min=self.omega_min, init_std=self.init_std,
                         embed_init_std=self.embed_init_std,
                         proj_init_std=self.proj_init_std, norm_eps=self.norm_eps)
        check_choice(where, "dt_clamp_mode", self.dt_clamp_mode, ("min", "max"))
        check_choice(where, "prior", self.prior, ("unit_modulus", "unit_norm", "zero"))
        check_choice(where, "readout", self.readout, ("complex", "real"))
        if not self.omega_min <= self.omega_max < float("inf"):
            raise ValueError(f"{where}: need 0 < omega_min <= omega_max < inf, got {self.omega_min}, {self.omega_max}")
        if not 0 < self.gate_init_min <= self.gate_init_max < 1:
            raise ValueError(f"{where}: need 0 < gate_init_min <= gate_init_max < 1, got {self.gate_init_min}, "
                             f"{self.gate_init_max}")


class PhaseStateRecurrence(nn.Module):
    """H-Mamba's complex phase-state substrate (module docstring): ``r[B, T, d_inner] -> r[B, T, d_inner]``.

    Args:
        d_inner: input and output width.
        num_heads, d_state: ``H`` heads of ``N`` complex coordinates.
        chunk: scan chunk length.
        dt_clamp, dt_clamp_mode: the step-size clamp (floor with ``"min"``, ceiling with ``"max"``).
        omega_min, omega_max, learn_omega: the base-frequency grid and whether it is learned.
        gate_init: ``(min, max)`` of the initial gates.
        prior: ``"unit_modulus"``, ``"unit_norm"`` or ``"zero"``.
        readout: ``"complex"`` or ``"real"``.
        bias: biases in the per-head and back projections.
        proj_init_std: std of the per-head projection's weights.

    Attributes:
        proj: ``nn.Linear(d_inner, H (6N+1))``, per head ``(delta N, dt 1, gate N, b_re N, b_im N, C_re N, C_im N)``.
        omega: ``r[H, N]`` base frequencies (parameter or buffer).
        prior: ``c[H, N]`` complex64 parameter, or ``None``.
        back: ``nn.Linear(H * 2N (or H * N), d_inner)``.

    Source: quantum-shortcut paper sections 5.1-5.3, 5.6, 5.7; NOTES.md "Quantum-shortcut models".
    """

    def __init__(self, d_inner: int, num_heads: int, d_state: int, *, chunk: int = 64, dt_clamp: float = 0.1,
                 dt_clamp_mode: str = "min", omega_min: float = 0.01, omega_max: float = 1.0,
                 learn_omega: bool = True, gate_init: tuple[float, float] = (0.9, 0.999),
                 prior: str = "unit_modulus", readout: str = "complex", bias: bool = True,
                 proj_init_std: float = 0.02) -> None:
        super().__init__()
        self.num_heads, self.d_state, self.chunk = num_heads, d_state, chunk
        self.dt_clamp, self.dt_clamp_mode, self.prior_mode, self.readout = dt_clamp, dt_clamp_mode, prior, readout
        self.omega_range, self.gate_init, self.proj_init_std = (omega_min, omega_max), gate_init, proj_init_std
        self.proj = nn.Linear(d_inner, num_heads * (6 * d_state + 1), bias=bias)
        omega = torch.empty(num_heads, d_state)
        if learn_omega:
            self.omega = nn.Parameter(omega)
        else:
            self.register_buffer("omega", omega)
        self.prior = None if prior == "zero" else nn.Parameter(torch.empty(num_heads, d_state, dtype=torch.complex64))
        self.back = nn.Linear(num_heads * d_state * (2 if readout == "complex" else 1), d_inner, bias=bias)
        self.init_substrate()

    @torch.no_grad()
    def init_substrate(self) -> None:
        """Per-head projection N(0, proj_init_std^2) with the gate biases of the module docstring, the omega grid,
        and a unit-modulus random-phase prior."""
        h, n = self.num_heads, self.d_state
        nn.init.normal_(self.proj.weight, std=self.proj_init_std)
        if self.proj.bias is not None:
            lo, hi = self.gate_init
            forget = torch.logspace(math.log10(1 - hi), math.log10(1 - lo), n, dtype=torch.float64)
            alpha = 1 - forget
            bias = torch.zeros(h, 6 * n + 1, dtype=torch.float64)
            bias[:, n + 1: 2 * n + 1] = torch.log(alpha / forget)
            self.proj.bias.copy_(bias.reshape(-1))
        self.omega.copy_(base_frequencies(n, *self.omega_range).expand(h, n))
        if self.prior is not None:
            cnn.complex_normal_(self.prior, 1.0)
            self.prior.div_(self.prior.abs().clamp_min(1e-12))

    def initial_state(self, batch: int, dtype: torch.dtype) -> torch.Tensor | None:
        """``c[B, H, N]`` the normalised prior ``psi_0`` for ``batch`` sequences, or ``None`` (zero state)."""
        if self.prior is None:
            return None
        p = self.prior.to(dtype)
        if self.prior_mode == "unit_modulus":
            p = p / p.abs().clamp_min(1e-12)
        else:
            p = p / torch.linalg.vector_norm(p, dim=-1, keepdim=True).clamp_min(1e-12)
        return p.expand(batch, *p.shape)

    def transition(self, delta: torch.Tensor, dt_logit: torch.Tensor, gate_logit: torch.Tensor) -> torch.Tensor:
        """``c[B, T, H, N]`` coefficients ``a = sigmoid(gate) * cayley(dt (delta + omega) / 2)``.

        ``delta``, ``gate_logit``: ``r[B, T, H, N]``; ``dt_logit``: ``r[B, T, H, 1]``.
        """
        dt = F.softplus(dt_logit)
        dt = dt.clamp_min(self.dt_clamp) if self.dt_clamp_mode == "min" else dt.clamp_max(self.dt_clamp)
        phi = 0.5 * dt * (delta + self.omega.to(delta.dtype))
        return torch.sigmoid(gate_logit) * cayley_phase(phi)

    def forward(self, u: torch.Tensor) -> torch.Tensor:
        """Run the substrate on ``u`` (``r[B, T, d_inner]``); returns ``r[B, T, d_inner]``."""
        bsz, t, _ = u.shape
        n = self.d_state
        p = _upcast(self.proj(u)).view(bsz, t, self.num_heads, 6 * n + 1)
        delta, dt_logit, gate, b_re, b_im, c_re, c_im = p.split([n, 1, n, n, n, n, n], dim=-1)
        a = self.transition(delta, dt_logit, gate)
        h = chunked_scan(a, torch.complex(b_re, b_im), self.initial_state(bsz, a.dtype), self.chunk)
        o = torch.complex(c_re, c_im) * h
        feats = torch.cat([o.real, o.imag], dim=-1) if self.readout == "complex" else o.real
        return self.back(feats.reshape(bsz, t, -1))


class HMamba(TiedByteLM):
    """H-Mamba: ``i[B, T]`` bytes -> ``r[B, T, V]`` logits (tied softmax head); see the module docstring.

    ``forward(ids, targets=None)`` returns :class:`~cnet.models.output.LMOutput` (``logits``, and the mean
    cross-entropy ``loss`` in nats per token when ``targets`` ``i[B, T]`` are given).

    Source: quantum-shortcut paper section 5 (5.7: H-Mamba); NOTES.md "Quantum-shortcut models".
    """

    def __init__(self, config: HMambaConfig) -> None:
        super().__init__()
        self.config = c = config
        self._build_trunk(c.vocab_size, c.d_model, c.norm_eps)
        self.blocks = nn.ModuleList(
            MambaBlock(c.d_model, c.d_inner, c.d_conv, PhaseStateRecurrence(
                c.d_inner, c.num_heads, c.d_state, chunk=c.chunk, dt_clamp=c.dt_clamp, dt_clamp_mode=c.dt_clamp_mode,
                omega_min=c.omega_min, omega_max=c.omega_max, learn_omega=c.learn_omega,
                gate_init=(c.gate_init_min, c.gate_init_max), prior=c.prior, readout=c.readout, bias=c.proj_bias,
                proj_init_std=c.proj_init_std), norm_eps=c.norm_eps)
            for _ in range(c.num_layers))
        self._init_weights(c.init_std, c.embed_init_std)


@dataclass
class MambaConfig:
    """Configuration of :class:`Mamba`, the real twin; ``ffn_dim`` defaults to the width that matches the default
    :class:`HMambaConfig` (1313: 14,959,488 against 14,961,888 real scalars, 0.016% apart)."""

    vocab_size: int = 256
    context: int = 1024
    d_model: int = 384
    d_inner: int = 768
    num_layers: int = 6
    d_state: int = 16             # N, real state per inner channel
    d_conv: int = 4
    dt_rank: int | None = None    # rank of the dt projection; None -> ceil(d_model / 16) (Mamba's default)
    dt_init_min: float = 0.001    # initial dt log-uniform in [dt_init_min, dt_init_max] (Mamba's init)
    dt_init_max: float = 0.1
    ffn_dim: int = 1313           # hidden width of the parameter-matching SwiGLU branch (0: none)
    ffn_placement: str = "parallel"  # "parallel" (mixer's normalised input) or "sequential" (own RMSNorm)
    init_std: float = 0.02
    embed_init_std: float = 1e-3  # N(0, std^2) embedding (tied head; see blocks.py)
    norm_eps: float = 1e-5

    def __post_init__(self) -> None:
        where = "mamba"
        if self.dt_rank is None:
            self.dt_rank = math.ceil(self.d_model / 16) if isinstance(self.d_model, int) else self.d_model
        check_sizes(where, 2, vocab_size=self.vocab_size)
        check_sizes(where, context=self.context, d_model=self.d_model,
                    d_inner=self.d_inner, num_layers=self.num_layers, d_state=self.d_state, d_conv=self.d_conv,
                    dt_rank=self.dt_rank)
        check_sizes(where, 0, ffn_dim=self.ffn_dim)
        require_positive(where, dt_init_min=self.dt_init_min, init_std=self.init_std,
                         embed_init_std=self.embed_init_std, norm_eps=self.norm_eps)
        if not self.dt_init_min <= self.dt_init_max:
            raise ValueError(f"{where}: need dt_init_min <= dt_init_max, got {self.dt_init_min}, {self.dt_init_max}")
        check_choice(where, "ffn_placement", self.ffn_placement, ("parallel", "sequential"))


class SelectiveScan(nn.Module):
    """Mamba-1's real selective scan: ``r[B, T, d_inner] -> r[B, T, d_inner]``.

    ``(dt_low, B, C) = W_x u``; ``dt = softplus(W_dt dt_low + b_dt)`` (``r[B, T, D]``); ``A = -exp(A_log)``
    (``r[D, N]``); ``h_t = exp(dt_t A) * h_{t-1} + dt_t B_t u_t`` (``r[B, T, D, N]``, from 0);
    ``y_t = sum_n C_tn h_tn + D_skip * u_t``.

    Init (Mamba's): ``A_log = log(1..N)`` per channel, ``dt`` log-uniform in ``[dt_init_min, dt_init_max]`` through
    the bias (inverse softplus), ``W_dt`` uniform in ``+-dt_rank^-1/2``, ``D_skip = 1``.

    Source: Gu and Dao 2023 (Mamba); quantum-shortcut paper section 5.7 (the real Mamba baseline).
    """

    def __init__(self, d_inner: int, d_state: int, dt_rank: int, dt_init: tuple[float, float] = (0.001, 0.1)) -> None:
        super().__init__()
        self.d_state, self.dt_rank, self.dt_init = d_state, dt_rank, dt_init
        self.x_proj = nn.Linear(d_inner, dt_rank + 2 * d_state, bias=False)
        self.dt_proj = nn.Linear(dt_rank, d_inner, bias=True)
        self.A_log = nn.Parameter(torch.empty(d_inner, d_state))
        self.D = nn.Parameter(torch.empty(d_inner))
        self.init_substrate()

    @torch.no_grad()
    def init_substrate(self) -> None:
        """Mamba's initialisation of ``dt_proj``, ``A_log`` and ``D`` (see the class docstring)."""
        bound = self.dt_rank ** -0.5
        nn.init.uniform_(self.dt_proj.weight, -bound, bound)
        lo, hi = self.dt_init
        dt = torch.exp(torch.rand(self.dt_proj.bias.shape) * (math.log(hi) - math.log(lo)) + math.log(lo))
        self.dt_proj.bias.copy_(dt + torch.log(-torch.expm1(-dt)))
        self.A_log.copy_(torch.log(torch.arange(1, self.d_state + 1, dtype=torch.float32)).expand_as(self.A_log))
        self.D.fill_(1.0)

    def forward(self, u: torch.Tensor) -> torch.Tensor:
        """Run the selective scan on ``u`` (``r[B, T, d_inner]``)."""
        n = self.d_state
        dt_low, b, c = _upcast(self.x_proj(u)).split([self.dt_rank, n, n], dim=-1)
        dt = F.softplus(_upcast(self.dt_proj(dt_low.to(u.dtype))))
        x = _upcast(u)
        a = torch.exp(dt[..., None] * -torch.exp(self.A_log.to(x.dtype)))
        # outer product and contraction over N as batched matrix products: no r[B, T, D, N] temporaries and
        # reductions in the backward beyond the scan's own
        h = real_scan(a, torch.matmul((dt * x)[..., None], b[:, :, None, :]))
        return torch.matmul(h, c[..., None]).squeeze(-1) + self.D.to(x.dtype) * x


class Mamba(TiedByteLM):
    """The real Mamba twin: ``i[B, T]`` -> ``r[B, T, V]`` logits; the block skeleton with :class:`SelectiveScan`
    and the SwiGLU branch of width ``ffn_dim``. ``forward`` as :class:`HMamba`.

    Source: quantum-shortcut paper section 5.7 (real Mamba with a parameter-matching SwiGLU branch).
    """

    def __init__(self, config: MambaConfig) -> None:
        super().__init__()
        self.config = c = config
        self._build_trunk(c.vocab_size, c.d_model, c.norm_eps)
        self.blocks = nn.ModuleList(
            MambaBlock(c.d_model, c.d_inner, c.d_conv,
                       SelectiveScan(c.d_inner, c.d_state, c.dt_rank, (c.dt_init_min, c.dt_init_max)),
                       ffn_dim=c.ffn_dim, ffn_placement=c.ffn_placement, norm_eps=c.norm_eps)
            for _ in range(c.num_layers))
        self._init_weights(c.init_std, c.embed_init_std)
