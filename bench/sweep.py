#!/usr/bin/env python3
"""Sweeps and the results archive: overhead per run, scale, list/show speed.

1. overhead: wall time per run of `linkperf sweep --repeat N -n 1K` (the test
   itself is ~0) and `-t 0.05` (minus the test time), side by side with a
   shell-style loop of `iperf3 -c -n 1K` and of `linkperf client -n 1K`
   (a new process per run, as a script would do it). Target: < 100 ms.
2. scale: one sweep of --long runs (default 1000) of `-n 1K`; time between
   run starts for the first 100 and the last 100 (from the archive), and the
   export time (JSON, CSV). Target: no slowing down.
3. archive: --archive synthetic runs (default 100,000) inserted through the
   store API (crates/store/examples/populate.rs, one transaction per 10,000
   runs), then `results list`, `list --all`, a deep page, `show` of a run
   and of a sweep, timed (median of 5). Target: list/show < 1 s.

Not a test: run by hand, e.g.
    CARGO_TARGET_DIR=/work/target-store python3 bench/sweep.py
Options: --runs N, --long N, --archive N, --no-build, --pg URL (also the
archive on PostgreSQL), --out DIR.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from benchlib import CHILDREN, HOST, REPO, free_port, log, wait_port


def target_dir():
    return os.environ.get("CARGO_TARGET_DIR") or os.path.join(REPO, "target")


def build():
    log("building linkperf and the populate example (release)...")
    subprocess.run(
        ["cargo", "build", "--release", "-p", "linkperf", "-p", "linkperf-store", "--examples"],
        cwd=REPO, check=True, env={**os.environ, "CARGO_TARGET_DIR": target_dir()},
    )


def timed(cmd, **kw):
    t = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    dt = time.perf_counter() - t
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({p.returncode}): {p.stderr.strip()}")
    return dt, p.stdout


def median_time(cmd, n=5):
    return statistics.median(timed(cmd)[0] for _ in range(n))


def overhead(lp, db, runs):
    port = free_port()
    srv = subprocess.Popen([lp, "server", "-p", str(port), "-B", HOST, "-q"])
    CHILDREN.append(srv)
    iport = free_port()
    isrv = None
    if shutil.which("iperf3"):
        isrv = subprocess.Popen(["iperf3", "-s", "-p", str(iport), "-B", HOST],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        CHILDREN.append(isrv)
    wait_port(port)
    rows = []
    for label, extra, test_s in [("-n 1K", ["-n", "1K"], 0.0), ("-t 0.05", ["-t", "0.05"], 0.05)]:
        dt, out = timed([lp, "sweep", HOST, "-p", str(port), "--db", db, "--vary", "length=64K",
                         "--repeat", str(runs), "-J", *extra])
        doc = json.loads(out)
        assert doc["points"][0]["runs"] == runs, doc["points"][0]["runs"]
        per = dt / runs
        rows.append((f"linkperf sweep --repeat {runs} {label}", per, per - test_s))
    k = max(20, runs // 5)
    t = time.perf_counter()
    for _ in range(k):
        timed([lp, "client", HOST, "-p", str(port), "-n", "1K", "--no-store", "-J"])
    per = (time.perf_counter() - t) / k
    rows.append((f"loop of `linkperf client -n 1K --no-store` ({k} processes)", per, per))
    t = time.perf_counter()
    for _ in range(k):
        timed([lp, "client", HOST, "-p", str(port), "-n", "1K", "--db", db, "-J"])
    per = (time.perf_counter() - t) / k
    rows.append((f"loop of `linkperf client -n 1K` storing ({k} processes)", per, per))
    if isrv:
        wait_port(iport)
        t = time.perf_counter()
        for _ in range(k):
            timed(["iperf3", "-c", HOST, "-p", str(iport), "-n", "1K", "-J"])
        per = (time.perf_counter() - t) / k
        rows.append((f"loop of `iperf3 -c -n 1K` ({k} processes)", per, per))
    return port, rows


def scale(lp, db, port, n):
    dt, out = timed([lp, "sweep", HOST, "-p", str(port), "--db", db, "--vary", "length=64K",
                     "--repeat", str(n), "-n", "1K", "-J"])
    sweep_id = json.loads(out)["id"]
    ex_t, ex = timed([lp, "results", "--db", db, "export", str(sweep_id), "--format", "json"])
    csv_t, _ = timed([lp, "results", "--db", db, "export", str(sweep_id), "--format", "csv"])
    show_t = median_time([lp, "results", "--db", db, "show", str(sweep_id)])
    runs = sorted(json.loads(ex)["runs"], key=lambda r: r["started_unix_ms"])
    starts = [r["started_unix_ms"] for r in runs]
    gaps = [b - a for a, b in zip(starts, starts[1:])]
    first, last = statistics.mean(gaps[:100]), statistics.mean(gaps[-100:])
    return {
        "runs": n, "wall_s": dt, "per_run_ms": 1000 * dt / n,
        "first100_ms": first, "last100_ms": last,
        "export_json_s": ex_t, "export_csv_s": csv_t, "show_s": show_t,
        "export_bytes": len(ex),
    }


def archive(lp, populate, db, n):
    _, out = timed([populate, db, str(n)])
    ins = json.loads(out)
    top = json.loads(timed([lp, "results", "--db", db, "list", "-J", "--limit", "1"])[1])["entries"][0]
    sweep = json.loads(timed([lp, "results", "--db", db, "list", "-J", "--kind", "sweep",
                              "--limit", "1"])[1])["entries"][0]["id"]
    some_run = top["id"] if top["kind"] != "sweep" else top["id"] - 51
    cases = [
        ("results list", ["list"]),
        ("results list --all", ["list", "--all"]),
        ("results list --before N/2 (deep page)", ["list", "--before", str(top["id"] // 2)]),
        ("results list --kind sweep", ["list", "--kind", "sweep"]),
        ("results list --host H (one host)", ["list", "--host", "10.0.1.1"]),
        ("results show RUN", ["show", str(some_run)]),
        ("results show SWEEP (50 runs)", ["show", str(sweep)]),
        ("results export SWEEP --format json", ["export", str(sweep), "--format", "json"]),
    ]
    times = [(label, median_time([lp, "results", "--db", db, *args])) for label, args in cases]
    size = os.path.getsize(db) if os.path.exists(db) else None
    return ins, times, size


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--long", type=int, default=1000)
    ap.add_argument("--archive", type=int, default=100_000)
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--pg", help="postgres:// URL: also build the archive there (a fresh schema)")
    ap.add_argument("--out", help="directory for the archives (default: a new temporary one)")
    a = ap.parse_args()
    if not a.no_build:
        build()
    lp = os.path.join(target_dir(), "release", "linkperf")
    populate = os.path.join(target_dir(), "release", "examples", "populate")
    out = a.out or tempfile.mkdtemp(prefix="linkperf-sweep-bench-")
    os.makedirs(out, exist_ok=True)
    log(f"archives in {out}")

    log(f"1. overhead per run ({a.runs} runs)...")
    port, rows = overhead(lp, os.path.join(out, "overhead.db"), a.runs)
    print(f"\n### Overhead per run\n\n| what | wall per run (ms) | overhead per run (ms) |\n|---|---|---|")
    for label, per, ov in rows:
        print(f"| {label} | {1000 * per:.1f} | {1000 * ov:.1f} |")

    log(f"2. {a.long} short runs in one sweep...")
    s = scale(lp, os.path.join(out, "scale.db"), port, a.long)
    print(f"\n### {s['runs']} short runs (-n 1K) in one sweep\n")
    print(f"- wall {s['wall_s']:.1f} s, {s['per_run_ms']:.1f} ms per run")
    print(f"- time between run starts: first 100 runs {s['first100_ms']:.1f} ms, last 100 runs {s['last100_ms']:.1f} ms")
    print(f"- export JSON {s['export_json_s']:.2f} s ({s['export_bytes'] / 1e6:.1f} MB), CSV {s['export_csv_s']:.2f} s, show {s['show_s']:.2f} s")

    backends = [("SQLite", os.path.join(out, "archive.db"))]
    if a.pg:
        sys.path.insert(0, REPO)
        schema = f"bench_{os.getpid()}"
        subprocess.run(["psql", a.pg, "-qc", f"DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}"], check=True)
        sep = "&" if "?" in a.pg else "?"
        backends.append(("PostgreSQL", f"{a.pg}{sep}options=-c%20search_path%3D{schema}"))
    for name, db in backends:
        log(f"3. archive of {a.archive} runs on {name}...")
        ins, times, size = archive(lp, populate, db, a.archive)
        print(f"\n### Archive with {ins['runs']} runs ({name})\n")
        extra = f", file {size / 1e6:.0f} MB" if size else ""
        print(f"- insert through the store API: {ins['seconds']:.1f} s ({ins['runs_per_second']} runs/s){extra}\n")
        print("| command | median of 5 (ms) |\n|---|---|")
        for label, t in times:
            print(f"| {label} | {1000 * t:.0f} |")


if __name__ == "__main__":
    main()
