"""``cnet.data.load``: one entry point for every registered dataset (DESIGN.md sections 3 and 5)."""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable
from typing import Any

import datasets

from cnet.core.plugins import registries

__all__ = ["load"]


def load(name: str, split: str | None, **options: Any) -> datasets.Dataset:
    """Load the registered dataset ``name``: calls its loader as ``loader(split, **options)``.

    Datasets are registered by plugins through the ``cnet_register_datasets`` hook (cnet-data's own are listed
    in its README); ``cnet plugins`` lists every installed one.

    Args:
        name: registered dataset name, e.g. ``"tiny_shakespeare"``.
        split: the split the loader understands, e.g. ``"train"`` / ``"validation"`` (``None`` where the loader
            allows it, e.g. ``text_bytes`` over a whole folder).
        **options: loader options, e.g. ``path=...``.

    Returns:
        What the loader returns: a :class:`datasets.Dataset` (or ``IterableDataset``).

    Raises:
        TypeError: ``name`` is not a str.
        KeyError: unknown ``name``; the message lists the registered datasets.
        ValueError: an option the loader does not take (checked against its signature before it runs); the
            message names the dataset, the unknown option(s) and the valid ones.
        Anything the loader raises (ValueError for a bad split, FileNotFoundError when the data is missing).
    """
    if not isinstance(name, str):
        raise TypeError(f"cnet.data.load: argument 'name' must be a dataset name (str), got {type(name).__name__}")
    loader = registries().datasets.get(name)["obj"]
    _check_options(name, loader, options)
    return loader(split, **options)


def _check_options(name: str, loader: Callable[..., Any], options: dict[str, Any]) -> None:
    """Raise ValueError when ``options`` holds a keyword that ``loader(split, **options)`` would not accept."""
    try:
        params = list(inspect.signature(loader).parameters.values())
    except (TypeError, ValueError):  # no introspectable signature: let the loader judge
        return
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return
    keyword_kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    valid = [p.name for p in params[1:] if p.kind in keyword_kinds]  # params[0] receives the split
    unknown = [key for key in options if key not in valid]
    if not unknown:
        return
    close = {key: match[0] for key in unknown if (match := difflib.get_close_matches(key, valid, n=1))}
    if len(unknown) == 1 and close:
        hint = f" (did you mean {close[unknown[0]]!r}?)"
    else:
        hint = f" (did you mean {', '.join(f'{v!r} for {k!r}' for k, v in close.items())}?)" if close else ""
    cli = "; on the command line pass them as --data-option KEY=VALUE" + (" (path as --data-path)"
                                                                         if "path" in valid else "")
    raise ValueError(f"cnet.data.load: dataset {name!r} has no option(s) {', '.join(map(repr, unknown))}{hint}; "
                     f"valid options: {', '.join(valid) if valid else 'none'}{cli}")
