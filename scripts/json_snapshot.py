"""Save, or compare against, `traceanalyze report --format json` of every shared trace.

A refactor must not change what the tool says. Before the change:

    python scripts/json_snapshot.py save /tmp/json-before

after it:

    python scripts/json_snapshot.py compare /tmp/json-before

`compare` exits 1 and names every trace whose JSON differs (byte for byte). The test
`tests/test_json_snapshot.py` runs the same comparison when TRACEANALYZE_JSON_BASELINE names a
saved folder.

`--all` snapshots more: the Markdown and the terminal report too (the terminal one with
COLUMNS=120, written to a pipe, not a TTY), and the traces of fixtures/ (recorded and synthetic)
beside the shared ones:

    python scripts/json_snapshot.py save /tmp/all-before --all
    python scripts/json_snapshot.py compare /tmp/all-before --all
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_TRACES_DIR = REPO_ROOT.parent / "shared" / "traces"
FIXTURES_DIR = REPO_ROOT / "fixtures"
# --format name → the snapshot file's suffix
FORMATS = {"json": ".report.json", "markdown": ".report.md", "terminal": ".report.txt"}
TERMINAL_COLUMNS = "120"


def snapshot_inputs() -> list[Path]:
    """Every shared trace file, and every folder of rank traces (reported as one job)."""
    if not SHARED_TRACES_DIR.is_dir():
        return []
    files = sorted([*SHARED_TRACES_DIR.rglob("*.json.gz"), *SHARED_TRACES_DIR.rglob("*.json")])
    folders = sorted({path.parent for path in files if path.parent != SHARED_TRACES_DIR})
    return [*files, *folders]


def fixture_inputs() -> list[Path]:
    """The traces kept in the repository: fixtures/*.json.gz and fixtures/recorded/*.json.gz."""
    return sorted(FIXTURES_DIR.rglob("*.json.gz"))


def snapshot_name(path: Path, fmt: str = "json") -> str:
    if path.is_relative_to(FIXTURES_DIR):
        stem = "fixtures__" + path.relative_to(FIXTURES_DIR).as_posix().replace("/", "__")
    else:
        stem = path.relative_to(SHARED_TRACES_DIR).as_posix().replace("/", "__")
    return stem + FORMATS[fmt]


def report_output(path: Path, fmt: str = "json") -> bytes:
    environment = {**os.environ, "COLUMNS": TERMINAL_COLUMNS}
    environment.pop("FORCE_COLOR", None)
    done = subprocess.run(
        [sys.executable, "-m", "traceanalyze", "report", str(path), "--format", fmt],
        capture_output=True,
        check=False,
        env=environment,
    )
    return done.stdout + f"\n# exit {done.returncode}\n".encode()


def report_json(path: Path) -> bytes:
    return report_output(path, "json")


def snapshots(everything: bool) -> list[tuple[Path, str]]:
    """(input, format) pairs: JSON of the shared inputs, or with `everything` every format of
    the shared and the fixture inputs."""
    if not everything:
        return [(path, "json") for path in snapshot_inputs()]
    return [(path, fmt) for path in [*snapshot_inputs(), *fixture_inputs()] for fmt in FORMATS]


def save(folder: Path, everything: bool = False) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for path, fmt in snapshots(everything):
        (folder / snapshot_name(path, fmt)).write_bytes(report_output(path, fmt))
        print(f"saved {snapshot_name(path, fmt)}")


def differing(folder: Path, everything: bool = False) -> list[str]:
    """Names of the snapshots in `folder` that today's output does not reproduce byte for byte."""
    changed = []
    for path, fmt in snapshots(everything):
        saved = folder / snapshot_name(path, fmt)
        if not saved.is_file() or saved.read_bytes() != report_output(path, fmt):
            changed.append(snapshot_name(path, fmt))
    return changed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=["save", "compare"])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--all", action="store_true", dest="everything",
                        help="also Markdown and terminal output, and the traces of fixtures/")
    arguments = parser.parse_args()
    if arguments.action == "save":
        save(arguments.folder, arguments.everything)
        return 0
    changed = differing(arguments.folder, arguments.everything)
    for name in changed:
        print(f"differs: {name}")
    print(f"{len(changed)} of {len(snapshots(arguments.everything))} differ")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
