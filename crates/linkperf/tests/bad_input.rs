//! Bad input and failed runs: the right exit code, one line on stderr, never a panic.

mod common;
use common::*;
use std::net::TcpListener;

fn usage_error(args: &[&str]) -> String {
    // A closed port: a usage error must be reported before any connection.
    let port = free_port();
    let run = client(port, args);
    run.assert_one_line_failure(2).to_string()
}

/// Each case: the client's arguments and, where given, what its error line must name.
#[test]
fn usage_errors_name_what_is_wrong() {
    let cases: &[(&[&str], Option<&str>)] = &[
        (&["-b", "10X"], Some("10X")),
        (&["-l", "-5"], None),
        (&["-n", "1e999"], Some("1e999")),
        (&["-u", "-l", "70000"], Some("65507")),
        (&["-M", "10"], Some("-M")),
        (&["-P", "0"], None),
        (&["-t", "0"], None),
        (&["-t", "abc"], None),
    ];
    for (args, needle) in cases {
        let line = usage_error(args);
        if let Some(needle) = needle {
            assert!(line.contains(needle), "{args:?}: {line}");
        }
    }
}

#[test]
fn usage_errors_with_json_print_no_report() {
    let port = free_port();
    let run = client(port, &["-M", "10", "-J"]);
    run.assert_one_line_failure(2);
    assert!(!run.stdout.contains("\"summary\""), "{}", run.stdout);
}

#[test]
fn unknown_host() {
    let run = linkperf(&["client", "no-such-host.invalid", "-t", "1"]);
    let line = run.assert_one_line_failure(1);
    assert!(line.contains("no-such-host.invalid"), "{line}");
}

#[test]
fn connection_refused() {
    let refusing = refusing_port();
    let port = refusing.port;
    let run = client(port, &["-t", "1"]);
    let line = run.assert_one_line_failure(1);
    assert!(
        line.contains("refused") && line.contains(&port.to_string()),
        "{line}"
    );
}

#[test]
fn no_host_given() {
    let run = linkperf(&["client", "-t", "1"]);
    run.assert_one_line_failure(2);
}

#[test]
fn server_port_in_use() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let run = linkperf(&["server", "-p", &port, "-B", "127.0.0.1"]);
    let line = run.assert_one_line_failure(1);
    assert!(line.contains(&port) && line.contains("in use"), "{line}");
}

#[test]
fn server_bad_bind_address() {
    // TEST-NET-1: not configured on any interface here.
    let port = free_port().to_string();
    let run = linkperf(&["server", "-p", &port, "-B", "192.0.2.1"]);
    run.assert_one_line_failure(1);
}

/// `linkperf ARGS`: a usage error, one line, exit 2; returns the line.
fn usage_line(args: &[&str]) -> String {
    linkperf(args).assert_one_line_failure(2).to_string()
}

#[test]
fn missing_arguments_are_named_with_the_usage() {
    let line = usage_line(&["rr"]);
    assert!(
        line.contains("<HOST>") && line.contains("usage: linkperf rr"),
        "{line}"
    );
    let line = usage_line(&["report", "32"]);
    assert!(line.contains("--output"), "{line}");
    let line = usage_line(&["results", "export", "32"]);
    assert!(line.contains("--format"), "{line}");
}

#[test]
fn typos_get_clap_suggestion() {
    let line = usage_line(&["clinet"]);
    assert!(line.contains("did you mean 'client'?"), "{line}");
    let line = usage_line(&["client", "127.0.0.1", "--bitrat", "5M"]);
    assert!(line.contains("did you mean '--bitrate'?"), "{line}");
    let line = usage_line(&["client", "127.0.0.1", "--format", "xml"]);
    assert!(line.contains("accepted: text, json"), "{line}");
}

