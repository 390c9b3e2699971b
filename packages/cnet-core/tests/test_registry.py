"""Op registry, plugin manager and CLI: dispatch, overrides, plugin loading, logging, `cnet plugins` / `check-op`.

Every test runs on a fresh registry; the ``bare`` fixture also turns entry-point autoloading off so only the
built-ins of cnet-core are present, whatever other cnet packages are installed.
"""

import importlib.metadata
import logging
import os
import subprocess
import sys
import types

import pytest
import torch

import cnet.core.ops
from cnet.core import plugins, use_backend
from cnet.core.cli import main
from cnet.core.hookspecs import hookimpl
from cnet.core.ops import reference as ref


@pytest.fixture
def bare(monkeypatch):
    """A fresh registry holding only cnet-core's built-ins; global plugin state is forgotten afterwards."""
    monkeypatch.setenv("CNET_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.delenv("CNET_BACKEND", raising=False)
    plugins.reset()
    yield plugins.registries()
    plugins.reset()  # the next use reloads with the environment monkeypatch restores


def _xy(dtype=torch.complex64):
    g = torch.Generator().manual_seed(0)
    return torch.randn(3, 5, dtype=dtype, generator=g), torch.randn(5, dtype=dtype, generator=g)


def _recording(name, calls):
    def fn(x, y):
        calls.append(name)
        return ref.hadamard(x, y)

    return fn


def _only_complex64(x, y):
    return (x.dtype == torch.complex64, "only complex64")


# ---------------------------------------------------------------- dispatch

def test_dispatch_prefers_higher_priority_backend_that_accepts(bare):
    calls = []
    bare.ops.add_backend("hadamard", "slow", _recording("slow", calls), device="cpu", priority=1)
    bare.ops.add_backend("hadamard", "fast", _recording("fast", calls), device="cpu", priority=10,
                         supports=_only_complex64)
    x, y = _xy()
    torch.testing.assert_close(cnet.core.ops.hadamard(x, y), x * y)
    cnet.core.ops.hadamard(*_xy(torch.complex128))  # fast refuses: next in priority order
    assert calls == ["fast", "slow"]


def test_dispatch_falls_back_to_reference_when_every_backend_refuses(bare):
    calls = []
    bare.ops.add_backend("hadamard", "fast", _recording("fast", calls), device="cpu", supports=_only_complex64)
    x, y = _xy(torch.complex128)
    assert bare.ops.select("hadamard", (x, y), {})[0] == "reference"
    torch.testing.assert_close(cnet.core.ops.hadamard(x, y), x * y)
    assert calls == []


def test_backends_serve_only_their_device_type(bare):
    calls = []
    bare.ops.add_backend("hadamard", "gpu_only", _recording("gpu_only", calls), device="cuda", priority=100)
    bare.ops.add_backend("hadamard", "meta_only", _recording("meta_only", calls), device="meta")
    x, y = _xy()
    cnet.core.ops.hadamard(x, y)
    assert calls == []
    assert bare.ops.select("hadamard", (x.to("meta"), y.to("meta")), {})[0] == "meta_only"


def test_use_backend_overrides_the_choice(bare):
    calls = []
    bare.ops.add_backend("hadamard", "slow", _recording("slow", calls), device="cpu", priority=1)
    bare.ops.add_backend("hadamard", "fast", _recording("fast", calls), device="cpu", priority=10)
    x, y = _xy()
    with use_backend("reference"):
        cnet.core.ops.hadamard(x, y)
    with use_backend("slow"):
        cnet.core.ops.hadamard(x, y)
    with use_backend("missing"):  # an unknown forced backend is passed over: normal choice
        cnet.core.ops.hadamard(x, y)
    cnet.core.ops.hadamard(x, y)
    assert calls == ["slow", "fast", "fast"]


def test_cnet_backend_environment_variable(bare, monkeypatch):
    calls = []
    bare.ops.add_backend("hadamard", "fast", _recording("fast", calls), device="cpu")
    monkeypatch.setenv("CNET_BACKEND", "reference")
    cnet.core.ops.hadamard(*_xy())
    assert calls == []
    monkeypatch.delenv("CNET_BACKEND")
    cnet.core.ops.hadamard(*_xy())
    assert calls == ["fast"]


def test_backend_choice_is_logged_once(bare, caplog):
    caplog.set_level(logging.INFO, logger="cnet.core.registry")
    bare.ops.add_backend("hadamard", "fast", _recording("fast", []), device="cpu", supports=_only_complex64)
    for _ in range(3):
        cnet.core.ops.hadamard(*_xy())
        cnet.core.ops.hadamard(*_xy(torch.complex128))
    messages = [r.getMessage() for r in caplog.records if r.name == "cnet.core.registry"]
    assert messages == ["cnet: op hadamard uses backend fast on cpu",
                        "cnet: op hadamard passed over backend fast on cpu: only complex64",
                        "cnet: op hadamard uses backend reference on cpu"]


def test_a_forced_backend_that_cannot_run_falls_back_with_one_warning(bare, caplog):
    calls = []
    bare.ops.add_backend("hadamard", "gpu_only", _recording("gpu_only", calls), device="cuda")
    bare.ops.add_backend("hadamard", "fast", _recording("fast", calls), device="cpu", supports=_only_complex64)
    caplog.set_level(logging.WARNING, logger="cnet.core.registry")
    x, y = _xy()
    with use_backend("gpu_only"):  # CPU tensors to a CUDA-only backend: the normal choice runs, never a crash
        for _ in range(2):
            cnet.core.ops.hadamard(x, y)
    with use_backend("fast"):  # forced, but its supports() refuses complex128
        cnet.core.ops.hadamard(*_xy(torch.complex128))
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert calls == ["fast", "fast"]
    assert warnings == ["cnet: op hadamard passed over backend gpu_only on cpu: backend 'gpu_only' does not exist "
                        "for cpu",
                        "cnet: op hadamard passed over backend fast on cpu: only complex64"]


# ---------------------------------------------------------------- names

def test_unknown_names_list_the_known_ones(bare):
    with pytest.raises(KeyError, match="unknown op 'nope'; known ops: .*hadamard.*token_norm"):
        bare.ops.get("nope")
    with pytest.raises(KeyError, match="unknown op 'nope'"):
        cnet.core.ops.call("nope", 1)
    with pytest.raises(AttributeError, match="has no op 'nope'"):
        cnet.core.ops.nope  # noqa: B018
    with pytest.raises(KeyError, match="unknown model 'nope'; known models: \\(none installed\\)"):
        bare.models.get("nope")
    bare.models.add("tiny", object)
    with pytest.raises(KeyError, match="known models: tiny"):
        bare.models.get("nope")
    with pytest.raises(ValueError, match="model 'tiny' is already registered"):
        bare.models.add("tiny", object)


def test_builtins_register_every_reference_op_with_an_example(bare):
    assert bare.ops.names() == sorted(ref.__all__)
    for name in ("hadamard", "cgelu", "complex_dropout", "token_norm", "linear", "embedding"):
        op = bare.ops.get(name)
        assert op.reference is getattr(ref, name) and op.example is not None
    assert {"plugins", "check-op"} <= set(bare.commands.names())


# ---------------------------------------------------------------- plugins

def _plugin(name, register_ops):
    """A third-party plugin as pluggy sees an entry-point module: a module with a ``cnet_register_ops`` hook."""
    module = types.ModuleType(name)
    module.cnet_register_ops = hookimpl(register_ops)
    return module


def _register_triple(ops):
    ops.add("triple", lambda z: ref.hadamard(z, torch.full_like(z, 3)))


def test_pluggy_plugin_adds_an_op_reachable_from_cnet_core_ops(bare):
    plugins.reset()
    plugins.plugin_manager().register(_plugin("triple_plugin", _register_triple))
    assert "triple" in plugins.registries().ops.names()
    x, _ = _xy()
    torch.testing.assert_close(cnet.core.ops.triple(x), 3 * x)


def _fake_entry_points(monkeypatch, module_name, plugin):
    monkeypatch.setitem(sys.modules, module_name, plugin)
    eps = [importlib.metadata.EntryPoint("fake", module_name, "cnet"),
           importlib.metadata.EntryPoint("broken", "cnet_no_such_module_for_tests", "cnet")]
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group=None: eps if group == "cnet" else [])


