"""Executes every notebook in notebooks/ headlessly (nbclient), from the
repository root, without writing outputs back. Exits non-zero if a cell
raises: CI runs this after producing the outputs the notebooks read."""

import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    notebooks = sorted((ROOT / "notebooks").glob("*.ipynb"))
    if not notebooks:
        print("no notebooks found", file=sys.stderr)
        return 1
    for path in notebooks:
        nb = nbformat.read(path, as_version=4)
        client = NotebookClient(
            nb,
            timeout=600,
            kernel_name="python3",
            resources={"metadata": {"path": str(ROOT)}},
        )
        print(f"== {path.relative_to(ROOT)}", flush=True)
        client.execute()  # raises CellExecutionError on the first failing cell
        print(f"ok: {path.relative_to(ROOT)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
