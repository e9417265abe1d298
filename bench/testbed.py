#!/usr/bin/env python3
"""Forwarding capacity of the testbed's link emulator (issue 3).

Builds one testbed per mode, each two hosts joined by one link with a 10 ms one-way delay
and no rate limit, and measures TCP goodput through it with linkperf client/server running
inside the hosts, runs interleaved across modes. Reports the median goodput and the
emulator's CPU (utime + stime of the emulator process from /proc/PID/stat, before and
after each run) in cores and in cores per Gbit/s, and the segments per second it forwarded.

Modes (link key `offload`):
  per-packet  offload = false: the kernel segments and checksums before the emulator;
              one read and one write per 1500-byte packet
  offload     offload = true (the default): TCP super-packets with virtio-net headers,
              every segment charged, queued, lost and delayed on its own; segments due
              together are written together
  baseline    only with --baseline LP: the link as the other binary builds it by default
              (offload since that became the default), for a side-by-side ratio
  baseline-per-packet
              only with --baseline LP: the per-packet link, built by the other binary
  baseline-offload
              only with --baseline LP: the offload link, built by the other binary
  offload-os  the offload link with `cpu_idle = "os"` (idle CPUs may halt; "offload" sets
              "poll"), the same binary, for a side-by-side ratio
Optionally `--iperf3` adds one iperf3 run per mode and round as a reference sender.
With `--rtt` the runs measure the round-trip time instead (exact delay, issue 12): per mode
and round, the median of `linkperf rr -n PROBES` and of PROBES pings (one every 2 ms),
against twice the configured one-way delay.

Needs root. Not part of the test suite: run by hand. See bench/README.md.
"""

import argparse
import atexit
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEADING = "## Testbed emulator (issue 3)"
TICKS = os.sysconf("SC_CLK_TCK")
MODES = {"per-packet": False, "offload": True, "baseline": None, "baseline-offload": True,
         "baseline-per-packet": False, "offload-os": True}
# Modes whose topology sets `cpu_idle` (the emulator's default is "os" since 2026-11-28;
# "offload" keeps the polling idle CPUs its earlier results were measured with).
CPU_IDLE = {"offload": "poll", "offload-os": "os"}

LP = None  # path of the linkperf binary
BASELINE = None  # another linkperf binary whose emulator is compared ("baseline" mode)
UP = []  # testbed names we brought up
CHILDREN = []  # servers we started


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def cleanup():
    for proc in CHILDREN:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
    CHILDREN.clear()
    for name in UP:
        subprocess.run([LP, "testbed", "down", name], capture_output=True)
        if BASELINE:
            subprocess.run([BASELINE, "testbed", "down", name], capture_output=True)
    UP.clear()


def on_signal(signum, _frame):
    cleanup()
    sys.exit(128 + signum)


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def build(target_dir):
    log(f"building linkperf (release) into {target_dir}")
    env = dict(os.environ, CARGO_TARGET_DIR=target_dir)
    subprocess.run(["cargo", "build", "--release", "-p", "linkperf"], cwd=REPO, env=env,
                   check=True)


def topology(name, offload, delay, rate, mtu, cpu_idle=None):
    return "\n".join([
        f'name = "{name}"',
        *([] if cpu_idle is None else [f'cpu_idle = "{cpu_idle}"']),
        "[[host]]", 'name = "a"', 'address = "10.88.0.1/24"',
        "[[host]]", 'name = "b"', 'address = "10.88.0.2/24"',
        "[[link]]", 'ends = ["a", "b"]',
        f'delay = "{delay}"', f"rate = {json.dumps(rate)}", f"mtu = {mtu}",
        # The baseline binary may predate the key; its emulator never used offloads.
        *([] if offload is None else [f"offload = {'true' if offload else 'false'}"]),
        "",
    ])


