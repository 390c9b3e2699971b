"""Conformance kit for ops and backends: Wirtinger gradcheck and backend-vs-reference parity.

Every reference op and every backend, built-in or third-party, is checked with these two functions
(DESIGN.md section 6); ``cnet check-op NAME`` runs both on the op's registered example inputs.

* :func:`gradcheck` compares autograd with central finite differences in complex128. For a random complex
  probe ``W`` shaped like the output, the real loss ``L = Re sum(conj(W) * f(z))`` is differentiated both ways;
  probes ``W`` and ``i W`` together fix the products of the output with both ``df/dz`` and ``df/dconj(z)``, so
  an op whose backward gets either Wirtinger derivative wrong fails.
* :func:`check_parity` runs a backend and the reference on the same inputs and compares the outputs and the
  gradient of every complex or floating input under the same probe.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

__all__ = ["gradcheck", "check_parity", "check_op", "CheckReport", "rel_error"]


@dataclass
class CheckReport:
    """Result of a check: ``ok`` plus the worst error seen and a line per failure."""

    ok: bool
    max_error: float
    failures: list[str]

    def raise_if_failed(self) -> None:
        """Raise ``AssertionError`` with every failure line when the check failed."""
        if not self.ok:
            raise AssertionError("\n".join(self.failures))


def rel_error(a: torch.Tensor, b: torch.Tensor) -> float:
    """``max|a - b| / max(max|b|, 1e-30)``: the relative error of ``a`` against the reference ``b``."""
    diff = (a - b).abs().max().item() if a.numel() else 0.0
    scale = b.abs().max().item() if b.numel() else 0.0
    return diff / max(scale, 1e-30)


def _outputs(res) -> list[torch.Tensor]:
    if isinstance(res, torch.Tensor):
        return [res]
    return [r for r in res if isinstance(r, torch.Tensor)]


def _probe_loss(outs: Sequence[torch.Tensor], probes: Sequence[torch.Tensor]) -> torch.Tensor:
    total = 0.0
    for o, w in zip(outs, probes, strict=False):
        if o.is_complex():
            total = total + (w.conj() * o).real.sum()
        elif o.is_floating_point():
            total = total + (w.real * o).sum()
    return total


def _make_probes(outs, gen) -> list[torch.Tensor]:
    probes = []
    for o in outs:
        shape = o.shape
        p = torch.complex(torch.randn(shape, generator=gen, dtype=torch.float64),
                          torch.randn(shape, generator=gen, dtype=torch.float64))
        probes.append(p.to(o.device))
    return probes


def _diff_inputs(args) -> list[int]:
    return [i for i, a in enumerate(args) if isinstance(a, torch.Tensor) and (a.is_complex() or a.is_floating_point())]


def gradcheck(fn: Callable, args: Sequence, kwargs: dict | None = None, *, eps: float = 1e-6, atol: float = 1e-6,
              rtol: float = 1e-5, seed: int = 0, wrt: Sequence[int] | None = None) -> CheckReport:
    """Check ``fn``'s autograd gradients against central finite differences, both Wirtinger derivatives.

    Args:
        fn: the op; called as ``fn(*args, **kwargs)``; may return a tensor or a tuple of tensors.
        args: positional inputs; complex inputs are cast to complex128 and float inputs to float64.
        kwargs: keyword inputs (not differentiated).
        eps: finite-difference step on each real and imaginary part.
        atol, rtol: tolerance on ``|autograd - fd| <= atol + rtol * |fd|`` elementwise.
        seed: seeds the probes.
        wrt: indices of ``args`` to differentiate (default: every complex or floating tensor).

    Returns:
        :class:`CheckReport`; call ``raise_if_failed()`` in tests.
    """
    kwargs = dict(kwargs or {})
    args = [a.detach().to(torch.complex128) if isinstance(a, torch.Tensor) and a.is_complex()
            else a.detach().to(torch.float64) if isinstance(a, torch.Tensor) and a.is_floating_point() else a
            for a in args]
    idx = list(wrt) if wrt is not None else _diff_inputs(args)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        base = _outputs(fn(*args, **kwargs))
    w = _make_probes(base, gen)
    failures: list[str] = []
    worst = 0.0
    for label, probes in (("W", w), ("iW", [1j * p for p in w])):
        leaves = [a.clone().requires_grad_(True) if i in idx else a for i, a in enumerate(args)]
        loss = _probe_loss(_outputs(fn(*leaves, **kwargs)), probes)
        grads = torch.autograd.grad(loss, [leaves[i] for i in idx], allow_unused=True)
        for i, g in zip(idx, grads, strict=False):
            a = args[i]
            g = torch.zeros_like(a) if g is None else g
            fd = torch.zeros_like(a)
            flat, fdf = a.reshape(-1), fd.view(-1)
            parts = [1.0, 1j] if a.is_complex() else [1.0]
            with torch.no_grad():
                for j in range(flat.numel()):
                    acc = 0j if a.is_complex() else 0.0
                    for unit in parts:
                        plus, minus = flat.clone(), flat.clone()
                        plus[j] += unit * eps
                        minus[j] -= unit * eps
                        lp = _probe_loss(_outputs(fn(*_swap(args, i, plus.view_as(a)), **kwargs)), probes)
                        lm = _probe_loss(_outputs(fn(*_swap(args, i, minus.view_as(a)), **kwargs)), probes)
                        acc = acc + unit * (float(lp) - float(lm)) / (2 * eps)
                    fdf[j] = acc
            # For complex inputs both sides are dL/dx + i dL/dy = 2 dL/dconj(z); dL/dz is its conjugate.
            err = (g - fd).abs()
            bound = atol + rtol * fd.abs()
            worst = max(worst, float(err.max()) if err.numel() else 0.0)
            if bool((err > bound).any()):
                k = int((err - bound).argmax())
                failures.append(f"gradcheck: input {i} probe {label}: autograd {g.reshape(-1)[k].item()} vs finite "
                                f"difference {fd.reshape(-1)[k].item()} at flat index {k} "
                                f"(max abs error {float(err.max()):.3g})")
    return CheckReport(not failures, worst, failures)


def _swap(args, i, value):
    out = list(args)
    out[i] = value
    return out


def check_parity(candidate: Callable, reference: Callable, args: Sequence, kwargs: dict | None = None, *,
                 atol: float = 1e-5, rtol: float = 1e-4, seed: int = 0) -> CheckReport:
    """Compare a backend with the reference: outputs and the gradient of every differentiable input.

    Args:
        candidate, reference: two implementations of one op with the same signature.
        args, kwargs: inputs, used as given (dtype and device unchanged).
        atol, rtol: tolerance, as in :func:`torch.testing.assert_close`, per output and per gradient.
        seed: seeds the shared random probe.

    Returns:
        :class:`CheckReport` whose ``max_error`` is the worst :func:`rel_error`.
    """
    kwargs = dict(kwargs or {})
    idx = _diff_inputs(args)
    gen = torch.Generator().manual_seed(seed)
    results = []
    probes = None
    for fn in (candidate, reference):
        leaves = [a.detach().clone().requires_grad_(True) if i in idx else a for i, a in enumerate(args)]
        outs = _outputs(fn(*leaves, **kwargs))
        if probes is None:
            probes = [p.to(o.dtype if o.is_complex() else torch.complex64 if o.dtype != torch.float64
                           else torch.complex128) for p, o in zip(_make_probes(outs, gen), outs, strict=False)]
        loss = _probe_loss(outs, probes)
        grads = torch.autograd.grad(loss, [leaves[i] for i in idx], allow_unused=True) if idx else []
        results.append(([o.detach() for o in outs], list(grads)))
    failures: list[str] = []
    worst = 0.0
    (co, cg), (ro, rg) = results
    named = [(f"output {k}", a, b) for k, (a, b) in enumerate(zip(co, ro, strict=False))]
    named += [(f"grad of input {i}", a, b) for i, a, b in zip(idx, cg, rg, strict=False)]
    for label, a, b in named:
        if a is None or b is None:
            if (a is None) != (b is None):
                failures.append(f"parity: {label} is missing on one side")
            continue
        worst = max(worst, rel_error(a, b))
        try:
            torch.testing.assert_close(a, b, atol=atol, rtol=rtol)
        except AssertionError as exc:
            failures.append(f"parity: {label}: {exc}")
    return CheckReport(not failures, worst, failures)


def check_op(name: str, *, device: str = "cpu", seed: int = 0) -> dict[str, CheckReport]:
    """Run the conformance kit on a registered op.

    The reference is gradchecked on its example inputs (complex128, CPU); each backend registered for
    ``device`` is compared with the reference on the example inputs in complex64 on that device, within the
    tolerance the backend declared (:class:`cnet.core.registry.Backend`).

    Returns:
        ``{"gradcheck": report, "parity:<backend>": report, ...}``.

    Raises:
        KeyError: unknown op.
        ValueError: ``device`` is not a device name (``"cpu"``, ``"cuda"``, ``"cuda:1"``, ...), or is a CUDA device
            while CUDA is not available; the op registered no example inputs.
    """
    from cnet.core.plugins import registries

    try:
        device_type = torch.device(device).type
    except (RuntimeError, TypeError) as exc:
        raise ValueError(f"check_op: unknown device {device!r} for argument 'device'; expected a device such as "
                         "'cpu', 'cuda' or 'cuda:1'") from exc
    if device_type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"check_op: device {device!r} requested but CUDA is not available on this machine "
                         "(torch.cuda.is_available() is False)")
    op = registries().ops.get(name)
    if op.example is None:
        raise ValueError(f"op {name!r} registered no example inputs; pass example= to ops.add")
    reports: dict[str, CheckReport] = {}
    args, kwargs = op.example(torch.complex128, torch.device("cpu"), seed)
    reports["gradcheck"] = gradcheck(op.reference, args, kwargs, seed=seed)
    for b in op.backends:
        if b.device != device_type:
            continue
        args, kwargs = op.example(torch.complex64, torch.device(device), seed)
        ok, reason = b.supports(*args, **kwargs)
        if not ok:
            reports[f"parity:{b.name}"] = CheckReport(False, float("nan"), [f"backend refused the example: {reason}"])
            continue
        atol, rtol = b.tolerance
        reports[f"parity:{b.name}"] = check_parity(b.fn, op.reference, args, kwargs, atol=atol, rtol=rtol, seed=seed)
    return reports
