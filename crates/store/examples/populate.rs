//! Fills an archive with synthetic runs through the store API, for the
//! archive benchmark (bench/sweep.py): `populate DB RUNS`.
//!
//! Half the runs are single tests, half belong to sweeps of 10 points x 10
//! repetitions, as a year of a team's measurements might look. Everything is
//! written in one transaction per 10,000 runs.

use linkperf_store::{NewRun, NewSweep, Store, SweepSlot};
use serde_json::json;
use std::time::Instant;

fn report(k: u64, rate: f64) -> serde_json::Value {
    let interval = |i: u64| {
        json!({"start": i as f64, "end": i as f64 + 1.0, "omitted": false,
               "sum": {"bits_per_second": rate, "sent_bytes": (rate / 8.0) as u64,
                       "sent_bits_per_second": rate, "received_bytes": (rate / 8.0) as u64,
                       "received_bits_per_second": rate, "retransmits": k % 3},
               "streams": [{"id": 0, "direction": "client_to_server",
                            "sender": {"id": 0, "role": "sender", "start": i as f64, "end": i as f64 + 1.0,
                                       "bytes": (rate / 8.0) as u64, "bits_per_second": rate, "omitted": false,
                                       "tcp": {"retransmits": k % 3, "rtt_ms": 10.2, "cwnd_bytes": 1_048_576}},
                            "receiver": {"id": 0, "role": "receiver", "start": i as f64, "end": i as f64 + 1.0,
                                         "bytes": (rate / 8.0) as u64, "bits_per_second": rate, "omitted": false}}]})
    };
    json!({
        "schema": "linkperf/1", "software": "linkperf 0.1.0",
        "test": {"server": format!("10.0.{}.{}", (k / 250) % 250, k % 250), "port": 5211,
                 "protocol": "tcp", "direction": "forward", "duration_s": 3.0, "parallel": 1,
                 "length": 131072, "sndbuf": 4_194_304, "rcvbuf": 4_194_304},
        "start": {"timestamp_unix_ms": 1_700_000_000_000u64 + k * 10_000,
                  "local": {"hostname": "client", "kernel": "Linux 6.1", "cpus": 8},
                  "remote": {"hostname": "server", "kernel": "Linux 6.1", "cpus": 8},
                  "clock": "independent", "streams": []},
        "intervals": [interval(0), interval(1), interval(2)],
        "summary": {"direction": "client_to_server",
                    "sent": {"bytes": (rate * 3.0 / 8.0) as u64, "bits_per_second": rate, "seconds": 3.0,
                             "retransmits": k % 3},
                    "received": {"bytes": (rate * 3.0 / 8.0) as u64, "bits_per_second": rate, "seconds": 3.0},
                    "tcp": {"rtt_ms": {"mean": 10.2, "min": 10.0, "max": 11.0}},
                    "cpu": {"local": {"total_percent": 20.0}, "remote": {"total_percent": 35.0}},
                    "streams": [{"id": 0, "sender": {"bytes": (rate * 3.0 / 8.0) as u64, "bits_per_second": rate,
                                                     "seconds": 3.0},
                                 "receiver": {"bytes": (rate * 3.0 / 8.0) as u64, "bits_per_second": rate}}]},
        "warnings": [], "errors": [], "interrupted": false
    })
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 3 {
        eprintln!("usage: populate DB RUNS");
        std::process::exit(2);
    }
    let total: u64 = args[2].parse().expect("RUNS is a number");
    let mut store = Store::open(Some(&args[1])).unwrap_or_else(|e| {
        eprintln!("populate: {e}");
        std::process::exit(1);
    });
    let started = Instant::now();
    let mut batch = Vec::new();
    let mut sweep: Option<i64> = None;
    for k in 0..total {
        let rate = 9.0e8 + (k % 97) as f64 * 1e6;
        let mut run = NewRun::from_test_report(report(k, rate));
        // Runs 50..99 of every hundred belong to a sweep of 10 points x 5 repetitions.
        let in_hundred = k % 100;
        if in_hundred >= 50 {
            if in_hundred == 50 {
                // Flush first: the sweep's id must come after the runs before it.
                store.insert_runs(&batch).expect("insert");
                batch.clear();
                let id = store
                    .create_sweep(&NewSweep {
                        host: run.host.clone(),
                        created_unix_ms: run.started_unix_ms,
                        spec: json!({"vary": [{"name": "window", "values": ["4K","8K","16K","32K","64K","128K","256K","512K","1M","2M"], "geometric": true}],
                                     "repeat": 5, "order": "fixed", "seed": null}),
                        points: (0..10).map(|p| json!({"window": format!("{}K", 4 << p)})).collect(),
                        planned_runs: 50,
                    })
                    .expect("sweep");
                sweep = Some(id);
            }
            let j = in_hundred - 50;
            run = run.in_sweep(SweepSlot {
                sweep_id: sweep.expect("sweep created"),
                point: (j / 5) as i64,
                repetition: (j % 5) as i64,
            });
            if in_hundred == 99 {
                batch.push(run);
                store.insert_runs(&batch).expect("insert");
                batch.clear();
                store
                    .set_sweep_status(sweep.expect("sweep"), "complete")
                    .expect("status");
                continue;
            }
        }
        batch.push(run);
        if batch.len() >= 10_000 {
            store.insert_runs(&batch).expect("insert");
            batch.clear();
        }
    }
    store.insert_runs(&batch).expect("insert");
    let secs = started.elapsed().as_secs_f64();
    println!(
        "{{\"runs\": {total}, \"seconds\": {secs:.3}, \"runs_per_second\": {:.0}}}",
        total as f64 / secs
    );
}
