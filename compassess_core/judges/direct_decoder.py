"""A direct forward pass for Llama-shaped decoders on CPU: the judge's passes without padding masks.

transformers' forward runs a whole batch through one key/value cache object and one 4-D mask:
a row that continues a cached prefix gets its own copy of that cache (the cache broadcast, then
concatenated with the row's new keys), and a mask as wide as the cache hides what the row must
not see. For a small judge on CPU that is most of a comparison's time: the attention reads the
mask and the copies, and transformers' module code (mask building, cache bookkeeping, keyword
handling) runs per layer and pass.

``DirectDecoder`` computes the same function from the same modules and weights, with each
row's attention split in two exact parts (the log-sum-exp merge of Dao et al., "FlashAttention",
2022, sec. 3.1):

* to its cached prefix: every cached key is visible, so no mask at all; the rows that continue
  one cache read it in one call, their query heads folded onto the shared key/value heads, the
  cache never copied;
* to its own new tokens: causal (or the tree attention of fused passes, a mask only as wide as
  the new tokens).

The two parts' outputs are combined by their log-sum-exps, which the CPU flash kernel returns:
``o = (o1 e^(l1 - m) + o2 e^(l2 - m)) / (e^(l1 - m) + e^(l2 - m))``, ``m = max(l1, l2)``, i.e.
softmax attention over the union of the keys, up to fp32 rounding. Everything else is the
layers' own weights and operators (norms, projections, rotary embedding, MLP), in the order
their ``forward`` applies them, without the module wrappers: the projections as ``F.linear`` on
their weights, Llama's and Qwen2's RMSNorm as the one ``F.rms_norm`` operator (the same
formula; the mean summed in its own order), the rotation as a roll (one operator for
``rotate_half``'s slice, negation and concatenation).

Only for decoders whose layers are exactly that (``DirectDecoder.supports``): Llama (SmolLM2,
Llama 3) and Qwen2 without sliding windows, fp32 weights on CPU; every other model keeps
transformers' forward. This module must never decide what to compute, only how.
"""

from __future__ import annotations

from typing import Sequence

import torch
import torch.nn.functional as F

#: Decoder layers whose forward is: x + attn(norm1(x)); x + mlp(norm2(x)), rotary q/k, no q/k norm.
_LAYERS = {"LlamaDecoderLayer", "Qwen2DecoderLayer"}
_flash = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu

#: A cache: per layer (keys, values), each (1, key/value heads, cached tokens, head size).
Cache = Sequence[tuple[torch.Tensor, torch.Tensor]]


