"""Attention: scaled dot-product attention kernels and multi-head attention (docs/flops.md)."""

from __future__ import annotations

from dataclasses import dataclass

from traceanalyze.analysis.costs.family import CostFamily, Op, OpCost
from traceanalyze.analysis.costs.tensors import Args, Tensor, Unmodelled, total_bytes

ATTENTION = CostFamily("attention", tensor_core=True)


@dataclass(frozen=True)
class _Attn:
    """Where an attention op keeps its arguments."""

    backward: bool
    bshd: bool  # [batch, seq, heads, dim] (flash/efficient kernels) instead of [batch, heads, seq, dim]
    q: int
    causal: int | None = None  # index of `is_causal`
    mask_type: int | None = None  # index of `custom_mask_type` (0 none, 1/2 causal)
    cum_seq_q: int | None = None  # varlen: index of the cumulative sequence lengths of q
    lse: int | bool = False  # whether a logsumexp is written: fixed, or the index of the flag
    composite: bool = False


ATTENTION_SPECS: dict[str, _Attn] = {
    "scaled_dot_product_attention": _Attn(False, False, 0, causal=5, composite=True),
    "_scaled_dot_product_attention_math": _Attn(False, False, 0, causal=5, composite=True),
    "_scaled_dot_product_flash_attention": _Attn(False, False, 0, causal=4, lse=True),
    "_scaled_dot_product_flash_attention_for_cpu": _Attn(False, False, 0, causal=4, lse=True),
    "_scaled_dot_product_efficient_attention": _Attn(False, False, 0, causal=6, lse=4),
    "_scaled_dot_product_cudnn_attention": _Attn(False, False, 0, causal=6, lse=4),
    "_scaled_dot_product_fused_attention_overrideable": _Attn(False, False, 0, causal=5, lse=True),
    "_cudnn_attention_forward": _Attn(False, False, 0, causal=10, cum_seq_q=4, lse=8),
    "_flash_attention_forward": _Attn(False, True, 0, causal=8, cum_seq_q=3, lse=True),
    "_efficient_attention_forward": _Attn(False, True, 0, mask_type=9, cum_seq_q=4, lse=10),
    "_scaled_dot_product_flash_attention_backward": _Attn(True, False, 1, causal=11),
    "_scaled_dot_product_flash_attention_for_cpu_backward": _Attn(True, False, 1, causal=7),
    "_scaled_dot_product_efficient_attention_backward": _Attn(True, False, 1, causal=11),
    "_scaled_dot_product_cudnn_attention_backward": _Attn(True, False, 1, causal=14),
    "_scaled_dot_product_fused_attention_overrideable_backward": _Attn(True, False, 1, causal=13),
    "_cudnn_attention_backward": _Attn(True, False, 1, causal=14, cum_seq_q=9),
    "_flash_attention_backward": _Attn(True, True, 1, causal=11, cum_seq_q=6),
    "_efficient_attention_backward": _Attn(True, True, 1, mask_type=14, cum_seq_q=6),
}


