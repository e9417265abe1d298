#!/usr/bin/env python3
"""Paced UDP senders, linkperf vs iperf3 on loopback: sender CPU and send gaps.

For each rate (default 100M, 1G, 5G; -l 1460) it runs `--runs` interleaved
pairs (linkperf, iperf3, linkperf, iperf3, ...) of `-u -b RATE -t SECS` and
reports medians of:
  - the sender's CPU, measured the same way for both tools: the client
    process's rusage (all its threads, whole life) over the test's seconds;
  - the sender's own report of its CPU (linkperf: its threads; iperf3:
    cpu_utilization_percent.host_total);
  - the receiver's rate;
  - linkperf's send gaps (p50, p99, max; its pacer records every send).
iperf3 does not report its send gaps; with --capture (default: when tcpdump
is installed) one extra run per tool and rate is captured on lo and the gaps
between data datagrams on the wire are reported for both tools, with the
busiest millisecond (1 ms bursts show up there). Capture runs are not used
for the CPU figures: tcpdump costs CPU too.

Run it under the test lock on the shared machine, so other sessions' tests
do not run at the same time:
    flock /tmp/lp-test.lock python3 bench/pacing.py
Not part of the test suite. See bench/README.md.
"""

import argparse
import json
import atexit
import os
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import throughput as tp  # noqa: E402  (servers, JSON runs, pcap parsing)

HOST = tp.HOST


def parse_rate(text):
    units = {"K": 1e3, "M": 1e6, "G": 1e9}
    return float(text[:-1]) * units[text[-1].upper()] if text[-1].upper() in units else float(text)


def run(tool, rate, secs, length, cfg, tag=None):
    """One run: (report, external client CPU seconds); its JSON kept as tag.json."""
    if tool == "iperf3":
        argv = [cfg.iperf3, "-c", HOST, "-p", str(cfg.ip_port)]
    else:
        binary, port = cfg.linkperfs[tool]
        argv = [binary, "client", HOST, "-p", str(port)]
    argv += ["-u", "-b", rate, "-l", str(length), "-t", str(secs), "-J"]
    for attempt in range(3):
        c0 = tp.children_cpu_s()
        try:
            doc, _ = tp.run_json(argv, timeout=secs + 60)
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            tp.log(f"  {tool} {rate}: attempt {attempt + 1} failed: {e}")
            time.sleep(2)
            continue
        ext = tp.children_cpu_s() - c0
        if doc.get("error") or doc.get("errors"):
            tp.log(f"  {tool} {rate}: attempt {attempt + 1}: {doc.get('error') or doc.get('errors')}")
            time.sleep(2)
            continue
        if tag:
            with open(os.path.join(cfg.rawdir, f"{tag}.json"), "w") as fh:
                json.dump(doc, fh)
        return doc, ext
    raise RuntimeError(f"{tool} {rate}: giving up")


def measure(tool, doc, ext_cpu_s, secs):
    r = {"cpu_ext": 100.0 * ext_cpu_s / secs}
    if tool != "iperf3":
        s = doc["summary"]
        r["rx_bps"] = s["received"]["bits_per_second"]
        r["tx_bps"] = s["sent"]["bits_per_second"]
        r["cpu_self"] = s["cpu"]["local"]["total_percent"]
        g = s.get("send_gaps") or {}
        for k in ("target_us", "p50_us", "p99_us", "max_us"):
            r["gap_" + k] = g.get(k)
    else:
        end = doc["end"]
        r["rx_bps"] = end["sum_received"]["bits_per_second"]
        r["tx_bps"] = end["sum_sent"]["bits_per_second"]
        r["cpu_self"] = end["cpu_utilization_percent"]["host_total"]
    return r


