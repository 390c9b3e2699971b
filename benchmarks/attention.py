"""Born attention on the GPU: the flash-style Triton kernels against the eager reference and real flash attention,
and the linear (chunked) form against the quadratic one. A script, not a test:

    python benchmarks/attention.py [--quick] [--json PATH] [--chunk 64]

Part 1, quadratic: B=8, H=4, causal, T in {1k, 4k, 16k}. Born attention with complex D=64 as the Triton backend
(tf32 and bf16 compute), as the eager complex64 reference (``use_backend("reference")``; skipped where its
``O(T^2)`` memory would not fit, and said so), and real ``scaled_dot_product_attention`` in bf16 with D=128 (equal
stored scalars). Goals (the issue): Born quadratic <= 1.0x real SDPA time at T=4k, and >= 30x faster than eager.
Part 2, linear vs quadratic: ``cnet.core.ops.born_attention_linear`` (dispatched, chunk ``--chunk``) against
``cnet.core.ops.born_attention`` (dispatched: the Triton backend) at T in {1k, 4k, 16k, 64k}, D in {64, 32}.

Each case reports forward and forward+backward time (median of ``triton.testing.do_bench``) and the peak memory of
one forward+backward above the inputs (``torch.cuda.max_memory_allocated``); every ratio comes from the same run.
Before timing, each Born candidate is compared with the reference at B=1, H=4, T=1024 (outputs and gradients);
a candidate that fails is timed but gets no ratio. An out-of-memory or failing case prints its error and the run
goes on. ``--quick`` keeps T in {1k, 4k}. Results print as a table and, with ``--json PATH``, go to a JSON file.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import math
import platform

import torch
import torch.nn.functional as F

import cnet.core.ops
from cnet.core import use_backend
from cnet.core.plugins import registries
from cnet.core.testing import check_parity
from cnet.kernels.born_attention import born_attention_triton, triton_quadratic

DEVICE = "cuda"
B, H = 8, 4
T_QUADRATIC, T_LINEAR, T_QUICK, T_CHECK = (1024, 4096, 16384), (1024, 4096, 16384, 65536), (1024, 4096), 1024
TOLERANCE = {"tf32": 2e-2, "bf16": 6e-2}  # max-normalised error against the reference (as the GPU tests)
EAGER_BYTES_PER_SCORE = 48  # the eager reference holds ~46 bytes per T x T entry (25 GB at B8 H4 T4096, DESIGN.md)


def _complex(shape, seed):
    g = torch.Generator(device=DEVICE).manual_seed(seed)
    return torch.complex(torch.randn(shape, device=DEVICE, generator=g), torch.randn(shape, device=DEVICE, generator=g))


def _born_inputs(t, d, seed=0):
    return [_complex((B, H, t, d), seed + i) for i in range(3)]


def _sdpa_inputs(t, d):
    return [torch.randn(B, H, t, d, device=DEVICE, dtype=torch.bfloat16) for _ in range(3)]


def _measure(fn, inputs, quick):
    """``fn(*inputs)`` forward and forward+backward medians (ms) and the peak memory (GB) of one step."""
    from triton.testing import do_bench

    leaves = [x.detach().clone().requires_grad_() for x in inputs]
    with torch.no_grad():
        grad = torch.randn_like(fn(*leaves))

    def step():
        fn(*leaves).backward(grad)

    rep = 40 if quick else 100
    with torch.no_grad():
        fwd = do_bench(lambda: fn(*leaves), warmup=10, rep=rep)
    both = do_bench(step, warmup=10, rep=rep, grad_to_none=leaves)
    for x in leaves:
        x.grad = None
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    step()
    torch.cuda.synchronize()
    return {"fwd_ms": fwd, "fwdbwd_ms": both, "peak_gb": (torch.cuda.max_memory_allocated() - base) / 1e9}


def _run(results, case, fn, make_inputs, quick):
    """Measure one case into ``results`` (``status`` "ok", "oom", "skipped: ..." or "error: ...") and print it."""
    row = dict(case)
    try:
        row.update(_measure(fn, make_inputs(), quick))
        row["status"] = "ok"
    except torch.cuda.OutOfMemoryError:
        row["status"] = "oom"
    except Exception as exc:  # noqa: BLE001 - one failing case must not stop the run
        row["status"] = f"error: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
    gc.collect()
    torch.cuda.empty_cache()
    results.append(row)
    _print_row(row)
    return row


def _print_row(row):
    cells = [f"{row.get(k, ''):>10.3f}" if isinstance(row.get(k), float) else f"{'-':>10}"
             for k in ("fwd_ms", "fwdbwd_ms", "peak_gb")]
    print(f"{row['part']:>4} {row['name']:<34} {row['T']:>6} {row['D']:>4} {' '.join(cells)}  {row['status']}",
          flush=True)


def _header(title):
    print(f"\n{title}\n{'part':>4} {'candidate':<34} {'T':>6} {'D':>4} {'fwd ms':>10} {'fwd+bwd ms':>10} "
          f"{'peak GB':>10}  status", flush=True)


def _born(precision):
    return lambda q, k, v: born_attention_triton(q, k, v, causal=True, precision=precision)


def _eager(q, k, v):
    with use_backend("reference"):
        return cnet.core.ops.born_attention(q, k, v, causal=True)


def _sdpa(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def _correctness():
    """Max-normalised parity error of each Triton precision against the reference at B=1, H=4, T=T_CHECK."""
    g = torch.Generator(device=DEVICE).manual_seed(7)
    args = [torch.randn(1, H, T_CHECK, 64, device=DEVICE, dtype=torch.complex64, generator=g) for _ in range(3)]
    checks = {}
    for precision in TOLERANCE:
        err = check_parity(_born(precision), _eager, args).max_error
        checks[precision] = {"max_error": err, "ok": err < TOLERANCE[precision]}
        print(f"correctness {precision}: max-normalised error {err:.2e} (tolerance {TOLERANCE[precision]:.0e}) "
              f"{'ok' if checks[precision]['ok'] else 'FAILED: no ratios reported for it'}", flush=True)
    return checks


def _ratio(rows, num, den, t, key):
    """``key`` of candidate ``num`` over that of ``den`` at ``T = t`` (None unless both ran)."""
    a = next((r for r in rows if r["name"] == num and r["T"] == t and r["status"] == "ok"), None)
    b = next((r for r in rows if r["name"] == den and r["T"] == t and r["status"] == "ok"), None)
    return None if a is None or b is None else a[key] / b[key]


def part_quadratic(results, checks, quick):
    _header(f"Part 1: quadratic Born attention (B={B}, H={H}, causal); SDPA is real bf16 at D=128")
    ts = T_QUICK if quick else T_QUADRATIC
    rows = []
    free = torch.cuda.mem_get_info()[0]
    for t in ts:
        for precision in TOLERANCE:
            rows.append(_run(results, {"part": 1, "name": f"born triton {precision}", "T": t, "D": 64},
                             _born(precision), lambda t=t: _born_inputs(t, 64), quick))
        need = EAGER_BYTES_PER_SCORE * B * H * t * t
        case = {"part": 1, "name": "born eager reference", "T": t, "D": 64}
        if need > 0.8 * free:
            rows.append({**case, "status": f"skipped: would need ~{need / 1e9:.0f} GB of {free / 1e9:.0f} GB free"})
            results.append(rows[-1])
            _print_row(rows[-1])
        else:
            rows.append(_run(results, case, _eager, lambda t=t: _born_inputs(t, 64), quick))
        rows.append(_run(results, {"part": 1, "name": "sdpa bf16 (real)", "T": t, "D": 128}, _sdpa,
                         lambda t=t: _sdpa_inputs(t, 128), quick))
    ratios = []
    print("\nratios (fwd+bwd time; goals: born / sdpa <= 1.0 at T=4k, eager / born >= 30)")
    for t in ts:
        for precision, check in checks.items():
            name = f"born triton {precision}"
            if not check["ok"]:
                print(f"  T={t:>6} {name}: correctness failed, no ratio")
                continue
            for key in ("fwd_ms", "fwdbwd_ms"):
                sdpa = _ratio(rows, name, "sdpa bf16 (real)", t, key)
                eager = _ratio(rows, "born eager reference", name, t, key)
                ratios.append({"T": t, "candidate": name, "time": key, "born_over_sdpa": sdpa,
                               "eager_over_born": eager})
                print(f"  T={t:>6} {name:<18} {key:<9} born/sdpa = {_fmt(sdpa)}   eager/born = {_fmt(eager)}")
    return ratios


def part_linear(results, chunk, quick):
    _header(f"Part 2: Born linear (dispatched, chunk={chunk}) vs Born quadratic (dispatched), B={B}, H={H}, causal")
    ts = T_QUICK if quick else T_LINEAR
    ops = registries().ops
    rows = []
    for d in (64, 32):
        for t in ts:
            # the backend the dispatcher picks for these shapes (a broadcast view stands in for the inputs)
            probe = (torch.zeros(1, 1, 1, d, dtype=torch.complex64, device=DEVICE).expand(B, H, t, d),) * 3
            lin = ops.select("born_attention_linear", probe, {"chunk": chunk})[0]
            quad = ops.select("born_attention", probe, {"causal": True})[0]
            rows.append(_run(results, {"part": 2, "name": f"born linear [{lin}]", "T": t, "D": d},
                             lambda q, k, v: cnet.core.ops.born_attention_linear(q, k, v, chunk=chunk),
                             lambda t=t, d=d: _born_inputs(t, d), quick))
            quad = f"{quad} {triton_quadratic.PRECISION}" if quad == "triton" else quad
            rows.append(_run(results, {"part": 2, "name": f"born quadratic [{quad}]", "T": t, "D": d},
                             lambda q, k, v: cnet.core.ops.born_attention(q, k, v, causal=True),
                             lambda t=t, d=d: _born_inputs(t, d), quick))
    print("\nratios (linear / quadratic, fwd+bwd time and peak memory)")
    ratios = []
    for d in (64, 32):
        for t in ts:
            lin = next(r for r in rows if r["T"] == t and r["D"] == d and "linear" in r["name"])
            quad = next(r for r in rows if r["T"] == t and r["D"] == d and "quadratic" in r["name"])
            ok = lin["status"] == quad["status"] == "ok"
            time = lin["fwdbwd_ms"] / quad["fwdbwd_ms"] if ok else None
            memory = lin["peak_gb"] / quad["peak_gb"] if ok else None
            ratios.append({"T": t, "D": d, "linear_over_quadratic_time": time, "linear_over_quadratic_memory": memory})
            print(f"  T={t:>6} D={d:>3} time {_fmt(time)}   memory {_fmt(memory)}"
                  + ("" if ok else f"   ({lin['status']} / {quad['status']})"))
    return ratios


def _fmt(x):
    return "n/a" if x is None or not math.isfinite(x) else f"{x:.2f}x"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="T in {1k, 4k} only, shorter timing")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON to PATH")
    parser.add_argument("--chunk", type=int, default=64, help="chunk of the linear form (default 64)")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        raise SystemExit("benchmarks/attention.py needs a CUDA device")
    import triton

    meta = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
            "python": platform.python_version(), "date": datetime.datetime.now().isoformat(timespec="seconds"),
            "B": B, "H": H, "chunk": args.chunk, "quick": args.quick}
    print(" ".join(f"{k}={v}" for k, v in meta.items()))
    results = []
    checks = _correctness()
    quadratic = part_quadratic(results, checks, args.quick)
    linear = part_linear(results, args.chunk, args.quick)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "correctness": checks, "results": results,
                       "ratios": {"quadratic": quadratic, "linear": linear}}, f, indent=1)
        print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()
