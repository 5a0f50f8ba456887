"""Save, or compare against, `traceanalyze report --format json` of every shared trace.

A refactor must not change what the tool says. Before the change:

    python scripts/json_snapshot.py save /tmp/json-before

after it:

    python scripts/json_snapshot.py compare /tmp/json-before

`compare` exits 1 and names every trace whose JSON differs (byte for byte). The test
`tests/test_json_snapshot.py` runs the same comparison when TRACEANALYZE_JSON_BASELINE names a
saved folder.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_TRACES_DIR = REPO_ROOT.parent / "shared" / "traces"


def snapshot_inputs() -> list[Path]:
    """Every shared trace file, and every folder of rank traces (reported as one job)."""
    if not SHARED_TRACES_DIR.is_dir():
        return []
    files = sorted([*SHARED_TRACES_DIR.rglob("*.json.gz"), *SHARED_TRACES_DIR.rglob("*.json")])
    folders = sorted({path.parent for path in files if path.parent != SHARED_TRACES_DIR})
    return [*files, *folders]


def snapshot_name(path: Path) -> str:
    return path.relative_to(SHARED_TRACES_DIR).as_posix().replace("/", "__") + ".report.json"


def report_json(path: Path) -> bytes:
    done = subprocess.run(
        [sys.executable, "-m", "traceanalyze", "report", str(path), "--format", "json"],
        capture_output=True,
        check=False,
    )
    return done.stdout + f"\n# exit {done.returncode}\n".encode()


def save(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for path in snapshot_inputs():
        (folder / snapshot_name(path)).write_bytes(report_json(path))
        print(f"saved {snapshot_name(path)}")


def differing(folder: Path) -> list[str]:
    """Names of the snapshots in `folder` that today's output does not reproduce byte for byte."""
    changed = []
    for path in snapshot_inputs():
        saved = folder / snapshot_name(path)
        if not saved.is_file() or saved.read_bytes() != report_json(path):
            changed.append(snapshot_name(path))
    return changed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=["save", "compare"])
    parser.add_argument("folder", type=Path)
    arguments = parser.parse_args()
    if arguments.action == "save":
        save(arguments.folder)
        return 0
    changed = differing(arguments.folder)
    for name in changed:
        print(f"differs: {name}")
    print(f"{len(changed)} of {len(snapshot_inputs())} differ")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
