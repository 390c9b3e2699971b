"""Push checkpoint folders to the Hugging Face Hub and pull them back (DESIGN.md section 5).

Both directions check the folder with :func:`cnet.core.checkpoint.load_folder`: a folder that does not load is
never uploaded, and a download that does not load is reported instead of handed back. Push only reads the
folder: the model card it generates is uploaded from memory. Authentication is huggingface_hub's: ``token=``,
else ``HF_TOKEN`` or the token saved by ``hf auth login``.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from huggingface_hub import CommitOperationAdd, HfApi, snapshot_download
from huggingface_hub.utils import validate_repo_id

from cnet.core import __version__
from cnet.core.checkpoint import load_folder
from cnet.hub.card import GENERATED_MARKER, model_card, read_metrics

__all__ = ["push", "pull"]

log = logging.getLogger("cnet.hub")

_CARD_FILE = "README.md"


def push(folder: str | os.PathLike, repo_id: str, *, token: str | None = None, private: bool = False,
         commit_message: str | None = None) -> str:
    """Upload a checkpoint folder, with a generated model card, to a Hub model repository.

    Steps: load the folder (any error stops the push before anything is sent); generate ``README.md`` in memory
    from :func:`cnet.hub.card.model_card`, in place of the folder's own (a README.md without the generated-card
    marker, i.e. written by hand, is uploaded as it is instead); create the repository if needed; upload the
    folder's files and the card in one commit (hidden files and folders, such as leftovers of an interrupted
    save, are skipped). The folder is only read, never modified, whether the push succeeds or fails.

    Args:
        folder: a folder written by :func:`cnet.core.checkpoint.save_folder`.
        repo_id: ``"user/name"`` or ``"org/name"``.
        token: a Hugging Face token with write access; ``None`` uses the saved login / ``HF_TOKEN``.
        private: create the repository as private (an existing repository keeps its visibility).
        commit_message: defaults to ``"Upload cnet model"``.

    Returns:
        The repository's URL.

    Raises:
        TypeError / ValueError: ``repo_id`` is not a valid repository id; ``"corrupt checkpoint ..."``.
        FileNotFoundError: the folder, its ``config.json`` or ``model.safetensors`` is missing.
        huggingface_hub errors (``OSError`` subclasses) for authentication or network failures.
    """
    if not isinstance(repo_id, str) or repo_id.count("/") != 1:
        raise ValueError(f"push: argument 'repo_id' must look like 'user/name', got {repo_id!r}")
    validate_repo_id(repo_id)
    ckpt = load_folder(folder)
    card_path = ckpt.path / _CARD_FILE
    card: bytes | None = None
    if card_path.is_file() and GENERATED_MARKER not in card_path.read_text(encoding="utf-8", errors="replace"):
        log.warning("cnet.hub: keeping the hand-written %s; no model card generated", card_path)
    else:
        card = model_card(repo_id, ckpt.config, ckpt.state_dict, read_metrics(ckpt.path)).encode("utf-8")
    api = HfApi(token=token, library_name="cnet", library_version=__version__)
    url = api.create_repo(repo_id, private=private, exist_ok=True)
    api.create_commit(repo_id=url.repo_id, operations=_additions(ckpt.path, card),
                      commit_message=commit_message or "Upload cnet model")
    return str(url)


def _additions(folder: Path, card: bytes | None) -> list[CommitOperationAdd]:
    """One upload per file under ``folder`` (hidden files and folders skipped); ``card``, when given, is uploaded
    from memory as ``README.md`` in place of the folder's."""
    ops = []
    for path in sorted(folder.rglob("*")):
        name = path.relative_to(folder).as_posix()
        hidden = any(part.startswith(".") for part in name.split("/"))
        replaced = card is not None and name == _CARD_FILE
        if path.is_file() and not hidden and not replaced:
            ops.append(CommitOperationAdd(path_in_repo=name, path_or_fileobj=path))
    if card is not None:
        ops.append(CommitOperationAdd(path_in_repo=_CARD_FILE, path_or_fileobj=card))
    return ops


def pull(repo_id: str, *, revision: str | None = None, local_dir: str | os.PathLike | None = None,
         token: str | None = None) -> Path:
    """Download a checkpoint folder from the Hub and check that it loads.

    Args:
        repo_id: ``"user/name"``.
        revision: a branch, tag or commit; ``None`` is the default branch.
        local_dir: download into this folder; ``None`` uses the Hugging Face cache.
        token: for private repositories; ``None`` uses the saved login / ``HF_TOKEN``.

    Returns:
        The local folder, ready for ``cnet.models.load`` / :func:`cnet.core.checkpoint.load_folder`.

    Raises:
        FileNotFoundError: the downloaded repository is not a cnet checkpoint (no ``config.json`` or
            ``model.safetensors``).
        ValueError: the downloaded checkpoint is corrupt.
        huggingface_hub errors (``OSError`` subclasses) for a missing repository, authentication or network.
    """
    path = Path(snapshot_download(repo_id, revision=revision, local_dir=local_dir, token=token,
                                  library_name="cnet", library_version=__version__))
    try:
        load_folder(path)
    except FileNotFoundError as exc:
        raise FileNotFoundError(f"Hub repository {repo_id!r} is not a cnet checkpoint: {exc}") from exc
    except ValueError as exc:
        raise ValueError(f"Hub repository {repo_id!r} holds a corrupt checkpoint: {exc}") from exc
    return path
