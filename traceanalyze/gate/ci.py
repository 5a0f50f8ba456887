"""The gate verdict for CI systems: JUnit XML (one testcase per budget and per compared number) and
GitHub Actions `::error` annotation lines."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from traceanalyze.gate.verdict import Regression, Verdict
from traceanalyze.renderers.escape import workflow_data, workflow_property, xml_document

SUITE = "traceanalyze gate"


def render_junit(verdict: Verdict) -> str:
    """JUnit XML: a `<testsuite>` with one `<testcase>` per budget (classname
    `traceanalyze.gate.budget`) and per number compared with the baseline (`…gate.regression`); a
    failed one carries `<failure message=…>`, one that could not be measured `<error>`, one only
    shown `<skipped>`. Problems that make the numbers untrustworthy add a `reliability` testcase
    (`<error>`, or `<skipped>` under --allow-unreliable)."""
    cases: list[ET.Element] = []

    def case(classname: str, name: str, status: str, message: str, detail: str = "") -> None:
        element = ET.Element("testcase", classname=classname, name=name, time="0")
        if status == "fail":
            ET.SubElement(element, "failure", message=message, type="budget").text = detail or message
        elif status == "unmeasured" or status == "error":
            ET.SubElement(element, "error", message=message, type="unmeasured").text = detail or message
        elif status in ("info", "skipped"):
            ET.SubElement(element, "skipped", message=message)
        else:
            ET.SubElement(element, "system-out").text = message
        cases.append(element)

    for check in verdict.checks:
        if check.other_failures:  # several ranks break it: one testcase per rank and budget
            for alone in (check, *check.other_failures):
                case("traceanalyze.gate.budget", f"{check.name}.rank{alone.rank}", alone.status, alone.message)
        else:
            case("traceanalyze.gate.budget", check.name, check.status, check.message)
    for regression in verdict.regressions:
        case("traceanalyze.gate.regression", f"regression.{regression.name}", regression.status, regression.message)
    if verdict.problems:
        detail = "\n".join(verdict.problems)
        status = "skipped" if verdict.allow_unreliable else "error"
        case("traceanalyze.gate", "reliability", status, verdict.problems[0] if len(verdict.problems) == 1
             else f"{len(verdict.problems)} problems: {verdict.problems[0]} …", detail)
    counts = {
        "tests": str(len(cases)),
        "failures": str(sum(1 for c in cases if c.find("failure") is not None)),
        "errors": str(sum(1 for c in cases if c.find("error") is not None)),
        "skipped": str(sum(1 for c in cases if c.find("skipped") is not None)),
    }
    root = ET.Element("testsuites", name=SUITE, time="0", **counts)
    suite = ET.SubElement(root, "testsuite", name=f"{SUITE}: {verdict.source}", time="0", **counts)
    properties = ET.SubElement(suite, "properties")
    for name, value in (("outcome", verdict.outcome), ("statistic", verdict.statistic), ("basis", verdict.basis),
                        ("steps", verdict.steps), ("baseline", verdict.baseline)):
        if value is not None:
            ET.SubElement(properties, "property", name=name, value=str(value))
    for warning in verdict.warnings:
        ET.SubElement(properties, "property", name="warning", value=warning)
    suite.extend(cases)
    ET.indent(root)
    # trace strings may hold characters XML 1.0 forbids (ElementTree writes them as they are)
    return xml_document('<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n")



def annotation_lines(verdict: Verdict) -> list[str]:
    """`::error title=…::message` per failed or unmeasured budget and regression, one per
    reliability problem when it stops the verdict, and `::warning` per warning (GitHub Actions
    workflow commands)."""
    lines = [f"::warning title={workflow_property('traceanalyze gate')}::{workflow_data(w)}" for w in verdict.warnings]
    for item in (*verdict.checks, *(o for c in verdict.checks for o in c.other_failures), *verdict.regressions):
        if item.status in ("fail", "unmeasured"):
            prefix = "regression " if isinstance(item, Regression) else ""
            title = f"traceanalyze gate: {prefix}{item.name}"
            lines.append(f"::error title={workflow_property(title)}::{workflow_data(item.message)}")
    if verdict.problems and not verdict.allow_unreliable:
        for problem in verdict.problems:
            lines.append(
                f"::error title={workflow_property('traceanalyze gate: cannot judge')}::{workflow_data(problem)}"
            )
    return lines


STEP_SUMMARY_BYTES = 1 << 20  # GitHub drops a step summary over 1 MiB, whole
_SUMMARY_ROOM = STEP_SUMMARY_BYTES - 4096  # what was appended before us, and the note, fit beside it


def bounded_summary(markdown: str, room: int = _SUMMARY_ROOM) -> str:
    """`markdown` (the verdict for `$GITHUB_STEP_SUMMARY`) cut at a line to at most `room` bytes
    of UTF-8, with a line saying so: GitHub shows no summary at all over 1 MiB.

    >>> bounded_summary("a\\nb\\n", room=100)
    'a\\nb\\n'
    >>> bounded_summary("x" * 50 + "\\n" + "y" * 50 + "\\n", room=60).splitlines()[-1]
    '*(cut: the step summary is kept under 1 MiB; the whole verdict is in the job log)*'
    """
    data = markdown.encode("utf-8")
    if len(data) <= room:
        return markdown
    cut = data[:room].decode("utf-8", errors="ignore")
    cut = cut[: cut.rfind("\n") + 1] if "\n" in cut else ""
    return cut + "\n*(cut: the step summary is kept under 1 MiB; the whole verdict is in the job log)*\n"
