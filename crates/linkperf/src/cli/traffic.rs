//! `linkperf traffic list|show`: the application profiles and what a model
//! sends (its distributions and mean rates), printed from the traffic crate.

use clap::Subcommand;
use linkperf_traffic::{profiles, Model, Traffic};
use std::process::ExitCode;

#[derive(Subcommand, Debug)]
pub enum TrafficCommand {
    /// The application profiles, with their mean rates.
    List,
    /// One profile or model: its distributions and expected mean rate.
    Show {
        /// A profile name (linkperf traffic list) or a model, e.g. 'idt=exp:1ms;size=const:1200'.
        model: String,
    },
}

pub fn run(cmd: TrafficCommand) -> ExitCode {
    match cmd {
        TrafficCommand::List => {
            println!(
                "{:<16} {:>14} {:>14}  description",
                "profile", "client->server", "server->client"
            );
            for p in profiles::all() {
                let reverse = p.reverse.as_ref().unwrap_or(&p.forward);
                println!(
                    "{:<16} {:>14} {:>14}  {}",
                    p.name,
                    rate(&p.forward),
                    rate(reverse),
                    p.summary
                );
            }
            println!("\nModels: full, cbr, burst:BYTES:PERIOD, burstq:BYTES:PERIOD, 'idt=DIST;size=DIST[;on=DIST;off=DIST]', trace:FILE");
            println!("Distributions: {}", linkperf_traffic::dist::NAMES);
            ExitCode::SUCCESS
        }
        TrafficCommand::Show { model } => match Traffic::parse(&model, &|p| std::fs::read(p)) {
            Ok(t) => {
                show(&t);
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("linkperf: {e}");
                ExitCode::from(2)
            }
        },
    }
}

fn rate(m: &Model) -> String {
    m.mean_rate_bps()
        .map(linkperf_units::format_rate)
        .unwrap_or_else(|| "-".into())
}

fn show(t: &Traffic) {
    if let Some(name) = &t.profile {
        if let Some(p) = profiles::find(name) {
            println!("{name}: {}", p.summary);
        }
    }
    let directions: Vec<(&str, &Model)> = if t.forward == t.reverse {
        vec![("both directions", &t.forward)]
    } else {
        vec![
            ("client -> server", &t.forward),
            ("server -> client", &t.reverse),
        ]
    };
    for (label, m) in directions {
        println!("{label}: {}", m.text());
        for (k, v) in m.describe() {
            println!("  {k:<16} {v}");
        }
    }
}