def test_entry_points_load_unless_autoload_is_disabled(bare, monkeypatch, caplog, capsys):
    _fake_entry_points(monkeypatch, "cnet_fake_plugin", _plugin("cnet_fake_plugin", _register_triple))

    monkeypatch.delenv("CNET_DISABLE_PLUGIN_AUTOLOAD")
    plugins.reset()
    reg = plugins.registries()
    assert "triple" in reg.ops.names()
    assert set(reg.failed) == {"broken"} and "ModuleNotFoundError" in reg.failed["broken"]
    assert "plugin 'broken'" in caplog.text and "failed to load" in caplog.text
    assert main(["plugins"]) == 0
    out = capsys.readouterr().out
    assert "  fake: cnet_fake_plugin" in out and "  broken: FAILED TO LOAD (ModuleNotFoundError" in out

    monkeypatch.setenv("CNET_DISABLE_PLUGIN_AUTOLOAD", "1")
    plugins.reset()
    reg = plugins.registries()
    assert [n for n, _ in plugins.plugin_manager().list_name_plugin()] == ["cnet.core.builtin"]
    assert reg.ops.names() == sorted(ref.__all__) and reg.failed == {}
    assert reg.models.names() == [] and reg.datasets.names() == []


def test_a_plugin_with_a_misspelled_hook_is_reported_and_unregistered(bare, monkeypatch, caplog, capsys):
    typo = types.ModuleType("cnet_typo_plugin")
    typo.cnet_register_op = hookimpl(_register_triple)  # should be cnet_register_ops
    typo.cnet_register_models = hookimpl(lambda models: models.add("typo-model", object))  # a valid hook beside it
    _fake_entry_points(monkeypatch, "cnet_typo_plugin", typo)
    monkeypatch.delenv("CNET_DISABLE_PLUGIN_AUTOLOAD")
    plugins.reset()
    reg = plugins.registries()
    assert reg.failed["fake"] == ("PluginValidationError: unknown hook 'cnet_register_op' in plugin "
                                  f"{typo!r}; cnet's hooks are cnet_register_commands, cnet_register_datasets, "
                                  "cnet_register_models, cnet_register_ops")
    assert "plugin 'fake' (cnet_typo_plugin) failed to load" in caplog.text
    # unregistered as a whole: none of its hooks run, and the plugin manager validates again
    assert plugins.plugin_manager().get_plugin("fake") is None and "typo-model" not in reg.models
    assert "triple" not in reg.ops.names()
    plugins.plugin_manager().check_pending()
    assert main(["plugins"]) == 0
    out = capsys.readouterr().out
    assert "  fake: FAILED TO LOAD (PluginValidationError: unknown hook 'cnet_register_op'" in out
    assert "  fake: cnet_typo_plugin" not in out