class DirectDecoder:
    """The decoder stack of ``model`` run directly (see the module docstring)."""

    def __init__(self, model: torch.nn.Module):
        self.base = model.get_decoder() if hasattr(model, "get_decoder") else model.base_model
        cfg = self.base.config
        self.layers = list(self.base.layers[: cfg.num_hidden_layers])
        attn = self.layers[0].self_attn
        self.head_dim = int(attn.head_dim)
        self.heads = int(cfg.num_attention_heads)
        self.kv_heads = int(cfg.num_key_value_heads)
        self.groups = self.heads // self.kv_heads
        # The modules' own weights, called without their module wrappers (a pass's fixed host
        # cost on a small judge): the same operators on the same tensors.
        self._norms = [self._norm_of(m) for layer in self.layers
                       for m in (layer.input_layernorm, layer.post_attention_layernorm)]
        self._final_norm = self._norm_of(self.base.norm)
        self._mlps = [self._mlp_of(layer.mlp, cfg) for layer in self.layers]
        # Per layer the projections' weights and biases and the attention's scale, read once:
        # a module attribute costs a Python lookup through ``Module.__getattr__`` per pass.
        self._attn = [(a.q_proj.weight, a.q_proj.bias, a.k_proj.weight, a.k_proj.bias,
                       a.v_proj.weight, a.v_proj.bias, a.o_proj.weight, a.o_proj.bias, a.scaling)
                      for a in (layer.self_attn for layer in self.layers)]

    @staticmethod
    def _norm_of(norm: torch.nn.Module):
        """``norm`` as ``x -> F.rms_norm(x, weight, eps)`` when it is Llama's or Qwen2's RMSNorm
        (``weight * x / sqrt(mean(x^2) + eps)`` in fp32: the same formula in one operator, the
        mean summed in its own order), else the module itself."""
        w, eps = getattr(norm, "weight", None), getattr(norm, "variance_epsilon", None)
        if type(norm).__name__ not in ("LlamaRMSNorm", "Qwen2RMSNorm") or w is None or eps is None:
            return norm
        shape = (int(w.shape[0]),)
        return lambda x: F.rms_norm(x, shape, w, float(eps))

    @staticmethod
    def _mlp_of(mlp: torch.nn.Module, cfg):
        """``mlp`` as ``down(silu(gate(x)) * up(x))`` on its linear layers' weights (what its
        ``forward`` computes) when it is that (a SiLU gated MLP of plain linear layers), else
        the module itself."""
        parts = [getattr(mlp, n, None) for n in ("gate_proj", "up_proj", "down_proj")]
        if (type(mlp).__name__ not in ("LlamaMLP", "Qwen2MLP") or getattr(cfg, "hidden_act", None) != "silu"
                or any(type(m) is not torch.nn.Linear for m in parts)):
            return mlp
        gate, up, down = parts
        return lambda x: F.linear(F.silu(F.linear(x, gate.weight, gate.bias)) * F.linear(x, up.weight, up.bias),
                                  down.weight, down.bias)

    @staticmethod
    def supports(model: torch.nn.Module, device: torch.device, dtype: torch.dtype) -> bool:
        """Whether ``model`` is a decoder this forward computes exactly (see the module
        docstring); anything else, or anything unexpected, keeps transformers' forward."""
        if device.type != "cpu" or dtype != torch.float32:
            return False
        try:
            base = model.get_decoder() if hasattr(model, "get_decoder") else model.base_model
            cfg = base.config
            if any(p.dtype != torch.float32 for p in model.parameters()):
                return False
            if getattr(cfg, "pretraining_tp", 1) not in (1, None):
                return False
            if not all(hasattr(base, a) for a in ("embed_tokens", "rotary_emb", "norm", "layers")):
                return False
            for layer in base.layers[: cfg.num_hidden_layers]:
                attn = layer.self_attn
                if type(layer).__name__ not in _LAYERS or getattr(attn, "sliding_window", None):
                    return False
                if any(type(getattr(attn, n, None)) is not torch.nn.Linear
                       for n in ("q_proj", "k_proj", "v_proj", "o_proj")):
                    return False
                if hasattr(attn, "q_norm") or hasattr(attn, "k_norm"):
                    return False
                if attn.head_dim * cfg.num_attention_heads != attn.q_proj.out_features:
                    return False
            return cfg.num_attention_heads % cfg.num_key_value_heads == 0
        except Exception:  # noqa: BLE001 - an unknown layout is simply not supported
            return False

    def forward(self, ids: torch.Tensor, pos: torch.Tensor,
                caches: Sequence[tuple[Cache | None, int, int]] = (),
                inner: torch.Tensor | None = None
                ) -> tuple[torch.Tensor, list[tuple[torch.Tensor, torch.Tensor]]]:
        """The last hidden states (b, w, hidden) of token rows ``ids`` (b, w) at positions
        ``pos`` (b, w), and per layer the new tokens' (keys, values), each (b, kv heads, w, head
        size), as the model's cache holds them.

        ``caches``: (cache, lo, hi) spans, in row order: rows ``lo:hi`` continue that cached
        prefix and attend to all of it (None: they start from nothing); no spans, no row has
        a cache. ``inner``: None, each row's new tokens attend causally to each other (right
        padding after a row's tokens is never seen by them); or an additive mask (b, 1, w, w)
        among the new tokens.
        """
        b, w = ids.shape
        h = self.base.embed_tokens(ids)
        cos, sin = self.base.rotary_emb(h, position_ids=pos)
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        hd, g = self.head_dim, self.groups
        half = hd // 2
        # rotate_half(x) * sin = roll(x, half) * (sin with its first half negated): the same
        # products (a negation is exact), two operators fewer per rotation.
        sin = torch.cat((-sin[..., :half], sin[..., half:]), dim=-1)
        spans = [c for c in caches if c[0] is not None]
        new_kv = []
        for li in range(len(self.layers)):
            wq, bq, wk, bk, wv, bv, wo, bo, scaling = self._attn[li]
            x = self._norms[2 * li](h)
            q = F.linear(x, wq, bq).view(b, w, -1, hd).transpose(1, 2)
            k = F.linear(x, wk, bk).view(b, w, -1, hd).transpose(1, 2)
            v = F.linear(x, wv, bv).view(b, w, -1, hd).transpose(1, 2)
            q = (q * cos) + (q.roll(half, -1) * sin)
            k = (k * cos) + (k.roll(half, -1) * sin)
            new_kv.append((k, v))
            kr = k if g == 1 else k[:, :, None].expand(b, self.kv_heads, g, w, hd).reshape(b, -1, w, hd)
            vr = v if g == 1 else v[:, :, None].expand(b, self.kv_heads, g, w, hd).reshape(b, -1, w, hd)
            out, lse = _flash(q, kr, vr, 0.0, inner is None, attn_mask=inner, scale=scaling)
            if spans:
                out = self._merge(q, out, lse, caches, li, scaling)
            out = out.transpose(1, 2).reshape(b, w, -1)
            h = h + F.linear(out, wo, bo)
            h = h + self._mlps[li](self._norms[2 * li + 1](h))
        return self._final_norm(h), new_kv

    def _to_cache(self, folded: torch.Tensor, kv: tuple[torch.Tensor, torch.Tensor], scale: float
                  ) -> tuple[torch.Tensor, torch.Tensor]:
        """Attention of the rows ``folded`` (n, key/value heads, groups x w, head size: each
        row's query heads folded onto the cache's key/value heads) to every key of one cache:
        one unmasked call, the cache never copied. Returns the output (n, key/value heads,
        groups x w, head size) and its log-sum-exp (n, key/value heads, groups x w)."""
        keys, values = kv
        n, kvh, gw, hd = folded.shape
        o, lse = _flash(folded.transpose(0, 1).reshape(1, kvh, n * gw, hd), keys, values, 0.0, False,
                        scale=scale)
        return o.reshape(kvh, n, gw, hd).transpose(0, 1), lse.reshape(kvh, n, gw).transpose(0, 1)

    def _merge(self, q: torch.Tensor, out: torch.Tensor, lse: torch.Tensor, caches, li: int,
               scale: float) -> torch.Tensor:
        """The rows' attention over their cache's keys and their own (``out``, ``lse``): each
        span's part to its cache, then one log-sum-exp merge for every row (a row without a
        cache gets weight 0 on that part). The queries are folded onto the key/value heads once
        for all rows (one copy), each span reading its slice."""
        b, heads, w, hd = q.shape
        kvh = self.kv_heads
        folded = q.reshape(b, kvh, heads // kvh * w, hd)
        parts_o, parts_l = [], []
        for cache, lo, hi in caches:
            if cache is None:
                parts_o.append(folded.new_zeros((hi - lo, *folded.shape[1:])))
                parts_l.append(folded.new_full((hi - lo, *folded.shape[1:3]), float("-inf")))
            else:
                o1, l1 = self._to_cache(folded[lo:hi], cache[li], scale)
                parts_o.append(o1)
                parts_l.append(l1)
        o1 = (parts_o[0] if len(parts_o) == 1 else torch.cat(parts_o)).reshape(b, heads, w, hd)
        l1 = (parts_l[0] if len(parts_l) == 1 else torch.cat(parts_l)).reshape(b, heads, w)
        m = torch.maximum(l1, lse)
        e1, e2 = torch.exp(l1 - m).unsqueeze(-1), torch.exp(lse - m).unsqueeze(-1)
        return (o1 * e1 + out * e2) / (e1 + e2)
