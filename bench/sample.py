#!/usr/bin/env python3
"""What `--sample` costs: TCP throughput on loopback with and without it.

Runs `linkperf client 127.0.0.1 -t T` and the same with `--sample PERIOD`,
interleaved (without, with, without, ...) for --pairs pairs, against one
`linkperf server` on 127.0.0.1 started here, and prints the medians of the
receiver's throughput, their ratio (target: the sampled run loses < 2 %),
and how many samples each sampled run took. Not part of the test suite.

    python3 bench/sample.py                      # 7 pairs, -t 5, --sample 10ms
    python3 bench/sample.py --pairs 5 -t 3 --bin target/release/linkperf
"""

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def wait_for_port(port, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.1)
    return False


def run(binary, port, seconds, extra):
    cmd = [binary, "client", "127.0.0.1", "-p", str(port), "-t", str(seconds),
           "-i", "0", "--no-store", "-J"] + extra
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 60)
    if out.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed: {out.stderr.strip()}")
    doc = json.loads(out.stdout)
    bps = doc["summary"]["received"]["bits_per_second"]
    stream = doc["summary"]["streams"][0]
    samples = len(stream["sender"].get("samples", []))
    return bps, samples


def series_thread_cpu(binary, port, seconds, period):
    """CPU seconds of the client's sampling thread (`lp-series`) over a run,
    read from /proc just before the test ends, and the samples it took."""
    cmd = [binary, "client", "127.0.0.1", "-p", str(port), "-t", str(seconds),
           "-i", "0", "--no-store", "-J", "--sample", period]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(seconds - 0.3)
    ticks = None
    task_dir = f"/proc/{proc.pid}/task"
    for tid in os.listdir(task_dir):
        try:
            with open(f"{task_dir}/{tid}/comm") as f:
                if f.read().strip() != "lp-series":
                    continue
            with open(f"{task_dir}/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            ticks = int(fields[11]) + int(fields[12])  # utime + stime
        except OSError:
            pass
    out, err = proc.communicate(timeout=60)
    if proc.returncode != 0 or ticks is None:
        sys.exit(f"sampling-thread run failed: {err.strip()}")
    n = len(json.loads(out)["summary"]["streams"][0]["sender"]["samples"])
    return ticks / os.sysconf("SC_CLK_TCK"), n


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", default=os.path.join(REPO, "target/release/linkperf"))
    p.add_argument("--pairs", type=int, default=7)
    p.add_argument("-t", "--time", type=int, default=5)
    p.add_argument("--period", default="10ms")
    p.add_argument("--port", type=int, default=5213)
    p.add_argument("--pause", type=float, default=1.0)
    p.add_argument("--thread-cpu", action="store_true",
                   help="also measure the sampling thread's own CPU at 1ms and --period")
    a = p.parse_args()
    server = subprocess.Popen([a.bin, "server", "-p", str(a.port), "-B", "127.0.0.1", "-q"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        if not wait_for_port(a.port):
            sys.exit(f"linkperf server did not listen on {a.port}")
        plain, sampled, counts = [], [], []
        for i in range(a.pairs):
            bps, _ = run(a.bin, a.port, a.time, [])
            plain.append(bps)
            time.sleep(a.pause)
            bps_s, n = run(a.bin, a.port, a.time, ["--sample", a.period])
            sampled.append(bps_s)
            counts.append(n)
            time.sleep(a.pause)
            print(f"pair {i + 1}: without {bps / 1e9:.2f} Gbit/s, with {bps_s / 1e9:.2f} Gbit/s "
                  f"({n} samples)", file=sys.stderr, flush=True)
        cpu = []
        if a.thread_cpu:
            for period in ["1ms", a.period]:
                secs, n = series_thread_cpu(a.bin, a.port, a.time, period)
                cpu.append((period, secs, n))
    finally:
        server.terminate()
        server.wait(timeout=10)
    m0, m1 = statistics.median(plain), statistics.median(sampled)
    cost = 1 - m1 / m0
    print(f"| run | median Gbit/s | range Gbit/s | samples per run |")
    print(f"|---|---|---|---|")
    print(f"| without --sample | {m0 / 1e9:.2f} | {min(plain) / 1e9:.2f}-{max(plain) / 1e9:.2f} | - |")
    print(f"| --sample {a.period} | {m1 / 1e9:.2f} | {min(sampled) / 1e9:.2f}-{max(sampled) / 1e9:.2f} "
          f"| {min(counts)}-{max(counts)} |")
    for period, secs, n in cpu:
        print(f"sampling thread at {period}: {secs * 1e3:.0f} ms CPU for {n} samples over "
              f"{a.time} s = {secs / a.time * 100:.2f} % of a core, {secs / max(n, 1) * 1e6:.1f} us/sample "
              f"(clock ticks of 10 ms: coarse)")
    print(f"\nratio with/without {m1 / m0:.3f}: sampling costs {cost * 100:.1f} % "
          f"(target < 2 %): {'met' if cost < 0.02 else 'NOT met'}")


if __name__ == "__main__":
    main()
