"""FAKE judges for tests that are about something other than the model (the run loop, the store,
the CLI's wiring, the app). Every verdict is a pure function of the prompt text, so results are
reproducible; the real bundled model is exercised in the tests marked ``model``.
"""

from __future__ import annotations

import threading
import time

import numpy as np

from compassess_core.types import Judgement


def fake_p(text: str) -> float:
    """p as a pure function of the prompt: sigmoid(len(text) mod 7 - 3)."""
    return float(1 / (1 + np.exp(-((len(text) % 7) - 3))))


class FakeCharTokenizer:
    """FAKE tokenizer: one token per character (id = code point), with offsets."""

    chat_template = None
    bos_token = None
    pad_token_id = 0
    eos_token_id = 0

    def __call__(self, texts, add_special_tokens=False, return_offsets_mapping=False):
        single = isinstance(texts, str)
        items = [texts] if single else list(texts)
        ids = [[ord(c) for c in t] for t in items]
        out = {"input_ids": ids[0] if single else ids}
        if return_offsets_mapping:
            offs = [[(k, k + 1) for k in range(len(t))] for t in items]
            out["offset_mapping"] = offs[0] if single else offs
        return out

    def convert_ids_to_tokens(self, ids):
        return [chr(i) for i in ids]


class FakeLengthJudge:
    """FAKE causal judge: p = :func:`fake_p` of the prompt; streams micro-batches of
    ``batch_size``; counts tokens per character; records every prompt and micro-batch.

    ``delay_s`` sleeps in each micro-batch (heartbeat and cancel tests); ``on_batch(k)`` is
    called before micro-batch ``k`` is computed; ``p_of(prompt)`` replaces the verdict.
    """

    kind = "causal"
    label_words = (" A", " B")
    description = "fake length judge (tests only)"

    def __init__(self, batch_size: int = 4, delay_s: float = 0.0, context_window: int | None = None,
                 on_batch=None, p_of=None):
        self.model_key = "fake-length-judge|fp32|labels=[\" A\", \" B\"]"
        self.batch_size = batch_size
        self.delay_s = delay_s
        self.context_window = context_window
        self.on_batch = on_batch
        self.p_of = p_of or (lambda prompt: fake_p(prompt.text))
        self.tokenizer = FakeCharTokenizer()
        self.seen: list = []
        self.batches: list[int] = []
        self.lock = threading.Lock()

    def render(self, prompt) -> str:
        return prompt.text + "\n\n" + prompt.primer

    def encode(self, texts):
        return [[ord(c) for c in t] for t in texts]

    def prompt_tokens(self, prompts):
        return np.array([len(self.render(p)) for p in prompts], dtype=np.int64)

    def _batches(self, n: int):
        for start in range(0, n, self.batch_size):
            if self.on_batch is not None:
                self.on_batch(len(self.batches))
            if self.delay_s:
                time.sleep(self.delay_s)
            rows = np.arange(start, min(start + self.batch_size, n))
            self.batches.append(len(rows))
            yield rows

    def judge_stream(self, prompts):
        prompts = list(prompts)
        self.seen.extend(prompts)
        for rows in self._batches(len(prompts)):
            out = []
            for r in rows:
                p = self.p_of(prompts[r])
                out.append(Judgement(p=p, logp_a=float(np.log(p)), logp_b=float(np.log1p(-p)),
                                     label_mass=1.0, latency_ms=0.0))
            yield rows, out

    def judge(self, prompts):
        return [j for _, js in self.judge_stream(prompts) for j in js]

    def label_stream(self, seqs, label_ids):
        """Log-probabilities of ``label_ids`` after each sequence, a function of its length
        (enough structure for the scoring arithmetic). Sequences run in lexicographic order, as
        a prefix tree visits them, so a sequence and its one-token extensions share a batch."""
        order = sorted(range(len(seqs)), key=lambda r: seqs[r])
        for pos in self._batches(len(seqs)):
            rows = np.array([order[k] for k in pos], dtype=np.int64)
            logits = np.array([[-abs((len(seqs[r]) % 10) - k) for k in range(len(label_ids))]
                               for r in rows], dtype=np.float64)
            yield rows, logits - np.log(np.exp(logits).sum(axis=1, keepdims=True) + 1.0)

    def label_logprobs_stream(self, prompts, words):
        prompts = list(prompts)
        self.seen.extend(prompts)
        for rows in self._batches(len(prompts)):
            lp = []
            for r in rows:
                text = prompts[r].text
                better = 0.8 if (len(text) % 2) else 0.1
                lp.append(np.log([better * 0.5, (0.9 - better) * 0.5, 0.05][:len(words)]))
            yield rows, np.array(lp), 0.0

    def close(self) -> None:
        pass


