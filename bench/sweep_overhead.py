#!/usr/bin/env python3
"""Sweep overhead (issue 19 item 4): wall time per run of a 1,000-point
`linkperf sweep` of `-n 1K` tests against a shell loop of 1,000
`iperf3 -c 127.0.0.1 -n 1K` runs, both on loopback against a server started
once. Target: a sweep run <= 5 ms.

The 1,000 points (`--vary length=1024..2023+1`, one run each) are swept in
blocks of --block points, interleaved with a loop of as many iperf3 runs (and
with --baseline, the same block swept by another linkperf build against its
own server); the whole set is repeated --sets times. Reported per tool: the
median over blocks of (block wall time / runs), and for linkperf the median
gap between consecutive run starts read back from the archive (the sweep
process's own start-up is then left out). The load average is printed per
block: on a shared machine the figures move with it.

Not a test: run by hand, e.g.
    flock /tmp/lp-test.lock python3 bench/sweep_overhead.py --no-build
Options: --points N, --block N, --sets N, --baseline [NAME=]BINARY (repeatable),
--no-build,
--target-dir DIR, --out DIR.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time

from benchlib import CHILDREN, HOST, REPO, build_linkperf, free_port, log, loadavg, wait_port

FIRST_LENGTH = 1024



def start(cmd):
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    CHILDREN.append(proc)
    return proc


def sweep_block(lp, port, db, first, count):
    """One block: `count` points of one run each; returns (wall s, start gaps ms)."""
    vary = f"length={first}..{first + count - 1}+1"
    cmd = [lp, "sweep", HOST, "-p", str(port), "--db", db, "--vary", vary, "-n", "1K", "-J"]
    t = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({p.returncode}): {p.stderr.strip()}")
    doc = json.loads(p.stdout)
    runs = sum(pt["runs"] for pt in doc["points"])
    if runs != count:
        raise SystemExit(f"sweep stored {runs} runs, expected {count}")
    ex = subprocess.run([lp, "results", "--db", db, "export", str(doc["id"]), "--format", "json"],
                        capture_output=True, text=True, check=True)
    starts = sorted(r["started_unix_ms"] for r in json.loads(ex.stdout)["runs"])
    return wall, [b - a for a, b in zip(starts, starts[1:])]


def iperf3_block(port, count):
    """`count` iperf3 client processes in a shell loop; returns (wall s,
    retries). iperf3 3.12's server sometimes still tidies the last test up
    when the next connects ("the server is busy"): such a run is retried at
    once, and its time counted."""
    script = (f'r=0; for i in $(seq {count}); do n=0; '
              f'until iperf3 -c {HOST} -p {port} -n 1K >/dev/null 2>&1; do '
              f'n=$((n+1)); r=$((r+1)); [ $n -ge 5 ] && exit 1; done; done; echo $r')
    t = time.perf_counter()
    p = subprocess.run(["sh", "-c", script], capture_output=True, text=True)
    wall = time.perf_counter() - t
    if p.returncode != 0:
        raise SystemExit("an iperf3 run failed 5 times in a row")
    return wall, int(p.stdout.strip() or 0)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--points", type=int, default=1000)
    ap.add_argument("--block", type=int, default=200)
    ap.add_argument("--sets", type=int, default=3)
    ap.add_argument("--baseline", action="append", default=[], metavar="[NAME=]BINARY",
                    help="another linkperf build (e.g. main before a change), run beside; repeatable")
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--target-dir", default=os.environ.get("CARGO_TARGET_DIR") or os.path.join(REPO, "target"))
    ap.add_argument("--out", help="directory for the archives (default: a new temporary one)")
    a = ap.parse_args()
    if a.points % a.block:
        raise SystemExit("--points must be a multiple of --block")
    if not shutil.which("iperf3"):
        raise SystemExit("iperf3 is not installed (apt-get install iperf3)")
    lp = build_linkperf(a.target_dir, a.no_build)
    out = a.out or tempfile.mkdtemp(prefix="linkperf-sweep-overhead-")
    os.makedirs(out, exist_ok=True)
    tools = [("linkperf", lp)]
    for i, b in enumerate(a.baseline):
        name, _, binary = b.rpartition("=")
        tools.append((name or f"baseline{i + 1}", binary))
    ports = {}
    for name, binary in tools:
        ports[name] = free_port()
        start([binary, "server", "-p", str(ports[name]), "-B", HOST, "-q"])
    ports["iperf3"] = free_port()
    start(["iperf3", "-s", "-p", str(ports["iperf3"]), "-B", HOST])
    for port in ports.values():
        wait_port(port)
    load_start = loadavg()
    log(f"archives in {out}; load average {load_start:.2f}")
    per_run = {name: [] for name in ports}
    gaps = {name: [] for name, _ in tools}
    retries = 0
    for s in range(a.sets):
        for b in range(a.points // a.block):
            first = FIRST_LENGTH + b * a.block
            row = [f"set {s + 1} block {b + 1} (load {loadavg():.2f}):"]
            for name, binary in tools:
                db = os.path.join(out, f"{name}.db")
                wall, g = sweep_block(binary, ports[name], db, first, a.block)
                per_run[name].append(1000 * wall / a.block)
                gaps[name].extend(g)
                row.append(f"{name} {per_run[name][-1]:.2f} ms")
            wall, r = iperf3_block(ports["iperf3"], a.block)
            retries += r
            per_run["iperf3"].append(1000 * wall / a.block)
            row.append(f"iperf3 {per_run['iperf3'][-1]:.2f} ms ({r} retried)")
            log(" ".join(row))
    load_end = loadavg()
    n = a.sets * a.points // a.block
    print(f"\n### Sweep overhead: {a.points} points of `-n 1K`, blocks of {a.block}, {a.sets} sets "
          f"(load average {load_start:.2f} at start, {load_end:.2f} at end)\n")
    print("| tool | wall per run, median of blocks (ms) | range (ms) | median gap between run starts (ms) |")
    print("|---|---|---|---|")
    for name in per_run:
        v = per_run[name]
        gap = f"{statistics.median(gaps[name]):.1f}" if gaps.get(name) else "-"
        print(f"| {name} | {statistics.median(v):.2f} | {min(v):.2f}-{max(v):.2f} | {gap} |")
    ratio = statistics.median(per_run["linkperf"]) / statistics.median(per_run["iperf3"])
    print(f"\nlinkperf / iperf3 per run: {ratio:.2f} (medians of {n} blocks each); "
          f"target <= 5 ms per run: {'met' if statistics.median(per_run['linkperf']) <= 5 else 'not met'}")
    print(f"iperf3 runs retried after \"the server is busy\": {retries} (their time is counted)")
    for name, _ in tools[1:]:
        r = statistics.median(per_run["linkperf"]) / statistics.median(per_run[name])
        print(f"linkperf / {name} per run: {r:.2f}")


if __name__ == "__main__":
    main()
