"""Checkpoint folders: ``config.json`` + ``model.safetensors`` + sidecar files (DESIGN.md section 4).

A folder written by :func:`save_folder` holds

- ``config.json``: the caller's config (a JSON object) plus ``"cnet_version"`` (the writing cnet-core version);
- ``model.safetensors``: the state dict. ``complex64`` tensors are stored natively (safetensors dtype ``C64``).
  The safetensors format has no ``complex128`` dtype (safetensors 0.8 refuses it), so those tensors are stored as
  their real view ``r[..., 2]`` (float64, last axis = real, imaginary) and listed, as a JSON array, under the
  header metadata key :data:`COMPLEX128_AS_REAL`; :func:`load_folder` turns them back into ``complex128``.
  Both round-trip bit for bit.
- sidecars such as ``vocab.json`` or ``metrics.json``, read back with :func:`read_sidecar`.

Every file is first written to a hidden temporary file in the same folder (flushed and fsynced); only when all
of them have been written are they moved into place with :func:`os.replace`, the config last. Every file gets the
permissions a plain ``open()`` would give it (``0o666`` less the process umask). A failure while
serialising (a tensor safetensors cannot store, a config that is not JSON) therefore leaves an existing folder
exactly as it was. Files of an earlier save that the new one does not write (an old sidecar) are left alone.
Loading never unpickles: JSON and safetensors only.
"""

from __future__ import annotations

import json
import os
import stat
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import save_file

__all__ = ["CONFIG_FILE", "WEIGHTS_FILE", "COMPLEX128_AS_REAL", "Checkpoint", "atomic_write", "save_folder",
           "load_folder", "read_sidecar"]

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
COMPLEX128_AS_REAL = "cnet.complex128_as_real"

Sidecar = str | bytes | dict | list


@dataclass
class Checkpoint:
    """A loaded checkpoint folder (see :func:`load_folder`).

    Attributes:
        path: the folder.
        config: the contents of ``config.json`` (including ``"cnet_version"``).
        state_dict: tensor name -> tensor, on the requested device, complex tensors complex.
    """

    path: Path
    config: dict[str, Any]
    state_dict: dict[str, torch.Tensor]


def _write_temp(target: Path, write: Callable[[Path], None]) -> Path:
    """Write ``target``'s new contents to a hidden temporary file beside it; return that file's path.

    ``write(tmp_path)`` creates the file. The file gets the permissions a plain ``open()`` gives (``0o666`` less
    the process umask) whatever ``write`` did (safetensors writes through a file of its own, created ``0o600``).
    The file is fsynced; on any error it is removed and the error re-raised.
    """
    tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex}.tmp")
    try:
        tmp.touch(mode=0o666, exist_ok=False)  # the umask applies here, as for open(); reading it back is thread-safe
        mode = stat.S_IMODE(tmp.stat().st_mode)
        write(tmp)
        os.chmod(tmp, mode)
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return tmp


def atomic_write(path: str | os.PathLike, data: str | bytes) -> Path:
    """Replace the file ``path`` with ``data`` atomically (temporary file in the same folder, then ``os.replace``).

    Args:
        path: destination file; its folder must exist.
        data: ``str`` (written as UTF-8) or ``bytes``.

    Returns:
        ``Path(path)``.

    Raises:
        TypeError: ``data`` is neither ``str`` nor ``bytes``.
        FileNotFoundError: the destination folder does not exist.
    """
    if not isinstance(data, str | bytes):
        raise TypeError(f"atomic_write: argument 'data' must be str or bytes, got {type(data).__name__}")
    payload = data.encode("utf-8") if isinstance(data, str) else data
    path = Path(path)
    os.replace(_write_temp(path, lambda tmp: tmp.write_bytes(payload)), path)
    return path


def _check_sidecar_name(name: object, where: str) -> str:
    if not isinstance(name, str) or not name or name in {".", ".."} or name.startswith("."):
        raise ValueError(f"{where}: sidecar name must be a plain, non-hidden file name, got {name!r}")
    if "/" in name or "\\" in name or os.sep in name:
        raise ValueError(f"{where}: sidecar name must be a file name without folders, got {name!r}")
    if name in {CONFIG_FILE, WEIGHTS_FILE}:
        raise ValueError(f"{where}: sidecar name {name!r} is reserved for the checkpoint itself")
    return name


