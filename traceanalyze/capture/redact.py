"""Secrets hidden before anything capture writes (run.json, which CI workflows upload as an
artifact): the value of every secret-looking option (`--api-key V`, `--token=V`, `-k V`,
`--passphrase V`, `--bearer V`), `Authorization: Bearer …`/`Basic …` headers, the `user:password@`
of a URL, and, in free text such as the script's error line, every value hidden from the command
line or held by a secret-looking environment variable (`secret_values`, `redact_text`). No torch here."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

REDACTED = "***"
# a word of an option or variable name that marks its value as a secret: api-KEY, HF_TOKEN, PASSWORD…
_SECRET_WORD = re.compile(r"(key|token|passw(or)?d|passphrase|secret|credentials?|bearer)$|^(secret|auth)",
                          re.IGNORECASE)
SECRET_SHORT_OPTIONS = frozenset({"-k"})  # `curl -k` aside, `-k KEY` is the usual short form of a key
_URL_USERINFO = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*://)[^/@\s?#]+@")
_SCHEME_TOKEN = re.compile(r"\b(Bearer|Basic|Token|Digest)(\s+)[A-Za-z0-9._~+/=\-]+", re.IGNORECASE)
_MIN_SECRET_CHARS = 6  # shorter values ("1", "true") are not searched for in free text
_ASSIGNMENT = re.compile(r"^(-{0,2}[A-Za-z_][A-Za-z0-9_.-]*)=(.*)$", re.DOTALL)


def secret_name(name: str) -> bool:
    """Whether an option or variable name (`--api-key`, `HF_TOKEN`, `--db.password`) names a secret.

    >>> [secret_name(n) for n in ("--api-key", "HF_TOKEN", "--password", "--lr", "--max-tokens", "--keyboard")]
    [True, True, True, False, False, False]
    >>> [secret_name(n) for n in ("-k", "--passphrase", "--bearer", "--authorization", "-v")]
    [True, True, True, True, False]
    """
    if name in SECRET_SHORT_OPTIONS:
        return True
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
        if assignment is not None and secret_name(assignment.group(1)):
            redacted.append(f"{assignment.group(1)}={REDACTED}")
        elif argument.startswith("-") and secret_name(argument):
            redacted.append(argument)
            hide_next = True
        else:
            redacted.append(redact_text(argument))
    return redacted


def secret_values(arguments: Sequence[str], environ: Mapping[str, str]) -> tuple[str, ...]:
    """The values `redact_arguments` hides in `arguments`, and those of the secret-looking
    variables of `environ` (`HF_TOKEN`, `AWS_SECRET_ACCESS_KEY`): what free text must not show.

    >>> secret_values(["--api-key", "k12345", "--lr", "3", "--token=t56789"], {"HF_TOKEN": "h90123", "HOME": "/root"})
    ('h90123', 'k12345', 't56789')
    """
    found = {value for name, value in environ.items() if secret_name(name)}
    hide_next = False
    for argument in arguments:
        if hide_next and argument != "--":
            found.add(argument)
        hide_next = False
        assignment = _ASSIGNMENT.match(argument)
        if assignment is not None and secret_name(assignment.group(1)):
            found.add(assignment.group(2))
        elif argument.startswith("-") and secret_name(argument):
            hide_next = True
    return tuple(sorted(value for value in found if len(value) >= _MIN_SECRET_CHARS))


def redact_text(text: str, secrets: Sequence[str] = ()) -> str:
    """`text` with every one of `secrets` (longest first), the token of an `Authorization` scheme
    (`Bearer abc…`) and the `user:password@` of a URL replaced by `***`.

    >>> redact_text("GET https://u:pw@h/x with Authorization: Bearer abc.def failed for k12345", ["k12345"])
    'GET https://***@h/x with Authorization: Bearer *** failed for ***'
    """
    for secret in sorted(secrets, key=len, reverse=True):
        if len(secret) >= _MIN_SECRET_CHARS:
            text = text.replace(secret, REDACTED)
    text = _URL_USERINFO.sub(rf"\1{REDACTED}@", text)
    return _SCHEME_TOKEN.sub(rf"\1\2{REDACTED}", text)
