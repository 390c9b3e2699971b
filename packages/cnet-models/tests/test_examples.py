"""The README's tour runs as written."""

import runpy
from pathlib import Path

from cnet.core.plugins import reset

TOUR = Path(__file__).resolve().parents[3] / "examples" / "tour.py"


def test_tour_runs(capsys):
    try:
        runpy.run_path(str(TOUR), run_name="__main__")
    finally:
        reset()  # the tour registers a demo plugin
    out = capsys.readouterr().out
    assert "gradcheck ok" in out and "cube: tensor([-2.+2.j])" in out
