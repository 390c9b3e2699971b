"""cnet-core's own plugin: registers the reference ops and the ``plugins`` and ``check-op`` commands."""

from __future__ import annotations

from cnet.core.hookspecs import hookimpl

__all__ = ["cnet_register_ops", "cnet_register_commands"]


@hookimpl
def cnet_register_ops(ops):
    """Register every op of :mod:`cnet.core.ops.reference` with its example inputs."""
    from cnet.core.ops import reference

    for name in reference.__all__:
        ops.add(name, getattr(reference, name), example=reference.EXAMPLES.get(name))


def _cmd_plugins(args) -> int:
    from cnet.core.plugins import plugin_manager, registries

    reg = registries()
    pm = plugin_manager()
    print("plugins:")
    for name, plugin in sorted(pm.list_name_plugin(), key=lambda x: x[0]):
        print(f"  {name}: {getattr(plugin, '__name__', type(plugin).__name__)}")
    for name, err in sorted(reg.failed.items()):
        print(f"  {name}: FAILED TO LOAD ({err})")
    print("ops:")
    for name in reg.ops.names():
        backends = ", ".join(f"{b.name}[{b.device}, priority {b.priority}]" for b in reg.ops.get(name).backends)
        print(f"  {name}: reference" + (f", {backends}" if backends else ""))
    print("models:", ", ".join(reg.models.names()) or "(none: install cnet-models)")
    print("datasets:", ", ".join(reg.datasets.names()) or "(none: install cnet-data)")
    print("commands:", ", ".join(reg.commands.names()))
    return 0


def _cmd_check_op(args) -> int:
    from cnet.core.plugins import registries
    from cnet.core.testing import check_op

    reports = check_op(args.name, device=args.device, seed=args.seed)
    if len(reports) == 1:
        elsewhere = [f"{b.name} ({b.device})" for b in registries().ops.get(args.name).backends]
        print(f"{args.name}: no backend registered for {args.device}"
              + (f"; registered: {', '.join(elsewhere)} (pass --device)" if elsewhere else ""))
    ok = True
    for label, rep in reports.items():
        status = "ok" if rep.ok else "FAILED"
        print(f"{args.name} {label}: {status} (max error {rep.max_error:.3g})")
        for line in rep.failures:
            print("   ", line)
        ok &= rep.ok
    return 0 if ok else 1


def _configure_check_op(p) -> None:
    p.add_argument("name", help="registered op name (see `cnet plugins`)")
    p.add_argument("--device", default="cpu", help="device whose backends are compared with the reference")
    p.add_argument("--seed", type=int, default=0)


@hookimpl
def cnet_register_commands(commands):
    """Register ``cnet plugins`` and ``cnet check-op``."""
    commands.add("plugins", _cmd_plugins, help="list plugins, ops with their backends, models and datasets")
    commands.add("check-op", _cmd_check_op, configure=_configure_check_op,
                 help="gradcheck an op's reference and compare each backend with it")
