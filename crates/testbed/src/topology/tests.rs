//! Parsing tests: the documented examples, every key, and one-line errors.

use super::*;
use crate::framing::Framing;
use crate::impairment::JitterDistribution;
use std::net::{Ipv4Addr, Ipv6Addr};

const ISSUE_EXAMPLE: &str = r#"
[[host]]
name = "a"
address = "10.50.0.1/24"      # optional; assigned automatically when absent
[[host]]
name = "b"
address = "10.50.0.2/24"
[[link]]
ends = ["a", "b"]
rate = "40M"                  # bit/s, both directions
delay = "7ms"                 # one-way, each direction
queue = "200K"                # bytes
[link.b_to_a]                 # per-direction override ("a_to_b" likewise)
loss = "1%"
[[switch]]                    # a learning bridge; links may end on it
name = "s1"
"#;

fn err(text: &str) -> String {
    Topology::from_toml_str("t", text).unwrap_err().to_string()
}

#[test]
fn the_issue_example_parses_with_per_direction_override() {
    let t = Topology::from_toml_str("demo", ISSUE_EXAMPLE).unwrap();
    assert_eq!(t.name, "demo");
    assert_eq!(t.hosts.len(), 2);
    assert_eq!(t.hosts[1].ipv4, Ipv4Addr::new(10, 50, 0, 2));
    assert_eq!(t.hosts[1].ipv6, "fd00:50::2".parse::<Ipv6Addr>().unwrap());
    assert_eq!(t.switches[0].name, "s1");
    let l = &t.links[0];
    assert_eq!(l.mtu, 1500);
    assert!(l.offload, "offloads are on by default");
    for d in [&l.a_to_b, &l.b_to_a] {
        assert_eq!(d.rate_bps, 40_000_000);
        assert_eq!(d.delay_ns, 7_000_000);
        assert_eq!((d.queue_bytes, d.queue_packets), (Some(200 * 1024), None));
    }
    assert_eq!(l.a_to_b.loss, 0.0);
    assert!((l.b_to_a.loss - 0.01).abs() < 1e-12);
}

#[test]
fn addresses_are_assigned_around_explicit_ones() {
    let t = Topology::from_toml_str(
        "x",
        r#"
        name = "named"
        subnet = "192.168.77.0/24"
        [[host]]
        name = "a"
        [[host]]
        name = "b"
        address = "192.168.77.1"
        [[host]]
        name = "c"
        address6 = "fd00:1::99/64"
        [[switch]]
        name = "s"
        [[link]]
        ends = ["a", "s"]
        [[link]]
        ends = ["b", "s"]
        [[link]]
        ends = ["c", "s"]
        "#,
    )
    .unwrap();
    assert_eq!(t.name, "named");
    let v4: Vec<String> = t
        .hosts
        .iter()
        .map(|h| format!("{}/{}", h.ipv4, h.ipv4_prefix))
        .collect();
    assert_eq!(
        v4,
        ["192.168.77.2/24", "192.168.77.1/24", "192.168.77.3/24"]
    );
    assert_eq!(t.hosts[2].ipv6.to_string(), "fd00:1::99");
    assert_eq!(t.hosts[0].ipv6.to_string(), "fd00:50::2");
}

#[test]
fn presets_are_overridden_by_explicit_keys() {
    let t = Topology::from_toml_str(
        "x",
        r#"
        [[host]]
        name = "a"
        [[host]]
        name = "b"
        [[link]]
        ends = ["a", "b"]
        preset = "oc3c-atm"
        delay = "2ms"
        [link.a_to_b]
        ber = 1e-6
        framing = "ethernet"
        "#,
    )
    .unwrap();
    let l = &t.links[0];
    assert_eq!(l.mtu, 9180);
    assert_eq!(l.b_to_a.framing, Framing::AtmAal5);
    assert_eq!(l.a_to_b.framing, Framing::Ethernet);
    assert_eq!(l.a_to_b.rate_bps, 149_760_000);
    assert_eq!(l.a_to_b.delay_ns, 2_000_000);
    assert_eq!(l.a_to_b.ber, 1e-6);
    assert_eq!(l.b_to_a.ber, 0.0);
}

