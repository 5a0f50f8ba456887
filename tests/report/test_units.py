"""Display helpers: kernel names cut to the function a person recognises."""

from __future__ import annotations

import math

import pytest

from traceanalyze.units import format_duration_ns, kernel_function_name, short_name


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (
            "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float> >(int, "
            "at::native::CUDAFunctor_add<float>)",
            "at::native::vectorized_elementwise_kernel",
        ),
        (
            "std::enable_if<(((8)>(0)))&&vllm::_typeConvert<c10::BFloat16>::exists, void>::type "
            "vllm::rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, long)",
            "vllm::rms_norm_kernel",
        ),
        (
            "void (anonymous namespace)::softmax_warp_forward<float, float, float, 9, false, false>(float*, int)",
            "softmax_warp_forward",
        ),
        (
            "cutlass::Kernel<cutlass_80_tensorop_s1688gemm_64x64_16x6_tn_align4>"
            "(cutlass_80_tensorop_s1688gemm_64x64_16x6_tn_align4::Params)",
            "cutlass_80_tensorop_s1688gemm_64x64_16x6_tn_align4",
        ),
        ("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "ncclDevKernel_AllGather_RING_LL"),
        ("Memcpy DtoD (Device -> Device)", "Memcpy DtoD (Device -> Device)"),
        ("triton_poi_fused_add_0", "triton_poi_fused_add_0"),
    ],
)
def test_kernel_function_name(name, expected):
    assert kernel_function_name(name) == expected


def test_short_name_keeps_short_names_and_cuts_long_ones():
    assert short_name("aten::mm") == "aten::mm"
    assert short_name(None) == "–"
    assert len(short_name("x" * 100, 20)) == 20 and short_name("x" * 100, 20).endswith("…")


@pytest.mark.parametrize(("ns", "text"), [(999, "999 ns"), (1500, "1.5 µs"), (2_500_000, "2.5 ms"), (3e9, "3 s")])
def test_format_duration(ns, text):
    assert format_duration_ns(ns) == text


SCALES = {"ns": 1.0, "µs": 1e3, "ms": 1e6, "s": 1e9}


@pytest.mark.parametrize("ns", [999.6, 999.6e3, 999.5e6, 99.96e3, 100e3, 123_456.0, 5e8, 1_234e9, 86_400e9, -999.6e3])
def test_a_duration_is_never_an_exponent_and_reads_back_within_its_rounding(ns):
    """The rule of `format_duration_ns`: the unit chosen by magnitude, three significant digits
    below 100 of it and a whole number with thousands separators from 100 up (so 999.6 µs and
    1,234 s have no exponent, which `.3g` alone gave them: "1e+03 µs", "1.23e+03 s")."""
    number, unit = format_duration_ns(ns).split(" ")
    assert "e" not in number
    value = float(number.replace(",", ""))
    assert unit == next(name for name, scale in sorted(SCALES.items(), key=lambda item: -item[1])
                        if abs(ns) >= scale or name == "ns")
    step = 1.0 if abs(value) >= 100 else 10 ** (math.floor(math.log10(abs(value))) - 2)
    assert abs(value - ns / SCALES[unit]) <= step / 2 + 1e-9


def test_the_findings_sentences_use_the_one_duration_rule():
    """The findings word durations with `units.format_duration_ns` itself, not a copy with its own rule."""
    from traceanalyze.analysis.findings import inputs

    assert inputs.format_ns is format_duration_ns


def test_a_signature_is_looked_for_only_so_far_into_a_name():
    """A hostile trace's megabyte-long names are parsed only `SIGNATURE_SCAN` characters deep
    (shortening cost 0.3 s per MB each time; issue 13 audit): a real signature within it is still
    found, a parameter list beyond it is not looked for."""
    from traceanalyze.units import SIGNATURE_SCAN, kernel_function_name, short_name

    long_template = "void at::native::foo<" + "c" * 10_000 + ">(int)"
    assert kernel_function_name(long_template) == "at::native::foo"
    beyond = "x" * SIGNATURE_SCAN + " at::bar(int)"
    assert kernel_function_name(beyond) == beyond
    assert short_name("y" * (1 << 20), 10) == "yyyyyyyyy…"
