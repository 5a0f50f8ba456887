"""The device peak table: every device name seen in the real traces resolves, the figures and ridge
points are the datasheets' (dense, never with sparsity), kernel names map to math units, and user
figures load from flags and device files."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared_traces import real_trace_paths
from traceanalyze.analysis.devices import (
    DEVICE_TABLE,
    DTYPES,
    DevicePeaks,
    device_file_dict,
    device_peaks,
    known_device,
    load_device_file,
    math_unit_from_kernel_name,
    peaks_from_dict,
    peaks_from_overrides,
)
from traceanalyze.errors import ConfigError

T, G = 1e12, 1e9

# (name, numSms, totalGlobalMem) exactly as the real traces' deviceProperties give them -> entry.
TRACE_DEVICES = [
    ("NVIDIA A100-PG509-200", 108, 42297524224, "a100-sxm4-40gb"),
    ("NVIDIA A100-PG509-200", 108, 42505273344, "a100-sxm4-40gb"),
    ("NVIDIA A100-SXM4-80GB", 108, 84990623744, "a100-sxm4-80gb"),
    ("NVIDIA A100 80GB PCIe", 108, 84990623744, "a100-pcie-80gb"),
    ("NVIDIA H100 80GB HBM3", 132, 85018279936, "h100-sxm"),
    ("NVIDIA H100 80GB HBM3", 132, 85017493504, "h100-sxm"),  # fixtures/recorded (our capture, driver 580)
    ("NVIDIA H200", 132, 150109880320, "h200-sxm"),  # fixtures/recorded: our capture on an H200
    ("NVIDIA B200", 148, 191503138816, "b200"),
    ("Tesla V100-SXM2-32GB", 80, 34079899648, "v100-sxm2"),
    ("Tesla V100-DGXS-32GB", 80, 34084028416, "v100-dgxs"),
    ("AMD Radeon Graphics", 104, 68702699520, "mi250-gcd"),  # hta_mi250_rocm: one MI250 GCD (104 CUs)
]


@pytest.mark.parametrize("name, sms, memory, key", TRACE_DEVICES)
def test_trace_device_names_resolve(name, sms, memory, key):
    peaks = device_peaks(name, sms, memory)
    assert peaks is not None and peaks.key == key


def test_every_device_in_the_real_traces_resolves():
    recorded = sorted((Path(__file__).resolve().parents[2] / "fixtures" / "recorded").glob("*.json.gz"))
    paths = [p for p in real_trace_paths() if p.name.endswith(".gz")]
    if not paths:
        pytest.skip("real traces not found: ../shared/traces")
    seen = set()
    for path in paths + recorded:  # the shared traces and those our capture recorded
        with gzip.open(path, "rt") as handle:
            document = json.load(handle)
        for props in document.get("deviceProperties") or []:
            if props.get("name"):
                seen.add((props["name"], props.get("numSms"), props.get("totalGlobalMem")))
    assert {name for name, _, _ in seen} >= {n for n, _, _, _ in TRACE_DEVICES}
    unresolved = [s for s in seen if device_peaks(*s) is None]
    assert not unresolved


@pytest.mark.parametrize("name, key", [
    ("NVIDIA A100-SXM4-40GB", "a100-sxm4-40gb"), ("A100-PCIE-40GB", "a100-pcie-40gb"),
    ("NVIDIA H100 PCIe", "h100-pcie"),
    ("NVIDIA H100 NVL", "h100-nvl"), ("NVIDIA H200", "h200-sxm"), ("NVIDIA H200 NVL", "h200-nvl"), ("Tesla T4", "t4"),
    ("NVIDIA A10", "a10"), ("NVIDIA A10G", "a10g"), ("NVIDIA L4", "l4"), ("NVIDIA L40S", "l40s"),
    ("Tesla V100-PCIE-16GB", "v100-pcie"), ("Tesla V100S-PCIE-32GB", "v100s-pcie"), ("AMD Instinct MI300X", "mi300x"),
    ("AMD Instinct MI250X", "mi250x-gcd"), ("tesla v100-sxm2-16gb", "v100-sxm2"),
])
def test_name_matching_ignores_prefixes_and_case(name, key):
    assert device_peaks(name).key == key


def test_variants_the_name_does_not_settle_come_from_memory_and_sm_count():
    assert device_peaks("NVIDIA A100", 108, 85_000_000_000).key == "a100-sxm4-80gb"
    assert device_peaks("NVIDIA A100", 108, 42_000_000_000).key == "a100-sxm4-40gb"
    assert device_peaks("NVIDIA H100", 114, 85_000_000_000).key == "h100-pcie"
    assert device_peaks("NVIDIA H100", 132, 85_000_000_000).key == "h100-sxm"
    assert device_peaks("NVIDIA H100", None, None) is None  # SXM or PCIe: not guessed
    assert device_peaks("NVIDIA GH200 480GB", 132, 102_000_000_000).key == "gh200-96gb"
    assert device_peaks("NVIDIA GH200 144G HBM3e", 132, 150_000_000_000).key == "gh200-144gb"
    assert device_peaks("AMD Instinct MI250X/MI250", 110, 68_700_000_000).key == "mi250x-gcd"
    assert device_peaks("", 304, 206_000_000_000).key == "mi300x"
    assert device_peaks("NVIDIA GeForce RTX 4090", 128, 25_000_000_000) is None
    assert device_peaks("", None, None) is None


# Datasheet figures restated here, independently of the table, with the dense rule applied by hand:
# NVIDIA prints Hopper/Ada/Blackwell (and A10/L4) tensor figures with sparsity; dense is half.
DATASHEET = {
    # key: (bandwidth B/s, {(dtype, unit): FLOP/s})
    "v100-sxm2": (900 * G, {("fp16", "tensor"): 125 * T, ("fp32", "simt"): 15.7 * T, ("fp64", "simt"): 7.8 * T}),
    "v100-dgxs": (900 * G, {("fp16", "tensor"): 120 * T, ("fp32", "simt"): 15 * T}),
    "a100-sxm4-40gb": (1555 * G, {("bf16", "tensor"): 312 * T, ("tf32", "tensor"): 156 * T, ("fp32", "simt"): 19.5 * T,
                                  ("fp64", "tensor"): 19.5 * T}),
    "a100-sxm4-80gb": (2039 * G, {("bf16", "tensor"): 312 * T}),
    "a100-pcie-80gb": (1935 * G, {("bf16", "tensor"): 312 * T}),
    "h100-sxm": (3350 * G, {("bf16", "tensor"): 1979 / 2 * T, ("fp8", "tensor"): 3958 / 2 * T,
                            ("tf32", "tensor"): 989 / 2 * T, ("fp32", "simt"): 67 * T, ("fp64", "tensor"): 67 * T}),
    "h100-pcie": (2000 * G, {("bf16", "tensor"): 1513 / 2 * T, ("fp8", "tensor"): 3026 / 2 * T}),
    "b200": (7.7e12, {("bf16", "tensor"): 4.5e15 / 2, ("fp8", "tensor"): 9e15 / 2, ("fp4", "tensor"): 18e15 / 2,
                      ("fp32", "simt"): 75 * T}),
    "l40s": (864 * G, {("bf16", "tensor"): 362.05 * T, ("fp8", "tensor"): 733 * T}),
    "mi250-gcd": (3276.8 * G / 2, {("bf16", "tensor"): 362.1 / 2 * T, ("fp64", "tensor"): 90.5 / 2 * T}),
    "mi300x": (5.3e12, {("bf16", "tensor"): 1307.4 * T, ("fp8", "tensor"): 2614.9 * T}),
}


@pytest.mark.parametrize("key", sorted(DATASHEET))
def test_figures_and_ridge_points_are_the_datasheets(key):
    bandwidth, figures = DATASHEET[key]
    peaks = known_device(key)
    assert math.isclose(peaks.memory_bandwidth_bytes_per_s, bandwidth, rel_tol=1e-9)
    for (dtype, unit), flops in figures.items():
        tensor = unit == "tensor"
        assert math.isclose(peaks.peak_flops(dtype, tensor), flops, rel_tol=2e-3), (dtype, unit)
        assert math.isclose(peaks.ridge_point(dtype, tensor), flops / bandwidth, rel_tol=2e-3), (dtype, unit)


def test_ridge_points_of_the_trace_devices():
    # bf16/fp16 tensor-core ridge, FLOP per byte, from the datasheet numbers
    expected = {
        "a100-sxm4-40gb": 312e12 / 1555e9,  # 200.6
        "a100-sxm4-80gb": 312e12 / 2039e9,  # 153.0
        "a100-pcie-80gb": 312e12 / 1935e9,  # 161.2
        "h100-sxm": 989.5e12 / 3.35e12,  # 295.4
        "b200": 2.25e15 / 7.7e12,  # 292.2
        "v100-sxm2": 125e12 / 900e9,  # 138.9
        "v100-dgxs": 120e12 / 900e9,  # 133.3
    }
    for key, ridge in expected.items():
        assert math.isclose(known_device(key).ridge_point("fp16", tensor_core=True), ridge, rel_tol=1e-9), key
    # The essay's A100 example: 19.5 TFLOP/s of FP32 over 1.5 TB/s, about a dozen FLOPs per byte
    assert 12 < known_device("a100-sxm4-40gb").ridge_point("fp32", tensor_core=False) < 13


def test_table_is_dense_and_consistent():
    for peaks in DEVICE_TABLE:
        assert peaks.source and peaks.memory_bandwidth_bytes_per_s > 0
        assert all(dtype in DTYPES and unit in ("tensor", "simt") for dtype, unit in peaks.flops_per_s)
        simt = peaks.flops_per_s.get(("fp32", "simt"))
        assert simt is not None, peaks.key
        for (dtype, unit), flops in peaks.flops_per_s.items():
            if unit == "tensor" and dtype in ("fp16", "bf16"):
                assert flops > simt, peaks.key
        if ("fp8", "tensor") in peaks.flops_per_s:  # FP8 is twice FP16 (datasheets round; L40S prints 362.05 vs 733)
            assert math.isclose(peaks.flops_per_s[("fp8", "tensor")], 2 * peaks.flops_per_s[("fp16", "tensor")],
                                rel_tol=3e-2), peaks.key
    keys = [p.key for p in DEVICE_TABLE]
    assert len(keys) == len(set(keys))
    mi250x = known_device("mi250x-gcd")
    assert math.isclose(2 * mi250x.peak_flops("bf16", True), 383 * T, rel_tol=1e-3)  # the OAM package figure


def test_peak_flops_fallbacks():
    a100, mi300x, t4 = known_device("a100-sxm4-80gb"), known_device("mi300x"), known_device("t4")
    assert a100.peak_flops("fp32", tensor_core=True) == 156 * T  # fp32 on tensor cores is TF32
    assert mi300x.peak_flops("fp32", tensor_core=True) == 163.4 * T  # AMD has FP32 matrix units
    assert a100.peak_flops("c10::BFloat16", tensor_core=False) == 19.5 * T  # elementwise bf16: FP32 SIMT
    assert a100.peak_flops("long int", tensor_core=False) == 19.5 * T
    assert a100.peak_flops("fp8", tensor_core=True) is None  # no FP8 on Ampere
    assert t4.peak_flops("fp64", tensor_core=False) is None  # not in the datasheet
    assert a100.peak_flops("float", tensor_core=False) == 19.5 * T


@pytest.mark.parametrize("kernel, unit", [
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x64_warpgroupsize1x1x1_"
     "execute_segment_k_off_kernel__5x_cublas", "tensor"),
    ("sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32_warpgroupsize1x1x1", "tensor"),
    ("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x64_16x6_tn_align4>(cutlass_80_tensorop_s1688gemm_128x64_"
     "16x6_tn_align4::Params)", "tensor"),
    ("void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8>", "tensor"),
    ("sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x128x16_stage4", "tensor"),
    ("void cutlass_cudnn_infer::Kernel<cutlass_tensorop_s1688dgrad_optimized_tf32_128x128_16x4_"
     "nhwc_unity_stride_align4>", "tensor"),
    ("nvjet_tst_144x128_64x6_2x1_v_bz_bias_TNN", "tensor"),
    ("bmm_Bfloat16_MxE2m1MxE4m3_Fp32_t128x16x256u2_s3_et128x16_m128x16x32_cga1x1x1_16dp256b_rM_TN", "tensor"),
    ("fmhaSm100aKernel_QkvE4m3OBfloat16H64PagedKvCausalP16VarSeqQ128Kv128PersistentContext", "tensor"),
    ("void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, 128, 128, 4, false, false>",
     "tensor"),
    ("Cijk_Ailk_Bjlk_SB_Bias_AS_SAV_UserArgs_MT64x16x16_MI16x16x1_SN_LDSB0_AFC1", "tensor"),
    ("ampere_sgemm_128x64_nn", "simt"),
    ("volta_sgemm_64x64_nt", "simt"),
    ("cutlass3x_sm100_simt_sgemm_f32_f32_f32_f32_f32_32x32x16_1x1x1_3_nnn_align1_bias_f32_relu", "simt"),
    ("void cutlass::Kernel<cutlass_80_simt_sgemm_128x32_8x5_nn_align1>", "simt"),
    ("void gemmk1_kernel<float, 256, 5, false, false, false, false, cublasGemvTensorStridedBatched<float const>",
     "simt"),
    ("void gemv2T_kernel_val<int, int, float, float, float, float, 128, 16, 2, 2, false, false>", "simt"),
    ("void gemmSN_TN_kernel<float, 128, 16, 2, 4, 6, 7, false, cublasGemvTensorStridedBatched<float const>>", "simt"),
    ("void implicit_convolve_sgemm<float, float, 1024, 6, 7, 3, 3, 5, 1, false, true, true>", "simt"),
    ("void cudnn::cnn::wgrad_alg0_engine<float, 128, 6, 7, 3, 3, 5, false, 512>", "simt"),
    ("ampere_gcgemm_64x64_nt", "simt"),
    # cuBLAS on an H100 with TF32 off (fp32 matmuls): xmma kernels running FFMA on CUDA cores
    ("sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8_stage3_warpsize2x2x1_"
     "ffma_aligna4_alignc4_execute_kernel__5x_cublas", "simt"),
    ("sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize32x32x8_stage3_warpsize1x2x1_"
     "ffma_aligna4_alignc4_execute_kernel__5x_cublas", "simt"),
    ("sm80_xmma_gemm_f16f16_f16f16_f16_nn_n_tilesize64x64x8_stage3_warpsize2x2x1_hfma2_aligna2", "simt"),
    ("sm80_xmma_gemm_f64f64_f64f64_f64_nn_n_tilesize64x64x8_dfma_execute", "simt"),
    ("void at::native::ffmax_kernel<float>", None),  # a word that begins with ffma is no instruction
    ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>", None),
    ("void at::native::vectorized_elementwise_kernel<4, fbgemm_gpu::_float_to_hfp8_gpu(at::Tensor const&)>", None),
    ("void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, unsigned char, (vllm::Fp8KVCacheDataType)1>", None),
    ("triton_poi_fused_add_cos_sin_0", None),
    ("ncclDevKernel_AllReduce_Sum_f32_RING_LL", None),
])
def test_math_unit_from_kernel_name(kernel, unit):
    assert math_unit_from_kernel_name(kernel) == unit


FRAGMENTS = ["simt", "xmma", "HMMA", "s1688", "h16816", "_MI16x16x4", "_mi32x32x8", "gemm", "fbgemm", "FbGemm",
             "sgemm", "gemmSN", "Cijk_", "cijk_", "conv", "bmm", "attn", "bf16", "FP8", "tf32", "e4m3",
             "vectorized", "elementwise", "triton_poi_", "Triton_Red_", "flash_fwd", "nvjet", "_", "<", "x", "9"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS) | st.text(st.characters(max_codepoint=127), max_size=4), max_size=8),
       st.lists(st.booleans(), min_size=8, max_size=8))
def test_math_unit_of_an_ascii_name_is_that_of_the_same_name_ignoring_case(parts, upper):
    """An ASCII name is lowered and searched case-sensitively; any other name, ignoring case. The
    same name with a non-ASCII letter appended (which no pattern reads) takes the second way:
    both give one answer, whatever the letters' case."""
    name = "".join(part.upper() if flip else part for part, flip in zip(parts, upper + [False] * len(parts)))
    assert math_unit_from_kernel_name(name) == math_unit_from_kernel_name(name + "\u00e9")