#[test]
fn all_direction_keys_are_read() {
    let t = Topology::from_toml_str(
        "x",
        r#"
        seed = 9
        [[host]]
        name = "a"
        [[switch]]
        name = "s"
        [[link]]
        ends = ["a", "s"]
        mtu = 9000
        offload = false
        rate = 1000000
        jitter = "1ms"
        jitter_distribution = "pareto"
        reorder = true
        gilbert = { p = "1%", r = "25%", bad_loss = "50%" }
        queue_packets = 30
        framing = "none"
        "#,
    )
    .unwrap();
    assert_eq!(t.seed, Some(9));
    let d = &t.links[0].a_to_b;
    assert_eq!(t.links[0].mtu, 9000);
    assert!(!t.links[0].offload);
    assert_eq!(d.rate_bps, 1_000_000);
    assert_eq!(d.jitter_ns, 1_000_000);
    assert_eq!(d.jitter_distribution, JitterDistribution::Pareto);
    assert!(d.reorder);
    let ge = d.gilbert.unwrap();
    assert_eq!(
        (ge.p, ge.r, ge.bad_loss, ge.good_loss),
        (0.01, 0.25, 0.5, 0.0)
    );
    assert_eq!((d.queue_bytes, d.queue_packets), (None, Some(30)));
    assert_eq!(d.framing, Framing::None);
}

#[test]
fn errors_name_file_line_and_key_on_one_line() {
    let e = err("[[host]]\nname = \"a\"\ncolour = \"red\"\n");
    assert!(e.contains("line 3") && e.contains("colour"), "{e}");
    let e = err("[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n[[link]]\nends = [\"a\", \"b\"]\n[link.a_to_b]\nloss = \"150%\"\n");
    assert!(
        e.starts_with("topology 't': line 8: link.a_to_b.loss:"),
        "{e}"
    );
    let e = err("[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n[[link]]\nends = [\"a\", \"b\"]\nrate = \"fast\"\n");
    assert!(e.contains("line 7: link.rate: 'fast' is not a rate"), "{e}");
    let e =
        err("[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n[[link]]\nends = [\"a\", \"c\"]\n");
    assert!(
        e.contains("'c' is not a [[host]], [[switch]] or [[router]] name"),
        "{e}"
    );
    let e = err("[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n[[link]]\nends = [\"a\", \"b\"]\npreset = \"warp\"\n");
    assert!(
        e.contains("unknown preset 'warp'") && e.contains("oc3c-atm"),
        "{e}"
    );
    let e = err("[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n[[link]]\nends = [\"a\", \"b\"]\n[link.sideways]\n");
    assert!(e.contains("line 7") && e.contains("sideways"), "{e}");
    for e in [
        err("[[host]]\nname = \"bad name\"\n"),
        err("[[host]]\nname = \"a\"\naddress = \"10.1.1\"\n"),
        err("[[host]]\nname = \"a\"\n[[host]]\nname = \"a\"\n"),
        err("[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n[[link]]\nends = [\"a\", \"b\"]\nmtu = 10\n"),
        err("[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n[[link]]\nends = [\"a\", \"b\"]\nber = 2.0\n"),
        err("[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n[[link]]\nends = [\"a\", \"b\"]\njitter_distribution = \"cauchy\"\n"),
        err("[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n[[link]]\nends = [\"a\", \"b\"]\ndelay = true\n"),
        err("name = \"x\"\n[[host]\n"),
        err(""),
    ] {
        assert!(!e.contains('\n') && e.starts_with("topology 't'"), "{e}");
    }
}

