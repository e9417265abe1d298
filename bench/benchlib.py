"""What the loopback benchmarks share: the host, the repository, child processes
stopped at exit, a free port, waiting for a listener, the load average."""

import atexit
import os
import socket
import subprocess
import sys
import time

HOST = "127.0.0.1"
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Processes a benchmark started; stopped (newest first) when it exits.
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


atexit.register(stop_children)


def free_port():
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def wait_port(port, timeout=10):
    end = time.time() + timeout
    while time.time() < end:
        try:
            socket.create_connection((HOST, port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"nothing listens on {HOST}:{port}")


def loadavg():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def build_linkperf(target_dir, no_build):
    """The release linkperf binary in `target_dir`, built first unless `no_build`."""
    if not no_build:
        log("building linkperf (release)...")
        subprocess.run(["cargo", "build", "--release", "-p", "linkperf"], cwd=REPO, check=True,
                       env={**os.environ, "CARGO_TARGET_DIR": target_dir})
    return os.path.join(target_dir, "release", "linkperf")
