"""The ``cnet`` command. Sub-commands come from plugins through ``cnet_register_commands``.

cnet-core contributes ``cnet plugins`` and ``cnet check-op NAME``; cnet-models adds ``train``, ``generate`` and
``eval``; cnet-hub adds ``push`` and ``pull``. ``cnet --help`` lists what is installed.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

__all__ = ["main", "build_parser"]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with one sub-parser per registered command."""
    from cnet.core import __version__
    from cnet.core.plugins import registries

    parser = argparse.ArgumentParser(prog="cnet", description="cnet: complex-valued deep learning on PyTorch.")
    parser.add_argument("--version", action="version", version=f"cnet-core {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log backend choices and plugin loading")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands = registries().commands
    for name in commands.names():
        entry = commands.get(name)
        p = sub.add_parser(name, help=entry.get("help", ""), description=entry.get("help", ""))
        if entry.get("configure"):
            entry["configure"](p)
        p.set_defaults(_run=entry["obj"])
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``cnet`` console script; returns the process exit code.

    Errors a user can fix (``ValueError``, ``KeyError``, ``TypeError``, ``OSError`` such as a missing file or a
    failed download) are printed as one line ``cnet: error: ...`` with exit code 2 instead of a traceback.
    A reader that stops early (``cnet plugins | head``) ends the command quietly with exit code 0: the rest of
    the output goes to the null device (the idiom of the Python docs' "Note on SIGPIPE"). Ctrl-C prints
    ``cnet: interrupted`` and returns 130.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(message)s")
    if not getattr(args, "_run", None):
        parser.print_help()
        return 1
    try:
        code = int(args._run(args) or 0)
        sys.stdout.flush()  # a closed pipe shows up here at the latest, not in the interpreter's final flush
        return code
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the final flush cannot fail again
        return 0
    except (ValueError, KeyError, TypeError, OSError) as exc:
        msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"cnet: error: {msg}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("cnet: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
