#!/usr/bin/env python3
"""TLS on the control connection: its added set-up time and (no) effect on
throughput, over loopback (docs/security.md, "TLS"). Interleaves plain and
TLS runs against one server started with --tls-cert (TLS not required).

    python3 bench/tls_setup.py [CONNECTS] [THROUGHPUT_RUNS]

Set-up: wall time of `linkperf client -n 1K` (process start, connect,
handshake, a 1 KiB test, teardown), median of CONNECTS each way; the
difference of the medians is the TLS handshake's cost. Throughput: the
receiver's rate of `-t 2`, median of THROUGHPUT_RUNS each way.
"""
import json, os, statistics, subprocess, sys, tempfile, time

BIN = os.environ.get("LINKPERF", "target/release/linkperf")
connects = int(sys.argv[1]) if len(sys.argv) > 1 else 25
runs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
tmp = tempfile.mkdtemp(prefix="lp-tls-bench-")
out = subprocess.run([BIN, "server", "--tls-gen-cert", tmp, "--tls-name", "127.0.0.1"],
                     check=True, capture_output=True, text=True).stdout
pin = out.strip().rsplit(" ", 1)[1]
port = "15399"
server = subprocess.Popen([BIN, "server", "-q", "-p", port, "-B", "127.0.0.1",
                           "--tls-cert", f"{tmp}/cert.pem", "--tls-key", f"{tmp}/key.pem"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
time.sleep(0.5)
env = dict(os.environ, LINKPERF_DB=f"{tmp}/archive.db")
base = [BIN, "client", "127.0.0.1", "-p", port, "--no-store"]
ways = {"plain": [], "tls": ["--tls-pin", pin]}
try:
    setup = {w: [] for w in ways}
    for _ in range(connects):
        for w, extra in ways.items():
            t = time.perf_counter()
            subprocess.run(base + extra + ["-n", "1K"], check=True, env=env,
                           stdout=subprocess.DEVNULL, timeout=30)
            setup[w].append((time.perf_counter() - t) * 1000)
    rate = {w: [] for w in ways}
    for _ in range(runs):
        for w, extra in ways.items():
            r = subprocess.run(base + extra + ["-t", "2", "-J"], check=True, env=env,
                               capture_output=True, text=True, timeout=60)
            rate[w].append(json.loads(r.stdout)["summary"]["received"]["bits_per_second"] / 1e9)
finally:
    server.kill()
for w in ways:
    print(f"{w:5}: set-up median {statistics.median(setup[w]):.2f} ms "
          f"(n={connects}), throughput median {statistics.median(rate[w]):.2f} Gbit/s "
          f"(n={runs}: {', '.join(f'{x:.2f}' for x in rate[w])})")
print(f"TLS adds {statistics.median(setup['tls']) - statistics.median(setup['plain']):.2f} ms "
      f"to set-up; throughput ratio tls/plain "
      f"{statistics.median(rate['tls']) / statistics.median(rate['plain']):.3f}")
