"""Hypothesis mutations of a small synthetic trace, shared by the fuzz tests: every kind of event
the loader reads, then a few fields or `args` keys replaced by any JSON value or removed."""

from __future__ import annotations

import copy

from hypothesis import strategies as st

from builder import TraceBuilder

FIELDS = ["ph", "cat", "name", "pid", "tid", "ts", "dur", "id", "args"]
ARG_KEYS = ["correlation", "device", "stream", "External id", "Input Dims", "Input type", "grid", "bytes",
            "Concrete Inputs", "Sequence number", "blocks per SM", "registers per thread", "flops"]


def json_values(*, allow_infinity: bool = True) -> st.SearchStrategy:
    return st.recursive(
        st.none() | st.booleans() | st.integers(-(2**70), 2**70)
        | st.floats(allow_nan=False, allow_infinity=allow_infinity) | st.text(max_size=5),
        lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3),
        max_leaves=6,
    )


def base_trace(*, with_python: bool = False) -> dict:
    b = TraceBuilder()
    b.step(1, -20, 300)
    op = b.cpu_op("aten::mm", -10, 8, input_dims=[[4, 8], [8, 16]], input_types=["float", "float"])
    b.launch_kernel(launch_us=-8, start_us=0, dur_us=10, external_id=op)
    b.sync_call(12, 5)
    b.graph_launch(30, 5, [(40, 5, "g1"), (45, 5, "g2")])
    b.orphan_kernel(80, 5)
    c = b.launch(90, 3, name="cudaMemcpyAsync")
    b.memcpy(c, 95, 4)
    if with_python:
        b.python_function("forward", -15, 100)
    return b.to_dict()


def mutated(base: dict, data: st.DataObject, values: st.SearchStrategy) -> dict:
    """A copy of `base` with one to six events changed."""
    trace = copy.deepcopy(base)
    events = trace["traceEvents"]
    for _ in range(data.draw(st.integers(1, 6))):
        event = events[data.draw(st.integers(0, len(events) - 1))]
        if data.draw(st.booleans()) and isinstance(event.get("args"), dict):
            event["args"][data.draw(st.sampled_from(ARG_KEYS))] = data.draw(values)
        elif data.draw(st.booleans()):
            event.pop(data.draw(st.sampled_from(FIELDS)), None)
        else:
            event[data.draw(st.sampled_from(FIELDS))] = data.draw(values)
    return trace
