"""Argument values that look like secrets, hidden before a command line is written to run.json
(which CI workflows upload as an artifact). No torch here."""

from __future__ import annotations

import re
from collections.abc import Sequence

REDACTED = "***"
# a word of an option or variable name that marks its value as a secret: api-KEY, HF_TOKEN, PASSWORD…
_SECRET_WORD = re.compile(r"(key|token|passw(or)?d|secret|credentials?)$|^(secret|auth)", re.IGNORECASE)
_ASSIGNMENT = re.compile(r"^(-{0,2}[A-Za-z_][A-Za-z0-9_.-]*)=(.*)$", re.DOTALL)


def secret_name(name: str) -> bool:
    """Whether an option or variable name (`--api-key`, `HF_TOKEN`, `--db.password`) names a secret.

    >>> [secret_name(n) for n in ("--api-key", "HF_TOKEN", "--password", "--lr", "--max-tokens", "--keyboard")]
    [True, True, True, False, False, False]
    """
    words = re.split(r"[-_.]+", name.lstrip("-"))
    return any(_SECRET_WORD.search(word) for word in words if word)


def redact_arguments(arguments: Sequence[str]) -> list[str]:
    """`arguments` with the value of every secret-looking option replaced by `***`: the word after
    `--api-key`, and the part after `=` of `--token=…` or `API_KEY=…`.

    >>> redact_arguments(["train.py", "--api-key", "s3cr3t", "--lr", "3e-4", "--hf-token=abc", "OPENAI_API_KEY=xyz"])
    ['train.py', '--api-key', '***', '--lr', '3e-4', '--hf-token=***', 'OPENAI_API_KEY=***']
    """
    redacted: list[str] = []
    hide_next = False
    for argument in arguments:
        if hide_next and argument != "--":
            redacted.append(REDACTED)
            hide_next = False
            continue
        hide_next = False
        assignment = _ASSIGNMENT.match(argument)
        if assignment is not None:
            name = assignment.group(1)
            redacted.append(f"{name}={REDACTED}" if secret_name(name) else argument)
        elif argument.startswith("-") and secret_name(argument):
            redacted.append(argument)
            hide_next = True
        else:
            redacted.append(argument)
    return redacted
