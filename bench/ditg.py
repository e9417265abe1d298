#!/usr/bin/env python3
"""Poisson traffic, linkperf vs D-ITG on loopback: timer precision, CPU per
packet, and the highest Poisson rate sent with < 1 % schedule misses.

For each rate (default 10k, 100k, 500k packets/s) it runs `--runs`
interleaved rounds (linkperf, then D-ITG in each of `--ditg-modes`) of
Poisson traffic of 100-byte UDP payloads for `--secs` seconds and reports
medians of:
  - the timer error: |actual - scheduled| send time of every packet, p50
    and p99. linkperf reports it per sender (schedule.error_*_us; the
    actual time is read just before the send call that carries the
    packet). D-ITG does not report its schedule, so it replays a schedule
    this script draws (ITGSend -Ft: inter-departure times from a file,
    Poisson, same mean) and the actual times are the txTime of its sender
    log (ITGDec -l), stamped as it sends; the schedule is anchored at its
    first packet. Both follow an absolute schedule: a late packet is sent at
    once (D-ITG's default -j 1, "guarantee the mean packet rate");
  - schedule misses: packets sent more than 1 ms late, plus packets due
    before the end but never sent (both tools counted the same way; D-ITG
    is asked for the packets due in --secs by count, -z, and given up to
    three times as long to send them);
  - CPU per packet sent: the sender process's rusage (user + system, all
    threads, whole life) over the packets it sent.
D-ITG gets the conditions linkperf's sender gives itself: ITGSend runs at
nice -20 with a 1 ns timer slack (inherited by its threads; linkperf's
stream threads set both). Its modes: `timer` (its default sleeps) and
`poll` (-poll: busy-waits gaps under 1 ms); each rate's verdict is against
the mode with the lower p99.

With --scan, `--scan-runs` interleaved rounds at each scan rate find each
tool's highest rate whose median misses stay under 1 % (a scan rate among
--rates reuses those runs).

Run it under the test lock on the shared machine:
    flock /tmp/lp-test.lock python3 bench/ditg.py --runs 5 --scan 20000,50000,100000,200000,500000,1000000
Needs ITGSend, ITGRecv and ITGDec (Debian package d-itg) and a release
build of linkperf. Not part of the test suite. See bench/README.md.
"""

import argparse
import ctypes
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
from benchlib import HOST, log, loadavg  # noqa: E402

SIZE = 100
LATE_LIMIT_US = 1000.0
PR_SET_TIMERSLACK = 29
LIBC = ctypes.CDLL(None, use_errno=True)


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_measured(argv, timeout, **kw):
    """Runs argv to completion; returns (stdout, stderr, CPU seconds it used)."""
    c0 = children_cpu()
    p = subprocess.run(argv, capture_output=True, timeout=timeout, **kw)
    return p.stdout.decode(), p.stderr.decode(), children_cpu() - c0


def boost():
    """In the child before exec: what linkperf's stream threads set for themselves."""
    LIBC.prctl(PR_SET_TIMERSLACK, ctypes.c_ulong(1), 0, 0, 0)
    try:
        os.setpriority(os.PRIO_PROCESS, 0, -20)
    except OSError:
        pass


def percentile(xs, q):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def linkperf_run(cfg, rate, seed):
    mean_us = 1e6 / rate
    argv = [cfg.linkperf, "client", HOST, "-p", str(cfg.port), "-u", "-l", str(SIZE),
            "--traffic", f"idt=exp:{mean_us:.6f}us;size=const:{SIZE}",
            "--traffic-seed", str(seed), "-t", str(cfg.secs), "-i", "0", "-J", "--no-store"]
    load = loadavg()
    out, err, cpu = run_measured(argv, cfg.secs + 60)
    try:
        doc = json.loads(out)
        stream = doc["summary"]["streams"][0]
    except (ValueError, KeyError, IndexError):
        raise RuntimeError(f"linkperf at {rate}/s: {err.strip()[-300:]}")
    s = stream["sender"]["schedule"]
    sent = s["messages_sent"]
    return {
        "load": load,
        "p50_us": s["error_p50_us"],
        "p99_us": s["error_p99_us"],
        "due": s["messages_due"],
        "sent": sent,
        "late": s["late"],
        "misses": s["misses"],
        "cpu_us_per_packet": cpu * 1e6 / max(sent, 1),
        "received": stream["receiver"]["packets"],
    }