@pytest.mark.parametrize("kernel, unit", [
    ("ampere_\u017fgemm_128x64_nn", "simt"),  # the long s is an s, ignoring case, as before
    ("cublas::dot_\u212aernel<float>", "simt"),  # the Kelvin sign is a k, ignoring case
    ("VOID AMPERE_BF16_S16816GEMM_BF16_128X128", "tensor"),
])
def test_math_unit_of_names_in_either_case(kernel, unit):
    assert math_unit_from_kernel_name(kernel) == unit


def test_math_unit_of_every_real_kernel_name_is_that_ignoring_case():
    paths = real_trace_paths()
    if not paths:
        pytest.skip("../shared/traces is absent: no real kernel names to read")
    names = {event["name"] for path in paths
             for event in json.loads(gzip.open(path).read()).get("traceEvents", [])
             if isinstance(event, dict) and event.get("cat") == "kernel" and isinstance(event.get("name"), str)}
    assert len(names) > 100
    assert {name: math_unit_from_kernel_name(name) for name in names} == {
        name: math_unit_from_kernel_name(name + "\u00e9") for name in names}


def test_overrides():
    flat = peaks_from_overrides(peak_flops=100e12, peak_bandwidth=2e12)
    assert flat.peak_flops("bf16", True) == flat.peak_flops("fp64", False) == 100e12
    assert flat.ridge_point("fp32", False) == 50.0
    base = known_device("h100-sxm")
    only_bandwidth = peaks_from_overrides(peak_bandwidth=3e12, base=base)
    assert only_bandwidth.peak_flops("bf16", True) == base.peak_flops("bf16", True)
    assert only_bandwidth.memory_bandwidth_bytes_per_s == 3e12
    assert peaks_from_overrides(peak_flops=5e14, base=base).peak_flops("fp8", True) == 5e14
    with pytest.raises(ConfigError):
        peaks_from_overrides()
    with pytest.raises(ConfigError):
        peaks_from_overrides(peak_flops=1e12)  # no device to take the bandwidth from
    with pytest.raises(ConfigError):
        peaks_from_overrides(peak_flops=-1.0, peak_bandwidth=1e12)


