"""The compiled scanner parses untrusted JSON in C: fuzz it under AddressSanitizer.

The test builds `_native.c` + `_native_ops.c` with `-fsanitize=address` into a temporary folder
with the system C compiler, and runs a hypothesis fuzz (`FUZZ` below) in a subprocess with the
ASan runtime preloaded: any out-of-bounds read or write, use after free or double free aborts that
process, and the test fails with ASan's report. It skips, saying why, where no compiler or no
libasan is found, unless TRACEANALYZE_REQUIRE_ASAN=1 (what .ci/run sets, after installing libasan):
then it fails, so that CI never passes without the fuzz having run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SOURCES = [REPO / "traceanalyze" / "_native.c", REPO / "traceanalyze" / "_native_ops.c"]

FUZZ = r'''
import json, sys
import msgspec
import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

import _native
from traceanalyze.load.columnar import ARG_KEYS, _passed_over
from traceanalyze.load.fast import msgspec_chunk

KEYS = ["ph", "cat", "name", "pid", "tid", "ts", "dur", "id", "args", *(k.decode() for k, _ in ARG_KEYS)]
scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70),
                    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=12),
                    st.sampled_from(["X", "kernel", "cpu_op", "ac2g", "s", "f", "python_function",
                                     "\\u00e9", "\\ud800"]))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                      st.dictionaries(st.sampled_from(KEYS), inner, max_size=5)), max_leaves=12)
events = st.dictionaries(st.sampled_from(KEYS), values, max_size=10)


def check(text: bytes) -> None:
    dropping = _native.scan(text, ARG_KEYS, *_passed_over(False))  # python_function events without rows
    scanned = _native.scan(text, ARG_KEYS)
    if scanned is None:
        return
    if dropping is not None:  # (passed over, a python_function event's args keys are not read)
        assert len(dropping["seq"]) == 8 * dropping["n"] and dropping["events"] == scanned["n"]
    try:
        msgspec.json.decode(text)  # what the scanner accepts is valid JSON
    except msgspec.DecodeError as error:
        # except a float beyond double's range in a field nobody reads: the loader's reference
        # decoding (msgspec into typed events) passes over such a field without a range check
        assert "Number out of range" in str(error), error
        msgspec_chunk(text)
    n = scanned["n"]
    for arrays in scanned["fields"].values():
        assert len(arrays[0]) == n
    for key, kind in ARG_KEYS:
        if kind == 2:  # raw text spans (absent: 0, 0, as columnar passes them), joined back from the text
            tags, offsets, lengths = (np.frombuffer(a, dtype=d) for a, d in
                                      zip(scanned["fields"][key.decode()], (np.uint8, np.int64, np.int64)))
            present = tags != 0
            spans = [np.where(present, offsets, 0), np.where(present, lengths, 0)]
            joined = _native.join_spans(text, *spans)
            if n:
                assert joined.split(b"\x00") == [text[o:o + k] if k > 0 else b"" for o, k in zip(*spans)]
            ids, firsts = (np.frombuffer(a, dtype=np.int64) for a in _native.intern_spans(text, *spans))
            numbered = {}
            expected = [numbered.setdefault(text[o:o + k], len(numbered)) if k > 0 else -1 for o, k in zip(*spans)]
            assert ids.tolist() == expected
            assert [text[spans[0][i]:spans[0][i] + spans[1][i]] for i in firsts] == list(numbered)


@settings(max_examples=int(sys.argv[1]), deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(st.lists(events, max_size=6), st.data())
def fuzz(chunk, data):
    text = json.dumps(chunk).encode()
    check(text)
    # the same text cut, with a byte changed, and with bytes dropped: invalid JSON of every kind
    if text:
        cut = data.draw(st.integers(0, len(text)))
        check(text[:cut])
        at = data.draw(st.integers(0, len(text) - 1))
        check(text[:at] + bytes([data.draw(st.integers(0, 255))]) + text[at + 1:])
        check(text[:at] + text[at + data.draw(st.integers(1, 8)):])


# found by this fuzz: a float just beyond double's range, inside a field nobody reads
check(b'[{"correlation": [[], {"shared memory": 1.7976931348632317e+308}]}]')
# more events than the columns' first capacity (sized by 16 windows spread over the text, here
# each on long events, short ones between them): they grow, with floats parsed after the scan
many = b",".join(b'{"ph":"X","cat":"kernel","name":"%s","ts":%d.1234567890123456789,"dur":1}'
                 % (b"k" * (3000 if i % 1507 < 7 else 1), 1_000_000 + i) for i in range(16 * 1507))
check(b"[" + many + b"]")
assert _native.scan(b"[" + many + b"]", ARG_KEYS)["n"] == 16 * 1507
fuzz()
print("fuzzed")
'''


def _asan_runtime(compiler: str) -> str | None:
    try:
        found = subprocess.run([compiler, "-print-file-name=libasan.so"], capture_output=True, text=True,
                               timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return found if found and os.path.isabs(found) and os.path.exists(found) else None


def _cannot_run(reason: str) -> None:
    """Skip, or fail where the fuzz is required to run (TRACEANALYZE_REQUIRE_ASAN=1: CI)."""
    if os.environ.get("TRACEANALYZE_REQUIRE_ASAN", "") not in ("", "0"):
        pytest.fail(f"the AddressSanitizer fuzz is required but cannot run: {reason}")
    pytest.skip(reason)


def test_the_scanner_under_address_sanitizer(tmp_path):
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        _cannot_run("no C compiler (cc) to build the scanner with AddressSanitizer")
    runtime = _asan_runtime(compiler)
    if runtime is None:
        _cannot_run(f"{compiler} has no AddressSanitizer runtime (libasan.so)")
    module = tmp_path / f"_native{sysconfig.get_config_var('EXT_SUFFIX')}"
    build = subprocess.run(
        [compiler, "-fsanitize=address", "-fno-omit-frame-pointer", "-g", "-O1", "-std=c99", "-shared", "-fPIC",
         f"-I{sysconfig.get_paths()['include']}", *map(str, SOURCES), "-o", str(module)],
        capture_output=True, text=True, timeout=300)
    if build.returncode != 0:
        _cannot_run(f"could not build with -fsanitize=address: {build.stderr.strip()[:300]}")
    env = {**os.environ, "LD_PRELOAD": runtime, "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=1",
           "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO)])}
    result = subprocess.run([sys.executable, "-c", FUZZ, "300"], env=env, capture_output=True, text=True,
                            timeout=600, cwd=tmp_path)
    assert result.returncode == 0 and "fuzzed" in result.stdout, result.stderr[-4000:]
