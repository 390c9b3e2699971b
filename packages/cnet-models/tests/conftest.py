import os
from pathlib import Path

import pytest


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