def tx_seconds(field):
    """D-ITG's txTime>H:M:S.micro as seconds of the day."""
    h, m, s = field.split(":")
    return int(h) * 3600 + int(m) * 60 + float(s)


def draw_schedule(rate, secs, seed, work):
    """A Poisson schedule of `rate` per second as D-ITG's -Ft file (ms per line)."""
    rng = random.Random(seed)
    n = int(rate * secs * 1.5) + 100
    gaps_s = [rng.expovariate(rate) for _ in range(n)]
    idt_file = os.path.join(work, f"idt-{rate}-{seed}.txt")
    with open(idt_file, "w") as f:
        # D-ITG refuses a gap that prints as 0: at least 1 ns.
        f.writelines(f"{max(g * 1e3, 1e-6):.6f}\n" for g in gaps_s)
    return gaps_s, idt_file


def ditg_run(cfg, rate, schedule, work, mode):
    gaps_s, idt_file = schedule
    log_file = os.path.join(work, "snd.log")
    txt = os.path.join(work, "snd.txt")
    for path in (log_file, txt):
        if os.path.exists(path):
            os.remove(path)
    # The packets due in --secs, by count (-z): D-ITG's clock starts some
    # milliseconds before its first packet, so a duration (-t) would end its
    # run before the schedule's end (anchored at that first packet) and count
    # its last packets as unsent. -t only bounds a sender far behind.
    due_total = sum(1 for _ in iter_due(gaps_s, cfg.secs))
    argv = ["ITGSend", "-a", HOST, "-rp", str(cfg.ditg_port), "-T", "UDP", "-Ft", idt_file,
            "-c", str(SIZE), "-z", str(due_total), "-t", str(int(3 * cfg.secs * 1000)),
            "-l", log_file]
    if mode == "poll":
        argv.append("-poll")
    load = loadavg()
    _, err, cpu = run_measured(argv, cfg.secs + 60, cwd=work, stdin=subprocess.DEVNULL,
                               preexec_fn=None if cfg.no_boost else boost)
    subprocess.run(["ITGDec", log_file, "-l", txt], cwd=work, capture_output=True, timeout=300)
    tx = []
    if os.path.exists(txt):
        with open(txt) as f:
            for line in f:
                i = line.find("txTime>")
                if i >= 0:
                    tx.append(tx_seconds(line[i + 7:].split()[0]))
    if not tx:
        log(f"D-ITG ({mode}) at {rate}/s left no log: {err.strip()[-300:]}")
        due = due_total
        return {"load": load, "p50_us": float("nan"), "p99_us": float("nan"), "due": due,
                "sent": 0, "late": 0, "misses": due, "cpu_us_per_packet": float("nan"),
                "failed": True}
    # Which gap of the file leads to the second packet is not documented:
    # take the alignment that fits best (the smaller median error).
    best = None
    for offset in (0, 1):
        sched, t = [tx[0]], tx[0]
        for g in gaps_s[offset:offset + len(tx) - 1]:
            t += g
            sched.append(t)
        errs = [abs(a - b) * 1e6 for a, b in zip(tx, sched)]
        late = sum(1 for a, b in zip(tx, sched) if (a - b) * 1e6 > LATE_LIMIT_US)
        cand = (percentile(errs, 0.5), errs, late, due_total)
        if best is None or cand[0] < best[0]:
            best = cand
    _, errs, late, due = best
    unsent = max(0, due - len(tx))
    return {
        "load": load,
        "p50_us": percentile(errs, 0.5),
        "p99_us": percentile(errs, 0.99),
        "due": due,
        "sent": len(tx),
        "late": late,
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


def med(runs, key):
    xs = [r[key] for r in runs if not r.get("failed")]
    return statistics.median(xs) if xs else float("nan")


def miss_pct(runs):
    return statistics.median(100.0 * r["misses"] / max(r["due"], 1) for r in runs)


def load_range(runs):
    loads = [r["load"] for r in runs]
    return f"{min(loads):.1f}-{max(loads):.1f}"


def round_of(cfg, rate, seed, work):
    """One interleaved round: linkperf, then D-ITG in each mode, on schedules of one seed."""
    out = {"linkperf": linkperf_run(cfg, rate, seed)}
    schedule = draw_schedule(rate, cfg.secs, seed, work)
    for mode in cfg.modes:
        time.sleep(cfg.pause)
        out[mode] = ditg_run(cfg, rate, schedule, work, mode)
    os.remove(schedule[1])
    time.sleep(cfg.pause)
    return out


def measure(cfg, rates, runs, work, seed0):
    results = {}
    for rate in rates:
        rounds = []
        for i in range(runs):
            r = round_of(cfg, rate, seed0 + i, work)
            rounds.append(r)
            log(f"{rate}/s run {i + 1}/{runs}: " + "; ".join(
                f"{k} load {v['load']:.1f} p99 {v['p99_us']:.0f} us, {v['sent']}/{v['due']} sent, "
                f"{v['misses']} misses, {v['cpu_us_per_packet']:.2f} us CPU/pkt" for k, v in r.items()))
        results[rate] = {tool: [r[tool] for r in rounds] for tool in rounds[0]}
    return results


def timing_table(cfg, results):
    lines = ["| rate (pkt/s) | sender | load | p50 / p99 error (us) | CPU per packet (us) | misses | "
             "p99 vs D-ITG's best | CPU vs the same |", "|---|---|---|---|---|---|---|---|"]
    verdicts = []
    for rate, by_tool in results.items():
        lp = by_tool["linkperf"]
        best = min(cfg.modes, key=lambda m: med(by_tool[m], "p99_us"))
        for tool, runs in by_tool.items():
            name = "linkperf" if tool == "linkperf" else f"D-ITG {tool}"
            ratio = cpu = ""
            if tool == "linkperf":
                ratio = f"{med(lp, 'p99_us') / med(by_tool[best], 'p99_us'):.3f}x"
                cpu = f"{med(lp, 'cpu_us_per_packet') / med(by_tool[best], 'cpu_us_per_packet'):.2f}x"
            lines.append(f"| {rate} | {name}{' (best)' if tool == best else ''} | {load_range(runs)} | "
                         f"{med(runs, 'p50_us'):.1f} / {med(runs, 'p99_us'):.1f} | "
                         f"{med(runs, 'cpu_us_per_packet'):.2f} | {miss_pct(runs):.2f} % | {ratio} | {cpu} |")
        p99_ok = med(lp, "p99_us") <= 0.5 * med(by_tool[best], "p99_us")
        cpu_ok = med(lp, "cpu_us_per_packet") <= med(by_tool[best], "cpu_us_per_packet")
        verdicts.append(f"- {rate}/s: p99 at most half of D-ITG's ({best}): "
                        f"{'met' if p99_ok else 'NOT met'}; CPU per packet no more: "
                        f"{'met' if cpu_ok else 'NOT met'}")
    return lines, verdicts


def scan_table(cfg, results):
    tools = ["linkperf"] + cfg.modes
    lines = ["| rate (pkt/s) | load | " + " | ".join(
        f"{'linkperf' if t == 'linkperf' else 'D-ITG ' + t} misses (sent / due)" for t in tools) + " |",
        "|---|---|" + "---|" * len(tools)]
    highest = {t: None for t in tools}
    for rate, by_tool in sorted(results.items()):
        cells = []
        for t in tools:
            runs = by_tool[t]
            pct = miss_pct(runs)
            if pct < 1.0 and (highest[t] is None or highest[t] < rate):
                highest[t] = rate
            cells.append(f"{pct:.2f} % ({med(runs, 'sent'):.0f} / {med(runs, 'due'):.0f})")
        all_runs = [r for t in tools for r in by_tool[t]]
        lines.append(f"| {rate} | {load_range(all_runs)} | " + " | ".join(cells) + " |")
    ditg = max((highest[m] or 0) for m in cfg.modes)
    lp = highest["linkperf"] or 0
    verdict = (f"- highest rate with < 1 % misses: linkperf {lp or 'none scanned'}, D-ITG "
               f"{ditg or 'none scanned'} (best mode): "
               + ("met" if ditg and lp >= 2 * ditg else "NOT met" if ditg else "D-ITG below every scan rate"))
    return lines, [verdict]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rates", default="10000,100000,500000")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--secs", type=float, default=2.0)
    ap.add_argument("--scan", default="", help="rates for the < 1 %% misses scan, e.g. 50000,100000,200000")
    ap.add_argument("--scan-runs", type=int, default=5)
    ap.add_argument("--ditg-modes", default="timer,poll", help="D-ITG modes: timer (default sleeps), poll (-poll)")
    ap.add_argument("--no-boost", action="store_true", help="run ITGSend without nice -20 and 1 ns timer slack")
    ap.add_argument("--pause", type=float, default=0.5)
    ap.add_argument("--port", type=int, default=5741)
    ap.add_argument("--ditg-port", type=int, default=8999)
    ap.add_argument("--linkperf", default=os.path.join(benchlib.REPO, "target/release/linkperf"))
    ap.add_argument("--out", default=None, help="write all runs as JSON here")
    cfg = ap.parse_args()
    cfg.modes = [m for m in cfg.ditg_modes.split(",") if m]
    if any(m not in ("timer", "poll") for m in cfg.modes) or not cfg.modes:
        ap.error(f"--ditg-modes: unknown mode in {cfg.ditg_modes!r}; accepted: timer, poll")
    work = tempfile.mkdtemp(prefix="lp-ditg-")
    benchlib.CHILDREN.append(subprocess.Popen(
        [cfg.linkperf, "server", "-p", str(cfg.port), "-B", HOST, "-q"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    benchlib.CHILDREN.append(subprocess.Popen(
        ["ITGRecv"], cwd=work, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL))
    benchlib.wait_port(cfg.port)
    time.sleep(1.0)
    rates = [int(float(r)) for r in cfg.rates.split(",") if r]
    scan = [int(float(r)) for r in cfg.scan.split(",") if r]
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    results = {"rates": measure(cfg, rates, cfg.runs, work, 1000)}
    # A scan rate already measured above (with as many runs) is not run again.
    again = [r for r in scan if r not in rates or cfg.scan_runs > cfg.runs]
    results["scan"] = {**{r: v for r, v in results["rates"].items() if r in scan},
                       **measure(cfg, again, cfg.scan_runs, work, 2000)}
    benchlib.stop_children()
    results["started"] = started
    results["ended"] = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    if cfg.out:
        with open(cfg.out, "w") as f:
            json.dump(results, f, indent=1)
    print(f"{started} to {results['ended']}; {cfg.secs} s per run; ITGSend "
          f"{'as is' if cfg.no_boost else 'at nice -20, 1 ns timer slack'}\n")
    verdicts = []
    if results["rates"]:
        lines, v = timing_table(cfg, results["rates"])
        print("\n".join(lines) + "\n")
        verdicts += v
    if results["scan"]:
        lines, v = scan_table(cfg, results["scan"])
        print("\n".join(lines) + "\n")
        verdicts += v
    print("\n".join(verdicts))


if __name__ == "__main__":
    main()