def datagram_times(path, length):
    """Send time (ns) of every datagram in a pcap of lo. A UDP GSO train
    crosses lo as one packet of k datagrams (its length says k): they count
    as k datagrams leaving back to back at that packet's time."""
    with open(path, "rb") as fh:
        data = fh.read()
    if len(data) < 24:
        return []
    endian = "<" if struct.unpack("<I", data[:4])[0] in (0xA1B2C3D4, 0xA1B23C4D) else ">"
    scale = 1 if struct.unpack(endian + "I", data[:4])[0] == 0xA1B23C4D else 1000
    link = struct.unpack(endian + "I", data[20:24])[0]
    l2 = 14 if link == 1 else 0  # lo is captured with a zeroed Ethernet header
    hdr = struct.Struct(endian + "IIII")
    times, off = [], 24
    while off + 16 <= len(data):
        sec, frac, incl, orig = hdr.unpack_from(data, off)
        k = max(1, (orig - l2 - 28) // length)
        times += [sec * 1_000_000_000 + frac * scale] * k
        off += 16 + incl
    return times


def capture(tool, rate, length, cfg, rawdir):
    """Wire gaps of one 4 s run captured on lo (middle 2 s)."""
    pcap = os.path.join(rawdir, f"capture-{tool}-{rate}.pcap")
    # Data datagrams (and GSO trains of them) by length; one tool runs at a time.
    filt = f"udp and dst host {HOST} and ip[2:2] >= {length + 28}"
    dump = subprocess.Popen(
        [cfg.tcpdump, "-i", "lo", "-n", "-s", "64", "-B", "262144",
         "--time-stamp-precision=nano", "-w", pcap, filt],
        stdout=subprocess.DEVNULL, stderr=open(pcap + ".log", "w"),
    )
    tp.CHILDREN.append(("tcpdump", dump))
    time.sleep(1.0)
    try:
        doc, _ = run(tool, rate, 4, length, cfg)
    finally:
        time.sleep(0.5)
        dump.send_signal(signal.SIGINT)
        try:
            dump.wait(timeout=10)
        except subprocess.TimeoutExpired:
            dump.kill()
            dump.wait()
        tp.CHILDREN.remove(("tcpdump", dump))
    with open(pcap + ".log") as fh:
        dropped = "; ".join(l.strip() for l in fh if "dropped by kernel" in l)
    target_us = length * 8 / parse_rate(rate) * 1e6
    st = tp.gap_stats_from_times(datagram_times(pcap, length), target_us, 2.0)
    os.remove(pcap)
    if st is not None:
        st["tcpdump"] = dropped
    return st


def med(rs, key):
    vals = [r[key] for r in rs if r.get(key) is not None]
    return statistics.median(vals) if vals else None


def f(v, digits=1):
    return "-" if v is None else f"{v:.{digits}f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", "--runs", type=int, default=5, help="interleaved pairs per rate (default 5)")
    ap.add_argument("-t", "--time", type=int, default=5, help="seconds per run (default 5)")
    ap.add_argument("--rates", default="100M,1G,5G")
    ap.add_argument("-l", "--length", type=int, default=1460)
    ap.add_argument("--lp-port", type=int, default=5212)
    ap.add_argument("--ip-port", type=int, default=5202)
    ap.add_argument("--pause", type=float, default=1.0)
    ap.add_argument("--capture", choices=("auto", "no"), default="auto",
                    help="one tcpdump run per tool and rate for wire gaps (auto: if tcpdump is installed)")
    ap.add_argument("--baseline", metavar="BINARY",
                    help="also run this linkperf binary (e.g. a build of main before a change) as 'before'")
    ap.add_argument("--base-port", type=int, default=5213)
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--target-dir", default=os.environ.get("CARGO_TARGET_DIR", os.path.join(tp.REPO, "target")))
    ap.add_argument("--out")
    cfg = ap.parse_args()
    signal.signal(signal.SIGINT, tp.on_signal)
    signal.signal(signal.SIGTERM, tp.on_signal)
    atexit.register(tp.stop_children)
    rawdir = cfg.rawdir = cfg.out or tempfile.mkdtemp(prefix="linkperf-pacing-")
    os.makedirs(rawdir, exist_ok=True)
    cfg.iperf3 = tp.ensure_iperf3()
    cfg.linkperf = tp.build_linkperf(cfg.target_dir, cfg.no_build)
    cfg.tcpdump = tp.shutil.which("tcpdump") if cfg.capture == "auto" else None
    cfg.linkperfs = {"linkperf": (cfg.linkperf, cfg.lp_port)}
    if cfg.baseline:
        cfg.linkperfs["before"] = (cfg.baseline, cfg.base_port)
    for name, (binary, port) in cfg.linkperfs.items():
        tp.start_server(name, [binary, "server", "-p", str(port), "-B", HOST, "-q"], port, rawdir)
    tools = list(cfg.linkperfs) + ["iperf3"]
    tp.start_server("iperf3", [cfg.iperf3, "-s", "-p", str(cfg.ip_port), "-B", HOST], cfg.ip_port, rawdir)

    rates = [r.strip() for r in cfg.rates.split(",") if r.strip()]
    load_start = open("/proc/loadavg").read().split()[:3]
    t0 = time.monotonic()
    results = {}
    for rate in rates:
        runs = {tool: [] for tool in tools}
        for i in range(cfg.runs):
            for tool in tools:
                doc, ext = run(tool, rate, cfg.time, cfg.length, cfg, tag=f"{rate}-{i + 1}-{tool}")
                r = measure(tool, doc, ext, cfg.time)
                runs[tool].append(r)
                tp.log(f"  {rate} {i + 1} {tool}: sent {r['tx_bps'] / 1e9:.3f}, received {r['rx_bps'] / 1e9:.3f} Gbit/s, sender CPU {r['cpu_ext']:.1f} % "
                       f"(self {r['cpu_self']:.1f} %), gaps p50/p99 {f(r.get('gap_p50_us'), 2)}/{f(r.get('gap_p99_us'), 2)} us")
                time.sleep(cfg.pause)
        wire = {}
        if cfg.tcpdump:
            for tool in tools:
                try:
                    wire[tool] = capture(tool, rate, cfg.length, cfg, rawdir)
                except Exception as e:  # optional: report and go on
                    tp.log(f"capture {tool} {rate} failed: {e}")
                time.sleep(cfg.pause)
        results[rate] = (runs, wire)
    elapsed = time.monotonic() - t0
    load_end = open("/proc/loadavg").read().split()[:3]

    now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    out = [f"## Paced UDP sender, linkperf vs iperf3 on loopback ({now})", ""]
    out.append(f"`-u -b RATE -l {cfg.length} -t {cfg.time}`, {cfg.runs} interleaved pairs per rate, medians; "
               f"{elapsed / 60:.1f} min; load average {' '.join(load_start)} at start, {' '.join(load_end)} at end "
               f"on {os.cpu_count()} CPUs; raw data in {rawdir}")
    out.append("")
    out.append("| rate | gap target | tool | sender CPU, rusage | sender CPU, own report | sent / received | "
               "send gap p50 / p99 (own) | wire gap p50 / p99 | datagrams in busiest 1 ms (expected) | empty ms |")
    out.append("|---|---|---|---|---|---|---|---|---|---|")
    for rate in rates:
        runs, wire = results[rate]
        target = cfg.length * 8 / parse_rate(rate) * 1e6
        for tool in tools:
            rs = runs[tool]
            w = wire.get(tool) or {}
            own = (f"{f(med(rs, 'gap_p50_us'), 2)} / {f(med(rs, 'gap_p99_us'), 2)} us"
                   if tool != "iperf3" else "not reported")
            wire_s = f"{f(w.get('p50_us'), 2)} / {f(w.get('p99_us'), 2)} us" if w else "-"
            busiest = f"{w['per_ms_max']} ({w['per_ms_expected']:.1f})" if w else "-"
            empty = f"{100 * w['empty_ms_fraction']:.1f} %" if w else "-"
            out.append(f"| {rate} | {target:.2f} us | {tool} | {f(med(rs, 'cpu_ext'))} % | {f(med(rs, 'cpu_self'))} % | "
                       f"{med(rs, 'tx_bps') / 1e9:.3f} / {med(rs, 'rx_bps') / 1e9:.3f} Gbit/s | {own} | {wire_s} | "
                       f"{busiest} | {empty} |")
        ip = med(runs["iperf3"], "cpu_ext")
        ratio = med(runs["linkperf"], "cpu_ext") / ip if ip else None
        out.append(f"| {rate} | | linkperf/iperf3 | {f(ratio, 2)}x | | | | | | |")
    drops = [f"{tool} {rate}: {w['tcpdump']}" for rate in rates for tool, w in results[rate][1].items()
             if w and w.get("tcpdump")]
    if drops:
        out += ["", "tcpdump: " + "; ".join(drops)]
    print("\n".join(out))
    with open(os.path.join(rawdir, "summary.md"), "w") as fh:
        fh.write("\n".join(out) + "\n")
    tp.stop_children()


if __name__ == "__main__":
    main()