def _attention(args: Args, name: str) -> OpCost:
    spec = ATTENTION_SPECS[name]
    if name == "_scaled_dot_product_flash_attention" and len(args) >= 10:
        spec = _Attn(False, False, 0, causal=7, lse=True)  # the `.quantized` overload (with descales)
    q, k, v = args.need(spec.q, "query"), args.need(spec.q + 1, "key"), args.need(spec.q + 2, "value")
    notes = []
    cum = args.tensor(spec.cum_seq_q) if spec.cum_seq_q is not None else None
    if len(q.shape) == 3 and cum is not None and len(cum.shape) == 1 and cum.shape[0] >= 2:
        # Variable-length (nested/jagged) batch: [total_tokens, heads, dim].
        sequences = cum.shape[0] - 1
        total_q, hq, dq = q.shape
        total_k, hk, _ = k.shape
        dv = v.shape[-1]
        score_elements = hq * total_q * total_k / sequences
        batch, sq = 1, total_q
        notes.append("variable-length batch: equal sequence lengths assumed")
    else:
        if len(q.shape) != 4 or len(k.shape) != 4 or len(v.shape) != 4:
            raise Unmodelled(f"shape arguments inconsistent: attention q {list(q.shape)}")
        if spec.bshd:
            batch, sq, hq, dq = q.shape
            _, sk, hk, _ = k.shape
        else:
            batch, hq, sq, dq = q.shape
            _, hk, sk, _ = k.shape
        dv = v.shape[-1]
        if hk == 0 or hq % hk:
            raise Unmodelled(f"shape arguments inconsistent: {hq} query heads over {hk} key heads")
        score_elements = float(batch * hq * sq * sk)
    if spec.backward:
        flops = 2.0 * score_elements * (3 * dq + 2 * dv)
    else:
        flops = 2.0 * score_elements * (dq + dv)
    causal = False
    if spec.causal is not None:
        flag = args.flag(spec.causal)
        if flag is None and args.has_scalars():
            flag = False
        if flag is None:
            notes.append("is_causal not recorded: non-causal assumed")
        causal = bool(flag)
    elif spec.mask_type is not None:
        mask_type = args.scalar(spec.mask_type)
        causal = isinstance(mask_type, int) and not isinstance(mask_type, bool) and mask_type in (1, 2)
    if causal:
        flops *= 0.5
        notes.append("causal: half the score matrix")
    written: list[Tensor] = []
    if spec.backward:
        written += [q, k, v]
    else:
        written.append(q.like(list(q.shape[:-1]) + [dv]))
        lse = spec.lse if isinstance(spec.lse, bool) else bool(args.flag(spec.lse, False))
        if lse:
            written.append(Tensor((batch * hq * sq,), "float"))
    return OpCost(flops, total_bytes(args.tensors()) + total_bytes(written), ATTENTION, spec.composite, q.cls,
                  "; ".join(notes))


def _multi_head_attention(args: Args, name: str) -> OpCost:
    """aten::_native_multi_head_attention (composite): QKV projection, attention, out projection."""
    q = args.need(0, "query")
    qkv_w, proj_w = args.need(5, "qkv_weight"), args.need(7, "proj_weight")
    if len(q.shape) != 3 or len(qkv_w.shape) != 2:
        raise Unmodelled(f"shape arguments inconsistent: multi-head attention q {list(q.shape)}")
    batch, seq, embed = q.shape
    k = args.need(1, "key")
    seq_k = k.shape[1] if len(k.shape) == 3 else seq
    flops = 2.0 * batch * seq * embed * qkv_w.shape[0]  # fused QKV projection
    flops += 2.0 * batch * seq * seq_k * embed * 2  # scores and weighted values, all heads
    flops += 2.0 * batch * seq * embed * proj_w.shape[0]
    out = q.like([batch, seq, proj_w.shape[0]])
    return OpCost(flops, total_bytes(args.tensors()) + out.nbytes, ATTENTION, True, q.cls)


# aten ops (without `aten::`): handler, the most arguments of any overload in the PyTorch schemas
OPS: tuple[Op, ...] = (
    Op("scaled_dot_product_attention", _attention, 8), Op("_scaled_dot_product_attention_math", _attention, 9),
    Op("_scaled_dot_product_flash_attention", _attention, 10),
    Op("_scaled_dot_product_flash_attention_for_cpu", _attention, 7),
    Op("_scaled_dot_product_efficient_attention", _attention, 8),
    Op("_scaled_dot_product_cudnn_attention", _attention, 9),
    Op("_scaled_dot_product_fused_attention_overrideable", _attention, 8),
    Op("_cudnn_attention_forward", _attention, 13), Op("_flash_attention_forward", _attention, 18),
    Op("_efficient_attention_forward", _attention, 14),
    Op("_scaled_dot_product_flash_attention_backward", _attention, 15),
    Op("_scaled_dot_product_flash_attention_for_cpu_backward", _attention, 10),
    Op("_scaled_dot_product_efficient_attention_backward", _attention, 13),
    Op("_scaled_dot_product_cudnn_attention_backward", _attention, 16),
    Op("_scaled_dot_product_fused_attention_overrideable_backward", _attention, 17),
    Op("_cudnn_attention_backward", _attention, 16), Op("_flash_attention_backward", _attention, 17),
    Op("_efficient_attention_backward", _attention, 20),
    Op("_native_multi_head_attention", _multi_head_attention, 15),
)