def test_a_plugin_whose_hook_has_wrong_arguments_is_not_left_half_registered(bare, monkeypatch):
    wrong = types.ModuleType("cnet_wrong_plugin")
    wrong.cnet_register_models = hookimpl(lambda models: models.add("half-model", object))  # registered first
    wrong.cnet_register_ops = hookimpl(lambda registry: None)  # the hookspec's argument is 'ops'
    _fake_entry_points(monkeypatch, "cnet_wrong_plugin", wrong)
    monkeypatch.delenv("CNET_DISABLE_PLUGIN_AUTOLOAD")
    plugins.reset()
    reg = plugins.registries()
    assert reg.failed["fake"].startswith("PluginValidationError: Plugin 'fake' for hook 'cnet_register_ops'")
    assert plugins.plugin_manager().get_plugin("fake") is None and "half-model" not in reg.models


# ---------------------------------------------------------------- CLI

def test_cli_plugins_lists_plugins_ops_and_backends(bare, capsys):
    bare.ops.add_backend("hadamard", "fast", ref.hadamard, device="cpu", priority=10)
    assert main(["plugins"]) == 0
    out = capsys.readouterr().out
    assert "  cnet.core.builtin: cnet.core.builtin" in out
    assert "  hadamard: reference, fast[cpu, priority 10]" in out
    assert "  token_norm: reference\n" in out
    assert "models: (none: install cnet-models)" in out


