"""The recipes of docs/architecture.md, done wrong, fail here in a plain checkout (no shared
traces): a device added only to the table is matched to itself and listed in docs/devices.md; a
finding rule's id has its section in docs/findings.md; a rule that reads a roofline column the
findings' narrowing (`ROOFLINE_READ`) drops is caught; every renderer shows every finding of the
model, the job's included."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import re
from pathlib import Path

import polars as pl
import pytest

import multirank as mr
import traceanalyze
from traceanalyze import RunOptions
from traceanalyze.analysis.device_table import DEVICE_TABLE
from traceanalyze.analysis.devices import device_peaks
import importlib
import pkgutil

from traceanalyze.analysis import findings as findings_package
from traceanalyze.analysis.findings import kernel_claims, table
from traceanalyze.renderers.formats import RENDERERS

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "fixtures" / "synthetic_training.json.gz"
# every module of the findings package (derived: a new rules module is covered without a line here)
FINDING_MODULES = tuple(importlib.import_module(f"{findings_package.__name__}.{info.name}")
                        for info in pkgutil.iter_modules(findings_package.__path__))
RULE_MODULES = tuple(module for module in FINDING_MODULES if module.__name__.rpartition(".")[2].startswith("rules_"))


def _entries():
    return list(DEVICE_TABLE.values()) if hasattr(DEVICE_TABLE, "values") else list(DEVICE_TABLE)


@pytest.mark.parametrize("entry", _entries(), ids=lambda entry: entry.key)
def test_every_device_entry_is_matched_to_itself(entry):
    """A trace naming the device as the table does, with its SM count and memory, gets that
    entry (an MI325X added to the table alone would come back as the MI300X)."""
    found = device_peaks(entry.display_name, entry.num_sms, entry.memory_bytes)
    assert found is not None and found.key == entry.key


def test_every_device_entry_has_its_row_in_the_docs():
    rows = set(re.findall(r"^\| `([\w.-]+)` \|", (REPO / "docs" / "devices.md").read_text(), flags=re.M))
    assert {entry.key for entry in _entries()} <= rows


def _rule_ids() -> set[str]:
    """The ids the rules give their findings (`id="..."`, or `id=f"prefix-{...}"` as `prefix-<format>`)."""
    ids = set()
    for module in RULE_MODULES:
        for node in ast.walk(ast.parse(inspect.getsource(module))):
            if isinstance(node, ast.keyword) and node.arg == "id":
                if isinstance(node.value, ast.Constant):
                    ids.add(node.value.value)
                elif isinstance(node.value, ast.JoinedStr) and isinstance(node.value.values[0], ast.Constant):
                    ids.add(node.value.values[0].value + "<format>")
    return ids


def test_every_finding_id_has_its_section_in_the_docs():
    sections = set(re.findall(r"^### `([\w<>-]+)`", (REPO / "docs" / "findings.md").read_text(), flags=re.M))
    ids = _rule_ids()
    assert len(ids) >= 15 and ids <= sections, ids - sections


def test_every_rule_is_run_by_a_table():
    listed = {*table.RULES, *table.GAP_RULES, *table.JOB_RULES, *table.CLOSING_RULES, *kernel_claims.KERNEL_RULES}
    emitting = {function for module in RULE_MODULES for _, function in inspect.getmembers(module, inspect.isfunction)
                if function.__module__ == module.__name__ and "Finding(" in inspect.getsource(function)
                and not function.__name__.startswith("_")}
    assert emitting <= listed, {f.__name__ for f in emitting - listed}


def test_the_rules_read_only_roofline_columns_the_narrowing_keeps():
    """The rules of `table.RULES` see the roofline cut to `ROOFLINE_READ`: a column of the
    roofline frame named in a rule module but left out of it would read as missing."""
    roofline_columns = set(traceanalyze.analyze(FIXTURE).ranks[0].roofline.columns)
    named = set()
    for module in FINDING_MODULES:
        source = inspect.getsource(module)
        simple = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr, ast.Return, ast.If, ast.For)
        for statement in ast.walk(ast.parse(source)):
            head = statement.test if isinstance(statement, ast.If) else (
                statement.iter if isinstance(statement, ast.For) else statement)
            if not isinstance(statement, simple) or "roofline" not in (ast.get_source_segment(source, head) or ""):
                continue  # only what is read where the roofline is (a statement that names it)
            named |= {node.value for node in ast.walk(head) if isinstance(node, ast.Constant)
                      and isinstance(node.value, str) and node.value in roofline_columns}
    assert named and named <= set(table.ROOFLINE_READ), named - set(table.ROOFLINE_READ)


@pytest.fixture(scope="module")
def job_report(tmp_path_factory):
    report = traceanalyze.analyze(mr.write_job(tmp_path_factory.mktemp("job") / "job"), run=RunOptions(workers=1))
    assert report.job.findings.height and report.all_findings().height > report.job.findings.height
    return dataclasses.replace(report, options=dataclasses.replace(report.options, details=True))


@pytest.mark.parametrize("name", sorted(RENDERERS))
def test_every_renderer_shows_every_finding_of_the_model(name, job_report):
    """Each finding's title (its first words, escaped alike in every format) is in every format,
    the job's findings (straggler, exposed communication) included."""
    text = RENDERERS[name](job_report)
    findings = job_report.all_findings()
    missing = [title for title in findings["title"].to_list()
               if " ".join(re.findall(r"[A-Za-z]+", title)[:4]) not in " ".join(re.findall(r"[A-Za-z]+", text))]
    assert findings.height >= 2 and missing == []
    assert pl.Series(findings["id"]).is_in(["straggler", "exposed-communication"]).any()


def test_every_cost_family_has_its_formulas_in_the_docs():
    """docs/flops.md gives each family of `analysis.costs.registry.FAMILIES` a section (### with
    the family's name in backticks): a family added to the registry alone fails here."""
    from traceanalyze.analysis.costs import registry

    headings = [line for line in (REPO / "docs" / "flops.md").read_text().splitlines() if line.startswith("### ")]
    documented = {name for line in headings for name in re.findall(r"`(\w+)`", line)}
    families = {family.name for family in registry.FAMILIES}
    assert len(families) >= 10 and families <= documented, families - documented
