#!/usr/bin/env python3
"""Poisson traffic, linkperf vs D-ITG on loopback: timer precision, CPU per
packet, and the highest Poisson rate sent with < 1 % schedule misses.

For each rate (default 10k, 100k, 500k packets/s) it runs `--runs`
interleaved pairs (linkperf, D-ITG, linkperf, ...) of Poisson traffic of
100-byte UDP payloads for `--secs` seconds and reports medians of:
  - the timer error: |actual - scheduled| send time of every packet, p50
    and p99. linkperf reports it per sender (schedule.error_*_us; the
    actual time is read just before each send call). D-ITG does not report
    its schedule, so it replays a schedule this script draws (ITGSend -Ft:
    inter-departure times from a file, Poisson, same mean) and the actual
    times are the txTime of its sender log (ITGDec -l); the schedule is
    anchored at its first packet;
  - schedule misses: packets sent more than 1 ms late, plus packets due
    before the end but never sent (both tools counted the same way);
  - CPU per packet sent: the sender process's rusage (user + system, all
    threads, whole life) over the packets it sent.
Then, with --scan, one run per tool at each scan rate to find the highest
rate with < 1 % misses.

Run it under the test lock on the shared machine:
    flock /tmp/lp-test.lock python3 bench/ditg.py
Needs ITGSend, ITGRecv and ITGDec (Debian package d-itg). Not part of the
test suite. See bench/README.md.
"""

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HOST = "127.0.0.1"
SIZE = 100
LATE_LIMIT_US = 1000.0


def run_rusage(argv, timeout, **kw):
    """Runs argv to completion (killed after `timeout`); its CPU shows in
    children_cpu() once it is reaped."""
    p = subprocess.run(argv, capture_output=True, timeout=timeout, **kw)
    return p.stdout.decode(), p.stderr.decode(), None


def children_cpu():
    r = os.times()
    return r.children_user + r.children_system


def percentile(xs, q):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def linkperf_run(cfg, rate, secs, seed):
    mean_us = 1e6 / rate
    argv = [cfg.linkperf, "client", HOST, "-p", str(cfg.port), "-u", "-l", str(SIZE),
            "--traffic", f"idt=exp:{mean_us:.6f}us;size=const:{SIZE}",
            "--traffic-seed", str(seed), "-t", str(secs), "-i", "0", "-J", "--no-store"]
    c0 = children_cpu()
    out, err, _ = run_rusage(argv, secs + 60)
    cpu = children_cpu() - c0
    doc = json.loads(out)
    s = doc["summary"]["streams"][0]["sender"]["schedule"]
    sent = s["messages_sent"]
    return {
        "p50_us": s["error_p50_us"],
        "p99_us": s["error_p99_us"],
        "due": s["messages_due"],
        "sent": sent,
        "misses": s["misses"],
        "cpu_us_per_packet": cpu * 1e6 / max(sent, 1),
        "received": doc["summary"]["streams"][0]["receiver"]["packets"],
    }


def tx_seconds(field):
    """D-ITG's txTime>H:M:S.micro as seconds of the day."""
    h, m, s = field.split(":")
    return int(h) * 3600 + int(m) * 60 + float(s)


def ditg_run(cfg, rate, secs, seed, work, poll=False):
    rng = random.Random(seed)
    n = int(rate * secs * 1.5) + 100
    gaps_s = [rng.expovariate(rate) for _ in range(n)]
    idt_file = os.path.join(work, "idt.txt")
    with open(idt_file, "w") as f:
        # D-ITG refuses a gap that prints as 0: at least 1 ns.
        f.writelines(f"{max(g * 1e3, 1e-6):.6f}\n" for g in gaps_s)
    log = os.path.join(work, "snd.log")
    txt = os.path.join(work, "snd.txt")
    for path in (log, txt):
        if os.path.exists(path):
            os.remove(path)
    argv = ["ITGSend", "-a", HOST, "-rp", str(cfg.ditg_port), "-T", "UDP", "-Ft", idt_file,
            "-c", str(SIZE), "-t", str(int(secs * 1000)), "-l", log] + (["-poll"] if poll else [])
    c0 = children_cpu()
    _, err, _ = run_rusage(argv, secs + 60, cwd=work)
    cpu = children_cpu() - c0
    subprocess.run(["ITGDec", log, "-l", txt], cwd=work, capture_output=True, timeout=120)
    tx = []
    if not os.path.exists(txt):
        print(f"D-ITG at {rate}/s left no log: {err.strip()[-300:]}", file=sys.stderr)
        due = sum(1 for _ in iter_due(gaps_s, secs))
        return {"p50_us": float("nan"), "p99_us": float("nan"), "due": due, "sent": 0,
                "misses": due, "cpu_us_per_packet": float("nan"), "failed": True}
    with open(txt) as f:
        for line in f:
            i = line.find("txTime>")
            if i >= 0:
                tx.append(tx_seconds(line[i + 7:].split()[0]))
    if not tx:
        raise RuntimeError("D-ITG sent nothing")
    # Which gap of the file leads to the second packet is not documented:
    # take the alignment that fits best (the smaller median error).
    best = None
    for offset in (0, 1):
        sched, t = [tx[0]], tx[0]
        for g in gaps_s[offset:offset + len(tx) - 1]:
            t += g
            sched.append(t)
        err = [abs(a - b) * 1e6 for a, b in zip(tx, sched)]
        late = sum(1 for a, b in zip(tx, sched) if (a - b) * 1e6 > LATE_LIMIT_US)
        # Due before the end of the run but never sent.
        t, due = tx[0], 1
        for g in gaps_s[offset:]:
            t += g
            if t >= tx[0] + secs:
                break
            due += 1
        cand = (percentile(err, 0.5), err, late, due)
        if best is None or cand[0] < best[0]:
            best = cand
    _, err, late, due = best
    unsent = max(0, due - len(tx))
    return {
        "p50_us": percentile(err, 0.5),
        "p99_us": percentile(err, 0.99),
        "due": due,
        "sent": len(tx),
        "misses": late + unsent,
        "cpu_us_per_packet": cpu * 1e6 / len(tx),
    }