def test_device_file_round_trip(tmp_path):
    document = {
        "format": "traceanalyze-device",
        "version": 1,
        "name": "H100 measured by calibrate",
        "base": "h100-sxm",
        "memory_bandwidth_bytes_per_s": 3.0e12,
        "peak_flops_per_s": {"bf16": {"tensor": 7.0e14}, "fp32": {"simt": 5.0e13}},
        "source": "traceanalyze calibrate",
    }
    path = tmp_path / "h100.json"
    path.write_text(json.dumps(document))
    peaks = load_device_file(path)
    assert peaks.display_name == "H100 measured by calibrate"
    assert peaks.peak_flops("bf16", True) == 7.0e14
    assert peaks.peak_flops("fp8", True) == known_device("h100-sxm").peak_flops("fp8", True)  # from the base
    assert peaks.memory_bandwidth_bytes_per_s == 3.0e12
    again = peaks_from_dict(json.loads(json.dumps(device_file_dict(peaks))))
    assert again.flops_per_s == peaks.flops_per_s and again.memory_bandwidth_bytes_per_s == 3.0e12
    standalone = peaks_from_dict({"format": "traceanalyze-device", "version": 1, "memory_bandwidth_bytes_per_s": 1e12,
                                  "default_flops_per_s": 1e14})
    assert standalone.peak_flops("bf16", True) == 1e14


