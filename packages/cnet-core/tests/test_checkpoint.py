"""Checkpoint folders (cnet.core.checkpoint; DESIGN.md section 4): round trips, atomicity, errors."""

from __future__ import annotations

import json
import os
import stat

import pytest
import torch
from safetensors import safe_open

from cnet.core import __version__
from cnet.core.checkpoint import (
    COMPLEX128_AS_REAL,
    Checkpoint,
    atomic_write,
    load_folder,
    read_sidecar,
    save_folder,
)


def _bits(t: torch.Tensor) -> torch.Tensor:
    """The raw bits of a float / complex tensor, so NaN payloads and signed zeros compare exactly."""
    real = torch.view_as_real(t) if t.is_complex() else t
    return real.contiguous().view(torch.int64 if real.dtype == torch.float64 else torch.int32)


def _special_values(dtype: torch.dtype) -> torch.Tensor:
    g = torch.Generator().manual_seed(0)
    t = torch.randn(7, 63, dtype=dtype, generator=g)
    t[0, 0] = complex(float("nan"), float("-inf"))
    t[0, 1] = complex(-0.0, 0.0)
    t[0, 2] = complex(1e-310, -3.4e38)
    return t


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_complex_round_trip_is_bit_exact(tmp_path, dtype):
    t = _special_values(dtype)
    save_folder(tmp_path / "ckpt", config={"name": "x"}, state_dict={"w": t})
    back = load_folder(tmp_path / "ckpt").state_dict["w"]
    assert back.dtype == dtype and back.shape == t.shape
    assert torch.equal(_bits(back), _bits(t))


def test_complex64_is_stored_natively_and_complex128_as_marked_real_view(tmp_path):
    save_folder(tmp_path, config={}, state_dict={"a": torch.ones(2, dtype=torch.complex64),
                                                 "b": torch.ones(3, dtype=torch.complex128)})
    with safe_open(tmp_path / "model.safetensors", framework="pt") as f:
        assert f.get_slice("a").get_dtype() == "C64"
        assert f.get_slice("b").get_dtype() == "F64" and f.get_slice("b").get_shape() == [3, 2]
        assert json.loads(f.metadata()[COMPLEX128_AS_REAL]) == ["b"]


def test_mixed_state_dict_round_trip(tmp_path):
    sd = {
        "emb": torch.randn(10, 4, dtype=torch.complex64),
        "scale": torch.tensor(2.5, dtype=torch.float32),
        "bias": torch.arange(5, dtype=torch.float64),
        "steps": torch.tensor([3], dtype=torch.int64),
        "mask": torch.tensor([True, False]),
        "half": torch.tensor([1.5, -2.0], dtype=torch.bfloat16),
        "empty": torch.zeros(0, 3, dtype=torch.complex128),
    }
    ckpt = load_folder(save_folder(tmp_path / "m", config={"n": 1}, state_dict=sd))
    assert isinstance(ckpt, Checkpoint) and ckpt.path == tmp_path / "m"
    assert set(ckpt.state_dict) == set(sd)
    for k, v in sd.items():
        assert ckpt.state_dict[k].dtype == v.dtype and torch.equal(ckpt.state_dict[k], v), k


def test_config_gets_cnet_version_and_caller_dict_is_untouched(tmp_path):
    config = {"model": "born_lm", "d": 64, "nested": {"heads": [1, 2]}, "cnet_version": "0.0.0"}
    save_folder(tmp_path, config=config, state_dict={})
    assert config["cnet_version"] == "0.0.0"
    loaded = load_folder(tmp_path).config
    assert loaded == {**config, "cnet_version": __version__}
    assert json.loads((tmp_path / "config.json").read_text()) == loaded


def test_views_noncontiguous_conjugate_and_grad_tensors_are_saved_by_value(tmp_path):
    base = torch.randn(6, 5, dtype=torch.complex64)
    param = torch.nn.Parameter(torch.randn(3, dtype=torch.complex128))
    sd = {"t": base.t(), "conj": base.conj(), "neg_imag": base.conj().imag, "param": param}
    back = load_folder(save_folder(tmp_path, config={}, state_dict=sd)).state_dict
    assert torch.equal(back["t"], base.t().contiguous())
    assert torch.equal(back["conj"], base.conj().resolve_conj())  # the lazy conjugate bit is applied, not dropped
    assert torch.equal(back["neg_imag"], -base.imag)
    assert torch.equal(back["param"], param.detach()) and not back["param"].requires_grad


def test_shared_storage_is_cloned(tmp_path):
    w = torch.randn(4, 3, dtype=torch.complex64)
    buf = torch.arange(10.0)
    sd = {"embed.weight": w, "head.weight": w, "lo": buf[:4], "hi": buf[4:]}
    back = load_folder(save_folder(tmp_path, config={}, state_dict=sd)).state_dict
    assert torch.equal(back["embed.weight"], w) and torch.equal(back["head.weight"], w)
    assert back["lo"].tolist() == [0.0, 1.0, 2.0, 3.0] and back["hi"].tolist() == [4.0, 5.0, 6.0, 7.0, 8.0, 9.0]
    # the caller's tensors still share memory: only the saved copies were separated
    assert sd["embed.weight"].data_ptr() == sd["head.weight"].data_ptr()


