//! `linkperf campaign run|check FILE`: the flags, the progress on stderr and
//! the printed result of a campaign; the campaign itself runs in the
//! library's `campaign` module.

use crate::campaign_progress::Progress;
use clap::{Args, Subcommand};
use linkperf::campaign::{self, text, LiveLine};
use linkperf::signals;
use std::process::ExitCode;

#[derive(Subcommand, Debug)]
pub enum CampaignCommand {
    /// Run a campaign file.
    Run(RunArgs),
    /// Check a campaign file and list the flows it expands to, without running it.
    Check(CheckArgs),
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// Campaign file (TOML); see docs/campaign.md.
    pub file: String,
    /// One JSON document at the end.
    #[arg(short = 'J', long)]
    pub json: bool,
    /// Run even when some agents are unreachable; their flows are marked missing.
    #[arg(long)]
    pub keep_going: bool,
    /// Results archive: a SQLite file or a postgres:// URL (default: the user's archive).
    #[arg(long)]
    pub db: Option<String>,
    /// Do not store the result in the archive.
    #[arg(long)]
    pub no_store: bool,
    /// Simulate each flow's ns-3 twin after its phase (a campaign in a
    /// testbed) and show it beside the measurement.
    #[arg(long)]
    pub simulate: bool,
}

#[derive(Args, Debug)]
pub struct CheckArgs {
    pub file: String,
}

pub fn run(cmd: CampaignCommand) -> ExitCode {
    match cmd {
        CampaignCommand::Run(args) => run_file(&args),
        CampaignCommand::Check(args) => match campaign::load(&args.file) {
            Ok(c) => {
                for p in &c.phases {
                    say!(
                        "phase {} ({} s): {} flow(s)",
                        p.name,
                        p.duration_s,
                        p.flows.len()
                    );
                    for f in &p.flows {
                        say!(
                            "  {} -> {}: {}",
                            f.from,
                            f.to,
                            text::flow_words(&f.config(), &f.to)
                        );
                    }
                }
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("linkperf: {e}");
                ExitCode::from(2)
            }
        },
    }
}

/// Progress on stderr: a run line as each starts, the live aggregate per
/// interval (not with -J), warnings as they come.
struct Terminal {
    progress: Progress,
    json: bool,
}

impl campaign::Observer for Terminal {
    fn warning(&mut self, message: &str) {
        self.progress.clear();
        eprintln!("linkperf: {message}");
    }

    fn run_started(&mut self, what: &str) {
        self.progress.start_run(what);
    }

    fn interval(&mut self, phase: &str, session: u32, line: Option<&LiveLine>, flows: usize) {
        match line {
            Some(l) if !self.json => self
                .progress
                .print(&text::progress_line(phase, session, l, flows)),
            _ => self.progress.redraw(),
        }
    }
}

fn run_file(args: &RunArgs) -> ExitCode {
    let mut plan = match campaign::load(&args.file) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("linkperf: {e}");
            return ExitCode::from(2);
        }
    };
    if args.simulate {
        if let Err(e) = campaign::twin::check(&plan) {
            eprintln!("linkperf: {e}");
            return ExitCode::from(2);
        }
        plan.simulate = true;
    }
    let cancel = signals::cancel_on_signal();
    let mut terminal = Terminal {
        progress: Progress::new(campaign::planned_runs(&plan), args.json),
        json: args.json,
    };
    let outcome = campaign::run(&mut plan, args.keep_going, &cancel, &mut terminal);
    terminal.progress.finish();
    let mut result = match outcome {
        Ok(r) => r,
        Err(e) => {
            eprintln!("linkperf: {e}");
            return ExitCode::from(1);
        }
    };
    if !args.no_store {
        // Stored before printing so the printed document carries its archive id;
        // a store failure costs the archive copy, never the printed result.
        match campaign::store(&result, args.db.as_deref()) {
            Ok(id) => result.id = Some(id),
            Err(e) => eprintln!("linkperf: warning: the campaign was not stored: {e}"),
        }
    }
    if args.json {
        say!(
            "{}",
            serde_json::to_string_pretty(&result).expect("campaign result serialises")
        );
    } else {
        say_raw!("{}", text::summary(&result));
    }
    if result.all_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
