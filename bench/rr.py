#!/usr/bin/env python3
"""linkperf rr vs sockperf ping-pong on loopback: interleaved A/B benchmark.

Scenarios (each repeated --runs times, linkperf and sockperf alternating):
  udp   request/response of --size bytes over UDP, one in flight, back to back
  tcp   the same over TCP (TCP_NODELAY on both tools)

Reports the median transactions/s of both tools, the ratio linkperf/sockperf
(target: >= 0.9), the median RTT of both, and the per-transaction overhead
linkperf adds (1/tps_linkperf - 1/tps_sockperf). Appends (or replaces) the
section "## Request/response (issue 4)" of bench/RESULTS.md with --write.
Not part of the test suite: run by hand. See docs/rr.md.
"""

import argparse
import atexit
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone

HOST = "127.0.0.1"
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SECTION = "## Request/response (issue 4)"
CHILDREN = []


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def stop_children():
    for proc in reversed(CHILDREN):
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    CHILDREN.clear()


def on_signal(signum, _frame):
    stop_children()
    sys.exit(128 + signum)


def port_free(port, kind=socket.SOCK_STREAM):
    s = socket.socket(socket.AF_INET, kind)
    try:
        s.bind((HOST, port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def start(cmd, ready_port=None, udp=False):
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    CHILDREN.append(proc)
    deadline = time.time() + 10
    while time.time() < deadline:
        if proc.poll() is not None:
            sys.exit(f"rr.py: {' '.join(cmd)} exited at once (code {proc.returncode})")
        if ready_port is None:
            time.sleep(0.5)
            return proc
        if udp:
            if not port_free(ready_port, socket.SOCK_DGRAM):
                return proc
        else:
            try:
                socket.create_connection((HOST, ready_port), timeout=0.2).close()
                return proc
            except OSError:
                pass
        time.sleep(0.05)
    sys.exit(f"rr.py: {' '.join(cmd)} did not start listening on {ready_port}")


def run_linkperf(binary, port, udp, size, seconds):
    cmd = [binary, "rr", HOST, "-p", str(port), "--request", str(size),
           "--response", str(size), "-t", str(seconds), "-i", "0", "-J"]
    if udp:
        cmd.append("-u")
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 30)
    if out.returncode != 0:
        raise RuntimeError(f"linkperf rr failed ({out.returncode}): {out.stderr.strip()}")
    doc = json.loads(out.stdout)
    s = doc["summary"]
    return {
        "tps": s["transactions_per_second"],
        "rtt_p50_us": s["rtt_ms"]["p50"] * 1e3,
        "rtt_mean_us": s["rtt_ms"]["mean"] * 1e3,
        "transactions": s["transactions"],
        "server_transactions": (s.get("server") or {}).get("transactions"),
        "raw": out.stdout,
    }


VALID = re.compile(r"\[Valid Duration\] RunTime=([\d.]+) sec; SentMessages=(\d+); ReceivedMessages=(\d+)")
AVG = re.compile(r"avg-rtt=([\d.]+)")
P50 = re.compile(r"percentile 50\.000 =\s*([\d.]+)")


def run_sockperf(port, udp, size, seconds):
    cmd = ["sockperf", "ping-pong", "-i", HOST, "-p", str(port), "-m", str(size),
           "-t", str(seconds), "--full-rtt"]
    if not udp:
        cmd.append("--tcp")
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 30)
    text = out.stdout + out.stderr
    m = VALID.search(text)
    if out.returncode != 0 or not m:
        raise RuntimeError(f"sockperf failed ({out.returncode}): {text[-300:]}")
    runtime, received = float(m.group(1)), int(m.group(3))
    avg = AVG.search(text)
    p50 = P50.search(text)
    return {
        "tps": received / runtime,
        "rtt_p50_us": float(p50.group(1)) if p50 else None,
        "rtt_mean_us": float(avg.group(1)) if avg else None,
        "transactions": received,
        "raw": text,
    }


