"""cnet-hub's plugin (entry point ``hub`` in group ``cnet``): the ``cnet push`` and ``cnet pull`` commands."""

from __future__ import annotations

import argparse

from cnet.core.hookspecs import hookimpl

__all__ = ["cnet_register_commands"]


def _configure_push(p: argparse.ArgumentParser) -> None:
    p.add_argument("folder", help="checkpoint folder (config.json + model.safetensors)")
    p.add_argument("repo_id", help="Hub model repository, user/name")
    p.add_argument("--private", action="store_true", help="create the repository as private")


def _run_push(args: argparse.Namespace) -> int:
    from cnet.hub.transfer import push

    print(push(args.folder, args.repo_id, private=args.private))
    return 0


def _configure_pull(p: argparse.ArgumentParser) -> None:
    p.add_argument("repo_id", help="Hub model repository, user/name")
    p.add_argument("--to", metavar="DIR", help="download into DIR (default: the Hugging Face cache)")
    p.add_argument("--revision", metavar="REV", help="branch, tag or commit (default: the main branch)")


def _run_pull(args: argparse.Namespace) -> int:
    from cnet.hub.transfer import pull

    print(pull(args.repo_id, revision=args.revision, local_dir=args.to))
    return 0


@hookimpl
def cnet_register_commands(commands):
    """Register ``cnet push FOLDER REPO_ID [--private]`` and ``cnet pull REPO_ID [--to DIR] [--revision REV]``."""
    commands.add("push", _run_push, configure=_configure_push,
                 help="upload a checkpoint folder with a generated model card to the Hugging Face Hub")
    commands.add("pull", _run_pull, configure=_configure_pull,
                 help="download a checkpoint folder from the Hugging Face Hub and check that it loads")
