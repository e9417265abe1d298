use super::*;
use serde_json::{json, Value};

/// A trimmed `linkperf client -J` document: two intervals, one stream.
pub(crate) fn sample_report(server: &str, received: f64) -> Value {
    json!({
        "schema": "linkperf/1",
        "software": "linkperf 0.1.0",
        "test": {"server": server, "port": 5211, "protocol": "tcp", "direction": "forward",
                 "duration_s": 1.0, "parallel": 1, "length": 131072},
        "start": {"timestamp_unix_ms": 1_700_000_000_000u64,
                  "local": {"hostname": "a", "cpus": 2}, "remote": {"hostname": "b", "cpus": 2},
                  "clock": "shared", "streams": []},
        "intervals": [
            {"start": 0.0, "end": 0.5, "omitted": false,
             "sum": {"bits_per_second": received, "sent_bytes": 1000, "sent_bits_per_second": received,
                     "received_bytes": 1000, "received_bits_per_second": received, "retransmits": 0},
             "streams": [{"id": 0, "direction": "client_to_server",
                          "sender": {"id": 0, "role": "sender", "start": 0.0, "end": 0.5, "bytes": 1000,
                                     "bits_per_second": received, "omitted": false,
                                     "tcp": {"retransmits": 0, "rtt_ms": 0.05, "cwnd_bytes": 65536}},
                          "receiver": {"id": 0, "role": "receiver", "start": 0.0, "end": 0.5, "bytes": 1000,
                                       "bits_per_second": received, "omitted": false}}]},
            {"start": 0.5, "end": 1.0, "omitted": false,
             "sum": {"bits_per_second": received, "sent_bytes": 1000, "sent_bits_per_second": received,
                     "received_bytes": 1000, "received_bits_per_second": received, "retransmits": 1},
             "streams": []}
        ],
        "summary": {"direction": "client_to_server",
                    "sent": {"bytes": 2000, "bits_per_second": received * 1.01, "seconds": 1.0, "retransmits": 1},
                    "received": {"bytes": 2000, "bits_per_second": received, "seconds": 1.0},
                    "tcp": {"rtt_ms": {"mean": 0.05}},
                    "cpu": {"local": {"total_percent": 12.5}, "remote": {"total_percent": 30.0}},
                    "streams": [{"id": 0, "sender": {"bytes": 2000, "bits_per_second": received * 1.01,
                                                     "seconds": 1.0},
                                 "receiver": {"bytes": 2000, "bits_per_second": received}}]},
        "warnings": [], "errors": [], "interrupted": false
    })
}

fn memory() -> Store {
    Store::open_at(Location::Memory).unwrap()
}

#[test]
fn run_round_trip_keeps_columns_samples_and_json() {
    let mut s = memory();
    // A rate whose shortest decimal form needs 17 digits: JSON must give it back exactly.
    let rate = 102_318_077_745.157_01;
    let report = sample_report("10.0.0.1", rate);
    let id = s
        .insert_run(&NewRun::from_test_report(report.clone()))
        .unwrap();
    let row = s.run(id, true).unwrap().unwrap();
    assert_eq!(row.kind, "test");
    assert_eq!(row.host, "10.0.0.1");
    assert_eq!(row.started_unix_ms, 1_700_000_000_000);
    assert_eq!(row.metrics.received_bps, Some(rate));
    assert_eq!(row.metrics.sent_bps, Some(rate * 1.01));
    assert_eq!(row.metrics.cpu_local_percent, Some(12.5));
    assert_eq!(row.metrics.cpu_remote_percent, Some(30.0));
    assert_eq!(row.metrics.rtt_mean_ms, Some(0.05));
    assert_eq!(row.metrics.protocol.as_deref(), Some("tcp"));
    assert_eq!(row.report, Some(report.clone()));
    let reread = NewRun::from_test_report(row.report.unwrap());
    assert_eq!(
        reread.metrics.received_bps,
        Some(rate),
        "exact after a JSON round trip"
    );
    let samples = s.samples(id).unwrap();
    // 2 interval sums + 1 interval stream + summary sum + summary stream.
    assert_eq!(samples.len(), 5);
    assert_eq!(samples[0].interval_idx, -1);
    assert_eq!(samples[0].stream_id, -1);
    let iv1: Vec<_> = samples.iter().filter(|x| x.interval_idx == 1).collect();
    assert_eq!(iv1[0].retransmits, Some(1));
    let st = samples
        .iter()
        .find(|x| x.interval_idx == 0 && x.stream_id == 0)
        .unwrap();
    assert_eq!(st.cwnd_bytes, Some(65536));
    assert_eq!(st.received_bytes, Some(1000));
}