class FakeWritingJudge(FakeLengthJudge):
    """FAKE causal judge that also writes (``base.TextGenerator``): p as
    :class:`FakeLengthJudge`; asked to rewrite a question (a tuning's paraphrase request) it
    writes a question with the two answer names and the aspect's word, worded by the seed;
    asked for reasons it writes a FAKE sentence that quotes the answer it was told it gave.
    Every request is recorded in ``asked``."""

    description = "fake writing judge (tests only)"

    def __init__(self, **kw):
        super().__init__(**kw)
        self.model_key = "fake-writing-judge|fp32|labels=[\" A\", \" B\"]"
        self.asked: list[str] = []

    def generate(self, prompts, options, *, seeds=None):
        import re
        out = []
        for k, prompt in enumerate(prompts):
            self.asked.append(prompt)
            words = re.search(r'Keep the word "([^"]+)" and the names "(\w+) A"', prompt)
            if words:
                word, noun = words.groups()
                seed = 0 if seeds is None or seeds[k] is None else int(seeds[k])
                lead = ("Between", "Of", "Comparing", "Looking at")[seed % 4]
                out.append(f"Question: {lead} {noun} A and {noun} B, which one is more {word}?")
                continue
            answer = re.search(r"Your answer was: (\w+ [AB])\.", prompt)
            out.append(f"FAKE reasons for {answer.group(1) if answer else 'nothing'}: the text "
                       f"of length {len(prompt)} reads better.")
        return out

    def generation_record(self, options) -> dict:
        return dict(model="fake-writing-judge", max_new_tokens=options.max_new_tokens)



def fake_word_tokenizer(texts):
    """FAKE tokenizer: one id per word of ``texts`` (whitespace and punctuation split, no model
    file needed), with " A" and " B" one token each."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    pre = pre_tokenizers.Whitespace()
    words = sorted({w for t in [*texts, "Answer: Summary A B"] for w, _ in pre.pre_tokenize_str(t)})
    raw = Tokenizer(models.WordLevel({w: k for k, w in enumerate(
        ["<pad>", "<s>", "</s>", "<unk>", *words])}, unk_token="<unk>"))
    raw.pre_tokenizer = pre
    return PreTrainedTokenizerFast(tokenizer_object=raw, pad_token="<pad>", bos_token="<s>",
                                   eos_token="</s>", unk_token="<unk>")


def fake_tiny_llama(tokenizer, *, layers: int = 2, width: int = 64):
    """FAKE judge weights for tests about the engine around the model (what it batches, fuses,
    retries and caches), not about what a judge says: a random-initialised Llama of ``layers``
    layers and hidden size ``width`` (grouped-query attention, as the bundled SmolLM2) over
    ``tokenizer``'s ids (the bundled judge's own, for the same tokens and prompt tree, or
    :func:`fake_word_tokenizer`'s). It runs through the real ``CausalJudge`` the code paths the
    bundled judge does, with a hundredth of its arithmetic. Returns a ``LoadedModel`` named
    ``FAKE tiny llama``."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from compassess_core.judges.loading import LoadedModel

    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=width, intermediate_size=2 * width,
                         num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=8192, pad_token_id=tokenizer.pad_token_id,
                         bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                         tie_word_embeddings=False,
                         initializer_range=0.3)  # p spread over (0, 1): a wrong p shows
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).eval()
    return LoadedModel(model, tokenizer, f"FAKE-tiny-llama-{layers}x{width}@random",
                       "FAKE tiny llama (random init)", False, torch.device("cpu"), torch.float32)
