//! Usage errors of both binaries: a clap error cut to one whole line (its
//! message, the missing arguments, the suggestion, the accepted values) and
//! the exit code it gives.

use std::process::ExitCode;

/// The exit for a clap error: help and version print and succeed; the help
/// shown for a missing subcommand, and every usage error, exit 2 (an error
/// as one line prefixed with `program`).
pub fn clap_exit(e: clap::Error, program: &str) -> ExitCode {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = e.print();
            ExitCode::SUCCESS
        }
        // `linkperf` (or `linkperf results`) alone: the help, on stderr, and
        // the usage error's exit code.
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            ExitCode::from(2)
        }
        _ => {
            eprintln!("{program}: {}", one_line(&e));
            ExitCode::from(2)
        }
    }
}

/// One line from a clap error, whole: its message, the missing arguments with
/// the usage, the accepted values and clap's "did you mean" suggestion. The
/// multi-line block clap prints is cut so every usage error is one line.
pub fn one_line(e: &clap::Error) -> String {
    use clap::error::{ContextKind, ErrorKind};
    let text = e.to_string();
    let head = text
        .lines()
        .next()
        .unwrap_or("invalid arguments")
        .trim_start_matches("error: ")
        .trim_end();
    let mut line = if e.kind() == ErrorKind::MissingRequiredArgument {
        let missing = context_strings(e, ContextKind::InvalidArg);
        if missing.is_empty() {
            head.trim_end_matches(':').to_string()
        } else {
            format!("missing {}", missing.join(" and "))
        }
    } else {
        head.to_string()
    };
    let suggested = [
        ContextKind::SuggestedSubcommand,
        ContextKind::SuggestedArg,
        ContextKind::SuggestedValue,
    ]
    .into_iter()
    .map(|k| context_strings(e, k))
    .find(|s| !s.is_empty());
    if let Some(s) = suggested {
        let quoted: Vec<String> = s.iter().map(|v| format!("'{v}'")).collect();
        line.push_str(&format!("; did you mean {}?", quoted.join(" or ")));
    }
    let valid = context_strings(e, ContextKind::ValidValue);
    if !valid.is_empty() && !line.contains(&valid.join(", ")) {
        line.push_str(&format!("; accepted: {}", valid.join(", ")));
    }
    if matches!(
        e.kind(),
        ErrorKind::MissingRequiredArgument | ErrorKind::MissingSubcommand
    ) {
        let usage = context_strings(e, ContextKind::Usage);
        if let Some(u) = usage.first().and_then(|u| u.lines().next()) {
            let u = u.trim().trim_start_matches("Usage:").trim();
            line.push_str(&format!(" (usage: {u})"));
        }
    }
    line
}

fn context_strings(e: &clap::Error, kind: clap::error::ContextKind) -> Vec<String> {
    use clap::error::ContextValue;
    match e.get(kind) {
        Some(ContextValue::String(s)) => vec![s.clone()],
        Some(ContextValue::Strings(v)) => v.clone(),
        Some(ContextValue::StyledStr(s)) => vec![s.to_string()],
        _ => vec![],
    }
}