def iter_due(gaps_s, secs):
    t = 0.0
    for g in gaps_s:
        if t >= secs:
            return
        yield t
        t += g


def median_of(runs, key):
    return statistics.median(r[key] for r in runs)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rates", default="10000,100000,500000")
    ap.add_argument("--scan", default="", help="rates for the < 1 %% misses scan, e.g. 50000,100000,200000")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--secs", type=float, default=2.0)
    ap.add_argument("--port", type=int, default=5741)
    ap.add_argument("--ditg-port", type=int, default=8999)
    ap.add_argument("--linkperf", default=os.path.join(ROOT, "target/release/linkperf"))
    ap.add_argument("--poll", action="store_true", help="also run D-ITG with -poll (busy-waits gaps under 1 ms)")
    ap.add_argument("--out", default=None, help="write all runs as JSON here")
    cfg = ap.parse_args()
    work = tempfile.mkdtemp(prefix="lp-ditg-")
    server = subprocess.Popen([cfg.linkperf, "server", "-p", str(cfg.port), "-B", HOST, "-q"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    recv = subprocess.Popen(["ITGRecv"], cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)
    results = {"rates": {}, "scan": {}}
    try:
        for rate in [int(float(r)) for r in cfg.rates.split(",") if r]:
            runs = {"linkperf": [], "ditg": [], "ditg_poll": []}
            for i in range(cfg.runs):
                seed = 1000 + i
                runs["linkperf"].append(linkperf_run(cfg, rate, cfg.secs, seed))
                runs["ditg"].append(ditg_run(cfg, rate, cfg.secs, seed, work))
                if cfg.poll:
                    runs["ditg_poll"].append(ditg_run(cfg, rate, cfg.secs, seed, work, poll=True))
                print(rate, i, runs["linkperf"][-1], runs["ditg"][-1], runs["ditg_poll"][-1:], file=sys.stderr)
            results["rates"][rate] = runs
        for rate in [int(float(r)) for r in cfg.scan.split(",") if r]:
            lp = linkperf_run(cfg, rate, cfg.secs, 7)
            dg = ditg_run(cfg, rate, cfg.secs, 7, work)
            results["scan"][rate] = {"linkperf": lp, "ditg": dg}
            print("scan", rate, lp, dg, file=sys.stderr)
    finally:
        server.terminate()
        recv.terminate()
        server.wait()
        recv.wait()
    if cfg.out:
        with open(cfg.out, "w") as f:
            json.dump(results, f, indent=1)
    print(f"| rate (pkt/s) | linkperf p50 / p99 error (us) | D-ITG p50 / p99 error (us) | p99 ratio | "
          f"linkperf / D-ITG CPU per packet (us) | linkperf / D-ITG misses |")
    print("|---|---|---|---|---|---|")
    def miss(rs):
        return 100 * median_of(rs, "misses") / max(median_of(rs, "due"), 1)

    for rate, runs in results["rates"].items():
        lp = runs["linkperf"]
        for name in ("ditg", "ditg_poll"):
            dg = runs[name]
            if not dg:
                continue
            label = f"{rate}" + (" (D-ITG -poll)" if name == "ditg_poll" else "")
            print(f"| {label} | {median_of(lp, 'p50_us'):.1f} / {median_of(lp, 'p99_us'):.1f} | "
                  f"{median_of(dg, 'p50_us'):.1f} / {median_of(dg, 'p99_us'):.1f} | "
                  f"{median_of(lp, 'p99_us') / median_of(dg, 'p99_us'):.2f}x | "
                  f"{median_of(lp, 'cpu_us_per_packet'):.2f} / {median_of(dg, 'cpu_us_per_packet'):.2f} | "
                  f"{miss(lp):.2f} % / {miss(dg):.2f} % |")
    if results["scan"]:
        print("\n| rate (pkt/s) | linkperf misses | D-ITG misses | linkperf sent/due | D-ITG sent/due |")
        print("|---|---|---|---|---|")
        for rate, r in results["scan"].items():
            lp, dg = r["linkperf"], r["ditg"]
            print(f"| {rate} | {100 * lp['misses'] / lp['due']:.2f} % | {100 * dg['misses'] / dg['due']:.2f} % | "
                  f"{lp['sent']}/{lp['due']} | {dg['sent']}/{dg['due']} |")


if __name__ == "__main__":
    main()
