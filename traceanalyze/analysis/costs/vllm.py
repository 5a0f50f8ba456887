"""vLLM's custom ops (`_C::`, `_C_cache_ops::`), and the vLLM ops whose arguments cannot give
their cost (docs/flops.md)."""

from __future__ import annotations

from dataclasses import replace

from traceanalyze.analysis.costs.copies import COPY
from traceanalyze.analysis.costs.family import Op, OpCost
from traceanalyze.analysis.costs.normalization import norm_cost
from traceanalyze.analysis.costs.pointwise import ELEMENTWISE
from traceanalyze.analysis.costs.tensors import Args, total_bytes

def _vllm_rms_norm(args: Args, name: str) -> OpCost:
    """_C::rms_norm(out, input, weight, eps): read input and weight, write out; RMS norm with
    weight, 4 FLOPs per element. _C::fused_add_rms_norm(input, residual, weight, eps): residual +=
    input, then input = rms_norm(residual): read input, residual and weight, write both; 5 per
    element (the add, then the norm)."""
    if name == "_C::rms_norm":
        out, x, weight = args.need(0, "out"), args.need(1, "input"), args.tensor(2)
        return norm_cost("rms", x, weight is not None, False, [x, weight], [out])
    x, residual, weight = args.need(0, "input"), args.need(1, "residual"), args.tensor(2)
    norm = norm_cost("rms", x, weight is not None, False, [x, residual, weight], [x, residual])
    return replace(norm, flops=norm.flops + x.numel)


def _vllm_fp8_quant(args: Args, name: str) -> OpCost:
    """_C::static_scaled_fp8_quant(out, input, scale): one scaling per element, input read, out
    written at its own (fp8) size."""
    out, x = args.need(0, "out"), args.need(1, "input")
    return OpCost(float(x.numel), total_bytes([x, args.tensor(2), out]), ELEMENTWISE, False, x.cls)


def _vllm_rotary(args: Args, name: str) -> OpCost:
    """_C::rotary_embedding(positions, query, key, head_size, cos_sin_cache, is_neox): rotates query
    and key in place with the cache rows of `positions` (gathered: numel(positions) rows); 3 FLOPs
    per element (two multiplies and an add)."""
    positions, query, key = args.need(0, "positions"), args.need(1, "query"), args.tensor(2)
    cache = args.need(4, "cos_sin_cache")
    gathered = cache.like((positions.numel,) + cache.shape[1:])
    rotated = [query] + ([key] if key is not None else [])
    return OpCost(float(3 * sum(t.numel for t in rotated)),
                  total_bytes([positions, gathered] + rotated) + total_bytes(rotated),
                  ELEMENTWISE, False, query.cls)


def _vllm_reshape_and_cache(args: Args, name: str) -> OpCost:
    """_C_cache_ops::reshape_and_cache(_flash)(key, value, key_cache, value_cache, slot_mapping,
    kv_cache_dtype, k_scale, v_scale): each new token's key and value copied into its cache slot,
    at the cache's element size (fp8 caches: one byte). The caches are written only at the
    `numel(key)` and `numel(value)` slots, not read."""
    key, value = args.need(0, "key"), args.need(1, "value")
    key_cache, value_cache = args.need(2, "key_cache"), args.need(3, "value_cache")
    read = [key, value, args.tensor(4)] + [args.tensor(i) for i in (6, 7)]
    written = key.numel * key_cache.itemsize + value.numel * value_cache.itemsize
    return OpCost(0.0, total_bytes(read) + written, COPY, False, key.cls)


# custom ops: full recorded names; no PyTorch schema, so no argument limit
CUSTOM_OPS: tuple[Op, ...] = (
    Op("_C_cache_ops::reshape_and_cache", _vllm_reshape_and_cache, None),
    Op("_C_cache_ops::reshape_and_cache_flash", _vllm_reshape_and_cache, None),
    Op("_C::rms_norm", _vllm_rms_norm, None), Op("_C::fused_add_rms_norm", _vllm_rms_norm, None),
    Op("_C::static_scaled_fp8_quant", _vllm_fp8_quant, None), Op("_C::rotary_embedding", _vllm_rotary, None),
)

# Ops whose recorded arguments cannot say what they compute, and why (the reason names it).
UNMODELLABLE_OPS: dict[str, str] = {
    "vllm::moe_forward": "the experts' weights are not among its arguments, so the intermediate size "
                         "and the tokens routed to each expert are unknown",
    "vllm::unified_attention_with_output": "the paged KV cache and the sequences' context lengths are "
                                           "not among its arguments",
}
