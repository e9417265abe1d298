#!/usr/bin/env python3
"""Monitoring scale benchmark: `linkperf monitor run` over a full mesh on the emulated testbed.

For each host count N (default 5, 10, 20) builds a testbed of N hosts on one
switch (namespaces; links with 1 ms delay), starts `linkperf server
--allow-third-party` in every host, and runs the controller in h1 on a schedule
of every ordered pair (N(N-1) jobs; 380 at 20 hosts): UDP at 1 Mbit/s for 300 ms,
every 30 s, for --run-for seconds, into a fresh SQLite archive. Reports the
results stored, the controller's CPU (user+system from rusage) and peak RSS
(VmHWM), and the archive's size per result; then extrapolates to a day of every
pair every 5 minutes (N(N-1) x 288 results). Needs root. Not part of the tests.

    python3 bench/monitor_scale.py [--hosts 5,10,20] [--run-for 70]
"""
import argparse
import json
import os
import resource
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def addr(i):
    return f"10.71.{i // 250}.{i % 250 + 1}"


def run_size(lp, n, run_for, work):
    name = "mscale"
    topo = [f'name = "{name}"', "[[switch]]", 'name = "sw"']
    for i in range(1, n + 1):
        topo += ["[[host]]", f'name = "h{i}"', f'address = "{addr(i)}/16"']
        topo += ["[[link]]", f'ends = ["h{i}", "sw"]', 'delay = "1ms"']
    topo_file = os.path.join(work, f"{name}.toml")
    open(topo_file, "w").write("\n".join(topo) + "\n")
    subprocess.run([lp, "testbed", "down", name], capture_output=True)
    subprocess.run([lp, "testbed", "up", topo_file], check=True, capture_output=True)
    agents = []
    try:
        for i in range(1, n + 1):
            agents.append(subprocess.Popen(
                ["ip", "netns", "exec", f"lp-{name}-h{i}", lp, "server", "--allow-third-party", "-q"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        time.sleep(2.0)
        sched = []
        for i in range(1, n + 1):
            sched += ["[[host]]", f'name = "h{i}"', f'address = "{addr(i)}"']
        members = ", ".join(f'"h{i}"' for i in range(1, n + 1))
        sched += ["[[group]]", 'name = "mesh"', f"mesh = [{members}]",
                  "[[test]]", 'name = "udp1"', 'group = "mesh"', 'interval = "30s"', 'slip = "5s"',
                  'duration = "300ms"', "udp = true", 'bitrate = "1M"', "length = 1000"]
        sched_file = os.path.join(work, f"mesh{n}.toml")
        open(sched_file, "w").write("\n".join(sched) + "\n")
        db = os.path.join(work, f"mesh{n}.db")
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.monotonic()
        proc = subprocess.Popen(
            ["ip", "netns", "exec", f"lp-{name}-h1", lp, "monitor", "run", sched_file, "--db", db,
             "--spool", os.path.join(work, f"spool{n}"), "--run-for", f"{run_for}s"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        hwm = [0]

        def watch():
            while proc.poll() is None:
                try:
                    for line in open(f"/proc/{proc.pid}/status"):
                        if line.startswith("VmHWM:"):
                            hwm[0] = max(hwm[0], int(line.split()[1]))
                except OSError:
                    pass
                time.sleep(0.5)

        w = threading.Thread(target=watch)
        w.start()
        out, err = proc.communicate()
        w.join()
        wall = time.monotonic() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        events = [json.loads(l) for l in out.splitlines() if l.startswith("{")]
        results = [e for e in events if e["event"] == "result"]
        ok = sum(1 for e in results if e["ok"])
        con = sqlite3.connect(db)
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        stored = con.execute("SELECT COUNT(*) FROM monitor_results").fetchone()[0]
        con.close()
        size = os.path.getsize(db)
        jobs = n * (n - 1)
        per_result = size / max(stored, 1)
        per_day = jobs * 288
        return {
            "hosts": n, "jobs": jobs, "results": len(results), "ok": ok, "stored": stored,
            "wall_s": wall, "cpu_s": cpu, "hwm_mib": hwm[0] / 1024, "db_bytes": size,
            "bytes_per_result": per_result,
            "cpu_ms_per_result": 1000 * cpu / max(len(results), 1),
            "day_results": per_day, "day_db_mib": per_day * per_result / 2**20,
            "day_cpu_s": per_day * cpu / max(len(results), 1),
            "stderr": err.strip()[-300:],
        }
    finally:
        for a in agents:
            a.kill()
        for a in agents:
            a.wait()
        subprocess.run([lp, "testbed", "down", name], capture_output=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hosts", default="5,10,20")
    ap.add_argument("--run-for", type=float, default=70.0)
    ap.add_argument("--no-build", action="store_true")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench/monitor_scale.py needs root (network namespaces)")
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(REPO, "target"))
    if not args.no_build:
        subprocess.run(["cargo", "build", "--release", "-p", "linkperf"], cwd=REPO, check=True)
    lp = os.path.join(target, "release", "linkperf")
    work = tempfile.mkdtemp(prefix="lp-bench-monitor-")
    print("| hosts | jobs | results (ok) in run | controller CPU per result | peak RSS | archive per result "
          "| a day at 5 min: results | DB | controller CPU |")
    print("|---|---|---|---|---|---|---|---|---|")
    for n in [int(x) for x in args.hosts.split(",")]:
        r = run_size(lp, n, args.run_for, work)
        print(f"| {n} | {r['jobs']} | {r['results']} ({r['ok']}) in {r['wall_s']:.0f} s "
              f"| {r['cpu_ms_per_result']:.1f} ms | {r['hwm_mib']:.1f} MiB | {r['bytes_per_result'] / 1024:.1f} KiB "
              f"| {r['day_results']} | {r['day_db_mib']:.0f} MiB | {r['day_cpu_s']:.0f} s |", flush=True)
        if r["stderr"]:
            print(f"  stderr: {r['stderr']}", file=sys.stderr)


if __name__ == "__main__":
    main()
