"""push / pull and the `cnet push` / `cnet pull` commands, offline: the Hub client is replaced by fakes."""

from __future__ import annotations

import shutil

import pytest
import torch
from huggingface_hub import CommitOperationAdd, ModelCard, RepoUrl

import cnet.hub.transfer
from cnet.core import __version__
from cnet.core.checkpoint import load_folder, save_folder
from cnet.core.cli import main
from cnet.hub import pull, push
from cnet.hub.card import GENERATED_MARKER


class FakeApi:
    """Records what push asks of huggingface_hub.HfApi and the bytes each commit operation would upload."""

    instances: list[FakeApi] = []
    fail_commit: Exception | None = None

    def __init__(self, **kwargs):
        self.init = kwargs
        self.calls: list[tuple] = []
        self.uploaded: dict[str, bytes] = {}
        FakeApi.instances.append(self)

    def create_repo(self, repo_id, **kwargs):
        self.calls.append(("create_repo", repo_id, kwargs))
        return RepoUrl(f"https://huggingface.co/{repo_id}")

    def create_commit(self, **kwargs):
        self.calls.append(("create_commit", kwargs))
        if FakeApi.fail_commit is not None:
            raise FakeApi.fail_commit
        for op in kwargs["operations"]:
            assert isinstance(op, CommitOperationAdd) and op.path_in_repo not in self.uploaded
            with op.as_file() as fh:
                self.uploaded[op.path_in_repo] = fh.read()


@pytest.fixture
def api(monkeypatch):
    FakeApi.instances, FakeApi.fail_commit = [], None
    monkeypatch.setattr(cnet.hub.transfer, "HfApi", FakeApi)
    return FakeApi.instances


@pytest.fixture
def folder(tmp_path):
    sd = {"embed": torch.randn(65, 8, dtype=torch.complex64), "head": torch.randn(8, 65, dtype=torch.complex64)}
    return save_folder(tmp_path / "run", config={"model": "born_lm", "d_model": 8}, state_dict=sd,
                       sidecars={"vocab.json": {"type": "char", "chars": ["a"]},
                                 "metrics.json": {"val_loss": 1.5234, "step": 3000}})


def test_push_validates_writes_the_card_and_uploads(folder, api):
    url = push(folder, "me/born-lm", token="hf_x", commit_message="first")
    assert url == "https://huggingface.co/me/born-lm"
    (client,) = api
    assert client.init == {"token": "hf_x", "library_name": "cnet", "library_version": __version__}
    assert client.calls[0] == ("create_repo", "me/born-lm", {"private": False, "exist_ok": True})
    name, kwargs = client.calls[1]
    assert name == "create_commit" and kwargs["repo_id"] == "me/born-lm" and kwargs["commit_message"] == "first"
    assert sorted(client.uploaded) == ["README.md", "config.json", "metrics.json", "model.safetensors", "vocab.json"]
    for name in ("config.json", "model.safetensors", "vocab.json"):
        assert client.uploaded[name] == (folder / name).read_bytes()
    card = ModelCard(client.uploaded["README.md"].decode())
    assert GENERATED_MARKER in card.text and not (folder / "README.md").exists()  # uploaded from memory
    assert card.data.library_name == "cnet" and "born_lm" in card.data.tags
    assert "From metrics.json." in card.text and "| val_loss | 1.5234 |" in card.text and "| step | 3000 |" in card.text


def test_push_uses_the_last_metrics_record(folder, api):
    (folder / "metrics.json").unlink()
    (folder / "metrics.jsonl").write_text('{"step": 100, "val_loss": 2.9}\n{"step": 200, "val_loss": 2.1}\n')
    push(folder, "me/m", private=True)
    assert api[0].calls[0][2]["private"] is True
    text = api[0].uploaded["README.md"].decode()
    assert "From the last record of metrics.jsonl." in text and "| val_loss | 2.1 |" in text
    assert "2.9" not in text


def test_push_regenerates_its_own_card_but_keeps_a_hand_written_one(folder, api):
    push(folder, "me/m")
    old_card = api[-1].uploaded["README.md"]
    (folder / "README.md").write_bytes(old_card)  # a generated card left in the folder (by an older cnet-hub)
    save_folder(folder, config={"model": "born_lm"}, state_dict=load_folder(folder).state_dict,
                sidecars={"metrics.json": {"val_loss": 1.1}})
    push(folder, "me/m")
    assert "| val_loss | 1.1 |" in api[-1].uploaded["README.md"].decode()
    assert (folder / "README.md").read_bytes() == old_card  # replaced in the upload only
    (folder / "README.md").write_text("# My own card\n")
    push(folder, "me/m")
    assert (folder / "README.md").read_text() == "# My own card\n"
    assert api[-1].uploaded["README.md"] == b"# My own card\n"


