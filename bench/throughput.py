#!/usr/bin/env python3
"""linkperf vs iperf3 on loopback: interleaved A/B throughput benchmark.

Scenarios (each repeated --runs times, linkperf and iperf3 alternating):
  tcp1    TCP, one stream
  tcp8    TCP, -P 8
  udp64   UDP, -b 0 -l 64 (unlimited rate, 64-byte datagrams)
  udp1g   UDP, -b 1G -l 1460, paced, --pace-time seconds
  bidir   TCP, --bidir: both directions at once; each direction's receiver rate
          and the smaller over the larger (issue 19: within 20 %)
  skiprx  TCP, one stream, linkperf against itself: the receiver (the server)
          copying the payload, and with --skip-rx-copy (MSG_TRUNC), interleaved

Prints medians for both tools and the ratio linkperf/iperf3, then whether
each target of the issue is met. Not part of the test suite: run by hand.
See bench/README.md.
"""

import argparse
import atexit
import json
import resource
import os
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone

HOST = "127.0.0.1"
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILDREN = []  # servers and captures we started: (name, Popen)


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- processes


def stop_children():
    for name, proc in reversed(CHILDREN):
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


def wait_for_port(port, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((HOST, port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.1)
    return False


def port_busy(port):
    try:
        with socket.create_connection((HOST, port), timeout=0.5):
            return True
    except OSError:
        return False


def ensure_iperf3():
    path = shutil.which("iperf3")
    if path:
        return path
    log("iperf3 not found: apt-get install -y iperf3")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(["apt-get", "install", "-y", "iperf3"], check=True, env=env)
    path = shutil.which("iperf3")
    if not path:
        sys.exit("iperf3 still missing after apt-get")
    return path


def build_linkperf(target_dir, skip):
    binary = os.path.join(target_dir, "release", "linkperf")
    if skip:
        if not os.path.exists(binary):
            sys.exit(f"--no-build but {binary} does not exist")
        return binary
    log(f"building linkperf (release, CARGO_TARGET_DIR={target_dir})")
    env = dict(os.environ, CARGO_TARGET_DIR=target_dir)
    subprocess.run(
        ["cargo", "build", "--release", "-p", "linkperf"], cwd=REPO, env=env, check=True
    )
    return binary


def start_server(name, argv, port, logdir):
    if port_busy(port):
        sys.exit(f"port {port} already in use on {HOST}: stop whatever listens there or pick another")
    out = open(os.path.join(logdir, f"{name}-server.log"), "w")
    proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    CHILDREN.append((name, proc))
    if not wait_for_port(port):
        sys.exit(f"{name} server did not come up on port {port}")
    return proc.pid


# ---------------------------------------------------------------- parsing


def add_reverse(r, fwd_bps, rev_bps, rev_bytes):
    """A --bidir run: the two directions' receiver rates, their sum and balance."""
    r["fwd_bps"], r["rev_bps"] = fwd_bps, rev_bps
    r["rx_bps"] = fwd_bps + rev_bps
    r["rx_bytes"] += rev_bytes
    r["dir_balance"] = min(fwd_bps, rev_bps) / max(fwd_bps, rev_bps) if max(fwd_bps, rev_bps) > 0 else 0.0
    return r


def parse_linkperf(doc):
    if doc.get("errors"):
        raise RuntimeError(f"linkperf errors: {doc['errors']}")
    s = doc["summary"]
    rx, tx = s["received"], s["sent"]
    r = {
        "rx_bps": rx["bits_per_second"],
        "tx_bps": tx["bits_per_second"],
        "rx_bytes": rx["bytes"],
        "seconds": rx["seconds"],
        "cpu_client": s["cpu"]["local"]["total_percent"],
        "cpu_server": s["cpu"]["remote"]["total_percent"],
    }
    if rx.get("packets") is not None:
        r["rx_packets"] = rx["packets"]
        r["tx_packets"] = tx.get("packets")
        r["lost"] = rx.get("lost_packets") or 0
        r["rx_pps"] = rx["packets"] / rx["seconds"]
    back = doc.get("summary_reverse")
    if back:
        add_reverse(r, rx["bits_per_second"], back["received"]["bits_per_second"], back["received"]["bytes"])
    gaps = s.get("send_gaps")
    if gaps:
        for k in ("target_us", "p50_us", "p99_us", "max_us", "back_to_back_fraction"):
            r["gap_" + k] = gaps[k]
    return r


def parse_iperf3(doc, udp):
    if doc.get("error"):
        raise RuntimeError(f"iperf3 error: {doc['error']}")
    end = doc["end"]
    rx = end["sum_received"]
    cpu = end["cpu_utilization_percent"]
    r = {
        "rx_bps": rx["bits_per_second"],
        "tx_bps": end["sum_sent"]["bits_per_second"],
        "rx_bytes": rx["bytes"],
        "seconds": rx["seconds"],
        "cpu_client": cpu["host_total"],
        "cpu_server": cpu["remote_total"],
    }
    if udp:
        # end.sum is the receiver's view for UDP: packets = highest sequence
        # number seen, lost_packets = the gaps; received = packets - lost.
        tot = end["sum"]
        received = tot["packets"] - tot["lost_packets"]
        r["rx_packets"] = received
        r["tx_packets"] = end["sum_sent"]["packets"]
        r["lost"] = tot["lost_packets"]
        r["rx_pps"] = received / rx["seconds"]
    back = end.get("sum_received_bidir_reverse")
    if back:
        add_reverse(r, rx["bits_per_second"], back["bits_per_second"], back["bytes"])
    return r


def derive(r):
    # CPU seconds (client + server) per GB delivered to the receiver.
    cpu_s = (r["cpu_client"] + r["cpu_server"]) / 100.0 * r["seconds"]
    gb = r["rx_bytes"] / 1e9
    r["cpu_s_per_gb"] = cpu_s / gb if gb > 0 else float("nan")
    # The receiver's CPU per byte (a forward test: the server receives).
    r["rx_cpu_s_per_gb"] = r["cpu_server"] / 100.0 * r["seconds"] / gb if gb > 0 else float("nan")
    if "ext_cpu_client_s" in r:
        ext = r["ext_cpu_client_s"] + r["ext_cpu_server_s"]
        r["ext_cpu_s_per_gb"] = ext / gb if gb > 0 else float("nan")
        r["ext_rx_cpu_s_per_gb"] = r["ext_cpu_server_s"] / gb if gb > 0 else float("nan")
    return r


# ---------------------------------------------------------------- running


def proc_cpu_s(pid):
    """User + system CPU seconds of a running process (all its threads)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children_cpu_s():
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def run_json(argv, timeout):
    p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    try:
        doc = json.loads(p.stdout)
    except json.JSONDecodeError:
        raise RuntimeError(
            f"{argv[0]} exit {p.returncode}, no JSON: {p.stdout[-400:]} {p.stderr[-400:]}"
        )
    return doc, p


def run_one(tool, scen, secs, cfg, rawdir, tag, extra=()):
    secs = float(secs)
    secs_s = str(int(secs)) if secs.is_integer() else str(secs)
    if tool == "linkperf":
        argv = [cfg.linkperf, "client", HOST, "-p", str(cfg.lp_port), "-t", secs_s, "-J"]
    else:
        argv = [cfg.iperf3, "-c", HOST, "-p", str(cfg.ip_port), "-t", secs_s, "-J"]
    argv += scen["args"] + list(extra)
    if cfg.congestion and not scen["udp"]:
        argv += ["-C", cfg.congestion]
    if cfg.length and not scen["udp"]:
        argv += ["-l", cfg.length]
    if cfg.pin:
        argv = ["taskset", "-c", cfg.pin[1]] + argv
    last_err = None
    for attempt in range(3):
        try:
            # Independent CPU accounting, the same for both tools: the client's
            # rusage (whole process life) and the server's /proc CPU delta.
            srv = cfg.server_pid[tool]
            c0, s0 = children_cpu_s(), proc_cpu_s(srv)
            doc, _ = run_json(argv, timeout=secs + 60)
            c1, s1 = children_cpu_s(), proc_cpu_s(srv)
            with open(os.path.join(rawdir, f"{tag}.json"), "w") as f:
                json.dump(doc, f)
            if tool == "linkperf":
                r = parse_linkperf(doc)
            else:
                r = parse_iperf3(doc, scen["udp"])
            r["ext_cpu_client_s"] = c1 - c0
            r["ext_cpu_server_s"] = s1 - s0
            return derive(r)
        except (RuntimeError, KeyError, TypeError, subprocess.TimeoutExpired) as e:
            last_err = e
            log(f"  {tag}: attempt {attempt + 1} failed: {e}")
            time.sleep(2)
    raise RuntimeError(f"{tag}: giving up: {last_err}")


def host_congestion():
    try:
        with open("/proc/sys/net/ipv4/tcp_congestion_control") as f:
            return f.read().strip()
    except OSError:
        return "unknown"


def median(results, key):
    vals = [r[key] for r in results if r.get(key) is not None]
    return statistics.median(vals) if vals else None


def spread(results, key):
    vals = [r[key] for r in results if r.get(key) is not None]
    return (min(vals), max(vals)) if vals else (None, None)


# ---------------------------------------------------------------- capture


def read_pcap_times(path):
    """Timestamps (ns) of the packets in a pcap file (micro or nano precision)."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 24:
        return []
    magic = struct.unpack("<I", data[:4])[0]
    if magic in (0xA1B2C3D4, 0xA1B23C4D):
        endian = "<"
    else:
        endian = ">"
        magic = struct.unpack(">I", data[:4])[0]
    scale = 1 if magic == 0xA1B23C4D else 1000
    times, off = [], 24
    hdr = struct.Struct(endian + "IIII")
    while off + 16 <= len(data):
        sec, frac, incl, _orig = hdr.unpack_from(data, off)
        times.append(sec * 1_000_000_000 + frac * scale)
        off += 16 + incl
    return times


def gap_stats_from_times(times_ns, target_us, window_s):
    if len(times_ns) < 3:
        return None
    t0 = times_ns[0]
    # Keep the middle window_s seconds: skip the start-up and the tail.
    lo = t0 + 1_000_000_000
    hi = lo + int(window_s * 1e9)
    ts = [t for t in times_ns if lo <= t < hi]
    if len(ts) < 3:
        return None
    gaps = sorted((b - a) / 1000.0 for a, b in zip(ts, ts[1:]))
    n = len(gaps)

    def q(p):
        return gaps[min(n - 1, int(p * n))]

    # Datagrams per 1 ms bin: a 1 ms burst pacer shows full bins and empty ones.
    bins = {}
    for t in ts:
        k = (t - lo) // 1_000_000
        bins[k] = bins.get(k, 0) + 1
    nbins = int(window_s * 1000)
    counts = [bins.get(k, 0) for k in range(nbins)]
    expected = 1000.0 / target_us
    return {
        "packets": len(ts),
        "p1_us": q(0.01),
        "p50_us": q(0.5),
        "p99_us": q(0.99),
        "max_us": gaps[-1],
        "back_to_back_fraction": sum(1 for g in gaps if g < 0.1 * target_us) / n,
        "per_ms_expected": expected,
        "per_ms_max": max(counts),
        "empty_ms_fraction": sum(1 for c in counts if c == 0) / nbins,
    }


def capture_gaps(tool, cfg, rawdir, target_us):
    """Paced 1G run of `secs` seconds with tcpdump on lo; gaps of the middle 2 s."""
    secs = 4
    pcap = os.path.join(rawdir, f"capture-{tool}.pcap")
    # Data datagrams only: 1460 bytes of payload (IP total length 1488). No
    # port filter: linkperf's UDP data socket uses an ephemeral server port;
    # only one tool runs at a time, so length alone picks the test's data.
    filt = f"udp and dst host {HOST} and ip[2:2] = 1488"
    dump = subprocess.Popen(
        [cfg.tcpdump, "-i", "lo", "-n", "-s", "64", "-B", "65536",
         "--time-stamp-precision=nano", "-w", pcap, filt],
        stdout=subprocess.DEVNULL, stderr=open(pcap + ".log", "w"),
    )
    CHILDREN.append(("tcpdump", dump))
    time.sleep(1.0)
    try:
        scen = {"args": ["-u", "-b", "1G", "-l", "1460"], "udp": True}
        run = run_one(tool, scen, secs, cfg, rawdir, f"capture-{tool}")
    finally:
        time.sleep(0.5)
        dump.send_signal(signal.SIGINT)
        try:
            dump.wait(timeout=10)
        except subprocess.TimeoutExpired:
            dump.kill()
            dump.wait()
        CHILDREN.remove(("tcpdump", dump))
    with open(pcap + ".log") as f:
        dropped = [l.strip() for l in f if "dropped" in l]
    st = gap_stats_from_times(read_pcap_times(pcap), target_us, 2.0)
    if st is not None:
        st["tcpdump"] = "; ".join(dropped)
        st["rx_bps"] = run["rx_bps"]
        st["self_p99_us"] = run.get("gap_p99_us")
        st["self_max_us"] = run.get("gap_max_us")
    return st


# ---------------------------------------------------------------- report


def fmt(v, unit=""):
    if v is None:
        return "-"
    if unit == "bps":
        return f"{v / 1e9:.3f} Gbit/s"
    if unit == "pps":
        return f"{v / 1e3:.1f} k/s"
    if unit == "%":
        return f"{v:.1f} %"
    if unit == "s/GB":
        return f"{v:.3f} s/GB"
    if unit == "s":
        return f"{v:.2f} s"
    if unit == "us":
        return f"{v:.2f} us"
    if unit == "frac":
        return f"{v * 100:.2f} %"
    return f"{v:.4g}"


def ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


def table(title, lp, ip, rows, names=("linkperf", "iperf3")):
    a_name, b_name = names
    out = [f"### {title}", "", f"| metric (median) | {a_name} | {b_name} | {a_name}/{b_name} |", "|---|---|---|---|"]
    for label, key, unit in rows:
        a, b = median(lp, key), median(ip, key)
        r = ratio(a, b)
        out.append(f"| {label} | {fmt(a, unit)} | {fmt(b, unit)} | {'-' if r is None else f'{r:.2f}x'} |")
    out.append("")
    lo, hi = spread(lp, "rx_bps")
    lo2, hi2 = spread(ip, "rx_bps")
    out.append(
        f"Receiver throughput range over {len(lp)}/{len(ip)} runs: {a_name} {fmt(lo, 'bps')} .. {fmt(hi, 'bps')}, "
        f"{b_name} {fmt(lo2, 'bps')} .. {fmt(hi2, 'bps')}."
    )
    out.append("")
    return out


COMMON_ROWS = [
    ("throughput, receiver", "rx_bps", "bps"),
    ("client CPU (% of one core)", "cpu_client", "%"),
    ("server CPU (% of one core)", "cpu_server", "%"),
    ("CPU per byte (client+server CPU s per GB)", "cpu_s_per_gb", "s/GB"),
    ("client CPU s per run, external (rusage)", "ext_cpu_client_s", "s"),
    ("server CPU s per run, external (/proc)", "ext_cpu_server_s", "s"),
    ("CPU per byte, external (s per GB)", "ext_cpu_s_per_gb", "s/GB"),
]
SKIPRX_ROWS = [
    ("throughput, receiver", "rx_bps", "bps"),
    ("receiver (server) CPU (% of one core)", "cpu_server", "%"),
    ("receiver CPU per byte (s per GB), own report", "rx_cpu_s_per_gb", "s/GB"),
    ("receiver CPU per byte (s per GB), external (/proc)", "ext_rx_cpu_s_per_gb", "s/GB"),
    ("sender (client) CPU (% of one core)", "cpu_client", "%"),
]
BIDIR_ROWS = [
    ("client -> server, receiver", "fwd_bps", "bps"),
    ("server -> client, receiver", "rev_bps", "bps"),
    ("smaller direction / larger", "dir_balance", ""),
]
UDP_ROWS = [
    ("datagrams/s, receiver", "rx_pps", "pps"),
    ("datagrams received per run", "rx_packets", ""),
    ("datagrams lost per run", "lost", ""),
    ("throughput, sender", "tx_bps", "bps"),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", "--runs", type=int, default=5, help="repetitions per tool and scenario (default 5)")
    ap.add_argument("-t", "--time", type=float, default=5, help="seconds per run (default 5)")
    ap.add_argument("--pace-time", type=float, default=10, help="seconds per paced 1G UDP run (default 10)")
    ap.add_argument("--scenarios", default="tcp1,tcp8,udp64,udp1g", help="comma list of tcp1,tcp8,bidir,udp64,udp1g,skiprx")
    ap.add_argument("--lp-port", type=int, default=5211)
    ap.add_argument("--ip-port", type=int, default=5201)
    ap.add_argument("--pause", type=float, default=1.0, help="seconds between runs (default 1)")
    ap.add_argument("--capture", choices=("auto", "yes", "no"), default="auto",
                    help="tcpdump the paced case for both tools (auto: only if tcpdump is installed; yes: apt-get it)")
    ap.add_argument("--pin", metavar="SERVER_CPU,CLIENT_CPU",
                    help="pin servers and clients to these CPUs with taskset (e.g. 0,1); default: no pinning")
    ap.add_argument("--congestion", metavar="ALGO",
                    help="TCP congestion control for both tools' TCP runs (-C); default: the host's")
    ap.add_argument("--length", metavar="BYTES",
                    help="write size for both tools' TCP runs (-l, e.g. 128K); default: each tool's own")
    ap.add_argument("--no-build", action="store_true", help="use the existing release binary")
    ap.add_argument("--target-dir", default=os.environ.get("CARGO_TARGET_DIR", os.path.join(REPO, "target")))
    ap.add_argument("--out", help="directory for raw JSON and logs (default: a new /tmp directory)")
    cfg = ap.parse_args()
    if cfg.pin:
        cfg.pin = cfg.pin.split(",")
        if len(cfg.pin) != 2:
            sys.exit("--pin wants SERVER_CPU,CLIENT_CPU")

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    atexit.register(stop_children)

    rawdir = cfg.out or tempfile.mkdtemp(prefix="linkperf-bench-")
    os.makedirs(rawdir, exist_ok=True)
    cfg.iperf3 = ensure_iperf3()
    cfg.linkperf = build_linkperf(cfg.target_dir, cfg.no_build)
    cfg.tcpdump = shutil.which("tcpdump")
    if cfg.capture == "yes" and not cfg.tcpdump:
        subprocess.run(["apt-get", "install", "-y", "tcpdump"], check=True,
                       env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
        cfg.tcpdump = shutil.which("tcpdump")
    do_capture = cfg.capture != "no" and cfg.tcpdump is not None

    srv_prefix = ["taskset", "-c", cfg.pin[0]] if cfg.pin else []
    cfg.server_pid = {}
    cfg.server_pid["linkperf"] = start_server("linkperf", srv_prefix + [cfg.linkperf, "server", "-p", str(cfg.lp_port), "-B", HOST, "-q"], cfg.lp_port, rawdir)
    cfg.server_pid["iperf3"] = start_server("iperf3", srv_prefix + [cfg.iperf3, "-s", "-p", str(cfg.ip_port), "-B", HOST], cfg.ip_port, rawdir)

    scenarios = {
        "tcp1": {"title": "TCP, 1 stream", "args": [], "udp": False, "secs": cfg.time},
        "tcp8": {"title": "TCP, -P 8 (aggregate)", "args": ["-P", "8"], "udp": False, "secs": cfg.time},
        "bidir": {"title": "TCP, --bidir (both directions summed)", "args": ["--bidir"], "udp": False,
                  "secs": cfg.time},
        "udp64": {"title": "UDP, -b 0 -l 64 (unlimited, 64-byte datagrams)", "args": ["-u", "-b", "0", "-l", "64"],
                  "udp": True, "secs": cfg.time},
        "udp1g": {"title": "UDP paced, -b 1G -l 1460", "args": ["-u", "-b", "1G", "-l", "1460"], "udp": True,
                  "secs": cfg.pace_time},
        # Both sides linkperf: A adds --skip-rx-copy (the pair replaces linkperf/iperf3).
        "skiprx": {"title": "TCP, 1 stream: receiver with --skip-rx-copy / copying", "args": [], "udp": False,
                   "secs": cfg.time, "pair": (("--skip-rx-copy", ["--skip-rx-copy"]), ("copying", []))},
    }
    chosen = [s.strip() for s in cfg.scenarios.split(",") if s.strip()]
    for s in chosen:
        if s not in scenarios:
            sys.exit(f"unknown scenario {s}")

    def secs_arg(x):
        return str(int(x)) if float(x).is_integer() else str(x)

    results = {}
    load_start = open("/proc/loadavg").read().split()[:3]
    t_start = time.monotonic()
    for name in chosen:
        scen = scenarios[name]
        lp, ip = [], []
        for i in range(cfg.runs):
            # Interleaved A/B: linkperf, iperf3, linkperf, iperf3, ...
            if "pair" in scen:
                (a, a_args), (b, b_args) = scen["pair"]
                runs = (("linkperf", lp, a, a_args), ("linkperf", ip, b, b_args))
            else:
                runs = (("linkperf", lp, "linkperf", []), ("iperf3", ip, "iperf3", []))
            for tool, bucket, label, extra in runs:
                tag = f"{name}-{i + 1}-{label.strip('-')}"
                r = run_one(tool, scen, scen["secs"], cfg, rawdir, tag, extra)
                bucket.append(r)
                extra = f" {r['rx_pps'] / 1e3:.0f} kdgram/s" if "rx_pps" in r else ""
                log(f"  {tag}: {r['rx_bps'] / 1e9:.3f} Gbit/s{extra}, cpu c/s {r['cpu_client']:.0f}/{r['cpu_server']:.0f} %")
                time.sleep(cfg.pause)
        results[name] = (lp, ip)

    capture = {}
    if do_capture and "udp1g" in chosen:
        for tool in ("linkperf", "iperf3"):
            try:
                capture[tool] = capture_gaps(tool, cfg, rawdir, 1460 * 8 / 1e9 * 1e6)
            except Exception as e:  # optional: report and go on
                log(f"capture {tool} failed: {e}")
            time.sleep(cfg.pause)
    elapsed = time.monotonic() - t_start
    load_end = open("/proc/loadavg").read().split()[:3]

    # ------------------------------------------------------------ print
    out = []
    now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    out.append(f"## linkperf vs iperf3 on loopback ({now})")
    out.append("")
    out.append(f"runs per tool and scenario: {cfg.runs}; -t {secs_arg(cfg.time)} s (paced case {secs_arg(cfg.pace_time)} s); "
               f"wall time of the runs {elapsed / 60:.1f} min; raw JSON in {rawdir}")
    out.append("")
    out.append(f"congestion control: {cfg.congestion or 'the host default, ' + host_congestion()}")
    writes = f"-l {cfg.length} for both tools" if cfg.length else "each tool's default (linkperf 1M unpaced while streams <= CPUs and no -w, iperf3 128K)"
    out.append(f"TCP write size: {writes}")
    if cfg.pin:
        out.append(f"pinned: servers on CPU {cfg.pin[0]}, clients on CPU {cfg.pin[1]} (taskset)")
        out.append("")
    out.append(f"load average (1/5/15 min) at start {' '.join(load_start)}, at end {' '.join(load_end)} "
               f"on {os.cpu_count()} CPUs: anything above ~0.5 means other work shared the machine")
    out.append("")
    verdicts = []
    for name in chosen:
        lp, ip = results[name]
        scen = scenarios[name]
        rows = list(COMMON_ROWS)
        if scen["udp"]:
            rows += UDP_ROWS
        if name == "bidir":
            rows += BIDIR_ROWS
        if name == "udp1g":
            rows += [
                ("send gap target", "gap_target_us", "us"),
                ("send gap p50", "gap_p50_us", "us"),
                ("send gap p99", "gap_p99_us", "us"),
                ("send gap max", "gap_max_us", "us"),
                ("back-to-back sends (<10% of target)", "gap_back_to_back_fraction", "frac"),
            ]
        if "pair" in scen:
            names = (scen["pair"][0][0], scen["pair"][1][0])
            out += table(scen["title"], lp, ip, SKIPRX_ROWS, names)
        else:
            out += table(scen["title"], lp, ip, rows)
        thr = ratio(median(lp, "rx_bps"), median(ip, "rx_bps"))
        if name == "tcp1":
            cpb = ratio(median(lp, "cpu_s_per_gb"), median(ip, "cpu_s_per_gb"))
            ext = ratio(median(lp, "ext_cpu_s_per_gb"), median(ip, "ext_cpu_s_per_gb"))
            verdicts.append(f"tcp1: throughput ratio {thr:.2f} (target >= 1): {'MET' if thr >= 1 else 'NOT MET'}")
            verdicts.append(f"tcp1: CPU-per-byte ratio {cpb:.2f} from the tools' own reports (target <= 1): "
                            f"{'MET' if cpb <= 1 else 'NOT MET'}; {ext:.2f} measured externally: "
                            f"{'MET' if ext <= 1 else 'NOT MET'}")
        elif name == "skiprx":
            cpb = ratio(median(lp, "ext_rx_cpu_s_per_gb"), median(ip, "ext_rx_cpu_s_per_gb"))
            verdicts.append(f"skiprx: --skip-rx-copy throughput {thr:.2f}x, receiver CPU per byte {cpb:.2f}x "
                            f"(external) of the copying receiver's")
        elif name == "bidir":
            bal = median(lp, "dir_balance")
            verdicts.append(f"bidir: aggregate throughput ratio {thr:.2f} (target >= 1): {'MET' if thr >= 1 else 'NOT MET'}; "
                            f"linkperf's smaller direction is {bal:.2f} of the larger (target >= 0.8): "
                            f"{'MET' if bal >= 0.8 else 'NOT MET'}")
        elif name == "tcp8":
            verdicts.append(f"tcp8: aggregate throughput ratio {thr:.2f} (target >= 1): {'MET' if thr >= 1 else 'NOT MET'}")
        elif name == "udp64":
            pr = ratio(median(lp, "rx_pps"), median(ip, "rx_pps"))
            verdicts.append(f"udp64: received datagrams/s ratio {pr:.2f} (target >= 3): {'MET' if pr >= 3 else 'NOT MET'}")
            # Every datagram numbered and counted: sent = received + lost on each run.
            bad = [r for r in lp if r.get("tx_packets") is not None
                   and r["tx_packets"] != r["rx_packets"] + r["lost"]]
            verdicts.append(f"udp64: linkperf runs where sent != received + lost: {len(bad)} of {len(lp)}")
        elif name == "udp1g":
            for tool, rs in (("linkperf", lp), ("iperf3", ip)):
                m = median(rs, "rx_bps")
                dev = (m - 1e9) / 1e9 * 100
                verdicts.append(f"udp1g: {tool} receiver rate {m / 1e9:.4f} Gbit/s, {dev:+.2f} % of target "
                                f"(within 1 %: {'MET' if abs(dev) <= 1 else 'NOT MET'})")
            p50, p99 = median(lp, "gap_p50_us"), median(lp, "gap_p99_us")
            tgt = median(lp, "gap_target_us")
            if p50 is not None:
                smooth = abs(p50 - tgt) <= 0.1 * tgt and p99 < 1000
                verdicts.append(f"udp1g: linkperf send gaps p50 {p50:.2f} us / p99 {p99:.2f} us vs target {tgt:.2f} us "
                                f"(smooth, no 1 ms bursts: {'MET' if smooth else 'NOT MET'})")
    if capture:
        out.append("### Send gaps captured on lo (tcpdump, middle 2 s of a 4 s paced 1G run)")
        out.append("")
        out.append("| metric | linkperf | iperf3 |")
        out.append("|---|---|---|")
        keys = [("datagrams captured", "packets", ""), ("gap p1", "p1_us", "us"), ("gap p50", "p50_us", "us"),
                ("gap p99", "p99_us", "us"), ("gap max", "max_us", "us"),
                ("back-to-back (<10% of 11.68 us)", "back_to_back_fraction", "frac"),
                ("datagrams per 1 ms, expected", "per_ms_expected", ""),
                ("datagrams per 1 ms, busiest", "per_ms_max", ""),
                ("1 ms bins with no datagram", "empty_ms_fraction", "frac"),
                ("receiver rate of the captured run (whole run)", "rx_bps", "bps"),
                ("same run, linkperf's own send_gaps p99", "self_p99_us", "us"),
                ("same run, linkperf's own send_gaps max", "self_max_us", "us")]
        for label, k, unit in keys:
            a = (capture.get("linkperf") or {}).get(k)
            b = (capture.get("iperf3") or {}).get(k)
            out.append(f"| {label} | {fmt(a, unit)} | {fmt(b, unit)} |")
        for tool in ("linkperf", "iperf3"):
            if capture.get(tool) and capture[tool].get("tcpdump"):
                out.append(f"\n{tool} capture: {capture[tool]['tcpdump']}")
        out.append("")
    out.append("### Targets")
    out.append("")
    out += [f"- {v}" for v in verdicts]
    print("\n".join(out))
    with open(os.path.join(rawdir, "summary.md"), "w") as f:
        f.write("\n".join(out) + "\n")
    stop_children()


if __name__ == "__main__":
    main()