@pytest.mark.parametrize("content, message", [
    ("{not json", "not valid JSON"),
    ("[]", "expected a JSON object"),
    ('{"format": "other", "version": 1}', "\"format\""),
    ('{"format": "traceanalyze-device", "version": 9}', "version"),
    ('{"format": "traceanalyze-device", "version": 1, "base": "h900"}', "unknown base"),
    ('{"format": "traceanalyze-device", "version": 1, "peak_flops_per_s": {"bf16": {"tensor": 1e12}}}',
     "memory_bandwidth_bytes_per_s"),
    ('{"format": "traceanalyze-device", "version": 1, "memory_bandwidth_bytes_per_s": 1e12, '
     '"peak_flops_per_s": {"bf17": {"tensor": 1}}}', "bf17"),
    ('{"format": "traceanalyze-device", "version": 1, "memory_bandwidth_bytes_per_s": 1e12, '
     '"peak_flops_per_s": {"bf16": {"tensor": -1}}}', "positive"),
    ('{"format": "traceanalyze-device", "version": 1, "memory_bandwidth_bytes_per_s": 1e12, "typo": 1}',
     "unknown keys"),
])
def test_bad_device_files_name_the_file_and_the_problem(tmp_path, content, message):
    path = tmp_path / "device.json"
    path.write_text(content)
    with pytest.raises(ConfigError) as error:
        load_device_file(path)
    assert str(path) in str(error.value) and message in str(error.value)
    with pytest.raises(ConfigError, match="cannot read"):
        load_device_file(tmp_path / "missing.json")


def test_device_peaks_is_hashable_and_frozen():
    peaks = known_device("l4")
    assert isinstance(peaks, DevicePeaks)
    hash(peaks)
    with pytest.raises(AttributeError):
        peaks.key = "x"  # type: ignore[misc]
