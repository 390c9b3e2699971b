import os
from pathlib import Path

import pytest
import torch


@pytest.fixture
def shakespeare_path() -> Path:
    """The real tiny-shakespeare file from $CNET_DATA_DIR (skips when it is not set)."""
    root = os.environ.get("CNET_DATA_DIR")
    if not root or not (Path(root) / "tinyshakespeare.txt").is_file():
        pytest.skip("set CNET_DATA_DIR to a folder holding tinyshakespeare.txt")
    return Path(root) / "tinyshakespeare.txt"


@pytest.fixture
def excerpt(shakespeare_path, tmp_path) -> Path:
    """The first 40,000 characters of tiny-shakespeare, as a small corpus for end-to-end tests."""
    path = tmp_path / "excerpt.txt"
    path.write_text(shakespeare_path.read_text()[:40_000])
    return path


@pytest.fixture(scope="module")
def one_thread():
    """One intra-op thread for a test module of small models: avoids OpenMP oversubscription on a busy 2-core
    runner (use with ``pytestmark = pytest.mark.usefixtures("one_thread")``)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
