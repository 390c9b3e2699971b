"""Whole training-step throughput of CNet's PG-19 byte model (issue 3, item 5), on one GPU.

Model: ``born-lm`` with 256 byte tokens, E=256, 6 blocks, 4 heads (Q/K/V width E/2 = 128, so 32 complex features
per head), RoPE only, context 4096, batch 8; the mixer is either linear Born attention with a fixed decay
(``attn_mode="linear"``) or complex gated linear attention (``mixer="gla"``). A step is forward, Born loss,
backward and an AdamW update, timed with CUDA events after warm-up; inputs are random bytes (throughput does not
depend on the text). Each configuration runs with the default backends (the Triton kernels where registered) and,
for comparison, with ``use_backend("reference")``; in strict FP32 and with TF32 allowed for the matrix products.
CNet's published H100 numbers (CNet README, "ms per training step") are printed beside ours for reference; they
were not measured here.

    python benchmarks/pg19_step.py [--steps 10] [--chunk 64] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import time

import torch

import cnet.models
from cnet.core import use_backend

PUBLISHED_H100_MS = {("born", "fp32"): 383, ("born", "tf32"): 246, ("gla", "fp32"): 329, ("gla", "tf32"): 203}


def _model(mixer: str, chunk: int, decay: float) -> torch.nn.Module:
    extra = {"attn_mode": "linear", "attn_chunk": chunk, "attn_decay": decay} if mixer == "born" else {"mixer": "gla"}
    return cnet.models.create("born-lm", vocab_size=256, embed_dim=256, num_layers=6, num_heads=4, context=4096,
                              **extra).cuda()


def step_ms(mixer: str, backend: str | None, tf32: bool, steps: int, chunk: int, decay: float) -> dict:
    """Median ms per training step and peak GiB for one configuration."""
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.manual_seed(0)
    model = _model(mixer, chunk, decay)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    ids = torch.randint(0, 256, (8, 4097), device="cuda")
    x, y = ids[:, :-1], ids[:, 1:]
    times = []
    torch.cuda.reset_peak_memory_stats()
    with use_backend(backend):
        for i in range(steps + 3):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            loss = model(x, y).loss
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            end.record()
            torch.cuda.synchronize()
            if i >= 3:
                times.append(start.elapsed_time(end))
    times.sort()
    return {"ms": times[len(times) // 2], "peak_gib": torch.cuda.max_memory_allocated() / 2**30,
            "loss": loss.item()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=10, help="timed steps per configuration (after 3 warm-up)")
    parser.add_argument("--chunk", type=int, default=64, help="chunk of the linear Born form")
    parser.add_argument("--decay", type=float, default=0.999, help="fixed Born score decay per token")
    parser.add_argument("--skip-reference", action="store_true", help="time the default backends only")
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("benchmarks/pg19_step.py needs a CUDA device")
    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}, {time.strftime('%Y-%m-%d')}")
    print(f"{'mixer':6} {'math':5} {'backend':10} {'ms/step':>8} {'peak GiB':>9} {'CNet H100 ms':>13} {'speed-up':>9}")
    rows = []
    for mixer in ("born", "gla"):
        for math in ("fp32", "tf32"):
            for backend in (None, "reference")[: 1 if args.skip_reference else 2]:
                name = backend or "default"
                try:
                    r = step_ms(mixer, backend, math == "tf32", args.steps, args.chunk, args.decay)
                except Exception as exc:  # noqa: BLE001 - one failing case must not stop the table
                    print(f"{mixer:6} {math:5} {name:10} failed: {type(exc).__name__}: {str(exc)[:200]}")
                    torch.cuda.empty_cache()
                    continue
                published = PUBLISHED_H100_MS[(mixer, math)]
                r.update(mixer=mixer, math=math, backend=name, published_h100_ms=published,
                         speedup_vs_published=published / r["ms"])
                rows.append(r)
                print(f"{mixer:6} {math:5} {name:10} {r['ms']:8.1f} {r['peak_gib']:9.2f} {published:13d} "
                      f"{r['speedup_vs_published']:8.2f}x")
                torch.cuda.empty_cache()
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
