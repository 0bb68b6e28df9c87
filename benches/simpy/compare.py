"""Times stormsim against the SimPy twin of the same storm, side by side.

    pip install simpy==4.1.2
    cargo build --release
    python3 benches/simpy/compare.py [--pairs 9] [--stormsim target/release/stormsim]

Runs the two whole processes in alternating pairs (stormsim, SimPy,
stormsim, ...), so a machine whose speed drifts slows both alike, and
prints each one's median wall and CPU seconds and the median of the
per-pair ratios. stormsim runs `docs/examples/storm-150s.yaml` with its
usual outputs (every table, the charts as SVG and PNG, report.html) into
a scratch folder; the SimPy model (`storm.py` beside this file) prints
its totals, which are checked against stormsim's summary.csv so that the
two are seen to simulate the same storm.
"""

import argparse
import csv
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SCENARIO = os.path.join(ROOT, "docs", "examples", "storm-150s.yaml")


def timed(cmd):
    """Wall and CPU seconds of one child process, and what it printed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=9)
    parser.add_argument(
        "--stormsim", default=os.path.join(ROOT, "target", "release", "stormsim")
    )
    args = parser.parse_args()
    scratch = tempfile.mkdtemp(prefix="stormsim-simpy-")
    out_dir = os.path.join(scratch, "out")
    stormsim = [args.stormsim, "run", SCENARIO, "--out", out_dir, "--quiet"]
    simpy = [sys.executable, os.path.join(HERE, "storm.py")]

    # One of each first, not counted: caches, and the totals to compare.
    timed(stormsim)
    _, _, printed = timed(simpy)
    theirs = dict(line.split() for line in printed.splitlines())
    with open(os.path.join(out_dir, "summary.csv"), newline="") as f:
        ours = next(csv.DictReader(f))
    print("totals           stormsim      SimPy")
    for key in ("logical_requests", "succeeded", "dependency_attempts"):
        print(f"{key:<20} {int(ours[key]):>8} {int(theirs[key]):>10}")

    rows = {"stormsim": [], "simpy": []}
    for _ in range(args.pairs):
        rows["stormsim"].append(timed(stormsim)[:2])
        rows["simpy"].append(timed(simpy)[:2])
    print(f"\n{args.pairs} pairs, medians      wall s    cpu s")
    for name, runs in rows.items():
        wall = statistics.median(r[0] for r in runs)
        cpu = statistics.median(r[1] for r in runs)
        print(f"{name:<22} {wall:>8.3f} {cpu:>8.3f}")
    for i, what in enumerate(("wall", "cpu")):
        ratio = statistics.median(
            b[i] / a[i] for a, b in zip(rows["stormsim"], rows["simpy"])
        )
        print(f"SimPy ÷ stormsim, {what}: {ratio:.1f}×")


if __name__ == "__main__":
    main()