def _encode_sidecar(name: str, value: Sidecar) -> bytes:
    """Sidecar value -> file bytes: dict/list -> JSON (a ``.jsonl`` list: one JSON value per line), str -> UTF-8."""
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, dict | list):
        try:
            if name.endswith(".jsonl") and isinstance(value, list):
                return "".join(json.dumps(item, ensure_ascii=False) + "\n" for item in value).encode("utf-8")
            return (json.dumps(value, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
        except (TypeError, ValueError) as exc:
            raise TypeError(f"save_folder: sidecar {name!r} is not JSON-serialisable: {exc}") from exc
    raise TypeError(f"save_folder: sidecar {name!r} must be str, bytes, dict or list, got {type(value).__name__}")


def _prepare_tensors(state_dict: Mapping[str, torch.Tensor]) -> tuple[dict[str, torch.Tensor], list[str]]:
    """Detach, move to CPU, resolve conjugate/negative views, make contiguous, un-share storage.

    Returns the tensors to write and the names of the complex128 tensors stored as real views.
    """
    out: dict[str, torch.Tensor] = {}
    as_real: list[str] = []
    seen: set[int] = set()
    for name, t in state_dict.items():
        if not isinstance(name, str):
            raise TypeError(f"save_folder: state_dict keys must be str, got {name!r}")
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"save_folder: state_dict[{name!r}] must be a torch.Tensor, got {type(t).__name__}")
        if t.layout != torch.strided:
            raise TypeError(f"save_folder: state_dict[{name!r}] is a {t.layout} tensor; only dense tensors can be "
                            "saved (convert it with .to_dense())")
        # safetensors writes raw memory and ignores the lazy conjugate / negation bits of a view: resolve them.
        t = t.detach().to("cpu").resolve_conj().resolve_neg()
        if t.dtype == torch.complex128:
            t = torch.view_as_real(t)
            as_real.append(name)
        t = t.contiguous()
        if t.numel():
            ptr = t.untyped_storage().data_ptr()
            if ptr in seen:  # safetensors refuses tensors sharing memory (tied weights): give this one its own copy
                t = t.clone()
                ptr = t.untyped_storage().data_ptr()
            seen.add(ptr)
        out[name] = t
    return out, as_real


def save_folder(folder: str | os.PathLike, *, config: dict[str, Any], state_dict: Mapping[str, torch.Tensor],
                sidecars: Mapping[str, Sidecar] | None = None) -> Path:
    """Write a checkpoint folder atomically (DESIGN.md section 4; layout in the module docstring).

    Args:
        folder: the folder; created (with parents) when missing. Existing files are replaced.
        config: a JSON object (``dict`` with string keys; strict JSON, no NaN or infinity). ``"cnet_version"`` is
            added (or overwritten) with :data:`cnet.core.__version__`; the caller's dict is not modified.
        state_dict: name -> dense tensor of any dtype safetensors stores (float, int, bool, complex64) or
            complex128. Tensors are detached, moved to CPU and made contiguous; tied tensors are stored twice.
        sidecars: file name -> contents. ``dict``/``list`` -> JSON (for a name ending in ``.jsonl`` a list is
            written one JSON value per line), ``str`` -> UTF-8 text, ``bytes`` -> raw. Names are plain file names
            (no folders, not hidden, not ``config.json`` / ``model.safetensors``).

    Returns:
        The folder as a :class:`pathlib.Path`.

    Raises:
        TypeError: ``config`` is not a dict or not JSON-serialisable; a state-dict entry is not a dense tensor or
            has a dtype safetensors cannot store (e.g. complex32); a sidecar has an unsupported type.
        ValueError: ``config`` holds NaN/infinity; a sidecar name is not a plain file name.
        FileExistsError: ``folder`` exists and is not a folder.
        In every error case the files already in ``folder`` are left untouched.
    """
    from cnet.core import __version__

    if not isinstance(config, dict):
        raise TypeError(f"save_folder: argument 'config' must be a dict, got {type(config).__name__}")
    if not isinstance(state_dict, Mapping):
        raise TypeError(f"save_folder: argument 'state_dict' must be a mapping of str -> Tensor, "
                        f"got {type(state_dict).__name__}")
    try:
        config_text = json.dumps({**config, "cnet_version": __version__}, indent=2, ensure_ascii=False,
                                 allow_nan=False) + "\n"
    except ValueError as exc:
        raise ValueError(f"save_folder: argument 'config' must be strict JSON (no NaN or infinity): {exc}") from exc
    except TypeError as exc:
        raise TypeError(f"save_folder: argument 'config' is not JSON-serialisable: {exc}") from exc
    payloads = {_check_sidecar_name(name, "save_folder"): _encode_sidecar(name, value)
                for name, value in (sidecars or {}).items()}
    tensors, as_real = _prepare_tensors(state_dict)
    metadata = {"format": "pt"}
    if as_real:
        metadata[COMPLEX128_AS_REAL] = json.dumps(as_real)

    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise FileExistsError(f"save_folder: {folder} exists and is not a folder")
    folder.mkdir(parents=True, exist_ok=True)

    def write_weights(tmp: Path) -> None:
        try:
            save_file(tensors, tmp, metadata=metadata)
        except KeyError as exc:  # safetensors' dtype table has no entry for this dtype
            names = [n for n, t in tensors.items() if t.dtype == exc.args[0]]
            raise TypeError(f"save_folder: state_dict {names} has dtype {exc.args[0]}, which safetensors cannot "
                            "store; supported: floating, integer, bool, complex64, complex128") from exc

    jobs: list[tuple[str, Callable[[Path], None]]] = [(WEIGHTS_FILE, write_weights)]
    jobs += [(name, lambda tmp, data=data: tmp.write_bytes(data)) for name, data in payloads.items()]
    jobs.append((CONFIG_FILE, lambda tmp: tmp.write_text(config_text, encoding="utf-8")))
    written: list[tuple[Path, Path]] = []
    try:
        for name, write in jobs:
            written.append((_write_temp(folder / name, write), folder / name))
    except BaseException:
        for tmp, _ in written:
            tmp.unlink(missing_ok=True)
        raise
    for tmp, final in written:
        os.replace(tmp, final)
    return folder


def _require_folder(folder: str | os.PathLike, where: str) -> Path:
    folder = Path(folder)
    if not folder.exists():
        raise FileNotFoundError(f"{where}: checkpoint folder {folder} does not exist (expected a folder holding "
                                f"{CONFIG_FILE} and {WEIGHTS_FILE})")
    if not folder.is_dir():
        raise FileNotFoundError(f"{where}: {folder} is not a folder (expected a checkpoint folder holding "
                                f"{CONFIG_FILE} and {WEIGHTS_FILE})")
    return folder


def _require_file(folder: Path, name: str, what: str) -> Path:
    path = folder / name
    if not path.is_file():
        present = ", ".join(sorted(p.name for p in folder.iterdir() if not p.name.startswith("."))) or "nothing"
        raise FileNotFoundError(f"checkpoint folder {folder} has no {name} ({what}); it holds: {present}")
    return path


def _parse_json(folder: Path, name: str, data: bytes) -> Any:
    try:
        if name.endswith(".jsonl"):
            return [json.loads(line) for line in data.decode("utf-8").splitlines() if line.strip()]
        return json.loads(data.decode("utf-8"))
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError
        raise ValueError(f"corrupt checkpoint {folder}: {name} is not valid JSON ({exc})") from exc


def _load_weights(folder: Path, path: Path, device: str) -> dict[str, torch.Tensor]:
    try:
        with safe_open(path, framework="pt", device=device) as f:
            metadata = f.metadata() or {}
            tensors = {name: f.get_tensor(name) for name in f.keys()}
    except SafetensorError as exc:
        raise ValueError(f"corrupt checkpoint {folder}: {WEIGHTS_FILE} is not a valid safetensors file "
                         f"({exc})") from exc
    try:
        as_real = json.loads(metadata.get(COMPLEX128_AS_REAL, "[]"))
    except ValueError as exc:
        raise ValueError(f"corrupt checkpoint {folder}: metadata {COMPLEX128_AS_REAL!r} is not JSON ({exc})") from exc
    if not isinstance(as_real, list):
        raise ValueError(f"corrupt checkpoint {folder}: metadata {COMPLEX128_AS_REAL!r} must be a list of names")
    for name in as_real:
        t = tensors.get(name)
        if t is None or t.dtype != torch.float64 or t.dim() == 0 or t.shape[-1] != 2:
            raise ValueError(f"corrupt checkpoint {folder}: {name!r} is marked as complex128 stored as float64 "
                             f"[..., 2], found {None if t is None else (t.dtype, tuple(t.shape))}")
        tensors[name] = torch.view_as_complex(t)
    return tensors


def load_folder(folder: str | os.PathLike, map_location: str | torch.device = "cpu") -> Checkpoint:
    """Read a checkpoint folder written by :func:`save_folder` (DESIGN.md section 4). Never unpickles.

    Args:
        folder: the checkpoint folder.
        map_location: device the tensors are loaded onto (``"cpu"``, ``"cuda"``, ``"cuda:1"``, a torch.device).

    Returns:
        :class:`Checkpoint` with the config dict and the state dict (complex128 tensors restored as complex).

    Raises:
        FileNotFoundError: the folder, ``config.json`` or ``model.safetensors`` is missing (the message names the
            path and what was expected).
        ValueError: ``map_location`` is not a device; ``"corrupt checkpoint <folder>: <reason>"`` when
            ``config.json`` is not a JSON object or ``model.safetensors`` cannot be parsed (truncated, garbage).
    """
    folder = _require_folder(folder, "load_folder")
    try:
        device = str(torch.device(map_location))
    except (RuntimeError, TypeError) as exc:
        raise ValueError(f"load_folder: argument 'map_location' must be a device such as 'cpu' or 'cuda:0', "
                         f"got {map_location!r}") from exc
    config_path = _require_file(folder, CONFIG_FILE, "the model config, a JSON object")
    weights_path = _require_file(folder, WEIGHTS_FILE, "the weights, a safetensors file")
    config = _parse_json(folder, CONFIG_FILE, config_path.read_bytes())
    if not isinstance(config, dict):
        raise ValueError(f"corrupt checkpoint {folder}: {CONFIG_FILE} must hold a JSON object, "
                         f"found {type(config).__name__}")
    return Checkpoint(folder, config, _load_weights(folder, weights_path, device))


def read_sidecar(folder: str | os.PathLike, name: str, *, binary: bool = False) -> Any:
    """Read the sidecar file ``name`` of a checkpoint folder.

    Args:
        folder: the checkpoint folder.
        name: the sidecar's file name, e.g. ``"vocab.json"``.
        binary: return the raw ``bytes`` whatever the name.

    Returns:
        ``bytes`` when ``binary``; else the parsed JSON value for a ``.json`` name, a list of JSON values (one per
        non-blank line) for a ``.jsonl`` name, and the UTF-8 text (``str``) for any other name.

    Raises:
        FileNotFoundError: the folder or the sidecar is missing.
        ValueError: ``name`` is not a plain file name; ``"corrupt checkpoint ..."`` when a JSON sidecar does not
            parse or a text sidecar is not UTF-8 (read it with ``binary=True``).
    """
    folder = _require_folder(folder, "read_sidecar")
    path = _require_file(folder, _check_sidecar_name(name, "read_sidecar"), "the requested sidecar")
    data = path.read_bytes()
    if binary:
        return data
    if name.endswith((".json", ".jsonl")):
        return _parse_json(folder, name, data)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"corrupt checkpoint {folder}: sidecar {name} is not UTF-8 text ({exc}); "
                         "read binary sidecars with binary=True") from exc
