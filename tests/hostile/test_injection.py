"""Trace strings never inject into an output: terminal escape sequences, GitHub workflow commands,
Markdown/HTML markup, ill-formed JUnit XML (traceanalyze/renderers/escape.py, applied by every
renderer and, as the last guard, by the CLI)."""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from hostile.cases import renamed_fixture

from traceanalyze.renderers import escape

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "fixtures" / "synthetic_training.json.gz"

DEVICE = "A100\n::error title=x::injected\n::add-mask::y"
KERNEL = "gemm\x1b]52;c;aGVsbG8=\x07\x1b[2J\x00\x08\r<img src=x onerror=alert(1)>`|[x](javascript:alert(1))</script>"
ANNOTATION = "step\n::error::annot<img src=x onerror=alert(3)>"
RAW_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f]")


def test_visible_shows_every_control_character():
    assert escape.visible("a\x1b]0;title\x07b\x1b[2J\x00\x08\r\n\t\x7f\x9b\u202e\ud800") == (
        "a\\x1b]0;title\\x07b\\x1b[2J\\x00\\x08\\r\\n\\t\\x7f\\x9b\\u202e\\ud800")
    assert escape.visible("\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\") == "\\x1b]8;;http://x\\x1b\\link\\x1b]8;;\\x1b\\"


def test_markdown_escapes_markup():
    assert escape.markdown("<img src=x>`|[x](javascript:y)![i](u)\x1b") == (
        "\\<img src=x\\>\\`\\|\\[x\\](javascript:y)\\!\\[i\\](u)\\\\x1b")  # renders as \\x1b
    assert escape.markdown_plain("max_idle_fraction <b>|[a](b)`") == "max_idle_fraction \\<b\\>\\|\\[a\\](b)\\`"


def test_html_escapes_elements_attributes_and_controls():
    assert escape.html('</script><img src=x onerror="a(\'1\')">\x1b[2J&') == (
        "&lt;/script&gt;&lt;img src=x onerror=&quot;a(&#x27;1&#x27;)&quot;&gt;\\x1b[2J&amp;")


def test_xml_document_stays_well_formed():
    document = escape.xml_document('<a v="x\x1by\x00">\x08\ud800</a>')
    assert document == '<a v="x\\x1by\\x00">\\x08\\ud800</a>'
    ElementTree.fromstring(document)


def test_workflow_command_values():
    assert escape.workflow_data("50%\r\n::add-mask::y") == "50%25%0D%0A::add-mask::y"
    assert escape.workflow_property("a:b,c%\n") == "a%3Ab%2Cc%25%0A"


def test_output_text_guards_every_line():
    assert escape.output_text("ok\n::error::x\n  ::add-mask::y\n\x1b[2Jz\tw\r") == (
        "ok\n: :error::x\n  : :add-mask::y\n\\x1b[2Jz\tw\\r")


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("hostile")
    (folder / "hostile.json.gz").write_bytes(
        renamed_fixture(FIXTURE, device=DEVICE, kernel=KERNEL, annotation=ANNOTATION))
    shutil.copyfile(FIXTURE, folder / "base.json.gz")
    return folder


