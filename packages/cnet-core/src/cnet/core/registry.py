"""Registries filled by plugins: ops with their backends, and named entries (models, datasets, commands).

An op has one reference implementation (pure PyTorch, explicit Wirtinger backward, always available) and any
number of backends ``(name, device type, priority, fn, supports)``. A call picks, for the device of its first
tensor argument, the highest-priority backend whose ``supports(*args, **kwargs)`` answers ``(True, "")``, else
the reference (DESIGN.md section 3). ``use_backend(name)`` or the environment variable ``CNET_BACKEND`` override
the choice; ``"reference"`` forces the reference everywhere.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch

__all__ = ["Backend", "Op", "OpRegistry", "NameRegistry", "use_backend", "active_backend"]

log = logging.getLogger("cnet.core.registry")

_UNSET = "<unset>"
_BACKEND: contextvars.ContextVar[str | None] = contextvars.ContextVar("cnet_backend", default=_UNSET)


def _always(*args, **kwargs) -> tuple[bool, str]:
    return True, ""


@dataclass(frozen=True)
class Backend:
    """One implementation of an op for one device type.

    Attributes:
        name: backend name, e.g. ``"triton"``.
        device: torch device type it runs on (``"cuda"``, ``"cpu"``).
        priority: larger wins among backends whose ``supports`` accepts.
        fn: callable with the reference's signature.
        supports: ``(*args, **kwargs) -> (ok, reason)``; ``reason`` is logged when a backend is passed over.
        tolerance: ``(atol, rtol)`` the conformance kit allows against the reference in complex64 (a backend that
            computes in tf32 or bf16 by design declares its wider bound here).
    """

    name: str
    device: str
    priority: int
    fn: Callable
    supports: Callable[..., tuple[bool, str]] = _always
    tolerance: tuple[float, float] = (1e-5, 1e-4)


@dataclass
class Op:
    """A named op: its reference, its backends and an example-input factory for the conformance kit.

    Attributes:
        name: registry name, e.g. ``"born_attention"``.
        reference: the pure-PyTorch implementation with explicit Wirtinger backward.
        example: ``(dtype, device, seed) -> (args, kwargs)`` small inputs for ``cnet check-op``.
        backends: registered :class:`Backend` objects.
    """

    name: str
    reference: Callable | None = None
    example: Callable | None = None
    backends: list[Backend] = field(default_factory=list)


def active_backend() -> str | None:
    """The backend forced by :func:`use_backend` or ``CNET_BACKEND`` (``None``: automatic choice)."""
    forced = _BACKEND.get()
    if forced == _UNSET:
        return os.environ.get("CNET_BACKEND") or None
    return forced


@contextlib.contextmanager
def use_backend(name: str | None) -> Iterator[None]:
    """Force a backend inside a ``with`` block: ``"reference"``, a backend name such as ``"triton"``, or ``None``
    (automatic choice, ignoring ``CNET_BACKEND``).

    A forced backend that does not exist for an op's device, or whose ``supports`` refuses the inputs, is passed
    over with one log line and the normal choice applies. Overrides ``CNET_BACKEND`` inside the block.
    """
    token = _BACKEND.set(name)
    try:
        yield
    finally:
        _BACKEND.reset(token)


def _first_device(args, kwargs) -> str:
    for a in list(args) + list(kwargs.values()):
        if isinstance(a, torch.Tensor):
            return a.device.type
    return "cpu"


class OpRegistry:
    """All ops known to cnet. Filled through the ``cnet_register_ops`` hook; call ops with :meth:`call`."""

    def __init__(self) -> None:
        self._ops: dict[str, Op] = {}
        self._logged: set[tuple[str, str, str]] = set()

    def add(self, name: str, reference: Callable, *, example: Callable | None = None, replace: bool = False) -> Op:
        """Register an op's reference implementation.

        Args:
            name: op name (``snake_case``).
            reference: the reference function.
            example: ``(dtype, device, seed) -> (args, kwargs)`` used by ``cnet check-op``.
            replace: allow replacing an existing reference.

        Raises:
            ValueError: the op already has a reference and ``replace`` is false.
        """
        op = self._ops.setdefault(name, Op(name))
        if op.reference is not None and not replace:
            raise ValueError(f"op {name!r} is already registered; pass replace=True to override its reference")
        op.reference, op.example = reference, example
        return op

    def add_backend(self, op: str, name: str, fn: Callable, *, device: str = "cuda", priority: int = 0,
                    supports: Callable[..., tuple[bool, str]] | None = None,
                    tolerance: tuple[float, float] = (1e-5, 1e-4)) -> Backend:
        """Register a backend of ``op`` (the op's reference may be registered later by another plugin); see
        :class:`Backend` for the arguments."""
        b = Backend(name, device, priority, fn, supports or _always, tolerance)
        entry = self._ops.setdefault(op, Op(op))
        entry.backends = [x for x in entry.backends if not (x.name == name and x.device == device)] + [b]
        entry.backends.sort(key=lambda x: -x.priority)
        return b

    def get(self, name: str) -> Op:
        """The :class:`Op` called ``name``.

        Raises:
            KeyError: unknown op (the message lists the known ones), or an op with backends but no reference.
        """
        op = self._ops.get(name)
        if op is None:
            raise KeyError(f"unknown op {name!r}; known ops: {', '.join(sorted(self._ops)) or '(none)'}")
        if op.reference is None:
            raise KeyError(f"op {name!r} has backends but no reference implementation; is its plugin installed?")
        return op

    def names(self) -> list[str]:
        """Sorted names of all ops with a reference."""
        return sorted(n for n, op in self._ops.items() if op.reference is not None)

    def select(self, name: str, args: tuple, kwargs: dict) -> tuple[str, Callable]:
        """Choose ``(backend name, fn)`` for a call of op ``name`` on these inputs (see module docstring)."""
        op = self.get(name)
        forced = active_backend()
        if forced == "reference":
            return "reference", op.reference
        device = _first_device(args, kwargs)
        candidates = [b for b in op.backends if b.device == device]
        if forced is not None:
            named = [b for b in candidates if b.name == forced]
            if not named:
                self._log_once(name, forced, device, f"backend {forced!r} does not exist for {device}", warn=True)
            candidates = named + [b for b in candidates if b.name != forced]
        for b in candidates:
            ok, reason = b.supports(*args, **kwargs)
            if ok:
                self._log_once(name, b.name, device, "")
                return b.name, b.fn
            self._log_once(name, b.name, device, reason, warn=b.name == forced)
        self._log_once(name, "reference", device, "")
        return "reference", op.reference

    def call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """Run op ``name`` on the best backend for its inputs."""
        _, fn = self.select(name, args, kwargs)
        return fn(*args, **kwargs)

    def _log_once(self, op: str, backend: str, device: str, reason: str, warn: bool = False) -> None:
        """Log a choice once per (op, backend, device, reason); ``warn`` (a backend the user forced was passed
        over) logs at WARNING so that it shows without logging configured, else at INFO."""
        if torch.compiler.is_compiling():
            return
        key = (op, backend, device + reason)
        if key in self._logged:
            return
        self._logged.add(key)
        if reason:
            (log.warning if warn else log.info)("cnet: op %s passed over backend %s on %s: %s", op, backend, device,
                                                reason)
        else:
            log.info("cnet: op %s uses backend %s on %s", op, backend, device)


class NameRegistry:
    """A name -> entry mapping with helpful errors; used for models, datasets and commands.

    Entries are ``dict``s holding the keyword arguments given to :meth:`add` plus ``name``.
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, dict[str, Any]] = {}

    def add(self, name: str, obj: Any = None, /, **meta: Any) -> None:
        """Register ``name``; ``obj`` and ``meta`` are stored on the entry.

        Raises:
            ValueError: ``name`` is already registered.
        """
        if name in self._entries:
            raise ValueError(f"{self.kind} {name!r} is already registered")
        self._entries[name] = {"name": name, "obj": obj, **meta}

    def get(self, name: str) -> dict[str, Any]:
        """The entry for ``name``.

        Raises:
            KeyError: unknown name; the message lists the known names.
        """
        try:
            return self._entries[name]
        except KeyError:
            known = ", ".join(sorted(self._entries)) or "(none installed)"
            raise KeyError(f"unknown {self.kind} {name!r}; known {self.kind}s: {known}") from None

    def names(self) -> list[str]:
        """Sorted registered names."""
        return sorted(self._entries)

    def __contains__(self, name: str) -> bool:
        return name in self._entries