def test_sidecars_round_trip(tmp_path):
    sidecars = {
        "vocab.json": {"chars": ["\n", " ", "a", "é"]},
        "history.json": [1, 2.5, None],
        "metrics.jsonl": [{"step": 1, "loss": 2.0}, {"step": 2, "loss": 1.5}],
        "notes.txt": "trained on tiny-shakespeare\nsecond line é",
        "blob.bin": bytes(range(256)),
    }
    save_folder(tmp_path, config={}, state_dict={}, sidecars=sidecars)
    assert read_sidecar(tmp_path, "vocab.json") == sidecars["vocab.json"]
    assert read_sidecar(tmp_path, "history.json") == [1, 2.5, None]
    assert read_sidecar(tmp_path, "metrics.jsonl") == sidecars["metrics.jsonl"]
    assert (tmp_path / "metrics.jsonl").read_text().splitlines()[1] == '{"step": 2, "loss": 1.5}'
    assert read_sidecar(tmp_path, "notes.txt") == sidecars["notes.txt"]
    assert read_sidecar(tmp_path, "blob.bin", binary=True) == bytes(range(256))
    with pytest.raises(ValueError, match="blob.bin is not UTF-8.*binary=True"):
        read_sidecar(tmp_path, "blob.bin")


def _snapshot(folder):
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def _check_failed_save_leaves_folder_intact(folder, error, match, **kwargs):
    original = torch.randn(5, dtype=torch.complex64)
    save_folder(folder, config={"v": 1}, state_dict={"w": original}, sidecars={"vocab.json": {"chars": ["a"]}})
    before = _snapshot(folder)
    args = {"config": {"v": 2}, "state_dict": {"w": torch.ones(5, dtype=torch.complex64)},
            "sidecars": {"vocab.json": {"chars": ["b"]}}, **kwargs}
    with pytest.raises(error, match=match):
        save_folder(folder, **args)
    assert _snapshot(folder) == before  # same files, same bytes, no temporary files left behind
    ckpt = load_folder(folder)
    assert ckpt.config["v"] == 1 and torch.equal(ckpt.state_dict["w"], original)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"state_dict": {"w": torch.zeros(2, 2).to_sparse()}}, TypeError, "only dense tensors"),
        ({"state_dict": {"w": [1.0, 2.0]}}, TypeError, r"state_dict\['w'\] must be a torch.Tensor"),
        ({"config": {"lr": object()}}, TypeError, "'config' is not JSON-serialisable"),
        ({"config": {"lr": float("nan")}}, ValueError, "strict JSON"),
        ({"config": [1, 2]}, TypeError, "'config' must be a dict"),
        ({"sidecars": {"vocab.json": {"x": {1, 2}}}}, TypeError, "sidecar 'vocab.json' is not JSON"),
        ({"sidecars": {"a.bin": 3}}, TypeError, "must be str, bytes, dict or list"),
        ({"sidecars": {"sub/vocab.json": "x"}}, ValueError, "without folders"),
        ({"sidecars": {"config.json": {}}}, ValueError, "reserved"),
        ({"sidecars": {".hidden": "x"}}, ValueError, "non-hidden"),
    ],
)
def test_failed_save_leaves_existing_folder_intact(tmp_path, kwargs, error, match):
    _check_failed_save_leaves_folder_intact(tmp_path / "ckpt", error, match, **kwargs)


@pytest.mark.filterwarnings("ignore:ComplexHalf support is experimental")
def test_dtype_safetensors_cannot_store_leaves_existing_folder_intact(tmp_path):
    # the weights are written first: this fails while serialising the tensors, before any file is replaced
    sd = {"w": torch.ones(5, dtype=torch.complex64), "half": torch.zeros(3, dtype=torch.complex32)}
    _check_failed_save_leaves_folder_intact(tmp_path / "ckpt", TypeError, r"\['half'\].*complex32", state_dict=sd)


