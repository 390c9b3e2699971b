"""Developer sessions. The README's two set-up commands run ``demo`` and ``tests``.

    nox -s tests    every package's tests (CPU); data tests need CNET_DATA_DIR (they skip without it)
    nox -s demo     the main job: train a small Born-rule LM on tiny-shakespeare, sample from it, score it
    nox -s lint     ruff
    nox -s bench    GPU benchmarks (needs CUDA)

Each session makes its own virtual environment with CPU PyTorch (``torch==2.13.0``) and the five packages from
this checkout. ``nox --no-venv -s tests`` runs in the current environment instead, installing nothing
(that is what ``.ci/run`` does after building its own environment).
"""

from __future__ import annotations

import os

import nox

nox.options.sessions = ["tests"]
nox.options.default_venv_backend = "venv"

PACKAGES = ["packages/cnet-core", "packages/cnet-data", "packages/cnet-models", "packages/cnet-hub",
            "packages/cnet-kernels"]
TORCH = os.environ.get("CNET_TORCH_SPEC", "torch==2.13.0")
DEMO_DIR = "runs/demo-born-lm"


def _install(session: nox.Session, *extra: str) -> None:
    if session.venv_backend == "none":
        return
    session.install(TORCH)
    session.install(*PACKAGES, *extra)


@nox.session
def tests(session: nox.Session) -> None:
    """Run every package's tests."""
    _install(session, "pytest")
    session.run("python", "-m", "pytest", *[f"{p}/tests" for p in PACKAGES], *session.posargs)


@nox.session
def demo(session: nox.Session) -> None:
    """Train born-lm on tiny-shakespeare on the CPU (about 4 minutes of training on 2 cores), sample, score."""
    _install(session)
    session.run("cnet", "train", "born-lm", "--dataset", "tiny_shakespeare", "--output", DEMO_DIR, "--overwrite",
                "--steps", "3000", "--set", "embed_dim=64", "--set", "num_layers=2", "--set", "batch_size=32",
                "--set", "lr=1e-2", "--set", "eval_every=500", "--set", "max_minutes=9", *session.posargs)
    session.run("cnet", "generate", "--model", DEMO_DIR, "--prompt", "ROMEO:", "--max-new-tokens", "300",
                "--temperature", "0.7")
    session.run("cnet", "eval", "--model", DEMO_DIR, "--dataset", "tiny_shakespeare")


@nox.session
def lint(session: nox.Session) -> None:
    """ruff over the whole tree."""
    if session.venv_backend != "none":
        session.install("ruff")
    session.run("ruff", "check", ".")


@nox.session
def bench(session: nox.Session) -> None:
    """GPU benchmarks (one script per question; prints ratios against baselines measured in the same run)."""
    scripts = sorted(p for p in os.listdir("benchmarks") if p.endswith(".py")) if os.path.isdir("benchmarks") else []
    if not scripts:
        session.skip("no benchmark scripts in benchmarks/ yet")
    _install(session)
    for script in scripts:
        session.run("python", f"benchmarks/{script}", *session.posargs)
