"""Complex diagonal scan and gated linear attention on the GPU: Triton kernels against the memory ceiling and
the eager references, measured in one run.

    python benchmarks/scan.py [--json PATH]

1. Device copy bandwidth: a large ``torch`` copy (bytes read + written / time), the ceiling for the scan.
2. ``complex_scan`` at B=8, T=4096, 2048 channels, complex64: the Triton scan's forward, backward and forward +
   backward, each as the bytes that must move (forward: read a, b, write h; backward: read a, h, grad_h, write
   grad_a, grad_b) / time and as a fraction of the copy bandwidth (the target is >= 0.6 for forward + backward),
   then the eager reference (recursive doubling) for comparison.
3. ``gated_linear_attention`` forward + backward at B=8, H=4, D=Dv in (32, 64), T=4096: the chunked Triton
   kernels (products in tf32x3, the default, and in tf32) against the O(T^2) reference.

Every Triton case is first checked against the reference (relative error of the outputs and every gradient); a
case that fails the check is reported as failed, not timed. A case that raises prints its error and the script
goes on. Times are medians of CUDA-event-timed repetitions after warm-up (which includes Triton's autotuning).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import traceback

import torch

from cnet.core.ops.reference import complex_scan, gated_linear_attention
from cnet.core.testing import rel_error
from cnet.kernels.complex_scan import chunked, complex_scan_triton
from cnet.kernels.gated_linear_attention import gated_linear_attention_triton

SCAN_SHAPE = (8, 4096, 2048)
GLA_SIZE = {"B": 8, "H": 4, "T": 4096}
GLA_WIDTHS = (32, 64)
SCAN_TARGET = 0.6  # forward + backward bandwidth as a fraction of the copy's (the target)
SCAN_TOLERANCE = 1e-4  # worst relative error (complex64) accepted before a case is timed
GLA_TOLERANCE = {"tf32x3": 1e-3, "tf32": 2e-2}  # per dot precision of the Triton GLA ("ieee" spills on sm_90)


def _median_ms(fn, warmup: int, reps: int) -> float:
    """Median wall time of ``fn()`` on the current CUDA stream, in milliseconds."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def _free() -> None:
    torch.cuda.synchronize()
    torch.cuda.empty_cache()


def copy_bandwidth() -> dict:
    """Bytes read + written per second by ``dst.copy_(src)`` on 4 GiB buffers."""
    src = torch.empty(2**30, dtype=torch.float32, device="cuda").uniform_()
    dst = torch.empty_like(src)
    ms = _median_ms(lambda: dst.copy_(src), warmup=3, reps=20)
    nbytes = 2 * src.numel() * src.element_size()
    return {"case": "device copy", "ms": ms, "bytes": nbytes, "GB/s": nbytes / ms / 1e6}


def _grad_fn(fn, inputs, probe, kwargs=None):
    """A closure running ``fn`` forward + backward: the output and the gradients of every input for the loss
    ``Re sum(conj(probe) * out)``."""
    kwargs = kwargs or {}

    def run():
        out = fn(*inputs, **kwargs)
        return out, torch.autograd.grad(out, inputs, probe)

    return run


def _backward_ms(fn, inputs) -> float:
    """Median time of the backward alone: one forward kept, its graph retained, backward repeated."""
    out = fn(*inputs)
    probe = torch.randn_like(out)
    return _median_ms(lambda: torch.autograd.grad(out, inputs, probe, retain_graph=True), warmup=3, reps=20)


def _worst_error(candidate, reference) -> float:
    (co, cg), (ro, rg) = candidate, reference
    return max([rel_error(co, ro)] + [rel_error(c, r) for c, r in zip(cg, rg, strict=True)])


def scan_cases(copy_gbs: float) -> list[dict]:
    """Forward, backward and forward + backward of the Triton scan, and the reference, at ``SCAN_SHAPE``."""
    gen = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(SCAN_SHAPE, dtype=torch.complex64, device="cuda", generator=gen)
    a = (a / a.abs().clamp_min(1.0)).requires_grad_(True)
    b = torch.randn(SCAN_SHAPE, dtype=torch.complex64, device="cuda", generator=gen).requires_grad_(True)
    tensor_bytes = a.numel() * a.element_size()
    probe = torch.randn(SCAN_SHAPE, dtype=torch.complex64, device="cuda", generator=gen)
    triton_run, reference_run = _grad_fn(complex_scan_triton, (a, b), probe), _grad_fn(complex_scan, (a, b), probe)
    err = _worst_error(triton_run(), reference_run())
    results = [{"case": "scan check: worst relative error (output, grad a, grad b) vs reference", "error": err}]
    _free()
    if not err <= SCAN_TOLERANCE:
        results.append({"case": "scan triton", "error": f"relative error {err:.3g} > {SCAN_TOLERANCE} against "
                        "the reference; not timed"})
        return results
    with torch.no_grad():
        fwd_ms = _median_ms(lambda: complex_scan_triton(a, b), warmup=3, reps=20)
    bwd_ms = _backward_ms(complex_scan_triton, (a, b))
    both_ms = _median_ms(triton_run, warmup=3, reps=20)
    tuned = {name: str(getattr(kernel, "best_config", None)) for name, kernel in
             (("forward", chunked._fwd_tuned), ("backward", chunked._bwd_tuned))}
    results.append({"case": "scan autotuned blocks", "info": tuned})
    for case, ms, moved in (("scan triton forward", fwd_ms, 3), ("scan triton backward", bwd_ms, 5),
                            ("scan triton forward+backward", both_ms, 8)):
        gbs = moved * tensor_bytes / ms / 1e6
        results.append({"case": case, "ms": ms, "bytes": moved * tensor_bytes, "GB/s": gbs,
                        "fraction_of_copy": gbs / copy_gbs})
    met = results[-1]["fraction_of_copy"] >= SCAN_TARGET
    results.append({"case": f"scan target: forward+backward >= {SCAN_TARGET} of copy", "info": "met" if met else
                    "NOT met"})
    _free()
    with torch.no_grad():
        ref_fwd_ms = _median_ms(lambda: complex_scan(a, b), warmup=1, reps=5)
    ref_ms = _median_ms(reference_run, warmup=1, reps=5)
    results.append({"case": "scan reference forward", "ms": ref_fwd_ms, "triton_speedup": ref_fwd_ms / fwd_ms})
    results.append({"case": "scan reference forward+backward", "ms": ref_ms, "triton_speedup": ref_ms / both_ms})
    return results


