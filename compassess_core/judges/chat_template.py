"""The exact text a judge is given for a prompt, rendered with the model's tokenizer alone.

What :meth:`CausalJudge.render`, :meth:`Seq2SeqJudge.render` and :meth:`OpenAIJudge.render`
produce, without loading the model's weights: the chat template around the user message and the
answer primer for a causal model, the prompt itself for an encoder-decoder model, and for a
served model what is sent (the chat endpoint's message with its answer instruction; the
completions endpoint's text through the tokenizer its spec names, else the plain prompt). Only the
tokenizer and the model's configuration are read (from a ``.gguf`` file's header, or from its
first-use conversion once there is one, which is what the judge loads; a model folder; the hub
cache), and they are kept for the next call, so a web page can show the chat form of
any prompt of a run without a model in its process.

This module must never load model weights or contact a judge server.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any, Sequence

from ..errors import ModelLoadError
from .models import converted_folder, default_model_path, is_bundled
from ..types import ComparisonPrompt


@lru_cache(maxsize=4)
def _tokenizer(spec: str) -> tuple[Any, bool]:
    """The tokenizer of a local model (a ``.gguf`` file, a model folder or a hub id) and whether
    the model is an encoder-decoder, read without its weights."""
    try:
        from transformers import AutoConfig, AutoTokenizer
        path = Path(spec).expanduser()
        if spec.lower().endswith(".gguf"):
            if not path.is_file():
                raise ModelLoadError(f"model file {path} does not exist")
            where, extra = path.parent, dict(gguf_file=path.name)
            converted = converted_folder(path)
            if converted is not None:   # what the judge itself loads, in a second not five
                where, extra = converted, {}
        else:
            where, extra = spec, {}
        tokenizer = AutoTokenizer.from_pretrained(where, **extra)
        config = AutoConfig.from_pretrained(where, **extra)
    except ModelLoadError:
        raise
    except Exception as e:  # noqa: BLE001 - any failure is the model's path or id
        raise ModelLoadError(f"cannot read the tokenizer of '{spec}': {type(e).__name__}: "
                             f"{str(e).splitlines()[0] if str(e) else ''}") from None
    return tokenizer, bool(getattr(config, "is_encoder_decoder", False))


def _with_template(tokenizer: Any, prompt: ComparisonPrompt) -> str:
    """The chat template around the user message with the generation prompt, then the primer;
    ``text + "\\n\\n" + primer`` for a tokenizer without a chat template (as the judges do)."""
    if getattr(tokenizer, "chat_template", None):
        head = tokenizer.apply_chat_template([{"role": "user", "content": prompt.text}],
                                             tokenize=False, add_generation_prompt=True)
        return head + prompt.primer
    return prompt.text + "\n\n" + prompt.primer


def rendered_prompt(model: str | None, prompt: ComparisonPrompt,
                    label_words: Sequence[str] | None = None) -> str:
    """What a judge of ``model`` (``RunSettings.model``: the bundled one, a ``.gguf`` file, a
    folder, a hub id or a served ``openai:``/``openai-completions:`` spec) is given for
    ``prompt``; ``label_words``: the run's, which a served chat judge is told to answer with.

    Raises
    ------
    ModelLoadError
        The model's tokenizer cannot be read (a missing file, an unknown hub id offline).
    InputError
        A malformed served model spec.
    """
    from .openai_judge import CHAT_INSTRUCTION, CHAT_LABEL_WORDS, _load_tokenizer, normalise_token
    from .servers import is_openai_spec, parse_spec
    if is_openai_spec(model):
        spec = parse_spec(str(model))
        if spec.endpoint == "chat":
            a, b = (normalise_token(w) for w in (label_words or CHAT_LABEL_WORDS))
            return prompt.text + CHAT_INSTRUCTION.format(a=a, b=b)
        name = spec.options.get("tokenizer")
        if not name:
            return prompt.text + "\n\n" + prompt.primer
        return _with_template(_load_tokenizer(name), prompt)
    tokenizer, seq2seq = _tokenizer(str(default_model_path()) if is_bundled(model) else str(model))
    return prompt.text if seq2seq else _with_template(tokenizer, prompt)
