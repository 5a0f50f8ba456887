"""Trace strings made harmless for each output. Kernel, op, annotation, device and file names come
from files users did not write; every renderer passes them through one function here:

* `visible`: control characters (C0 incl. NUL, BEL, BS, CR, LF, ESC; DEL; C1; Unicode line and
  paragraph separators, bidirectional overrides, lone surrogates) become visible escapes
  (`\\x1b`, `\\n`, `\\u202e`), so no terminal escape sequence (OSC 52/0/8, CSI `\\x1b[2J`) reaches
  a terminal and a name stays on one line;
* `markdown`: control characters but tab made visible (a newline too: a name stays on its line),
  then Markdown punctuation that could start markup backslash-escaped (raw HTML `<img …>`, links
  and images `[x](…)`, code spans, table cells `|`); `markdown_plain` escapes only those that
  inject (used by the gate verdict, whose names hold `_`);
* `html`: control characters but newline and tab made visible, then `& < > " '` escaped (text
  and attribute values; a newline there is only white space);
* `xml_document`: a finished XML document with the characters XML 1.0 forbids made visible, so a
  JUnit file stays well-formed;
* `workflow_data` / `workflow_property`: GitHub Actions workflow-command escaping (`%`, CR, LF;
  and `:` `,` in properties), every other control character made visible, `##[` broken;
* `output_text`: the last guard on every text written or printed (terminal, Markdown, HTML; not
  JSON): control characters other than newline and tab made visible, no line may start a
  GitHub workflow command (`::`), and no legacy command (`##[`, `##vso[`) stands anywhere in a line;
* `json_text`: an encoded JSON document with the characters its encoder leaves raw (DEL, C1 such
  as the 8-bit CSI U+009B, zero-width and bidirectional formatting, line/paragraph separators)
  written as `\\uXXXX` escapes: the same document once decoded, nothing a terminal acts on.

A leaf module: it imports nothing from traceanalyze.
"""

from __future__ import annotations

import html as html_module
import re

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
# C0, DEL, C1; zero-width and bidirectional formatting; line/paragraph separators; lone surrogates
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff\ud800-\udfff]")
# a name stays on one line in Markdown: a newline there would end a table row or a list item
_CONTROL_BUT_TAB = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028-\u202e\u2066-\u2069\ud800-\udfff]")
_CONTROL_BUT_LINES = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028-\u202e\u2066-\u2069\ud800-\udfff]")
# what a JSON encoder leaves raw (it escapes C0 itself): DEL, C1, formatting, separators
_JSON_RAW = re.compile("[\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]")
_XML_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
_WORKFLOW_COMMAND_LINE = re.compile(r"^([ \t]*)::", re.MULTILINE)
# the legacy (v1) workflow commands: the runner finds `##[command]` anywhere in a line (and Azure
# Pipelines `##vso[`); `#` followed by a space keeps every such sequence from matching
_LEGACY_COMMAND = re.compile(r"##(?=\[|vso\[)", re.IGNORECASE)
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>|~#!])")
_MARKDOWN_MARKUP = re.compile(r"([\\`\[\]<>|])")  # what can open HTML, a link or image, code, or a cell


def _show(match: re.Match[str]) -> str:
    char = match.group(0)
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: object) -> str:
    """`text` on one line with every control or formatting character shown as an escape.

    >>> visible("gemm\\x1b]52;c;aGk=\\x07\\nnext\\x00")
    'gemm\\\\x1b]52;c;aGk=\\\\x07\\\\nnext\\\\x00'
    """
    return _CONTROL.sub(_show, str(text))


def markdown(text: object) -> str:
    """Plain text for Markdown (GitHub-flavoured): control characters other than tab shown as
    escapes (a newline in a device name would split a table row or list item), then markup
    punctuation escaped.

    >>> markdown("<img src=x> [a](javascript:b) `c` |d|")
    '\\\\<img src=x\\\\> \\\\[a\\\\](javascript:b) \\\\`c\\\\` \\\\|d\\\\|'
    """
    return _MARKDOWN_SPECIAL.sub(r"\\\1", _CONTROL_BUT_TAB.sub(_show, str(text)))


def markdown_plain(text: object) -> str:
    """Like `markdown`, but only the punctuation that can inject something is escaped (raw HTML
    `<>`, links and images `[]`, code spans, table cells `|`, backslash), so names like
    `max_idle_fraction` read as written in source view; emphasis (`*_~`) can only restyle.

    >>> markdown_plain("max_idle_fraction <img src=x> ![a](b) |")
    'max_idle_fraction \\\\<img src=x\\\\> !\\\\[a\\\\](b) \\\\|'
    """
    return _MARKDOWN_MARKUP.sub(r"\\\1", _CONTROL_BUT_TAB.sub(_show, str(text)))


def html(text: object) -> str:
    """Text or an attribute value for HTML (and SVG): control characters other than newline and
    tab shown as escapes, then `& < > " '` escaped.

    >>> html('</script><img src=x onerror="alert(1)">')
    '&lt;/script&gt;&lt;img src=x onerror=&quot;alert(1)&quot;&gt;'
    """
    return html_module.escape(_CONTROL_BUT_LINES.sub(_show, str(text)), quote=True)


def xml_document(document: str) -> str:
    """A serialised XML document with the characters XML 1.0 does not allow (C0 controls other
    than tab, LF, CR; lone surrogates; U+FFFE/U+FFFF) shown as visible escapes."""
    return _XML_ILLEGAL.sub(_show, document)


def workflow_data(text: object) -> str:
    """The message of a GitHub Actions workflow command (`::error::MESSAGE`): `%`, CR, LF escaped
    as the runner expects, so a message cannot end the line and start another command; every other
    control character made visible (an ESC or BEL in a device name reaches no terminal of a log
    viewer), and a legacy `##[` command anywhere in it broken (`# #[`).

    >>> workflow_data("A100\\x1b]52;c;eA==\\x07\\n##[add-mask]x")
    'A100\\\\x1b]52;c;eA==\\\\x07%0A# #[add-mask]x'
    """
    escaped = str(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return _LEGACY_COMMAND.sub("# #", _CONTROL.sub(_show, escaped))


def workflow_property(text: object) -> str:
    """A property value of a workflow command (`title=…`): `workflow_data`, plus `:` and `,`."""
    return workflow_data(text).replace(":", "%3A").replace(",", "%2C")


def output_text(text: str) -> str:
    """The last guard before text is printed or written: control characters other than newline
    and tab made visible (no terminal escape sequence survives), and a line that would start a
    GitHub workflow command (`::error`, `::add-mask::`) opened with `: :` instead, and a legacy
    command (`##[error]`, `##[add-mask]`, `##vso[…]`), which the runner finds anywhere in a line,
    broken as `# #[`.

    >>> output_text("device: A100\\n::add-mask::x\\n\\x1b[2J k ##[group]g")
    'device: A100\\n: :add-mask::x\\n\\\\x1b[2J k # #[group]g'
    """
    guarded = _WORKFLOW_COMMAND_LINE.sub(r"\1: :", _CONTROL_BUT_LINES.sub(_show, text))
    return _LEGACY_COMMAND.sub("# #", guarded)


def json_text(document: str) -> str:
    """An encoded JSON document with DEL, C1 controls and Unicode formatting characters escaped as
    `\\uXXXX`. Such characters can only stand inside strings, so the decoded document is unchanged.

    >>> json_text('{"name": "k\\x9b2J\\u202e"}')
    '{"name": "k\\\\u009b2J\\\\u202e"}'
    """
    return _JSON_RAW.sub(lambda match: f"\\u{ord(match.group(0)):04x}", document)