def gla_cases(d: int) -> list[dict]:
    """Forward + backward of the Triton GLA (each precision of ``GLA_TOLERANCE``) and of the reference, D = Dv =
    ``d``."""
    size = GLA_SIZE
    gen = torch.Generator(device="cuda").manual_seed(d)
    shape = (size["B"], size["H"], size["T"], d)
    q, k, v = ((torch.randn(shape, dtype=torch.complex64, device="cuda", generator=gen) / d**0.5)
               .requires_grad_(True) for _ in range(3))
    g = (torch.randn(shape[:-1], device="cuda", generator=gen) + 2.0).requires_grad_(True)
    inputs = (q, k, v, g)
    label = f"gla B{size['B']} H{size['H']} T{size['T']} D{d}"
    torch.cuda.reset_peak_memory_stats()
    probe = torch.randn(shape, dtype=torch.complex64, device="cuda", generator=gen)
    reference_run = _grad_fn(gated_linear_attention, inputs, probe)
    expected = reference_run()
    ref_ms = _median_ms(reference_run, warmup=1, reps=3)
    results = [{"case": f"{label} reference forward+backward", "ms": ref_ms,
                "peak_GB": torch.cuda.max_memory_allocated() / 1e9}]
    _free()
    for precision, tol in GLA_TOLERANCE.items():
        try:
            run = _grad_fn(gated_linear_attention_triton, inputs, probe, {"precision": precision})
            err = _worst_error(run(), expected)
            if not err <= tol:
                raise AssertionError(f"relative error {err:.3g} > {tol} against the reference; not timed")
            ms = _median_ms(run, warmup=3, reps=10)
            results.append({"case": f"{label} triton {precision} forward+backward", "ms": ms, "error": err,
                            "triton_speedup": ref_ms / ms})
        except Exception as exc:  # noqa: BLE001 - report and go on
            results.append({"case": f"{label} triton {precision}", "error": f"{type(exc).__name__}: {exc}"})
            traceback.print_exc()
        _free()
    return results


def _print(record: dict) -> None:
    parts = [f"{record['case']:<62}"]
    for key, fmt in (("ms", "{:9.3f} ms"), ("GB/s", "{:8.0f} GB/s"), ("fraction_of_copy", "{:6.2f} of copy"),
                     ("triton_speedup", "triton x{:.1f}"), ("peak_GB", "peak {:.1f} GB")):
        if key in record:
            parts.append(fmt.format(record[key]))
    if "info" in record:
        parts.append(str(record["info"]))
    if "error" in record:
        parts.append(f"{record['error']:.2e}" if isinstance(record["error"], float) else f"ERROR {record['error']}")
    print("  ".join(parts), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", metavar="PATH", help="also write the records to this JSON file")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("benchmarks/scan.py needs a CUDA device")
    import triton

    print(f"{torch.cuda.get_device_name()}  torch {torch.__version__}  triton {triton.__version__}  "
          f"python {platform.python_version()}", flush=True)
    records: list[dict] = []
    copy_gbs = None
    cases = [("device copy", lambda: [copy_bandwidth()]),
             ("scan", lambda: scan_cases(copy_gbs)),
             *((f"gla D{d}", lambda d=d: gla_cases(d)) for d in GLA_WIDTHS)]
    for name, case in cases:
        try:
            if name == "scan" and copy_gbs is None:
                raise RuntimeError("no copy bandwidth measured")
            for record in case():
                records.append(record)
                _print(record)
                if record["case"] == "device copy":
                    copy_gbs = record["GB/s"]
        except Exception as exc:  # noqa: BLE001 - a failing case is reported and the script goes on
            record = {"case": name, "error": f"{type(exc).__name__}: {exc}"}
            records.append(record)
            _print(record)
            traceback.print_exc()
        _free()
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                       "triton": triton.__version__, "records": records}, f, indent=2)


if __name__ == "__main__":
    main()
