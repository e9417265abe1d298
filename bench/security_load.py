#!/usr/bin/env python3
"""Hostile load on a linkperf server over loopback (docs/security.md).

Starts `linkperf server` with its default limits, then:
  1. opens N hostile connections from four 127/8 source addresses, each
     sending a control preamble and a frame length one byte short of the
     4 MiB maximum, then one byte every 2 s (slow), reopening any the server
     closes; samples the server's RSS (VmRSS, VmHWM);
  2. times a legitimate `linkperf client -t T` with and without that load,
     interleaved, and prints the medians and their ratio.
Bounded: N connections, ROUNDS rounds of one test each, all on loopback.

usage: bench/security_load.py [N] [ROUNDS] [T]
"""

import os
import socket
import statistics
import subprocess
import sys
import threading
import time

BIN = os.path.join(os.path.dirname(__file__), "..", "target", "release", "linkperf")
N = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 3
T = float(sys.argv[3]) if len(sys.argv) > 3 else 3.0
PORT = 5977


def rss(pid):
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            fields[key] = value.strip()
    return int(fields["VmRSS"].split()[0]) * 1024, int(fields["VmHWM"].split()[0]) * 1024


def hostile(index):
    s = socket.socket()
    s.bind((f"127.0.2.{1 + index % 4}", 0))
    s.settimeout(5)
    s.connect(("127.0.0.1", PORT))
    s.sendall(b"LPC1\x00\x3f\xff\xff")
    return s


class Load:
    """N slow connections, reopened when the server closes them."""

    def __init__(self, n):
        self.conns = [None] * n
        self.stop = threading.Event()
        self.reopened = 0
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self):
        while not self.stop.is_set():
            for i, c in enumerate(self.conns):
                if self.stop.is_set():
                    break
                try:
                    if c is None:
                        self.conns[i] = hostile(i)
                        self.reopened += 1
                    else:
                        c.send(b"x")
                except OSError:
                    if c is not None:
                        c.close()
                    self.conns[i] = None
            self.stop.wait(2.0)

    def open_count(self):
        return sum(1 for c in self.conns if c is not None)

    def close(self):
        self.stop.set()
        self.thread.join()
        for c in self.conns:
            if c is not None:
                c.close()


def legit():
    started = time.monotonic()
    r = subprocess.run(
        [BIN, "client", "127.0.0.1", "-p", str(PORT), "-t", str(T), "-J", "--no-store"],
        capture_output=True, timeout=120)
    took = time.monotonic() - started
    if r.returncode != 0:
        raise SystemExit(f"client failed: {r.stderr.decode()}")
    return took


def main():
    server = subprocess.Popen(
        [BIN, "server", "-p", str(PORT), "-B", "127.0.0.1", "-q"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.5)
        base_rss, _ = rss(server.pid)
        quiet, loaded = [], []
        peak_open, max_rss = 0, 0
        for _ in range(ROUNDS):
            quiet.append(legit())
            load = Load(N)
            load.thread.start()
            time.sleep(3.0)
            peak_open = max(peak_open, load.open_count())
            now, _ = rss(server.pid)
            max_rss = max(max_rss, now)
            loaded.append(legit())
            now, _ = rss(server.pid)
            max_rss = max(max_rss, now)
            load.close()
        _, hwm = rss(server.pid)
        print(f"hostile connections: {N} (open at the sample: {peak_open})")
        print(f"server RSS: idle {base_rss / 2**20:.1f} MiB, under load max {max_rss / 2**20:.1f} MiB,"
              f" peak (VmHWM) {hwm / 2**20:.1f} MiB")
        q, l = statistics.median(quiet), statistics.median(loaded)
        print(f"legit -t {T}: median {q:.2f} s quiet, {l:.2f} s under load, ratio {l / q:.3f}"
              f" (runs quiet {[round(x, 2) for x in quiet]}, loaded {[round(x, 2) for x in loaded]})")
    finally:
        server.kill()
        server.wait()


if __name__ == "__main__":
    main()
