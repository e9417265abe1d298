#!/usr/bin/env python3
"""Server memory (issue 19 item 5): the linkperf server's resident memory
with --concurrent tests (default 100) running at once, against an iperf3
3.12 server's with one test; then the linkperf server over --total tests in
a row (default 10,000), its RSS and open descriptors sampled every --every
tests (default 500). Targets: RSS with 100 tests <= 2x iperf3's with one;
flat over the tests in a row. Each server of --servers (default
`linkperf-server,linkperf`: the server's own binary, then `linkperf server`)
takes the concurrent tests in turn; the first takes the tests in a row.

Both servers run on 127.0.0.1. Each concurrent test is TCP, one stream,
`-t --secs -b --rate` (paced, so 100 tests do not fight over the 2 CPUs;
the same for iperf3); RSS is read from /proc/PID/status (VmRSS) every
0.1 s while the tests run, and the peak and the median of the middle half
are reported. The tests in a row are `linkperf sweep -n 1K` runs of --every
points each (one sweep process per sample), so the client's memory is not
the server's.

Not a test: run by hand, e.g.
    flock /tmp/lp-test.lock python3 bench/server_memory.py --no-build
Options: --concurrent N, --secs S, --rate R, --total N, --every N,
--servers LIST, --no-build, --target-dir DIR.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import threading
import time

from benchlib import CHILDREN, HOST, REPO, build_linkperf, free_port, log, loadavg, wait_port


def start(cmd):
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    CHILDREN.append(proc)
    return proc


def status(pid):
    """(VmRSS KiB, threads) of a process."""
    rss = threads = 0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
            elif line.startswith("Threads:"):
                threads = int(line.split()[1])
    return rss, threads


def fds(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))



def sample_while(pid, procs):
    """Samples the server every 0.1 s until every client in `procs` ended."""
    samples = []
    while any(p.poll() is None for p in procs):
        samples.append(status(pid))
        time.sleep(0.1)
    failed = [p for p in procs if p.returncode != 0]
    return samples, failed


def summarise(name, idle, samples):
    rss = [s[0] for s in samples]
    mid = rss[len(rss) // 4: 3 * len(rss) // 4] or rss
    return {"name": name, "idle": idle, "peak": max(rss), "middle": statistics.median(mid),
            "threads": max(s[1] for s in samples)}


def iperf3_one(iperf3_port, ip_pid, a):
    idle = status(ip_pid)[0]
    client = subprocess.Popen(["iperf3", "-c", HOST, "-p", str(iperf3_port), "-t", str(a.secs),
                               "-b", a.rate], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    samples, failed = sample_while(ip_pid, [client])
    if failed:
        raise SystemExit("the iperf3 test failed")
    return summarise("iperf3 3.12 server, 1 test", idle, samples)


def concurrent(lp, name, lp_port, lp_pid, a):
    common = ["-t", str(a.secs), "-b", a.rate]
    idle = status(lp_pid)[0]
    clients = [subprocess.Popen([lp, "client", HOST, "-p", str(lp_port), *common, "--no-store"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
               for _ in range(a.concurrent)]
    samples, failed = sample_while(lp_pid, clients)
    if failed:
        raise SystemExit(f"{len(failed)} linkperf tests failed: {failed[0].stderr.read().decode().strip()}")
    return summarise(f"{name}, {a.concurrent} tests at once", idle, samples)


def in_a_row(lp, port, pid, a, out):
    rows = [(0, status(pid)[0], fds(pid), status(pid)[1])]
    done = 0
    db = os.path.join(out, "row.db")
    while done < a.total:
        n = min(a.every, a.total - done)
        cmd = [lp, "sweep", HOST, "-p", str(port), "--db", db, "--vary", "length=64K",
               "--repeat", str(n), "-n", "1K", "-J"]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed ({p.returncode}): {p.stderr.strip()}")
        done += n
        time.sleep(0.2)  # let the server's last test threads exit
        rss, threads = status(pid)
        rows.append((done, rss, fds(pid), threads))
        log(f"  {done} tests: RSS {rss / 1024:.1f} MiB, {rows[-1][2]} fds, {threads} threads")
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--concurrent", type=int, default=100)
    ap.add_argument("--secs", type=float, default=4)
    ap.add_argument("--rate", default="10M")
    ap.add_argument("--total", type=int, default=10_000)
    ap.add_argument("--every", type=int, default=500)
    ap.add_argument("--servers", default="linkperf-server,linkperf")
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--target-dir", default=os.environ.get("CARGO_TARGET_DIR") or os.path.join(REPO, "target"))
    a = ap.parse_args()
    if not shutil.which("iperf3"):
        raise SystemExit("iperf3 is not installed (apt-get install iperf3)")
    lp = build_linkperf(a.target_dir, a.no_build)
    out = tempfile.mkdtemp(prefix="linkperf-server-memory-")
    ip_port = free_port()
    limit = str(max(a.concurrent, 32))
    limits = ["-q", "--server-max-tests", limit, "--server-max-streams", str(max(512, 2 * a.concurrent))]
    ip_srv = start(["iperf3", "-s", "-p", str(ip_port), "-B", HOST])
    wait_port(ip_port)
    load = loadavg()
    ip = iperf3_one(ip_port, ip_srv.pid, a)
    rows, first = [ip], None
    for name in a.servers.split(","):
        servers = {"linkperf-server": ([lp + "-server"], "linkperf-server"),
                   "linkperf": ([lp, "server"], "linkperf server")}
        if name not in servers:
            raise SystemExit(f"--servers: '{name}' is not a server; accepted: linkperf-server, linkperf")
        program, label = servers[name]
        lp_port = free_port()
        srv = start([*program, "-p", str(lp_port), "-B", HOST, *limits])
        wait_port(lp_port)
        time.sleep(0.5)
        log(f"{name}: {a.concurrent} tests at once (-t {a.secs} -b {a.rate})...")
        rows.append(concurrent(lp, label, lp_port, srv.pid, a))
        if first is None:
            first = (srv, lp_port, label)
        else:
            srv.terminate()
    print(f"\n### Server RSS: {a.concurrent} linkperf tests at once against one iperf3 test "
          f"(TCP, -t {a.secs:g} -b {a.rate}; load average {load:.2f})\n")
    print("| server | idle RSS (MiB) | peak RSS (MiB) | median RSS, middle half (MiB) | most threads | peak / iperf3's |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['name']} | {r['idle'] / 1024:.1f} | {r['peak'] / 1024:.1f} | {r['middle'] / 1024:.1f} "
              f"| {r['threads']} | {r['peak'] / ip['peak']:.2f} |")
    for r in rows[1:]:
        ratio = r["peak"] / ip["peak"]
        print(f"\n{r['name']} / iperf3 with 1 (peak RSS): {ratio:.2f} "
              f"(target <= 2: {'met' if ratio <= 2 else 'not met'}); "
              f"growth per test: {(r['peak'] - r['idle']) / a.concurrent:.0f} KiB")
    lp_srv, lp_port, first_name = first
    log(f"{a.total} tests in a row, sampled every {a.every}...")
    rows = in_a_row(lp, lp_port, lp_srv.pid, a, out)
    print(f"\n### {first_name} over {a.total} tests in a row (`sweep -n 1K`, sampled every {a.every})\n")
    print("| tests | RSS (MiB) | open fds | threads |\n|---|---|---|---|")
    for done, rss, nfd, threads in rows:
        print(f"| {done} | {rss / 1024:.1f} | {nfd} | {threads} |")
    after_first = [r[1] for r in rows[1:]]
    if after_first:
        print(f"\nRSS after the first {a.every}: {min(after_first) / 1024:.1f}-{max(after_first) / 1024:.1f} MiB; "
              f"fds {rows[0][2]} before, {min(r[2] for r in rows[1:])}-{max(r[2] for r in rows[1:])} after")


if __name__ == "__main__":
    main()