def load_average():
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "?"


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", "--runs", type=int, default=5, help="runs per tool and scenario (default 5)")
    ap.add_argument("-t", "--time", type=int, default=5, help="seconds per run (default 5)")
    ap.add_argument("-m", "--size", type=int, default=64, help="request = response size in bytes (default 64)")
    ap.add_argument("--scenarios", default="udp,tcp", help="udp,tcp (default both)")
    ap.add_argument("--lp-port", type=int, default=5211)
    ap.add_argument("--sp-port", type=int, default=11111, help="sockperf UDP port; TCP uses the next one")
    ap.add_argument("--pause", type=float, default=0.5, help="seconds between runs")
    ap.add_argument("--bin", help="linkperf binary to use (skips the build)")
    ap.add_argument("--target-dir", default=os.environ.get("CARGO_TARGET_DIR", os.path.join(REPO, "target")))
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--write", action="store_true", help="write the results into bench/RESULTS.md")
    ap.add_argument("--out", help="directory for raw outputs (default: a new /tmp/linkperf-rr-bench-*)")
    args = ap.parse_args()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    atexit.register(stop_children)

    if shutil.which("sockperf") is None:
        log("sockperf is missing: apt-get install -y sockperf")
        subprocess.run(["apt-get", "install", "-y", "sockperf"], check=True)

    binary = args.bin
    if binary is None:
        binary = os.path.join(args.target_dir, "release", "linkperf")
        if not args.no_build:
            log(f"building linkperf into {args.target_dir}")
            env = dict(os.environ, CARGO_TARGET_DIR=args.target_dir)
            subprocess.run(["cargo", "build", "--release", "-p", "linkperf"], cwd=REPO, env=env, check=True)
    if not os.access(binary, os.X_OK):
        sys.exit(f"rr.py: no linkperf binary at {binary}")

    for p, kind in [(args.lp_port, socket.SOCK_STREAM), (args.sp_port, socket.SOCK_DGRAM),
                    (args.sp_port + 1, socket.SOCK_STREAM)]:
        if not port_free(p, kind):
            sys.exit(f"rr.py: port {p} is taken; pick others with --lp-port / --sp-port")

    out_dir = args.out or f"/tmp/linkperf-rr-bench-{int(time.time())}"
    os.makedirs(out_dir, exist_ok=True)
    start([binary, "server", "-q", "-p", str(args.lp_port), "-B", HOST], ready_port=args.lp_port)
    start(["sockperf", "server", "-i", HOST, "-p", str(args.sp_port)], ready_port=args.sp_port, udp=True)
    start(["sockperf", "server", "--tcp", "-i", HOST, "-p", str(args.sp_port + 1)], ready_port=args.sp_port + 1)

    load_start = load_average()
    results = {}
    for scenario in args.scenarios.split(","):
        udp = scenario == "udp"
        lp, sp = [], []
        for i in range(args.runs):
            for tool in ("linkperf", "sockperf"):
                for attempt in range(3):
                    try:
                        if tool == "linkperf":
                            r = run_linkperf(binary, args.lp_port, udp, args.size, args.time)
                            lp.append(r)
                        else:
                            port = args.sp_port if udp else args.sp_port + 1
                            r = run_sockperf(port, udp, args.size, args.time)
                            sp.append(r)
                        with open(os.path.join(out_dir, f"{scenario}-{tool}-{i}.txt"), "w") as f:
                            f.write(r.pop("raw"))
                        log(f"{scenario} run {i + 1}/{args.runs} {tool:8}: {r['tps']:>10.0f} transactions/s, "
                            f"RTT p50 {r['rtt_p50_us'] or float('nan'):.2f} us")
                        break
                    except (RuntimeError, subprocess.TimeoutExpired, ValueError) as e:
                        log(f"{scenario} {tool} attempt {attempt + 1} failed: {e}")
                        if attempt == 2:
                            raise
                time.sleep(args.pause)
        results[scenario] = (lp, sp)
    load_end = load_average()

    lines = []
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines.append(SECTION)
    lines.append("")
    lines.append(f"`python3 bench/rr.py -n {args.runs} -t {args.time} -m {args.size}` on {when}, "
                 f"{os.cpu_count()} CPUs, load average {load_start} at start, {load_end} at end. "
                 f"linkperf `rr -J -i 0 --request {args.size} --response {args.size}` against "
                 f"`sockperf ping-pong -m {args.size} --full-rtt` (Debian sockperf "
                 f"{sockperf_version()}), both one transaction in flight, back to back, over "
                 f"127.0.0.1, runs interleaved A/B; medians of {args.runs} runs of {args.time} s. "
                 "sockperf's rate is over its valid duration (after its 400 ms warm-up); "
                 "linkperf's over the whole run.")
    lines.append("")
    lines.append("| scenario | linkperf trans/s | sockperf trans/s | ratio | target | linkperf RTT p50 | sockperf RTT p50 | added per transaction (rate) | added per transaction (p50 RTT) | linkperf range | sockperf range |")
    lines.append("|---|---:|---:|---:|---|---:|---:|---:|---:|---|---|")
    verdicts = []
    for scenario, (lp, sp) in results.items():
        lt, st = median([r["tps"] for r in lp]), median([r["tps"] for r in sp])
        lp50, sp50 = median([r["rtt_p50_us"] for r in lp]), median([r["rtt_p50_us"] for r in sp])
        ratio = lt / st
        overhead_us = (1 / lt - 1 / st) * 1e6
        ok = ratio >= 0.9
        verdicts.append(ok)
        lines.append(
            f"| {scenario.upper()} {args.size} B | {lt:,.0f} | {st:,.0f} | {ratio:.2f} | >= 0.9: {'met' if ok else 'NOT met'} | "
            f"{lp50:.2f} us | {sp50:.2f} us | {overhead_us:+.2f} us | {lp50 - sp50:+.2f} us | "
            f"{min(r['tps'] for r in lp):,.0f}-{max(r['tps'] for r in lp):,.0f} | "
            f"{min(r['tps'] for r in sp):,.0f}-{max(r['tps'] for r in sp):,.0f} |")
        for r in lp:
            if r["server_transactions"] is not None and r["server_transactions"] != r["transactions"]:
                lines.append(f"\nwarning: {scenario}: server counted {r['server_transactions']}, "
                             f"client {r['transactions']}")
    lines.append("")
    lines.append("\"Added per transaction (rate)\" is 1/tps(linkperf) - 1/tps(sockperf), the time per "
                 "transaction linkperf spends beyond sockperf (negative: less); \"(p50 RTT)\" is the "
                 "difference of the median RTTs each tool measured, which is less sensitive to "
                 "preemption by other processes. Loopback RTTs are a few microseconds, so scheduler "
                 "noise on a shared 2-CPU machine moves single runs by 20 % or more; look at the "
                 "ranges and the load average.")
    lines.append("")
    text = "\n".join(lines)
    print(text)
    with open(os.path.join(out_dir, "summary.md"), "w") as f:
        f.write(text)
    if args.write:
        write_results(text)
        log("wrote bench/RESULTS.md")
    log(f"raw outputs in {out_dir}")
    return 0 if all(verdicts) else 1


def sockperf_version():
    out = subprocess.run(["sockperf", "--version"], capture_output=True, text=True)
    m = re.search(r"version ([\w.\-]+)", out.stdout + out.stderr)
    return m.group(1) if m else "?"


def write_results(section):
    """Replaces our section of bench/RESULTS.md, leaving everything else alone."""
    path = os.path.join(REPO, "bench", "RESULTS.md")
    old = open(path).read() if os.path.exists(path) else "# Benchmark results\n"
    start = old.find(SECTION)
    if start < 0:
        new = old.rstrip("\n") + "\n\n" + section
    else:
        end = old.find("\n## ", start + len(SECTION))
        new = old[:start] + section + ("\n" + old[end + 1:] if end >= 0 else "")
    with open(path, "w") as f:
        f.write(new if new.endswith("\n") else new + "\n")


if __name__ == "__main__":
    sys.exit(main())