def bring_up(mode, args, tmp):
    name = f"lpbench-{mode}"
    subprocess.run([LP, "testbed", "down", name], capture_output=True)
    path = os.path.join(tmp, f"{name}.toml")
    with open(path, "w") as f:
        f.write(topology(name, MODES[mode], args.delay, args.rate, args.mtu, CPU_IDLE.get(mode)))
    # Only the emulator differs between modes: the baseline binary builds its testbed, and
    # the same linkperf client and server run in every mode.
    run([BASELINE if mode.startswith("baseline") else LP, "testbed", "up", path])
    UP.append(name)
    # Room for the bandwidth-delay product (15 Gbit/s x 20 ms is 37 MB): the window must not
    # be what limits the emulator. Per-namespace sysctls; the rest of the machine is untouched.
    for host in ("a", "b"):
        run(["ip", "netns", "exec", f"lp-{name}-{host}", "sysctl", "-q", "-w",
             f"net.ipv4.tcp_rmem=4096 131072 {args.tcp_mem}",
             f"net.ipv4.tcp_wmem=4096 16384 {args.tcp_mem}"])
    servers = [[LP, "server", "-q"]]
    if args.iperf3:
        servers.append(["iperf3", "-s", "-p", "5201"])
    for cmd in servers:
        proc = subprocess.Popen([LP, "testbed", "exec", "--testbed", name, "b", "--", *cmd],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        CHILDREN.append(proc)
    time.sleep(0.5)
    pid = int(open(f"/run/linkperf/testbed/{name}/emulator.pid").read())
    return name, pid


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime


def forwarded_segments(name):
    out = run([LP, "testbed", "status", name, "--json"]).stdout
    link = json.loads(out)["testbeds"][0]["links"][0]
    return link["a_to_b"]["counters"]["packets_forwarded"]


def one_run(name, pid, tool, args):
    if tool == "linkperf":
        cmd = [LP, "client", "10.88.0.2", "-t", str(args.time), "-i", "0", "-J"]
        if args.congestion:
            cmd += ["-C", args.congestion]
    else:
        cmd = ["iperf3", "-c", "10.88.0.2", "-p", "5201", "-t", str(args.time), "-J"]
        if args.congestion:
            cmd += ["-C", args.congestion]
    seg0, cpu0, t0 = forwarded_segments(name), cpu_seconds(pid), time.monotonic()
    out = run([LP, "testbed", "exec", "--testbed", name, "a", "--", *cmd]).stdout
    cpu1, t1 = cpu_seconds(pid), time.monotonic()
    time.sleep(0.25)  # the emulator rewrites its counters every 100 ms
    seg1 = forwarded_segments(name)
    doc = json.loads(out)
    if tool == "linkperf":
        bps = doc["summary"]["received"]["bits_per_second"]
    else:
        bps = doc["end"]["sum_received"]["bits_per_second"]
    wall = t1 - t0
    return {"gbps": bps / 1e9, "cores": (cpu1 - cpu0) / wall,
            "mpps": (seg1 - seg0) / wall / 1e6}


def rtt_run(name, args):
    """Median RTTs (ms) of linkperf rr and of ping from a to b through the link."""
    rr = run([LP, "testbed", "exec", "--testbed", name, "a", "--",
              LP, "rr", "10.88.0.2", "-n", str(args.probes), "-J"]).stdout
    rr_p50 = json.loads(rr)["summary"]["rtt_ms"]["p50"]
    ping = run([LP, "testbed", "exec", "--testbed", name, "a", "--",
                "ping", "-n", "-c", str(args.probes), "-i", "0.002", "10.88.0.2"]).stdout
    times = [float(w[5:]) for line in ping.splitlines() for w in line.split()
             if w.startswith("time=")]
    return {"rr": rr_p50, "ping": statistics.median(times), "answers": len(times)}


def summarise_rtt(results, args):
    two_d = 2 * float(args.delay.removesuffix("ms"))
    lines = [f"| mode | runs | rr p50 RTT, ms, median (runs) | ping p50 RTT, ms, median (runs) "
             f"| 2·D, ms |", "|---|---|---|---|---|"]
    for (mode, _), rs in results.items():
        if not rs:
            continue
        rr = [r["rr"] for r in rs]
        pg = [r["ping"] for r in rs]
        lines.append(f"| {mode} | {len(rs)} | {statistics.median(rr):.3f} "
                     f"({', '.join(f'{x:.3f}' for x in rr)}) | {statistics.median(pg):.3f} "
                     f"({', '.join(f'{x:.3f}' for x in pg)}) | {two_d:.2f} |")
    return "\n".join(lines)


def summarise(results, args):
    lines = ["| mode | tool | runs | goodput Gbit/s, median (min-max) | emulator CPU, cores "
             "| emulator CPU per Gbit/s, cores | segments forwarded a->b, Mpkt/s |",
             "|---|---|---|---|---|---|---|"]
    for (mode, tool), rs in results.items():
        if not rs:
            continue
        g = [r["gbps"] for r in rs]
        c = [r["cores"] for r in rs]
        per = [r["cores"] / r["gbps"] for r in rs]
        m = [r["mpps"] for r in rs]
        lines.append(f"| {mode} | {tool} | {len(rs)} | {statistics.median(g):.2f} "
                     f"({min(g):.2f}-{max(g):.2f}) | {statistics.median(c):.2f} | "
                     f"{statistics.median(per):.3f} | {statistics.median(m):.3f} |")
    return "\n".join(lines)


def write_results(section, heading):
    path = os.path.join(REPO, "bench", "RESULTS.md")
    text = open(path).read() if os.path.exists(path) else ""
    start = text.find(heading)
    if start < 0:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    else:
        end = text.find("\n## ", start + len(heading))
        end = len(text) if end < 0 else end + 1
        text = text[:start] + section + "\n" + text[end:]
    with open(path, "w") as f:
        f.write(text)
    log(f"wrote the section '{heading}' of {path}")


def main():
    global LP, BASELINE
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("-n", "--runs", type=int, default=5, help="runs per mode and tool")
    p.add_argument("-t", "--time", type=float, default=5, help="seconds per run")
    p.add_argument("--modes", default=None,
                   help="comma-separated: per-packet, offload, baseline "
                        "(default: per-packet,offload, and baseline with --baseline)")
    p.add_argument("--baseline", default=None, metavar="LINKPERF",
                   help="another linkperf binary whose emulator runs the 'baseline' mode")
    p.add_argument("--delay", default="10ms", help="one-way delay of the link")
    p.add_argument("--rate", default="0", help="link rate (0 = unlimited)")
    p.add_argument("--mtu", type=int, default=1500)
    p.add_argument("-C", "--congestion", default=None,
                   help="TCP congestion control (default: the system's)")
    p.add_argument("--tcp-mem", type=int, default=128 << 20,
                   help="tcp_rmem/tcp_wmem maximum in the hosts (bytes)")
    p.add_argument("--iperf3", action="store_true", help="also run iperf3 as the sender")
    p.add_argument("--rtt", action="store_true",
                   help="measure RTT (linkperf rr and ping medians) instead of goodput")
    p.add_argument("--probes", type=int, default=1000, help="probes per RTT run")
    p.add_argument("--pause", type=float, default=1.0, help="seconds between runs")
    p.add_argument("--no-build", action="store_true")
    p.add_argument("--target-dir", default=os.environ.get("CARGO_TARGET_DIR",
                                                          os.path.join(REPO, "target")))
    p.add_argument("--write-results", action="store_true",
                   help="replace (or append) the section --heading of bench/RESULTS.md")
    p.add_argument("--heading", default=HEADING,
                   help=f"section of bench/RESULTS.md to write (default: '{HEADING}')")
    args = p.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench/testbed.py needs root (it builds testbeds): run it with sudo")
    default_modes = "baseline,per-packet,offload" if args.baseline else "per-packet,offload"
    modes = [m.strip() for m in (args.modes or default_modes).split(",") if m.strip()]
    for m in modes:
        if m not in MODES:
            sys.exit(f"unknown mode '{m}' (known: {', '.join(MODES)})")
    if any(m.startswith("baseline") for m in modes) and not args.baseline:
        sys.exit("the baseline modes need --baseline LINKPERF (another linkperf binary)")
    BASELINE = os.path.abspath(args.baseline) if args.baseline else None
    if not args.no_build:
        build(args.target_dir)
    LP = os.path.join(args.target_dir, "release", "linkperf")
    atexit.register(cleanup)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    tools = ["linkperf"] + (["iperf3"] if args.iperf3 else [])
    started = datetime.now(timezone.utc)
    load0 = os.getloadavg()
    results = {(m, t): [] for m in modes for t in tools}
    with tempfile.TemporaryDirectory() as tmp:
        beds = {m: bring_up(m, args, tmp) for m in modes}
        for i in range(args.runs):
            for m in modes:
                for tool in tools:
                    name, pid = beds[m]
                    try:
                        r = rtt_run(name, args) if args.rtt else one_run(name, pid, tool, args)
                    except subprocess.CalledProcessError as e:
                        log(f"run failed ({m}, {tool}): {e.stderr.strip()[-300:]}")
                        continue
                    results[(m, tool)].append(r)
                    if args.rtt:
                        log(f"round {i + 1}/{args.runs} {m:10} rr p50 {r['rr']:.3f} ms, "
                            f"ping p50 {r['ping']:.3f} ms ({r['answers']} answers)")
                    else:
                        log(f"round {i + 1}/{args.runs} {m:10} {tool:8} {r['gbps']:6.2f} "
                            f"Gbit/s, emulator {r['cores']:.2f} cores, {r['mpps']:.3f} Mpkt/s")
                    time.sleep(args.pause)
    cleanup()
    load1 = os.getloadavg()

    rate = "unlimited rate" if args.rate in ("0", "") else f"rate {args.rate}"
    table = summarise_rtt(results, args) if args.rtt else summarise(results, args)
    cc = args.congestion or "system default"
    uname = os.uname()
    section = "\n".join([
        args.heading,
        "",
        f"**Date:** {started:%Y-%m-%d %H:%M} UTC. **Machine:** {os.cpu_count()} CPUs, "
        f"kernel {uname.release}. Load average {load0[0]:.1f} at start, {load1[0]:.1f} at end.",
        f"**Link:** one-way delay {args.delay} each direction, {rate}, MTU {args.mtu}; "
        f"TCP, one stream, {args.time:g} s per run, congestion control {cc}, "
        f"tcp_rmem/tcp_wmem max {args.tcp_mem >> 20} MiB in the hosts. Nothing pinned.",
        "",
        "```sh",
        "sudo CARGO_TARGET_DIR=... python3 bench/testbed.py " + " ".join(sys.argv[1:]),
        "```",
        "",
        table,
        "",
    ])
    print(section)
    if args.write_results:
        write_results(section, args.heading)


if __name__ == "__main__":
    main()