#[test]
fn ids_are_shared_and_list_is_newest_first() {
    let mut s = memory();
    let a = s
        .insert_run(&NewRun::from_test_report(sample_report("h1", 1.0)))
        .unwrap();
    let sweep = s
        .create_sweep(&NewSweep {
            host: "h2".into(),
            created_unix_ms: 5,
            spec: json!({"repeat": 2}),
            points: vec![json!({"window": "4K"})],
            planned_runs: 2,
        })
        .unwrap();
    let slot = SweepSlot {
        sweep_id: sweep,
        point: 0,
        repetition: 0,
    };
    let b = s
        .insert_run(&NewRun::from_test_report(sample_report("h2", 2.0)).in_sweep(slot))
        .unwrap();
    let c = s
        .insert_run(&NewRun::other("rr", "h3", 7, json!({"rr": true})))
        .unwrap();
    assert!(a < sweep && sweep < b && b < c);
    assert_eq!(s.entry_kind(sweep).unwrap(), Some(EntryKind::Sweep));
    assert_eq!(s.entry_kind(c).unwrap(), Some(EntryKind::Run("rr".into())));
    assert_eq!(s.entry_kind(999).unwrap(), None);

    let top = s
        .list(&ListFilter {
            limit: 10,
            ..Default::default()
        })
        .unwrap();
    let ids: Vec<i64> = top.iter().map(|e| e.id).collect();
    assert_eq!(
        ids,
        vec![c, sweep, a],
        "sweep members are folded into the sweep"
    );
    assert_eq!(top[1].sweep_runs, Some(1));
    assert_eq!(top[1].sweep_status.as_deref(), Some("partial"));
    let all = s
        .list(&ListFilter {
            limit: 10,
            all: true,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(all.len(), 4);
    let page = s
        .list(&ListFilter {
            limit: 1,
            before: Some(sweep),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(page[0].id, a);
    assert_eq!(s.count(false).unwrap(), 3);

    // The same point and repetition cannot be stored twice.
    let dup = s.insert_run(&NewRun::from_test_report(sample_report("h2", 3.0)).in_sweep(slot));
    assert!(dup.unwrap_err().message.contains("already stored"));
    assert_eq!(s.sweep_runs(sweep, false).unwrap().len(), 1);

    // A point's simulated twin stays apart from its measured runs.
    let twin = s
        .insert_run(
            &NewRun::from_test_report(sample_report("h2", 4.0)).in_sweep(SweepSlot {
                repetition: crate::TWIN_REPETITION,
                ..slot
            }),
        )
        .unwrap();
    let measured = s.sweep_runs(sweep, false).unwrap();
    assert_eq!(measured.iter().map(|r| r.id).collect::<Vec<_>>(), [b]);
    let twins = s.sweep_twins(sweep, true).unwrap();
    assert_eq!(twins.iter().map(|r| r.id).collect::<Vec<_>>(), [twin]);
    assert_eq!(twins[0].metrics.received_bps, Some(4.0));
    let top = s
        .list(&ListFilter {
            limit: 10,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(
        top.iter().find(|e| e.id == sweep).unwrap().sweep_runs,
        Some(1)
    );
}

#[test]
fn a_failed_batch_stores_nothing() {
    let mut s = memory();
    let sweep = s
        .create_sweep(&NewSweep {
            host: "h".into(),
            created_unix_ms: 1,
            spec: json!({}),
            points: vec![json!({})],
            planned_runs: 1,
        })
        .unwrap();
    let slot = SweepSlot {
        sweep_id: sweep,
        point: 0,
        repetition: 0,
    };
    let run = NewRun::from_test_report(sample_report("h", 1.0)).in_sweep(slot);
    assert!(s.insert_runs(&[run.clone(), run]).is_err());
    assert_eq!(s.count(true).unwrap(), 1, "only the sweep itself");
    assert_eq!(s.sweep_runs(sweep, false).unwrap().len(), 0);
}

#[test]
fn newer_schema_is_refused_with_one_line() {
    let dir = std::env::temp_dir().join(format!("linkperf-store-test-{}", std::process::id()));
    let path = dir.join("a.db");
    let _ = std::fs::remove_file(&path);
    std::fs::create_dir_all(&dir).unwrap();
    {
        let mut s = Store::open_at(Location::Sqlite(path.clone())).unwrap();
        assert_eq!(s.schema_version().unwrap(), SCHEMA_VERSION);
        s.set_schema_version(SCHEMA_VERSION + 1).unwrap();
    }
    let e = Store::open_at(Location::Sqlite(path.clone()))
        .err()
        .unwrap();
    assert!(e.message.contains("newer"), "{e}");
    assert!(e.message.contains(&path.display().to_string()), "{e}");
    assert!(!e.message.contains('\n'));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_locations_fail_clearly() {
    assert!(Location::parse("").is_err());
    assert!(Location::parse("mysql://x").is_err());
    assert_eq!(
        Location::parse("postgres://u:secret@h/db")
            .unwrap()
            .describe(),
        "postgres://u@h/db"
    );
    let e = Store::open_at(Location::Sqlite("/proc/no/such/dir/a.db".into()))
        .err()
        .unwrap();
    assert!(e.message.contains("/proc/no/such/dir"), "{e}");
    let dir = std::env::temp_dir();
    let e = Store::open_at(Location::Sqlite(dir.clone())).err().unwrap();
    assert!(e.message.contains("directory"), "{e}");
    let junk = dir.join(format!("linkperf-junk-{}.db", std::process::id()));
    std::fs::write(&junk, vec![b'x'; 4096]).unwrap();
    let e = Store::open_at(Location::Sqlite(junk.clone()))
        .err()
        .unwrap();
    assert!(e.message.contains("not a database"), "{e}");
    let _ = std::fs::remove_file(&junk);
}

#[test]
fn postgres_backend_matches_sqlite() {
    let Some(url) = std::env::var("LINKPERF_TEST_PG")
        .ok()
        .filter(|u| !u.is_empty())
    else {
        linkperf_testsupport::skip(
            "set LINKPERF_TEST_PG=postgres://... to test the PostgreSQL backend (scripts/test sets it)",
        );
        return;
    };
    let schema = format!("lp_store_unit_{}", std::process::id());
    let url = postgres_schema_url(&url, &schema);
    create_postgres_schema(&url, &schema).unwrap();
    let mut pg = Store::open(Some(&url)).unwrap();
    assert!(pg.is_postgres());
    let mut lite = memory();
    for s in [&mut pg, &mut lite] {
        let sweep = s
            .create_sweep(&NewSweep {
                host: "h".into(),
                created_unix_ms: 1,
                spec: json!({"repeat": 2}),
                points: vec![json!({"w": "4K"}), json!({"w": "8K"})],
                planned_runs: 4,
            })
            .unwrap();
        for p in 0..2 {
            for r in 0..2 {
                let slot = SweepSlot {
                    sweep_id: sweep,
                    point: p,
                    repetition: r,
                };
                s.insert_run(
                    &NewRun::from_test_report(sample_report("h", (p * 10 + r) as f64))
                        .in_sweep(slot),
                )
                .unwrap();
            }
        }
        s.set_sweep_status(sweep, "complete").unwrap();
    }
    let a = pg.sweep(1).unwrap().unwrap();
    let b = lite.sweep(1).unwrap().unwrap();
    assert_eq!(a, b);
    let ra = pg.sweep_runs(1, true).unwrap();
    let rb = lite.sweep_runs(1, true).unwrap();
    assert_eq!(ra, rb);
    assert_eq!(pg.samples(2).unwrap(), lite.samples(2).unwrap());
    let f = ListFilter {
        limit: 10,
        all: true,
        ..Default::default()
    };
    assert_eq!(pg.list(&f).unwrap(), lite.list(&f).unwrap());
    for s in [&mut pg, &mut lite] {
        s.insert_run(&NewRun::from_rr_report(rr_doc())).unwrap();
        s.insert_run(&NewRun::other("campaign", "ctl", 5, campaign_doc()))
            .unwrap();
    }
    assert_eq!(pg.list(&f).unwrap(), lite.list(&f).unwrap());
    assert_eq!(pg.run(6, true).unwrap(), lite.run(6, true).unwrap());
    assert_eq!(pg.rr_sizes(6).unwrap(), lite.rr_sizes(6).unwrap());
    pg.set_schema_version(SCHEMA_VERSION + 1).unwrap();
    let e = Store::open(Some(&url)).err().unwrap();
    assert!(e.message.contains("newer"), "{e}");
    drop_postgres_schema(&url, &schema).unwrap();

    // A schema with no tables is no archive to a reader; a version-1 one is upgraded.
    create_postgres_schema(&url, &schema).unwrap();
    let e = Store::open_existing(Some(&url)).err().unwrap();
    assert!(e.usage && e.message.contains("no archive"), "{e}");
    let mut raw = Store {
        conn: location::open_postgres(&url, "test").unwrap(),
        location: Location::Postgres(url.clone()),
    };
    version_1_archive(&mut raw);
    drop(raw);
    let mut up = Store::open_existing(Some(&url)).unwrap();
    assert_eq!(up.schema_version().unwrap(), SCHEMA_VERSION);
    let m = up.run(1, false).unwrap().unwrap().metrics;
    assert_eq!((m.flows, m.hosts), (Some(2), Some(3)));
    drop_postgres_schema(&url, &schema).unwrap();
}

/// A trimmed `linkperf campaign run -J` document: two sessions of one UDP
/// phase with two flows between three hosts.
fn campaign_doc() -> Value {
    let phase = |session: u32, received: f64| {
        json!({"name": "fwd", "session": session, "duration_s": 2.0,
               "aggregate": {"received_bits_per_second": received, "sent_bits_per_second": 20e6},
               "hosts": [],
               "flows": [
                   {"from": "a", "to": "b", "sent": {"bytes": 2_500_000u64},
                    "received": {"bytes": 2_400_000u64, "loss_percent": 4.0}},
                   {"from": "a", "to": "c", "sent": {"bytes": 2_500_000u64},
                    "received": {"bytes": 2_500_000u64, "loss_percent": 0.0}}]})
    };
    json!({"schema": "linkperf/1", "id": null, "name": "t", "sessions": 2,
           "phases": [phase(1, 19e6), phase(2, 17e6)], "interrupted": false})
}

#[test]
fn campaigns_get_their_aggregate_flows_and_hosts() {
    let mut s = memory();
    let id = s
        .insert_run(&NewRun::other("campaign", "ctl", 5, campaign_doc()))
        .unwrap();
    let m = s.run(id, false).unwrap().unwrap().metrics;
    assert_eq!(m.received_bps, Some(18e6), "mean of the sessions");
    assert_eq!(m.sent_bps, Some(20e6));
    assert_eq!((m.flows, m.hosts), (Some(2), Some(3)));
    assert_eq!(m.duration_s, Some(4.0));
    // 200 kB of 10 MB sent were not received.
    assert!((m.loss_percent.unwrap() - 2.0).abs() < 1e-9, "{m:?}");
    let listed = s
        .list(&ListFilter {
            limit: 5,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(listed[0].metrics, m);
}

/// A trimmed `linkperf rr --sizes -J` document.
fn rr_doc() -> Value {
    let p = |p50: f64| {
        json!({"count": 100, "min": p50 / 2.0, "mean": p50 * 1.1, "p50": p50, "p90": p50 * 1.5,
               "p99": p50 * 3.0, "p999": p50 * 4.0, "max": p50 * 5.0, "stddev": p50 / 10.0})
    };
    json!({"schema": "linkperf/1", "software": "linkperf 0.1.0",
           "test": {"kind": "rr", "server": "10.0.0.9", "port": 5201, "protocol": "udp",
                    "mode": "sizes", "request": 64, "response": 64, "burst": 1,
                    "count": 100, "sizes": [64, 1024]},
           "start": {"timestamp_unix_ms": 1_700_000_000_500u64},
           "intervals": [],
           "summary": {"transactions": 200, "attempted": 202, "warmup": 4, "seconds": 0.5,
                       "transactions_per_second": 400.0, "rtt_ms": p(0.2), "lost": 2,
                       "loss_percent": 0.990_099},
           "histogram": [{"rtt_ms": 0.2, "count": 200}],
           "sizes": [{"size": 64, "request": 64, "response": 64, "transactions": 100, "lost": 1,
                      "rtt_ms": p(0.1)},
                     {"size": 1024, "request": 1024, "response": 1024, "transactions": 100,
                      "lost": 1, "rtt_ms": p(0.3)}],
           "fit": {"intercept_ms": 0.093, "slope_us_per_byte": 0.208, "r2": 1.0, "basis": "p50"},
           "warnings": [], "errors": [], "interrupted": false})
}

#[test]
fn rr_runs_keep_their_figures_and_sizes() {
    let mut s = memory();
    let id = s.insert_run(&NewRun::from_rr_report(rr_doc())).unwrap();
    let row = s.run(id, true).unwrap().unwrap();
    assert_eq!(row.kind, "rr");
    assert_eq!(row.host, "10.0.0.9");
    assert_eq!(row.started_unix_ms, 1_700_000_000_500);
    assert_eq!(row.metrics.protocol.as_deref(), Some("udp"));
    assert_eq!(row.metrics.loss_percent, Some(0.990_099));
    assert_eq!(row.report, Some(rr_doc()));
    let q = row.rr.unwrap();
    assert_eq!(q.mode, "sizes");
    assert_eq!((q.transactions, q.attempted), (Some(200), Some(202)));
    assert_eq!((q.rtt_p50_ms, q.rtt_p99_ms), (Some(0.2), Some(0.2 * 3.0)));
    assert_eq!(q.fit_slope_us_per_byte, Some(0.208));
    let sizes = s.rr_sizes(id).unwrap();
    assert_eq!(sizes.len(), 2);
    assert_eq!((sizes[1].size, sizes[1].rtt_p50_ms), (1024, Some(0.3)));
    let listed = s
        .list(&ListFilter {
            limit: 5,
            kind: Some("rr".into()),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(listed[0].rr.as_ref().unwrap().rtt_p50_ms, Some(0.2));
}

#[test]
fn the_senders_congestion_control_is_recorded() {
    let mut doc = sample_report("h", 1.0);
    doc["start"]["streams"] = json!([
        {"id": 0, "direction": "client_to_server", "local": {"congestion": "bbr"},
         "remote": {"congestion": "cubic"}},
        {"id": 1, "direction": "server_to_client", "local": {"congestion": "bbr"},
         "remote": {"congestion": "cubic"}}
    ]);
    assert_eq!(senders_congestion(&doc).as_deref(), Some("bbr,cubic"));
    doc["start"]["streams"] = json!([{"id": 0, "direction": "server_to_client",
                                      "remote": {"congestion": "reno"}}]);
    let mut s = memory();
    let id = s.insert_run(&NewRun::from_test_report(doc)).unwrap();
    let m = s.run(id, false).unwrap().unwrap().metrics;
    assert_eq!(m.congestion.as_deref(), Some("reno"));
}

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("lp-store-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn readers_never_create_an_archive_and_writers_need_its_directory() {
    let dir = scratch("open");
    let missing_dir = dir.join("typo").join("x.db");
    let text = missing_dir.display().to_string();
    for e in [
        Store::open_existing(Some(&text)).err().unwrap(),
        Store::open(Some(&text)).err().unwrap(),
        check_writable(Some(&text)).unwrap_err(),
    ] {
        assert!(e.usage, "{e}");
        assert!(
            e.message.contains(&dir.join("typo").display().to_string()),
            "{e}"
        );
        assert!(e.message.contains("does not exist"), "{e}");
    }
    assert!(!dir.join("typo").exists(), "no directory was created");
    let missing_file = dir.join("x.db");
    let text = missing_file.display().to_string();
    let e = Store::open_existing(Some(&text)).err().unwrap();
    assert!(e.usage && e.message.contains("no archive"), "{e}");
    assert!(!missing_file.exists(), "a reader created {text}");
    check_writable(Some(&text)).unwrap();
    drop(Store::open(Some(&text)).unwrap());
    assert!(missing_file.exists());
    assert_eq!(
        Store::open_existing(Some(&text))
            .unwrap()
            .count(true)
            .unwrap(),
        0
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A version-1 archive as linkperf 0.1 left it, holding one campaign.
fn version_1_archive(c: &mut Store) {
    let pg = c.is_postgres();
    c.conn
        .batch("CREATE TABLE schema_version (version BIGINT NOT NULL)")
        .unwrap();
    c.conn.batch(&schema::tables_v1(pg)).unwrap();
    c.conn
        .batch("INSERT INTO schema_version (version) VALUES (1)")
        .unwrap();
    c.conn
        .execute(
            "INSERT INTO entries (kind, parent, created_unix_ms, host) VALUES ('campaign', NULL, 5, 'ctl')",
            &[],
        )
        .unwrap();
    c.conn
        .execute(
            "INSERT INTO runs (id, kind, started_unix_ms, host, interrupted, report) \
             VALUES (1, 'campaign', 5, 'ctl', 0, $1)",
            &[campaign_doc().to_string().into()],
        )
        .unwrap();
}

#[test]
fn a_version_1_archive_is_upgraded_and_its_campaigns_filled_in() {
    let dir = scratch("v1");
    let path = dir.join("a.db");
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        let mut raw = Store {
            conn: Conn::Sqlite(conn),
            location: Location::Sqlite(path.clone()),
        };
        version_1_archive(&mut raw);
    }
    let mut s = Store::open_existing(Some(&path.display().to_string())).unwrap();
    assert_eq!(s.schema_version().unwrap(), SCHEMA_VERSION);
    let m = s.run(1, false).unwrap().unwrap().metrics;
    assert_eq!(
        (m.flows, m.hosts, m.received_bps),
        (Some(2), Some(3), Some(18e6))
    );
    let id = s.insert_run(&NewRun::from_rr_report(rr_doc())).unwrap();
    assert_eq!(s.rr_sizes(id).unwrap().len(), 2);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Several first users of one new SQLite archive at once (a campaign's
/// clients, a sweep and a reader) all get it: SQLite refuses the switch to WAL
/// at once, without its busy wait, while another connection holds the new
/// file, and the store waits for it as it waits for any lock.
#[test]
fn first_users_of_a_new_archive_at_once_all_open_it() {
    let dir = scratch("first-users");
    let users = 4;
    for round in 0..60 {
        let path = dir.join(format!("a{round}.db"));
        let start = std::sync::Arc::new(std::sync::Barrier::new(users));
        let opened: Vec<Result<(), String>> = (0..users)
            .map(|_| {
                let (path, start) = (path.clone(), start.clone());
                std::thread::spawn(move || {
                    start.wait();
                    Store::open_at(Location::Sqlite(path))
                        .map(drop)
                        .map_err(|e| e.to_string())
                })
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|t| t.join().unwrap())
            .collect();
        for r in opened {
            r.unwrap_or_else(|e| panic!("round {round}: {e}"));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
