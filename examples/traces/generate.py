#!/usr/bin/env python3
"""Generates the example link traces in this directory (mahimahi format).

A trace is a list of packet delivery opportunities, one per line, each a time in whole
milliseconds from the start of the trace; at each one the link may deliver 1504 bytes. When
the trace ends it repeats, shifted by its last time. `linkperf testbed` reads them with the
`trace` key of a link direction (see docs/testbed.md, "Trace-driven links").

Every trace here is synthetic (no recorded third-party data) and reproducible: the random
ones use a fixed seed. Rerun with `python3 examples/traces/generate.py` to rewrite them.
"""

import math
import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))
BYTES = 1504  # per opportunity


def opportunities(rate_of_ms, duration_ms, rng=None):
    """Opportunity times for a capacity given per millisecond (bit/s).

    Without rng the opportunities are spread evenly (a running sum of the fractional count
    per ms); with rng each millisecond gets a Poisson number with that mean.
    """
    out = []
    credit = 0.0
    for ms in range(1, duration_ms + 1):
        mean = rate_of_ms(ms) / 8.0 / BYTES / 1000.0
        if rng is None:
            credit += mean
            n = int(credit)
            credit -= n
        else:
            n = poisson(rng, mean)
        out.extend([ms] * n)
    if not out or out[-1] != duration_ms:
        out.append(duration_ms)  # the last time is the period
    return out


def poisson(rng, mean):
    if mean <= 0:
        return 0
    limit, k, p = math.exp(-mean), 0, 1.0
    while True:
        p *= rng.random()
        if p <= limit:
            return k
        k += 1


def constant(mbps):
    return lambda ms: mbps * 1e6


def steps():
    """2, 10 and 50 Mbit/s, 2 s each: a bottleneck that changes abruptly."""
    rates = [2e6, 10e6, 50e6]
    return lambda ms: rates[min((ms - 1) // 2000, 2)]


def cellular(rng, duration_ms):
    """A walking LTE user: capacity drifts in log space every 100 ms (1-40 Mbit/s, around
    12), with a few outages of 0.2-0.8 s (handovers, fading)."""
    rates = []
    level = math.log(12e6)
    outage = 0
    for _ in range(duration_ms // 100 + 1):
        level += rng.gauss(0, 0.25)
        level = min(max(level, math.log(1e6)), math.log(40e6))
        if outage == 0 and rng.random() < 0.01:
            outage = rng.randint(2, 8)
        rates.append(0.0 if outage > 0 else math.exp(level))
        outage = max(outage - 1, 0)
    return lambda ms: rates[(ms - 1) // 100]


def leo(rng):
    """A low-earth-orbit satellite path: 20 Mbit/s on average, re-drawn every second
    (12-28 Mbit/s), with an 80 ms interruption every 15 s when the satellite changes."""
    per_second = [rng.uniform(12e6, 28e6) for _ in range(31)]

    def rate(ms):
        if (ms - 1) % 15000 >= 15000 - 80:
            return 0.0
        return per_second[(ms - 1) // 1000]
    return rate


def write(name, times, description):
    path = os.path.join(HERE, name)
    with open(path, "w") as f:
        f.write("".join(f"{t}\n" for t in times))
    mean = len(times) * BYTES * 8 / (times[-1] / 1000) / 1e6
    print(f"{name}: {len(times)} opportunities over {times[-1] / 1000:g} s, "
          f"mean {mean:.2f} Mbit/s -- {description}")


def main():
    write("constant-24mbps.trace", opportunities(constant(24.064), 1000),
          "two opportunities every millisecond")
    write("steps-2-10-50mbps.trace", opportunities(steps(), 6000),
          "2, 10, 50 Mbit/s for 2 s each")
    write("cellular-walk.trace", opportunities(cellular(random.Random(12), 30000), 30000,
                                               random.Random(13)),
          "synthetic walking LTE user with outages")
    write("leo-handover.trace", opportunities(leo(random.Random(14)), 30000, random.Random(15)),
          "synthetic LEO satellite path, 80 ms gap every 15 s")


if __name__ == "__main__":
    main()
