"""The three decoders of the trace format (the compiled scanner, the msgspec path, the general
path) are compared on real traces in every checkout: tests/load/test_columnar.py and
tests/load/test_streaming.py run on fixtures/recorded (always there) besides ../shared/traces."""

from __future__ import annotations

from shared_traces import decoder_trace_params, recorded_trace_paths


def test_the_decoder_comparisons_have_real_traces_without_shared_traces():
    recorded = recorded_trace_paths()
    assert len(recorded) >= 4
    ids = [param.id for param in decoder_trace_params()]
    assert all(f"recorded/{path.name}" in ids for path in recorded)