def run(*args, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environment = {key: value for key, value in os.environ.items() if not key.startswith("GITHUB_")}
    environment.update({"PYTHONPATH": str(REPO), **(env or {})})
    result = subprocess.run([sys.executable, "-m", "traceanalyze", *map(str, args)], cwd=cwd, env=environment,
                            capture_output=True, text=True, timeout=120, errors="surrogateescape")
    assert "Traceback" not in result.stderr, result.stderr
    return result


def assert_nothing_injected(text: str, *, ours: tuple[str, ...] = ()) -> None:
    assert not RAW_CONTROLS.search(text)
    commands = [line for line in text.splitlines() if line.lstrip().startswith("::")]
    assert all(line.startswith(ours) for line in commands) if ours else not commands, commands


def without_code_spans(markdown: str) -> str:
    return re.sub(r"(`+)(?:(?!\1).)*?\1", "", markdown)


@pytest.mark.parametrize("command", [["report"], ["report", "-f", "markdown"], ["report", "-f", "html"], ["info"],
                                     ["diff", "base.json.gz"], ["diff", "base.json.gz", "-f", "markdown"],
                                     ["diff", "base.json.gz", "-f", "html"]])
def test_reports_and_diffs_of_a_hostile_trace(hostile, command):
    args = [command[0], *(["base.json.gz"] if command[0] == "diff" else []), "hostile.json.gz",
            *command[2 if command[0] == "diff" else 1:]]
    result = run(*args, cwd=hostile)
    assert result.returncode == 0, result.stderr
    assert_nothing_injected(result.stdout)
    assert_nothing_injected(result.stderr)
    if "html" in command:
        assert "<img" not in result.stdout and "</script>" not in result.stdout
    elif "markdown" in command:
        plain = without_code_spans(result.stdout)
        assert not re.search(r"(?<!\\)<img", plain) and not re.search(r"(?<!\\)\[x\]\(javascript", plain)
    if command == ["report"]:
        assert "gemm\\x1b]52;c;aGVsbG8=\\x07\\x1b[2J\\x00\\x08" in result.stdout
        assert "  device 0 (A100\n: :error title=x::injected\n: :add-mask::y): GPU idle" in result.stdout


def test_gate_on_actions_writes_only_its_own_commands_and_well_formed_junit(hostile, tmp_path):
    summary = tmp_path / "summary.md"
    result = run("gate", "hostile.json.gz", "--baseline", "base.json.gz", "--max-regression", "1%",
                 "--allow-unreliable",
                 "--max-idle-fraction", "0.1", "--junit", tmp_path / "junit.xml", cwd=hostile,
                 env={"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)})
    assert result.returncode == 1, result.stderr
    assert_nothing_injected(result.stdout, ours=("::error title=traceanalyze gate",
                                                 "::warning title=traceanalyze gate"))
    warning = [line for line in result.stdout.splitlines() if line.startswith("::warning")]
    assert warning == ["::warning title=traceanalyze gate::different devices: the baseline ran on NVIDIA "
                       "A100-SXM4-80GB, "
                       "this run on A100%0A::error title=x::injected%0A::add-mask::y; its times and regime shares are "
                       "not comparable (make the baseline on the same device); cannot compare: the baseline rows "
                       "are shown, not judged"]
    text = summary.read_text()
    assert_nothing_injected(text)
    assert ("this run on A100 ::error title=x::injected ::add-mask::y; its times" in text)  # one line, as a quote
    root = ElementTree.parse(tmp_path / "junit.xml").getroot()
    values = [p.get("value") for p in root.iter("property") if p.get("name") == "warning"]
    # as &#10;
    assert values[0].startswith(f"different devices: the baseline ran on NVIDIA A100-SXM4-80GB, this run on {DEVICE};")


def test_a_control_character_in_the_device_name_keeps_junit_well_formed(hostile, tmp_path):
    trace = json.loads(gzip.decompress((hostile / "hostile.json.gz").read_bytes()))
    trace["deviceProperties"][0]["name"] = "A100\x1b\x00\x01x"
    (tmp_path / "t.json.gz").write_bytes(gzip.compress(json.dumps(trace).encode()))
    result = run("gate", tmp_path / "t.json.gz", "--baseline", hostile / "base.json.gz", "--max-regression", "1%",
                 "--allow-unreliable", "--junit", tmp_path / "junit.xml", cwd=tmp_path)
    assert result.returncode in (0, 1), result.stderr
    text = (tmp_path / "junit.xml").read_text()
    ElementTree.fromstring(text)
    assert "this run on A100\\x1b\\x00\\x01x;" in text


def parsed_elements(page: str) -> list[tuple[str, list[tuple[str, str | None]]]]:
    """(tag, attributes) of every element of an HTML document."""
    from html.parser import HTMLParser

    found: list[tuple[str, list[tuple[str, str | None]]]] = []

    class Collector(HTMLParser):
        def handle_starttag(self, tag, attrs):
            found.append((tag, list(attrs)))

    Collector().feed(page)
    return found


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@pytest.mark.skipif(CHROMIUM is None,
                    reason="no chromium on PATH (apt-get install chromium) for the headless DOM check")
@pytest.mark.parametrize("command", [["report", "hostile.json.gz", "-f", "html"],
                                     ["diff", "base.json.gz", "hostile.json.gz", "-f", "html"]])
def test_headless_chromium_runs_nothing_from_the_trace(hostile, tmp_path, command):
    page = tmp_path / "page.html"
    result = run(*command, "-o", page, cwd=hostile)
    assert result.returncode == 0, result.stderr
    dom = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                          f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=2000", "--dump-dom",
                          page.as_uri()], capture_output=True, text=True, timeout=120).stdout
    assert "<svg" in dom  # the page did render
    elements = parsed_elements(dom)
    assert not {tag for tag, _ in elements} & {"img", "script", "iframe"}  # no element from a trace string
    assert not [name for _, attrs in elements for name, _ in attrs if name.startswith("on")]  # nor an event handler
    assert not [value for _, attrs in elements for _, value in attrs
                if (value or "").strip().lower().startswith("javascript:")]
    assert "&lt;img src=x onerror=" in dom  # the names are there, as text


def test_json_text_escapes_what_the_encoder_leaves_raw():
    encoded = '{"k": "a\x7f\x9b2J\u202e\u2028\ufeffb"}'
    assert escape.json_text(encoded) == '{"k": "a\\u007f\\u009b2J\\u202e\\u2028\\ufeffb"}'
    assert json.loads(escape.json_text(json.dumps("a\x7f\x9b\u202e", ensure_ascii=False))) == "a\x7f\x9b\u202e"


JSON_RAW = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]")


@pytest.mark.parametrize("command", [["report", "c1.json.gz", "-f", "json"],
                                     ["diff", "base.json.gz", "c1.json.gz", "-f", "json"],
                                     ["gate", "c1.json.gz", "--baseline", "base.json.gz", "--max-regression", "1%",
                                      "--allow-unreliable", "-f", "json"]])
def test_json_output_carries_no_raw_control_or_formatting_character(hostile, command):
    """JSON escapes C0 itself; DEL, the 8-bit CSI (U+009B), bidi overrides and line separators it
    leaves raw unless told: on stdout a terminal would act on them. Decoded, the names are intact."""
    name = "gemm\x9b2J\x7f\u202egnp.exe\u2028x"
    trace = json.loads(gzip.decompress(FIXTURE.read_bytes()))
    trace["deviceProperties"][0]["name"] = name
    (hostile / "c1.json.gz").write_bytes(gzip.compress(json.dumps(trace).encode()))
    result = run(*command, cwd=hostile)
    assert result.returncode in (0, 1), result.stderr
    assert not JSON_RAW.search(result.stdout.replace("\n", ""))
    assert "gemm\\u009b2J\\u007f\\u202egnp.exe\\u2028x" in result.stdout
    assert name in json.dumps(json.loads(result.stdout), ensure_ascii=False)


def test_an_error_naming_a_hostile_file_name_stays_one_line(tmp_path):
    """A file name may hold a newline and escape sequences: the error shows them as escapes."""
    name = "bad\n::error::y\x1b[2J.json"
    (tmp_path / name).write_text("x")
    result = run("report", name, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr == ("traceanalyze: error: bad\\n::error::y\\x1b[2J.json: not JSON "
                             "(a Chrome/Kineto trace is a JSON object)\n")
