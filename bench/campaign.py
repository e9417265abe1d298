#!/usr/bin/env python3
"""Campaign scale benchmark: 32 flows between 64 agents on the emulated testbed.

Builds a testbed of 64 hosts on one switch (namespaces; links with 1 ms delay and
no rate limit), starts `linkperf server --allow-third-party` in every host, runs a
campaign of 32 UDP flows at 1 Mbit/s (pairs h1->h33, ..., h32->h64) for several
sessions, and reports the start-time spread per phase (median, p99, max) and the
controller's CPU use (user+system seconds over wall seconds, from rusage).
Needs root. Not part of the test suite.

    python3 bench/campaign.py [--sessions 10] [--duration 3] [--agents 64]
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--agents", type=int, default=64)
    ap.add_argument("--sessions", type=int, default=10)
    ap.add_argument("--duration", type=float, default=3.0)
    ap.add_argument("--no-build", action="store_true")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench/campaign.py needs root (network namespaces)")
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(REPO, "target"))
    if not args.no_build:
        subprocess.run(["cargo", "build", "--release", "-p", "linkperf"], cwd=REPO, check=True)
    lp = os.path.join(target, "release", "linkperf")
    n = args.agents
    flows = n // 2
    work = tempfile.mkdtemp(prefix="lp-bench-campaign-")
    topo = ['name = "cscale"', '[[switch]]', 'name = "sw"']
    for i in range(1, n + 1):
        topo += ['[[host]]', f'name = "h{i}"', f'address = "10.70.{i // 250}.{i % 250 + 1}/16"']
        topo += ['[[link]]', f'ends = ["h{i}", "sw"]', 'delay = "1ms"']
    topo_file = os.path.join(work, "cscale.toml")
    open(topo_file, "w").write("\n".join(topo) + "\n")
    subprocess.run([lp, "testbed", "down", "cscale"], capture_output=True)
    subprocess.run([lp, "testbed", "up", topo_file], check=True, capture_output=True)
    agents = []
    try:
        for i in range(1, n + 1):
            agents.append(subprocess.Popen(
                ["ip", "netns", "exec", f"lp-cscale-h{i}", lp, "server", "--allow-third-party", "-q"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        time.sleep(2.0)
        camp = [f"sessions = {args.sessions}", 'start_delay = "1500ms"', 'pause = "200ms"']
        for i in range(1, n + 1):
            camp += ["[[agent]]", f'name = "h{i}"', f'address = "10.70.{i // 250}.{i % 250 + 1}"']
        pairs = ", ".join(f'["h{i}", "h{i + flows}"]' for i in range(1, flows + 1))
        camp += ["[[phase]]", 'name = "p"', f'duration = "{args.duration}s"', "[[phase.flow]]",
                 f"pairs = [{pairs}]", "udp = true", 'bitrate = "1M"', "length = 1000"]
        camp_file = os.path.join(work, "scale.campaign.toml")
        open(camp_file, "w").write("\n".join(camp) + "\n")
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.monotonic()
        out = subprocess.run(["ip", "netns", "exec", "lp-cscale-h1", lp, "campaign", "run", camp_file, "-J"],
                             capture_output=True, text=True)
        wall = time.monotonic() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if out.returncode != 0:
            print(out.stderr, file=sys.stderr)
        doc = json.loads(out.stdout)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        spreads = sorted(p["start_spread_ms"] for p in doc["phases"] if p["start_spread_ms"] is not None)
        ok = sum(1 for p in doc["phases"] for f in p["flows"] if f["status"] == "ok")
        total = sum(len(p["flows"]) for p in doc["phases"])

        def pct(q):
            return spreads[min(len(spreads) - 1, int(round(q * (len(spreads) - 1))))]

        print(f"agents {n}, flows per phase {flows}, sessions {args.sessions}, phase {args.duration} s")
        print(f"flows ok: {ok}/{total}")
        print(f"start spread ms: median {pct(0.5):.3f}, p99 {pct(0.99):.3f}, max {spreads[-1]:.3f} (over {len(spreads)} phases)")
        print(f"controller: {cpu:.2f} s CPU over {wall:.1f} s wall = {100 * cpu / wall:.2f} % of one core")
        agg = [p["aggregate"]["received_bits_per_second"] for p in doc["phases"]]
        print(f"aggregate per phase: median {sorted(agg)[len(agg) // 2] / 1e6:.2f} Mbit/s (offered {flows} Mbit/s)")
    finally:
        for a in agents:
            a.kill()
        for a in agents:
            a.wait()
        subprocess.run([lp, "testbed", "down", "cscale"], capture_output=True)


if __name__ == "__main__":
    main()