#[test]
fn shape_rules_multi_homed_hosts_no_switch_loops_and_connected() {
    // A host may have several links (one interface and address each).
    let t = Topology::from_toml_str(
        "t",
        r#"
        [[host]]
        name = "a"
        [[host]]
        name = "b"
        [[host]]
        name = "c"
        [[link]]
        ends = ["a", "b"]
        [[link]]
        ends = ["c", "a"]
        [[link]]
        ends = ["b", "c"]
        "#,
    )
    .unwrap();
    let a: Vec<String> = t.hosts[0]
        .interfaces
        .iter()
        .map(|i| format!("{}@{}", i.ipv4, i.link))
        .collect();
    assert_eq!(a, ["10.50.0.1@0", "10.50.0.4@1"]);
    let e = err(r#"
        [[host]]
        name = "a"
        [[switch]]
        name = "s1"
        [[switch]]
        name = "s2"
        [[link]]
        ends = ["a", "s1"]
        [[link]]
        ends = ["s1", "s2"]
        [[link]]
        ends = ["s2", "s1"]
        "#);
    assert!(
        e.starts_with("topology 't': line 13: link.ends: ") && e.contains("closes a loop"),
        "{e}"
    );
    // Hosts do not forward: c reaches a only through b, which is no path.
    let e = err(r#"
        [[host]]
        name = "a"
        [[host]]
        name = "b"
        [[host]]
        name = "c"
        [[link]]
        ends = ["a", "b"]
        [[link]]
        ends = ["b", "c"]
        "#);
    assert!(
        e.starts_with("topology 't': line 7: host.name: host 'c' cannot be reached from host 'a'")
            && !e.contains('\n'),
        "{e}"
    );
    // Plain segments need no routes: two separate pairs may share a testbed.
    let pairs = "[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n[[host]]\nname = \"c\"\n\
                 [[host]]\nname = \"d\"\n[[link]]\nends = [\"a\", \"b\"]\n\
                 [[link]]\nends = [\"c\", \"d\"]\n";
    assert!(Topology::from_toml_str("t", pairs).is_ok());
}

#[test]
fn the_two_path_example_gives_each_interface_its_address() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/testbeds/two-path.toml");
    let t = Topology::from_file(&path).unwrap();
    let addrs: Vec<Vec<String>> = t
        .hosts
        .iter()
        .map(|h| {
            h.interfaces
                .iter()
                .map(|i| format!("{} {} link {}", i.ipv4, i.ipv6, i.link))
                .collect()
        })
        .collect();
    assert_eq!(
        addrs,
        [
            ["10.60.0.1 fd00:60::1 link 0", "10.60.0.3 fd00:60::3 link 1"],
            ["10.60.0.2 fd00:60::2 link 0", "10.60.0.4 fd00:60::4 link 1"]
        ]
    );
    assert!(t.hosts.iter().all(|h| h.mptcp));
}

#[test]
fn file_stem_names_the_testbed_and_bad_stems_are_explained() {
    let dir = std::env::temp_dir().join(format!("lp-topo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good = dir.join("wan-600km.toml");
    std::fs::write(&good, "[[host]]\nname = \"a\"\n").unwrap();
    assert_eq!(Topology::from_file(&good).unwrap().name, "wan-600km");
    let bad = dir.join("has space.toml");
    std::fs::write(&bad, "[[host]]\nname = \"a\"\nfoo = 1\n").unwrap();
    let e = Topology::from_file(&bad).unwrap_err().to_string();
    assert!(
        e.contains("has space.toml: line 3: unknown field `foo`"),
        "{e}"
    );
    std::fs::write(&bad, "[[host]]\nname = \"a\"\n").unwrap();
    let e = Topology::from_file(&bad).unwrap_err().to_string();
    assert!(e.contains("rename the file"), "{e}");
    let e = Topology::from_file(&dir.join("missing.toml")).unwrap_err();
    assert_eq!(e.exit_code(), 2);
    std::fs::remove_dir_all(&dir).unwrap();
}

const NAMED: &str = r#"
[[host]]
name = "a"
[[host]]
name = "b"
[[switch]]
name = "s"
[[link]]
name = "wan"
ends = ["a", "s"]
delay = "10ms"
[[link]]
ends = ["s", "b"]
"#;

#[test]
fn links_are_found_by_name_or_by_ends_with_a_direction() {
    let t = Topology::from_toml_str("x", NAMED).unwrap();
    assert_eq!(t.links[0].label(), "wan");
    assert_eq!(t.links[1].label(), "s-b");
    assert_eq!(resolve_link(&t.links, "wan"), Ok((0, [true, true])));
    assert_eq!(resolve_link(&t.links, "wan.b_to_a"), Ok((0, [false, true])));
    assert_eq!(resolve_link(&t.links, "a-s.a_to_b"), Ok((0, [true, false])));
    assert_eq!(resolve_link(&t.links, "b-s"), Ok((1, [true, true])));
    let e = resolve_link(&t.links, "lan").unwrap_err();
    assert_eq!(e, "no link 'lan' (links: wan (a-s), s-b)");
    let e = resolve_link(&t.links, "wan.up").unwrap_err();
    assert!(e.contains("'up' is not a direction"), "{e}");
    let e = err(&NAMED.replace(
        "ends = [\"s\", \"b\"]",
        "name = \"wan\"\nends = [\"s\", \"b\"]",
    ));
    assert!(
        e.contains("line 13: link.name: 'wan' names two links"),
        "{e}"
    );
}

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

#[test]
fn set_arguments_are_read_like_the_file() {
    let t = Topology::from_toml_str("x", NAMED).unwrap();
    let c = parse_set_args(
        &t,
        "wan.a_to_b",
        &args(&[
            "delay=20ms",
            "rate=10M",
            "ber=1e-6",
            "gilbert={p=\"1%\",r=\"25%\"}",
        ]),
        None,
    )
    .unwrap();
    assert_eq!((c.link, c.directions), (0, [true, false]));
    assert_eq!(c.overrides.delay_ns, Some(20_000_000));
    assert_eq!(c.overrides.rate_bps, Some(10_000_000));
    assert_eq!(c.overrides.ber, Some(1e-6));
    assert_eq!(c.overrides.gilbert.unwrap().r, 0.25);
    let c = parse_set_args(&t, "s-b", &args(&["mtu=9000", "queue=64K"]), None).unwrap();
    assert_eq!(
        (c.link, c.mtu, c.overrides.queue_bytes),
        (1, Some(9000), Some(65536))
    );
    for (list, expected) in [
        (
            vec!["delay=20ms", "loss=150%"],
            "testbed set: argument 3: loss: '150%'",
        ),
        (
            vec!["colour=red"],
            "testbed set: argument 2: unknown field `colour`",
        ),
        (
            vec!["delay"],
            "testbed set: argument 2: 'delay' is not key=value",
        ),
        (
            vec!["mtu=10"],
            "testbed set: argument 2: mtu: 10 is outside",
        ),
    ] {
        let e = parse_set_args(&t, "wan", &args(&list), None).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        let e = e.to_string();
        assert!(e.starts_with(expected) && !e.contains('\n'), "{e}");
    }
    let e = parse_set_args(&t, "wan.a_to_b", &args(&["mtu=9000"]), None).unwrap_err();
    assert!(
        e.to_string().contains("mtu: applies to the whole link"),
        "{e}"
    );
    let e = parse_set_args(&t, "lan", &args(&["delay=1ms"]), None).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("testbed set: argument 1: no link 'lan'"),
        "{e}"
    );
}

#[test]
fn txqueuelen_is_set_on_a_line_rate_link_only_and_whole() {
    let shaped = NAMED.replacen(
        "ends = [\"a\", \"s\"]",
        "ends = [\"a\", \"s\"]\nline_rate = true",
        1,
    );
    let t = Topology::from_toml_str("x", &shaped).unwrap();
    assert!(t.links[0].line_rate, "{shaped}");
    let c = parse_set_args(&t, "wan", &args(&["txqueuelen=10"]), None).unwrap();
    assert_eq!((c.link, c.txqueuelen, c.mtu), (0, Some(10), None));
    assert_eq!(c.overrides, Default::default());
    for (link, value, expected) in [
        (
            "wan",
            "0",
            "testbed set: argument 2: txqueuelen: 0 is outside 1..=1000000",
        ),
        (
            "wan",
            "2000000",
            "testbed set: argument 2: txqueuelen: 2000000 is outside",
        ),
        (
            "wan.a_to_b",
            "10",
            "testbed set: argument 2: txqueuelen: applies to the whole link",
        ),
        (
            "s-b",
            "10",
            "testbed set: argument 2: txqueuelen: applies to a line_rate link",
        ),
        ("wan", "\"ten\"", "testbed set: argument 2: "),
    ] {
        let e =
            parse_set_args(&t, link, &args(&[&format!("txqueuelen={value}")]), None).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        let e = e.to_string();
        assert!(e.starts_with(expected) && !e.contains('\n'), "{e}");
    }
}

fn temp_dir(tag: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("lp-topo-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn schedules_in_the_topology_and_in_their_own_file() {
    let dir = temp_dir("sched");
    std::fs::write(dir.join("steps.trace"), "1\n2\n2\n4\n").unwrap();
    let topo = format!(
        "{NAMED}\n[schedule]\nrepeat = \"30s\"\n[[schedule.step]]\nat = \"0s\"\nlink = \"wan\"\nrate = \"50M\"\n\
         [[schedule.step]]\nat = \"10s\"\nlink = \"s-b.b_to_a\"\ntrace = \"steps.trace\"\n"
    );
    std::fs::write(dir.join("t.toml"), &topo).unwrap();
    let t = Topology::from_file(&dir.join("t.toml")).unwrap();
    let s = t.schedule.as_ref().unwrap();
    assert_eq!(s.repeat_ns, Some(30_000_000_000));
    assert_eq!(s.steps.len(), 2);
    assert_eq!(s.steps[1].at_ns, 10_000_000_000);
    assert_eq!(
        (s.steps[1].change.link, s.steps[1].change.directions),
        (1, [false, true])
    );
    let trace = s.steps[1].change.overrides.trace.as_ref().unwrap();
    assert_eq!(trace.opportunities_ms, [1, 2, 2, 4]);

    let file = dir.join("s.toml");
    std::fs::write(&file, "[[step]]\nat = \"5s\"\nlink = \"wan\"\ndelay = \"1ms\"\n[[step]]\nat = \"2s\"\nlink = \"wan\"\nloss = \"1%\"\n").unwrap();
    let e = schedule_from_file(&file, &t).unwrap_err().to_string();
    assert!(e.ends_with("s.toml: line 6: step.at: 2 s comes before the previous step's 5 s: steps must be in time order"), "{e}");
    std::fs::write(
        &file,
        "repeat = \"1s\"\n[[step]]\nat = \"5s\"\nlink = \"wan\"\ndelay = \"1ms\"\n",
    )
    .unwrap();
    let e = schedule_from_file(&file, &t).unwrap_err().to_string();
    assert!(
        e.contains("line 1: repeat: the period (1 s) must be longer"),
        "{e}"
    );
    std::fs::write(&file, "[[step]]\nat = \"0s\"\nlink = \"wan\"\n").unwrap();
    let e = schedule_from_file(&file, &t).unwrap_err().to_string();
    assert!(e.contains("line 3: step: changes nothing"), "{e}");
    std::fs::write(dir.join("bad.trace"), "1\n2\nthree\n").unwrap();
    std::fs::write(
        &file,
        "[[step]]\nat = \"0s\"\nlink = \"wan\"\ntrace = \"bad.trace\"\n",
    )
    .unwrap();
    let e = schedule_from_file(&file, &t).unwrap_err().to_string();
    assert!(
        e.contains("s.toml: line 4: step.trace: ") && e.contains("bad.trace: line 3: 'three'"),
        "{e}"
    );
    std::fs::write(
        &file,
        "[[step]]\nat = \"0s\"\nlink = \"nowhere\"\nrate = 1\n",
    )
    .unwrap();
    let e = schedule_from_file(&file, &t).unwrap_err().to_string();
    assert!(e.contains("line 3: step.link: no link 'nowhere'"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn circuit_keys_are_read_and_a_zero_idle_timeout_is_refused() {
    let link = "[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n[[link]]\nends = [\"a\", \"b\"]\n";
    let t = Topology::from_toml_str(
        "t",
        &format!("{link}circuit_setup = \"30ms\"\n[link.b_to_a]\ncircuit_idle = \"2s\"\n"),
    )
    .unwrap();
    let l = &t.links[0];
    assert_eq!(l.a_to_b.circuit_setup_ns, 30_000_000);
    assert_eq!(
        l.a_to_b.circuit_idle_ns,
        crate::params::DEFAULT_CIRCUIT_IDLE_NS
    );
    assert_eq!(
        (l.b_to_a.circuit_setup_ns, l.b_to_a.circuit_idle_ns),
        (30_000_000, 2_000_000_000)
    );
    let e = err(&format!("{link}circuit_idle = \"0s\"\n"));
    assert!(
        e.starts_with("topology 't': line 7: link.circuit_idle: must be longer than 0"),
        "{e}"
    );
    let e = err(&format!("{link}circuit_setup = \"soon\"\n"));
    assert!(
        e.contains("line 7: link.circuit_setup:") && !e.contains('\n'),
        "{e}"
    );
    let ranged = Topology::from_toml_str(
        "t",
        &format!("{link}circuit_setup = \"16ms\"\ncircuit_setup_max = \"33ms\"\n"),
    )
    .unwrap();
    assert_eq!(ranged.links[0].a_to_b.circuit_setup_max_ns, 33_000_000);
    let e = err(&format!(
        "{link}circuit_setup = \"30ms\"\ncircuit_setup_max = \"20ms\"\n"
    ));
    assert!(
        e.contains("line 8: link.circuit_setup_max: is below circuit_setup") && !e.contains('\n'),
        "{e}"
    );
}

#[test]
fn a_host_cpu_share_is_a_percentage_of_one_cpu_in_0_to_100() {
    let t = Topology::from_toml_str(
        "t",
        "[[host]]\nname = \"a\"\ncpu = \"25%\"\n[[host]]\nname = \"b\"\n[[link]]\nends = [\"a\", \"b\"]\n",
    )
    .unwrap();
    assert_eq!((t.hosts[0].cpu, t.hosts[1].cpu), (Some(0.25), None));
    for bad in ["\"0%\"", "\"150%\"", "\"fast\"", "-5", "true"] {
        let e = err(&format!("[[host]]\nname = \"a\"\ncpu = {bad}\n"));
        assert!(
            e.starts_with("topology 't': line 3: host.cpu: ")
                && e.contains("is not a CPU share")
                && e.contains("to 100%")
                && !e.contains('\n'),
            "{e}"
        );
    }
}

#[test]
fn line_rate_and_txqueuelen_are_read_and_checked() {
    let link = "[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n[[link]]\nends = [\"a\", \"b\"]\n";
    let t = Topology::from_toml_str("t", &format!("{link}line_rate = true\ntxqueuelen = 100\n"))
        .unwrap();
    assert!(t.links[0].line_rate);
    assert_eq!(t.links[0].txqueuelen, 100);
    let t = Topology::from_toml_str("t", link).unwrap();
    assert!(!t.links[0].line_rate);
    assert_eq!(t.links[0].txqueuelen, crate::nic::DEFAULT_TXQUEUELEN);
    let e = err(&format!("{link}txqueuelen = 0\n"));
    assert!(
        e.starts_with("topology 't': line 7: link.txqueuelen: 0 is outside 1..="),
        "{e}"
    );
}

#[test]
fn a_hosts_processing_applies_to_the_links_into_it_below_link_keys() {
    let hosts =
        "[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\nper_packet = \"550us\"\nbacklog = 50\n";
    let t = Topology::from_toml_str(
        "t",
        &format!("{hosts}[[link]]\nends = [\"a\", \"b\"]\n[link.b_to_a]\nper_packet = \"4us\"\n"),
    )
    .unwrap();
    let l = &t.links[0];
    // Into b: the host's keys; into a: only the direction table's, with the default backlog.
    assert_eq!(
        (l.a_to_b.per_packet_ns, l.a_to_b.backlog_packets),
        (550_000, 50)
    );
    assert_eq!(
        (l.b_to_a.per_packet_ns, l.b_to_a.backlog_packets),
        (4_000, crate::params::DEFAULT_BACKLOG_PACKETS)
    );
    // The link table overrides the host, for both directions.
    let t = Topology::from_toml_str(
        "t",
        &format!("{hosts}[[link]]\nends = [\"a\", \"b\"]\nper_packet = \"1ms\"\n"),
    )
    .unwrap();
    assert_eq!(t.links[0].a_to_b.per_packet_ns, 1_000_000);
    assert_eq!(t.links[0].b_to_a.per_packet_ns, 1_000_000);
    assert_eq!(t.links[0].a_to_b.backlog_packets, 50);
    let e = err("[[host]]\nname = \"a\"\nbacklog = 0\n");
    assert!(
        e.starts_with("topology 't': line 3: host.backlog: 0 is outside 1..="),
        "{e}"
    );
    let e = err("[[host]]\nname = \"a\"\nper_packet = \"2s\"\n");
    assert!(e.contains("line 3: host.per_packet: is above 1s"), "{e}");
    let e = err("[[host]]\nname = \"a\"\nper_packet = \"fast\"\n");
    assert!(
        e.contains("line 3: host.per_packet:") && !e.contains('\n'),
        "{e}"
    );
}

#[test]
fn routers_take_processing_keys_and_bad_ones_are_refused_on_one_line() {
    let base = "[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n[[router]]\nname = \"r\"\n";
    let links = "[[link]]\nends = [\"a\", \"r\"]\n[[link]]\nends = [\"r\", \"b\"]\n";
    let t = Topology::from_toml_str(
        "t",
        &format!("{base}packet_rate = 20000\nper_byte = \"8ns\"\n{links}"),
    )
    .unwrap();
    let r = t.router("r").unwrap();
    assert_eq!(r.interfaces.len(), 2);
    assert_eq!(r.interfaces[0].ipv4, Ipv4Addr::new(10, 50, 0, 254));
    // Into the router: 50 us per packet (1 / 20000 s) + 8 ns per byte; out of it: nothing.
    assert_eq!(
        (
            t.links[0].a_to_b.per_packet_ns,
            t.links[0].a_to_b.per_byte_ns
        ),
        (50_000, 8)
    );
    assert_eq!(t.links[1].b_to_a.per_packet_ns, 50_000);
    assert_eq!(
        (
            t.links[0].b_to_a.per_packet_ns,
            t.links[1].a_to_b.per_byte_ns
        ),
        (0, 0)
    );
    for (extra, expect) in [
        (
            "packet_rate = 0\n",
            "line 7: router.packet_rate: must be at least 1",
        ),
        (
            "packet_rate = 10\nper_packet = \"1ms\"\n",
            "line 7: router.packet_rate: give per_packet or packet_rate, not both",
        ),
        (
            "per_byte = \"2ms\"\n",
            "line 7: router.per_byte: is above 1ms",
        ),
        ("hops = 3\n", "unknown field `hops`"),
    ] {
        let e = err(&format!("{base}{extra}{links}"));
        assert!(e.contains(expect) && !e.contains('\n'), "{e}");
    }
    let e = err(&format!("{base}[[switch]]\nname = \"r\"\n{links}"));
    assert!(e.contains("'r' is used twice"), "{e}");
    let e = err(&format!("{base}[[link]]\nends = [\"a\", \"q\"]\n"));
    assert!(
        e.contains("'q' is not a [[host]], [[switch]] or [[router]] name"),
        "{e}"
    );
}

#[test]
fn router_interfaces_take_the_network_of_the_hosts_on_their_segment() {
    let t = Topology::from_toml_str(
        "t",
        "[[host]]\nname = \"a\"\naddress = \"10.82.0.1/24\"\n[[host]]\nname = \"b\"\naddress = \"10.83.0.2/24\"\n\
         [[router]]\nname = \"r\"\n[[link]]\nends = [\"a\", \"r\"]\n[[link]]\nends = [\"r\", \"b\"]\n",
    )
    .unwrap();
    let r = t.router("r").unwrap();
    assert_eq!(r.interfaces[0].ipv4, Ipv4Addr::new(10, 82, 0, 254));
    assert_eq!(r.interfaces[1].ipv4, Ipv4Addr::new(10, 83, 0, 254));
    assert_eq!(
        r.interfaces[0].ipv6,
        "fd00:50::fe".parse::<Ipv6Addr>().unwrap()
    );
}

#[test]
fn cpu_idle_is_os_unless_the_file_says_poll_and_other_values_are_refused() {
    let hosts = "[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n[[link]]\nends = [\"a\", \"b\"]\n";
    let t = Topology::from_toml_str("t", hosts).unwrap();
    assert_eq!(t.cpu_idle, CpuIdle::Os);
    let t = Topology::from_toml_str("t", &format!("cpu_idle = \"poll\"\n{hosts}")).unwrap();
    assert_eq!(t.cpu_idle, CpuIdle::Poll);
    let e = err(&format!("cpu_idle = \"halt\"\n{hosts}"));
    assert!(
        e.starts_with("topology 't': line 1: cpu_idle: 'halt' is not accepted: \"poll\"")
            && e.contains("\"os\"")
            && !e.contains('\n'),
        "{e}"
    );
}

#[test]
fn a_host_cwnd_clamp_is_whole_segments_from_2() {
    let host = |clamp: &str| {
        format!("[[host]]\nname = \"a\"\n{clamp}\n[[host]]\nname = \"b\"\n[[link]]\nends = [\"a\", \"b\"]\n")
    };
    let t = Topology::from_toml_str("t", &host("cwnd_clamp = 250")).unwrap();
    assert_eq!(
        (t.hosts[0].cwnd_clamp, t.hosts[1].cwnd_clamp),
        (Some(250), None)
    );
    for bad in [
        "cwnd_clamp = 1",
        "cwnd_clamp = 2000000",
        "cwnd_clamp = -5",
        "cwnd_clamp = \"250\"",
        "cwnd_clamp = 2.5",
    ] {
        let e = err(&host(bad));
        assert!(
            e.contains("host.cwnd_clamp")
                && e.contains("a whole number of segments from 2 to 1000000"),
            "{bad}: {e}"
        );
    }
}

#[test]
fn a_host_send_cost_is_a_fixed_and_a_per_byte_time() {
    let host = |keys: &str| {
        format!("[[host]]\nname = \"a\"\n{keys}\n[[host]]\nname = \"b\"\n[[link]]\nends = [\"a\", \"b\"]\n")
    };
    let t = Topology::from_toml_str(
        "t",
        &host("send_per_packet = \"258us\"\nsend_per_byte = \"46ns\""),
    )
    .unwrap();
    let cost = t.hosts[0].send_cost.expect("a's send cost");
    assert_eq!((cost.per_packet_ns, cost.per_byte_ns), (258_000, 46));
    assert!((cost.seconds(8234) - (258e-6 + 46e-9 * 8234.0)).abs() < 1e-12);
    assert_eq!(t.hosts[1].send_cost, None);
    let t = Topology::from_toml_str("t", &host("send_per_byte = \"8ns\"")).unwrap();
    assert_eq!(t.hosts[0].send_cost.map(|c| c.per_packet_ns), Some(0));
    for (bad, says) in [
        // 4 ms is 65,536 times 61 ns: more than the kernel's 16-bit overhead holds.
        (
            "send_per_packet = \"4ms\"",
            "line 3: host.send_per_packet: 4000000 ns per packet needs send_per_byte of at least 62ns",
        ),
        (
            "send_per_packet = \"4ms\"\nsend_per_byte = \"61ns\"",
            "needs send_per_byte of at least 62ns",
        ),
        ("send_per_packet = \"2s\"\nsend_per_byte = \"1ms\"", "line 3: host.send_per_packet: is above 1s"),
        ("send_per_byte = \"2ms\"", "line 3: host.send_per_byte: must be from 1ns to 1ms"),
        ("send_per_byte = \"0\"", "host.send_per_byte: must be from 1ns to 1ms"),
        ("send_per_packet = \"fast\"", "line 3: host.send_per_packet:"),
    ] {
        let e = err(&host(bad));
        assert!(e.contains(says) && !e.contains('\n'), "{bad}: {e}");
    }
}
