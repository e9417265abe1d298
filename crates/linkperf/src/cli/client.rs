//! `linkperf client`: checks the flags, runs the test through the library,
//! stores the result, and prints it as text, JSON, a JSON stream or
//! iperf3's `-J` layout; `--from` relays a third-party test.

use crate::args::{ClientArgs, OutputFormat};
use linkperf::report::{IntervalReport, Report, SCHEMA};
use linkperf::{archive, client, iperf3, run_test, signals, text, ClientError, TestSpec};
use linkperf_units::ReportUnit;
use std::process::ExitCode;

/// How the result is printed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Format {
    Text,
    Json,
    JsonStream,
    Iperf3Json,
}

impl Format {
    fn of(args: &ClientArgs) -> Format {
        match args.format {
            OutputFormat::Iperf3Json => Format::Iperf3Json,
            _ if args.json || args.format == OutputFormat::Json => Format::Json,
            _ if args.json_stream || args.format == OutputFormat::JsonStream => Format::JsonStream,
            _ => Format::Text,
        }
    }
}

fn usage(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("linkperf: {message}");
    ExitCode::from(2)
}

pub fn run(args: ClientArgs) -> ExitCode {
    // --username with --rsa-public-key-path names the iperf3 user, not a
    // linkperf user with a key.
    let iperf3_token = args
        .iperf3_auth
        .resolve(args.auth.username.as_deref(), args.iperf3_mode());
    let installed = iperf3_token.and_then(|token| {
        if token.is_none() {
            args.auth.install()?;
        }
        linkperf::iperf3::auth::set_client_token(token);
        args.tls.install()
    });
    if let Err(e) = installed {
        return usage(e);
    }
    let spec = match args.spec().and_then(|s| s.validate().map(|()| s)) {
        Ok(s) => s,
        Err(e) => return usage(e),
    };
    // --logfile, -T, --timestamps, -A: every line below goes through them.
    let output = match crate::process_opts::start(
        &args.output,
        args.logfile.as_deref(),
        args.title.as_deref(),
    ) {
        Ok(o) => o,
        Err(e) => return usage(e),
    };
    let code = run_spec(&args, spec);
    output.finish();
    code
}

