"""Execute an example notebook headless in a real Jupyter kernel and keep what it produced.

    python scripts/run_notebook.py notebooks/01_quickstart_hpo.ipynb --out build/quickstart

The kernel runs in the output folder, so files the notebook writes (its HTML report) land there, next to the
executed notebook and its HTML rendering. What the cells print is echoed here.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("notebook", type=Path)
    parser.add_argument("--out", type=Path, default=Path("build"))
    parser.add_argument("--timeout", type=int, default=600, help="seconds per cell")
    args = parser.parse_args()

    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    nb = nbformat.read(args.notebook, as_version=4)
    client = NotebookClient(
        nb, timeout=args.timeout, kernel_name="python3", resources={"metadata": {"path": str(out)}}
    )
    started = time.monotonic()
    print(f"executing {args.notebook} in a Jupyter kernel (cwd {out}) ...", flush=True)
    failed = None
    try:
        client.execute()
    except CellExecutionError as exc:
        failed = exc
    executed = out / args.notebook.name
    nbformat.write(nb, executed)

    from nbconvert import HTMLExporter

    with (
        warnings.catch_warnings()
    ):  # plotly's own mimetype has no static HTML form; the report file has the plots
        warnings.filterwarnings("ignore", message="Your element with mimetype")
        html, _ = HTMLExporter().from_notebook_node(nb)
    executed.with_suffix(".html").write_text(html, encoding="utf-8")

    for cell in nb.cells:
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream" and output.get("name") == "stdout":
                sys.stdout.write(output["text"])
    if failed is not None:
        print(failed, file=sys.stderr)
        return 1
    print(
        f"done in {time.monotonic() - started:.0f}s; executed notebook, its HTML and the report are in {out}/"
    )
    for path in sorted(out.iterdir()):
        print(f"  {path.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
