"""Every hook of the cnet plugin system (pluggy project name ``"cnet"``, entry-point group ``cnet``).

A plugin is any module or object with functions named like the hooks below, decorated with
:data:`hookimpl`. Each hook receives a registry object and calls it; nothing is returned.
Built-in plugins (``cnet.core.plugins.DEFAULT_PLUGINS``) are registered through the same path.

Example (in a third-party package's ``pyproject.toml``)::

    [project.entry-points.cnet]
    myops = "myops.plugin"

and in ``myops/plugin.py``::

    from cnet.core.hookspecs import hookimpl

    @hookimpl
    def cnet_register_ops(ops):
        ops.add("my_op", my_op_reference, example=my_op_example)
"""

from __future__ import annotations

import pluggy

__all__ = ["hookspec", "hookimpl", "cnet_register_ops", "cnet_register_models",
           "cnet_register_datasets", "cnet_register_commands"]

hookspec = pluggy.HookspecMarker("cnet")
hookimpl = pluggy.HookimplMarker("cnet")


@hookspec
def cnet_register_ops(ops):
    """Add ops or backends: ``ops.add(name, reference, example=...)``, ``ops.add_backend(op, name, fn, ...)``.

    Args:
        ops: the :class:`cnet.core.registry.OpRegistry`.
    """


@hookspec
def cnet_register_models(models):
    """Add model architectures: ``models.add(name, config_cls, model_cls, description=...)``.

    Args:
        models: a :class:`cnet.core.registry.NameRegistry` of model entries.
    """


@hookspec
def cnet_register_datasets(datasets):
    """Add datasets: ``datasets.add(name, loader, description=...)`` where ``loader(split, **options)``.

    Args:
        datasets: a :class:`cnet.core.registry.NameRegistry` of dataset loaders.
    """


@hookspec
def cnet_register_commands(commands):
    """Add ``cnet`` sub-commands: ``commands.add(name, run, help=..., configure=...)``.

    ``configure(parser)`` adds arguments to an ``argparse`` sub-parser; ``run(args)`` returns an exit code.

    Args:
        commands: a :class:`cnet.core.registry.NameRegistry` of command entries.
    """