#[test]
fn no_arguments_print_the_help_and_exit_2() {
    for args in [&[][..], &["results"][..], &["campaign"][..]] {
        let run = linkperf(args);
        assert_eq!(run.code(), Some(2), "linkperf {args:?}: {}", run.stderr);
        let help = format!("{}{}", run.stdout, run.stderr);
        assert!(help.contains("Usage: linkperf"), "{help}");
    }
    // Asked for, the help is no error.
    let run = linkperf(&["--help"]);
    assert_eq!(run.code(), Some(0));
    assert!(run.stdout.contains("exits 130"), "{}", run.stdout);
}

#[test]
fn rates_and_sizes_as_engineers_write_them() {
    // Accepted: the test runs (against nothing, so it fails to connect, exit 1).
    for args in [
        &["-b", "100mbit"][..],
        &["-b", "100Mbps"],
        &["-b", "100 Mbit/s"],
        &["-w", "64kb"],
        &["-w", "64KiB"],
    ] {
        let refusing = refusing_port();
        let run = client(refusing.port, args);
        let line = run.assert_one_line_failure(1);
        assert!(line.contains("refused"), "{args:?}: {line}");
    }
    // Bytes per second for a rate: refused, with the bits/s to write instead.
    let line = usage_error(&["-b", "100MB/s"]);
    assert!(
        line.contains("bytes per second") && line.contains("write 800M"),
        "{line}"
    );
    let line = usage_error(&["-w", "64Kbit"]);
    assert!(
        line.contains("write 8K") && line.contains("accepted:"),
        "{line}"
    );
}

#[test]
fn tcp_only_options_are_refused_with_udp() {
    for (flag, value) in [
        ("-N", None),
        ("-Z", None),
        ("-C", Some("reno")),
        ("-M", Some("1000")),
    ] {
        let mut args = vec!["-u", flag];
        args.extend(value);
        let line = usage_error(&args);
        assert!(
            line.starts_with(&format!("linkperf: {flag} ")) && line.contains("TCP only"),
            "{args:?}: {line}"
        );
    }
    let line = usage_error(&["--dont-fragment"]);
    assert!(line.contains("UDP (-u) only"), "{line}");
}

#[test]
fn udp_keeps_kernel_pacing() {
    // SO_MAX_PACING_RATE paces UDP through fq: accepted with -u, so the run
    // goes as far as connecting (nothing listens: exit 1).
    let refusing = refusing_port();
    let run = client(refusing.port, &["-u", "--pacing-rate", "10M"]);
    let line = run.assert_one_line_failure(1);
    assert!(line.contains("refused"), "{line}");
}

#[test]
fn sweeps_campaigns_and_rr_load_refuse_options_of_the_other_protocol() {
    let port = free_port().to_string();
    let args = ["sweep", "127.0.0.1", "-p", &port, "--no-store", "-N"];
    let line = usage_line(&[&args[..], &["--vary", "udp=off,on"]].concat());
    assert!(line.contains("udp=on") && line.contains("-N"), "{line}");
    let line = usage_line(&[&args[..5], &["--vary", "dont-fragment=on", "-t", "1"]].concat());
    assert!(line.contains("--dont-fragment"), "{line}");

    let line = usage_line(&["rr", "127.0.0.1", "-p", &port, "--load", "-u -C reno"]);
    assert!(line.contains("--load") && line.contains("-C"), "{line}");

    let dir = std::env::temp_dir().join(format!("lp-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("udp-nodelay.toml");
    std::fs::write(
        &file,
        "[[agent]]\nname = \"a\"\naddress = \"127.0.0.1\"\n\
         [[agent]]\nname = \"b\"\naddress = \"127.0.0.2\"\n\
         [[phase]]\nname = \"p\"\nduration = \"1s\"\n\
         [[phase.flow]]\nfrom = \"a\"\nto = \"b\"\nudp = true\nnodelay = true\n",
    )
    .unwrap();
    for cmd in ["check", "run"] {
        let line = usage_line(&["campaign", cmd, file.to_str().unwrap()]);
        assert!(
            line.contains("-N") && line.contains("TCP only"),
            "{cmd}: {line}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