fn run_spec(args: &ClientArgs, mut spec: TestSpec) -> ExitCode {
    if !args.no_store && args.from.is_none() {
        // A result that could not be stored where --db says: refused before the test.
        if let Err(e) = linkperf_store::check_writable(args.db.as_deref()) {
            return usage(e);
        }
    }
    signals::install();
    if let Some(from) = &args.from {
        // The agent connects and measures: these belong to its own run.
        if args.get_server_output || args.extra_data.is_some() || args.connect_timeout.is_some() {
            return usage("--from: --get-server-output, --extra-data and --connect-timeout apply to a test this client runs, not to a relayed one");
        }
        return third_party(from, &spec, args.json, args.units);
    }
    let format = Format::of(args);
    let doctor = match args.doctor.then(|| linkperf::runner::doctor_target(&spec)) {
        None => None,
        Some(Ok(target)) => {
            // The server examines its own host against the same path (Ready).
            spec.doctor = Some(linkperf::doctor::remote::request(&target));
            Some(linkperf::doctor::examine(&target))
        }
        Some(Err(e)) => return usage(e),
    };
    if let Some(exam) = doctor.as_ref().filter(|_| matches!(format, Format::Text)) {
        say_raw!(
            "doctor (this host, before the test):\n{}\n",
            linkperf::doctor::render_for(exam, "this host")
        );
    }
    let mut intervals = Intervals::new(&spec, format, args.units);
    let outcome = run_test(
        &spec,
        &mut |i| intervals.print(i),
        Some(&signals::INTERRUPTED),
    );
    match outcome {
        Ok(mut report) => {
            if let Some(local) = &doctor {
                let server = report.doctor.as_ref().and_then(|d| d.get("server"));
                let server = linkperf::doctor::remote::read_answer(server.filter(|s| !s.is_null()));
                if matches!(format, Format::Text) {
                    print_server_doctor(&server, &spec.host);
                }
                report.doctor = Some(linkperf::doctor::remote::document(local, &server));
            }
            // Stored before printing, so a slow archive cannot cut the output
            // short on Ctrl-C; a failure to store is only a warning.
            let stored = (!args.no_store)
                .then(|| archive::store_test(&report, args.db.as_deref()))
                .flatten();
            print_report(&report, &stored, format, &intervals);
            if report.errors.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Err(e) => print_error(&e, format),
    }
}

/// The server's examination (`client --doctor`): it comes back with the
/// result, so it is printed after the intervals, before the summary.
fn print_server_doctor(server: &Result<linkperf::doctor::Examination, String>, host: &str) {
    match server {
        Ok(exam) => say_raw!(
            "doctor (server {host}, examined before the test):\n{}\n",
            linkperf::doctor::render_for(exam, "server")
        ),
        Err(why) => say!("doctor: server: not reported ({why})"),
    }
}

/// Interval lines as they come: the header with the first one (so a failed
/// connection prints only its error), or one JSON object each.
struct Intervals {
    format: Format,
    /// `-f`: the unit of rates and transferred bytes in text.
    unit: ReportUnit,
    udp: bool,
    header: String,
    header_printed: bool,
}

impl Intervals {
    fn new(spec: &TestSpec, format: Format, unit: ReportUnit) -> Intervals {
        let config = spec.config();
        Intervals {
            format,
            unit,
            udp: config.protocol == linkperf_proto::Protocol::Udp,
            header: text::header(&config, &spec.host, spec.port),
            header_printed: false,
        }
    }

    fn print(&mut self, i: &IntervalReport) {
        match self.format {
            Format::Text => {
                if !self.header_printed {
                    self.header_printed = true;
                    say!("{}", self.header);
                    say!("{}", text::interval_header(self.udp));
                }
                say!("{}", text::interval_in(i, self.udp, self.unit));
            }
            Format::JsonStream => {
                say!(
                    "{}",
                    serde_json::json!({"schema": SCHEMA, "event": "interval", "data": i})
                );
            }
            Format::Json | Format::Iperf3Json => {}
        }
    }
}

fn print_report(
    report: &Report,
    stored: &archive::StoredAt,
    format: Format,
    intervals: &Intervals,
) {
    let printed = archive::WithId::new(report, stored);
    match format {
        Format::Iperf3Json => say!(
            "{}",
            serde_json::to_string_pretty(&iperf3::json::to_iperf3_json(report))
                .expect("report serialises")
        ),
        Format::Json => say!(
            "{}",
            serde_json::to_string_pretty(&printed).expect("report serialises")
        ),
        Format::JsonStream => say!(
            "{}",
            serde_json::json!({"schema": SCHEMA, "event": "summary", "data": &printed})
        ),
        Format::Text => {
            if !intervals.header_printed {
                say!("{}", intervals.header);
            }
            say_raw!("{}", text::summary_in(report, intervals.unit));
            say_raw!("{}", text::server_output(report, intervals.unit));
            if let Some((id, place)) = stored {
                say!("stored as run {id} in {place}");
            }
        }
    }
}

fn print_error(e: &ClientError, format: Format) -> ExitCode {
    let doc = match format {
        // iperf3 -J writes the error into its document too.
        Format::Iperf3Json => {
            Some(serde_json::json!({"start": {}, "intervals": [], "end": {}, "error": e.message}))
        }
        Format::Json => Some(serde_json::json!({"schema": SCHEMA, "error": e.message})),
        Format::Text | Format::JsonStream => None,
    };
    if let Some(doc) = doc {
        say!(
            "{}",
            serde_json::to_string_pretty(&doc).expect("error serialises")
        );
    }
    eprintln!("linkperf: {}", e.message);
    ExitCode::from(e.exit_code as u8)
}

/// `--from A HOST`: agent A runs the test towards HOST and relays it here.
fn third_party(from: &str, spec: &TestSpec, json: bool, unit: ReportUnit) -> ExitCode {
    let options = client::ClientOptions::from_spec(spec);
    let (from_host, from_port) = match from.rsplit_once(':') {
        Some((h, p)) if !h.contains(':') => match p.parse::<u16>() {
            Ok(port) => (h.to_string(), port),
            Err(_) => {
                eprintln!("linkperf: --from {from}: '{p}' is not a port");
                return ExitCode::from(2);
            }
        },
        _ => (from.to_string(), options.port),
    };
    let mut on_interval = |interval: &serde_json::Value| {
        if !json {
            let bps = interval["sum"]["bits_per_second"].as_f64().unwrap_or(0.0);
            say!(
                "{:.2}-{:.2} s  {} received",
                interval["start"].as_f64().unwrap_or(0.0),
                interval["end"].as_f64().unwrap_or(0.0),
                unit.rate(bps)
            );
        }
    };
    let outcome = client::run_third_party(
        (&from_host, from_port),
        (&options.host, options.port),
        &options.config,
        options.family,
        &mut on_interval,
        Some(&signals::INTERRUPTED),
    );
    match outcome {
        Ok(report) => {
            if json {
                say!(
                    "{}",
                    serde_json::to_string_pretty(&report).expect("report serialises")
                );
            } else {
                let s = &report["summary"];
                say!(
                    "{from} -> {}: sent {}, received {}",
                    options.host,
                    unit.rate(s["sent"]["bits_per_second"].as_f64().unwrap_or(0.0)),
                    unit.rate(s["received"]["bits_per_second"].as_f64().unwrap_or(0.0))
                );
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            if json {
                let doc = serde_json::json!({"schema": SCHEMA, "error": e.message});
                say!(
                    "{}",
                    serde_json::to_string_pretty(&doc).expect("error serialises")
                );
            }
            eprintln!("linkperf: {}", e.message);
            ExitCode::from(e.exit_code as u8)
        }
    }
}
