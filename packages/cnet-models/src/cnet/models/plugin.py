"""cnet-models' plugin: registers the architectures and the ``train``, ``generate``, ``eval`` and ``compare``
commands."""

from __future__ import annotations

from cnet.core.hookspecs import hookimpl

__all__ = ["cnet_register_models", "cnet_register_commands"]


@hookimpl
def cnet_register_models(models):
    """Register ``born-lm``, ``complex-fnet``, ``real-fnet``, the quantum-shortcut models (``h-mamba``,
    ``mamba``, ``h-transformer``, ``transformer``) and the phase-coherent family (``pct``, ``pcr-pathx``)."""
    from cnet.models.born_lm import BornLM, BornLMConfig
    from cnet.models.fnet import ComplexFNet, ComplexFNetConfig, RealFNet, RealFNetConfig
    from cnet.models.pct import register as register_pct
    from cnet.models.shortcut import register as register_shortcut

    models.add("born-lm", BornLM, config=BornLMConfig,
               description="complex Born-rule attention LM with RoPE and TokenNorm (CNet paper section 11)")
    models.add("complex-fnet", ComplexFNet, config=ComplexFNetConfig,
               description="complex causal FNet with a Born head (CNet paper section 11.2)")
    models.add("real-fnet", RealFNet, config=RealFNetConfig,
               description="real twin of complex-fnet, parameter-matched (CNet paper section 11.2)")
    register_shortcut(models)
    register_pct(models)


@hookimpl
def cnet_register_commands(commands):
    """Register ``cnet train``, ``cnet generate``, ``cnet eval`` and ``cnet compare``."""
    from cnet.models import commands as c
    from cnet.models import compare

    commands.add("train", c.run_train, configure=c.configure_train, help="train a registered model on a dataset")
    commands.add("generate", c.run_generate, configure=c.configure_generate, help="sample text from a saved model")
    commands.add("eval", c.run_eval, configure=c.configure_eval,
                 help="score a saved model on a dataset's held-out split (nats and bits per char or byte)")
    commands.add("compare", compare.run_compare, configure=compare.configure_compare,
                 help="train two models under one protocol and compare their steps to target losses")
