"""The judges on this machine (compassess_core.judges.model_catalog): headers of real GGUF files and
transformers folders written here, the bundled model's header against the loaded judge, speeds
from recorded runs, ``compassess models`` and the Run page's models-folder picker."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import gguf
import numpy as np
import pytest
from safetensors.numpy import save_file
from streamlit.testing.v1 import AppTest

from compassess_core.judges import model_catalog as mc
from compassess_core.cli import main as cli
from compassess_core.judges.models import BUNDLED_MODEL
from tests.app.test_app_pages import APP, app_env  # noqa: F401


def write_gguf(path: Path, context: int = 4096) -> int:
    """A small real GGUF file (metadata, a vocabulary array, two tensors); returns its parameters."""
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name("tiny judge")
    w.add_context_length(context)
    w.add_token_list(["<s>", "a", "b", "long token " * 10])  # an array of strings to skip
    w.add_tensor("token_embd.weight", np.zeros((4, 8), dtype=np.float32))
    w.add_tensor("output_norm.weight", np.ones(8, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return 4 * 8 + 8


def write_folder(path: Path) -> int:
    path.mkdir()
    (path / "config.json").write_text(json.dumps({"architectures": ["Qwen2ForCausalLM"],
                                                  "max_position_embeddings": 2048}))
    save_file({"a": np.zeros((3, 5), np.float32), "b": np.zeros(7, np.float32)},
              str(path / "model.safetensors"))
    return 3 * 5 + 7


def test_headers_of_a_gguf_file_and_a_transformers_folder(tmp_path):
    params = write_gguf(tmp_path / "tiny.gguf")
    h = mc.gguf_header(tmp_path / "tiny.gguf")
    assert h == dict(architecture="llama", context_window=4096, name="tiny judge", parameters=params)
    params = write_folder(tmp_path / "judge")
    h = mc.folder_header(tmp_path / "judge")
    assert h == dict(architecture="Qwen2ForCausalLM", context_window=2048, name="judge",
                     parameters=params)
    (tmp_path / "bad.gguf").write_bytes(b"not a gguf")
    with pytest.raises(ValueError, match="magic"):
        mc.gguf_header(tmp_path / "bad.gguf")


def test_catalog_lists_the_folder_with_speeds_measured_here(tmp_path, monkeypatch):
    folder = tmp_path / "models"
    folder.mkdir()
    write_gguf(folder / "b-judge.gguf")
    write_folder(folder / "a-judge")
    (folder / "bad.gguf").write_bytes(b"nope")
    (folder / "notes.txt").write_text("not a model")
    monkeypatch.setenv("COMPASSESS_MODELS_DIR", str(folder))
    monkeypatch.chdir(tmp_path)
    run = lambda model, rate, kind="comparative": SimpleNamespace(  # noqa: E731
        settings=dict(model=model, kind=kind), rate=rate)
    # runs name the same file by a relative path and by an absolute one
    runs = [run("models/b-judge.gguf", 1.0), run(str(folder / "b-judge.gguf"), 3.0),
            run(str(folder / "b-judge.gguf"), 0.5, "scoring"), run(BUNDLED_MODEL, 6.0)]
    entries = mc.catalog(runs)
    assert [e.name for e in entries] == ["SmolLM2-135M-Instruct (bundled)", "a-judge", "b-judge.gguf",
                                         "bad.gguf"]
    by = {e.name: e for e in entries}
    assert by["b-judge.gguf"].speed.rate == 2.0 and by["b-judge.gguf"].speed.n_runs == 2
    assert by["b-judge.gguf"].scoring_speed.rate == 0.5
    assert by["SmolLM2-135M-Instruct (bundled)"].speed.rate == 6.0
    assert by["a-judge"].speed is None and by["a-judge"].context_window == 2048
    assert by["bad.gguf"].problem.startswith("could not read its header")
    frame = mc.catalog_frame(entries)
    row = frame.set_index("model").loc["b-judge.gguf"]
    assert row["comparisons/s measured here"] == "2.00 (2 runs)"
    assert row["--model"] == str((folder / "b-judge.gguf").resolve())


def test_models_folder_default_is_under_compassess_home(tmp_path, monkeypatch):
    monkeypatch.delenv("COMPASSESS_MODELS_DIR", raising=False)
    monkeypatch.setenv("COMPASSESS_HOME", str(tmp_path / "home"))
    assert mc.models_folder() == tmp_path / "home" / "models"


def test_cli_models_json(tmp_path, monkeypatch, capsys, db_url):
    monkeypatch.setenv("COMPASSESS_MODELS_DIR", str(tmp_path))
    write_gguf(tmp_path / "tiny.gguf", context=1234)
    assert cli(["models", "--json", "--db", db_url]) == 0
    out = json.loads(capsys.readouterr().out)
    tiny = next(m for m in out["models"] if m["name"] == "tiny.gguf")
    assert (tiny["context_window"], tiny["kind"], tiny["comparisons_per_s"]) == (1234, "gguf", None)
    assert out["models_folder"] == str(tmp_path)
    assert {r["hardware"] for r in out["recommended"]} >= {"one H100 (80 GB)"}
    assert cli(["models", "--db", db_url]) == 0
    assert "tiny.gguf" in capsys.readouterr().out


@pytest.mark.model
def test_bundled_header_matches_the_loaded_judge(bundled_model):
    from compassess_core.judges import load_judge

    h = mc.gguf_header(bundled_model)
    judge = load_judge(None, device="cpu", batch_size=1)
    assert h["context_window"] == judge.context_window
    assert h["architecture"] == "llama" and 130e6 < h["parameters"] < 140e6


def test_run_page_offers_the_models_folder(app_env, tmp_path, monkeypatch):
    from tests.app.test_app_pages import seed_run
    seed_run(app_env)
    folder = tmp_path / "models"
    folder.mkdir()
    write_gguf(folder / "tiny.gguf", context=4096)
    monkeypatch.setenv("COMPASSESS_MODELS_DIR", str(folder))
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("pages/run.py").run()
    assert not at.exception, at.exception
    model = next(r for r in at.radio if r.label == "Model")
    model.set_value("models folder").run()
    assert not at.exception, at.exception
    picker = at.selectbox(key="catalog_model_1")   # keyed by the dataset on screen
    assert picker.value == str((folder / "tiny.gguf").resolve())
    assert any("4,096 tokens" in o for o in picker.options)
    catalogs = [df.value for df in at.dataframe if "context window (tokens)" in df.value.columns]
    assert catalogs and "tiny.gguf" in catalogs[0]["model"].tolist()
    # the run the page would start uses that file, and its proposed name says so
    run_name = next(t for t in at.text_input if t.label == "Run name")
    assert "-tiny-" in run_name.value