def test_failure_while_writing_a_late_file_removes_earlier_temporaries(tmp_path, monkeypatch):
    folder = tmp_path / "ckpt"
    save_folder(folder, config={"v": 1}, state_dict={"w": torch.zeros(2)})
    before = _snapshot(folder)
    # the weights are written first; make the sidecar write (after the weights' temporary exists) fail
    real_write_bytes = type(folder).write_bytes

    def failing_write_bytes(self, data):
        if self.name.startswith(".notes.txt"):
            raise OSError("disk full")
        return real_write_bytes(self, data)

    monkeypatch.setattr(type(folder), "write_bytes", failing_write_bytes)
    with pytest.raises(OSError, match="disk full"):
        save_folder(folder, config={"v": 2}, state_dict={"w": torch.ones(2)}, sidecars={"notes.txt": "x"})
    assert _snapshot(folder) == before


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_every_file_gets_the_permissions_of_a_plain_open(tmp_path, umask, mode):
    previous = os.umask(umask)
    try:
        save_folder(tmp_path / "ckpt", config={}, state_dict={"w": torch.ones(2, dtype=torch.complex64)},
                    sidecars={"vocab.json": {"chars": ["a"]}, "notes.txt": "hi"})
        atomic_write(tmp_path / "ckpt" / "extra.txt", "x")
    finally:
        os.umask(previous)
    modes = {p.name: oct(stat.S_IMODE(p.stat().st_mode)) for p in (tmp_path / "ckpt").iterdir()}
    assert modes == dict.fromkeys(["config.json", "model.safetensors", "vocab.json", "notes.txt", "extra.txt"],
                                  oct(mode))


def test_save_into_a_file_path_is_refused(tmp_path):
    target = tmp_path / "file"
    target.write_text("x")
    with pytest.raises(FileExistsError, match="is not a folder"):
        save_folder(target, config={}, state_dict={})


def test_missing_folder_and_files(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"nowhere does not exist.*config.json and model.safetensors"):
        load_folder(tmp_path / "nowhere")
    (tmp_path / "afile").write_text("x")
    with pytest.raises(FileNotFoundError, match="is not a folder"):
        load_folder(tmp_path / "afile")
    save_folder(tmp_path / "c", config={}, state_dict={"w": torch.zeros(1)})
    (tmp_path / "c" / "model.safetensors").unlink()
    with pytest.raises(FileNotFoundError, match=r"no model.safetensors \(the weights.*holds: config.json"):
        load_folder(tmp_path / "c")
    (tmp_path / "c" / "config.json").unlink()
    with pytest.raises(FileNotFoundError, match="no config.json"):
        load_folder(tmp_path / "c")
    with pytest.raises(FileNotFoundError, match="no vocab.json"):
        read_sidecar(tmp_path / "c", "vocab.json")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        read_sidecar(tmp_path / "nowhere", "vocab.json")


@pytest.fixture
def saved(tmp_path):
    folder = tmp_path / "ckpt"
    save_folder(folder, config={"name": "m"}, state_dict={"w": torch.randn(64, 64, dtype=torch.complex64),
                                                         "z": torch.randn(8, dtype=torch.complex128)},
                sidecars={"vocab.json": {"chars": ["a", "b"]}})
    return folder


@pytest.mark.parametrize("cut", [0, 5, 100, -1])
def test_truncated_weights_are_reported_as_corrupt(saved, cut):
    path = saved / "model.safetensors"
    data = path.read_bytes()
    path.write_bytes(data[:cut])
    with pytest.raises(ValueError, match=r"corrupt checkpoint .*ckpt: model.safetensors is not a valid safetensors"):
        load_folder(saved)


def test_garbage_weights_are_reported_as_corrupt(saved):
    (saved / "model.safetensors").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4)
    with pytest.raises(ValueError, match="corrupt checkpoint"):
        load_folder(saved)


@pytest.mark.parametrize("text", ['{"name": "m"', "", "[1, 2]", "\udcff"])
def test_corrupt_config_is_reported(saved, text):
    (saved / "config.json").write_bytes(text.encode("utf-8", "surrogateescape"))
    with pytest.raises(ValueError, match=r"corrupt checkpoint .*config.json"):
        load_folder(saved)


def test_corrupt_json_sidecar_is_reported(saved):
    (saved / "vocab.json").write_text('{"chars": [')
    with pytest.raises(ValueError, match="corrupt checkpoint .*vocab.json is not valid JSON"):
        read_sidecar(saved, "vocab.json")


def test_bad_complex128_marker_is_reported(tmp_path):
    from safetensors.torch import save_file

    tmp_path.joinpath("config.json").write_text("{}")
    save_file({"z": torch.zeros(3, 3)}, tmp_path / "model.safetensors", metadata={COMPLEX128_AS_REAL: '["z"]'})
    with pytest.raises(ValueError, match="'z' is marked as complex128"):
        load_folder(tmp_path)


def test_bad_map_location(saved):
    with pytest.raises(ValueError, match="'map_location'"):
        load_folder(saved, map_location="not-a-device")


def test_atomic_write_replaces_and_leaves_no_temporary(tmp_path):
    target = tmp_path / "vocab.json"
    target.write_text("old")
    atomic_write(target, '{"new": 1}')
    assert target.read_text() == '{"new": 1}'
    atomic_write(target, b"\x00\x01")
    assert target.read_bytes() == b"\x00\x01"
    assert [p.name for p in tmp_path.iterdir()] == ["vocab.json"]
    with pytest.raises(TypeError, match="'data' must be str or bytes"):
        atomic_write(target, 3)
    assert target.read_bytes() == b"\x00\x01"