def test_cli_output_into_a_closed_pipe_ends_quietly():
    """`cnet plugins | head -1`: the reader is gone before the output is flushed; no error line, exit code 0."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # every write to write_end now fails with EPIPE (BrokenPipeError)
    try:
        proc = subprocess.run([sys.executable, "-m", "cnet.core.cli", "plugins"], stdout=write_end,
                              stderr=subprocess.PIPE, env={**os.environ, "CNET_DISABLE_PLUGIN_AUTOLOAD": "1"},
                              timeout=120)
    finally:
        os.close(write_end)
    assert (proc.returncode, proc.stderr.decode()) == (0, "")


def test_cli_check_op_passes_for_hadamard_and_a_correct_backend(bare, capsys):
    bare.ops.add_backend("hadamard", "fast", ref.hadamard, device="cpu")
    assert main(["check-op", "hadamard"]) == 0
    out = capsys.readouterr().out
    assert "hadamard gradcheck: ok" in out and "hadamard parity:fast: ok" in out


class _BadSquare(torch.autograd.Function):
    """z^2 with a backward that forgets the factor 2 of dz^2/dz."""

    @staticmethod
    def forward(ctx, z):
        ctx.save_for_backward(z)
        return z * z

    @staticmethod
    def backward(ctx, grad_out):
        (z,) = ctx.saved_tensors
        return grad_out * z.conj()


def _register_bad_square(ops):
    def example(dtype, device, seed):
        return (torch.randn(3, dtype=dtype, generator=torch.Generator().manual_seed(seed)).to(device),), {}

    ops.add("bad_square", _BadSquare.apply, example=example)


def test_cli_check_op_fails_for_a_wrong_backward(bare, capsys):
    plugins.reset()
    plugins.plugin_manager().register(_plugin("bad_square_plugin", _register_bad_square))
    assert main(["check-op", "bad_square"]) == 1
    out = capsys.readouterr().out
    assert "bad_square gradcheck: FAILED" in out and "gradcheck: input 0 probe W" in out


def test_cli_check_op_fails_for_a_wrong_backend(bare, capsys):
    bare.ops.add_backend("cgelu", "wrong", lambda x: ref.cgelu(x) * 1.01, device="cpu")
    assert main(["check-op", "cgelu"]) == 1
    out = capsys.readouterr().out
    assert "cgelu gradcheck: ok" in out and "cgelu parity:wrong: FAILED" in out


def test_cli_check_op_uses_the_tolerance_a_backend_declares(bare, capsys):
    off = lambda x: ref.cgelu(x) * (1 + 3e-4)  # noqa: E731 - within a tf32-like bound, outside the default
    bare.ops.add_backend("cgelu", "loose", off, device="cpu", tolerance=(1e-3, 1e-3))
    assert main(["check-op", "cgelu"]) == 0
    bare.ops.add_backend("cgelu", "loose", off, device="cpu")
    assert main(["check-op", "cgelu"]) == 1
    assert "cgelu parity:loose: FAILED" in capsys.readouterr().out


def test_cli_check_op_says_when_no_backend_exists_for_the_device(bare, capsys):
    bare.ops.add_backend("cgelu", "gpu_only", ref.cgelu, device="cuda")
    assert main(["check-op", "cgelu"]) == 0
    out = capsys.readouterr().out
    assert "cgelu: no backend registered for cpu; registered: gpu_only (cuda) (pass --device)" in out
    assert main(["check-op", "hadamard"]) == 0
    assert "hadamard: no backend registered for cpu\n" in capsys.readouterr().out


def test_cli_check_op_unknown_name_is_a_one_line_error(bare, capsys):
    assert main(["check-op", "nope"]) == 2
    assert "cnet: error: unknown op 'nope'; known ops:" in capsys.readouterr().err


def test_cli_check_op_bad_or_missing_device_is_a_one_line_error(bare, capsys, monkeypatch):
    assert main(["check-op", "hadamard", "--device", "gpu"]) == 2
    assert capsys.readouterr().err == ("cnet: error: check_op: unknown device 'gpu' for argument 'device'; expected "
                                       "a device such as 'cpu', 'cuda' or 'cuda:1'\n")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # also on a machine with a GPU
    bare.ops.add_backend("hadamard", "gpu_only", ref.hadamard, device="cuda")
    for device in ("cuda", "cuda:1"):
        assert main(["check-op", "hadamard", "--device", device]) == 2
        assert capsys.readouterr().err == (f"cnet: error: check_op: device '{device}' requested but CUDA is not "
                                           "available on this machine (torch.cuda.is_available() is False)\n")
