"""Python source for a fresh interpreter in which eight threads make the same call at once (the
first use of something imported lazily): `results` holds what each call returned, and the source
fails with every error raised."""

from __future__ import annotations


def eight_threads_at_once(call: str) -> str:
    """Source that runs `call` (an expression) in eight threads released together."""
    return f"""
import threading
barrier, errors, results = threading.Barrier(8), [], []
def ask():
    barrier.wait()
    try:
        results.append({call})
    except BaseException as error:
        errors.append(repr(error))
threads = [threading.Thread(target=ask) for _ in range(8)]
[thread.start() for thread in threads]
[thread.join() for thread in threads]
assert not errors, errors
"""