def _snapshot(folder):
    return {p.relative_to(folder).as_posix(): (p.read_bytes(), p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("hand_written", [False, True])
def test_a_failed_push_leaves_the_folder_byte_identical(folder, api, hand_written):
    if hand_written:
        (folder / "README.md").write_text("# My own card\n")
    before = _snapshot(folder)
    FakeApi.fail_commit = OSError("503 Service Unavailable")
    with pytest.raises(OSError, match="503"):
        push(folder, "me/m")
    assert api[0].calls[-1][0] == "create_commit"  # it failed at the upload, after the card was made
    assert _snapshot(folder) == before


def test_push_skips_hidden_files_and_folders_and_uploads_subfolders(folder, api):
    (folder / ".model.safetensors.abc.tmp").write_bytes(b"leftover")
    (folder / ".cache").mkdir()
    (folder / ".cache" / "x").write_bytes(b"x")
    (folder / "extra" / ".hidden").mkdir(parents=True)
    (folder / "extra" / ".hidden" / "y").write_bytes(b"y")
    (folder / "extra" / "notes.txt").write_text("notes")
    push(folder, "me/m")
    assert sorted(api[0].uploaded) == ["README.md", "config.json", "extra/notes.txt", "metrics.json",
                                       "model.safetensors", "vocab.json"]


@pytest.mark.parametrize("damage", ["truncate", "garbage_config", "remove_weights"])
def test_push_never_uploads_a_corrupt_folder(folder, api, damage):
    if damage == "truncate":
        weights = folder / "model.safetensors"
        weights.write_bytes(weights.read_bytes()[:-10])
        error = ValueError
    elif damage == "garbage_config":
        (folder / "config.json").write_text("{not json")
        error = ValueError
    else:
        (folder / "model.safetensors").unlink()
        error = FileNotFoundError
    with pytest.raises(error, match="checkpoint"):
        push(folder, "me/m")
    assert api == [] and not (folder / "README.md").exists()


@pytest.mark.parametrize("repo_id", ["no-namespace", "a/b/c", "me/bad name", None])
def test_push_rejects_bad_repo_ids_before_anything_else(folder, api, repo_id):
    with pytest.raises(ValueError):
        push(folder, repo_id)
    assert api == [] and not (folder / "README.md").exists()


@pytest.fixture
def hub_snapshot(monkeypatch, folder, tmp_path):
    """snapshot_download replaced by a copy of ``folder``; records its arguments."""
    calls = []

    def fake_snapshot_download(repo_id, **kwargs):
        calls.append((repo_id, kwargs))
        target = kwargs["local_dir"] or tmp_path / "hf-cache" / repo_id.replace("/", "--")
        shutil.copytree(folder, target, dirs_exist_ok=True)
        return str(target)

    monkeypatch.setattr(cnet.hub.transfer, "snapshot_download", fake_snapshot_download)
    return calls


def test_pull_downloads_and_checks(hub_snapshot, folder, tmp_path):
    path = pull("me/born-lm", revision="v1", local_dir=tmp_path / "here", token="hf_y")
    assert path == tmp_path / "here"
    assert hub_snapshot == [("me/born-lm", {"revision": "v1", "local_dir": tmp_path / "here", "token": "hf_y",
                                            "library_name": "cnet", "library_version": __version__})]
    got, want = load_folder(path), load_folder(folder)
    assert got.config == want.config and torch.equal(got.state_dict["embed"], want.state_dict["embed"])
    assert pull("me/born-lm") == tmp_path / "hf-cache" / "me--born-lm"


def test_pull_reports_a_corrupt_or_foreign_repository(hub_snapshot, folder, tmp_path):
    (folder / "config.json").write_text("[")
    with pytest.raises(ValueError, match="'me/m' holds a corrupt checkpoint: corrupt checkpoint"):
        pull("me/m", local_dir=tmp_path / "a")
    (folder / "config.json").unlink()
    with pytest.raises(FileNotFoundError, match="'me/m' is not a cnet checkpoint: .*no config.json"):
        pull("me/m", local_dir=tmp_path / "b")


def test_cli_push_and_pull(folder, api, hub_snapshot, tmp_path, capsys):
    assert main(["push", str(folder), "me/born-lm", "--private"]) == 0
    assert capsys.readouterr().out.strip() == "https://huggingface.co/me/born-lm"
    assert api[0].calls[0] == ("create_repo", "me/born-lm", {"private": True, "exist_ok": True})

    assert main(["pull", "me/born-lm", "--to", str(tmp_path / "dl"), "--revision", "v2"]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "dl")
    assert hub_snapshot[0][1]["revision"] == "v2" and hub_snapshot[0][1]["local_dir"] == str(tmp_path / "dl")


def test_cli_push_of_a_corrupt_folder_is_a_one_line_error(folder, api, capsys):
    (folder / "model.safetensors").write_bytes(b"garbage")
    assert main(["push", str(folder), "me/m"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("cnet: error: corrupt checkpoint") and "model.safetensors" in err
    assert api == []
