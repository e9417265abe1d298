//! Defaults from the configuration files for one command, shared by both
//! binaries: which keys exist (a few shared top-level keys, and a section
//! per command whose keys are that command's long options), checking a value
//! with the option's own parser, and merging the winners under the command
//! line. `config` applies them to `linkperf`'s whole command tree.

use clap::parser::ValueSource;
use clap::ArgMatches;
use linkperf_config::{Config, Entry, Value};
use std::ffi::OsString;

/// Top-level keys, and the commands each gives a default to.
pub const SHARED: &[(&str, &[&str])] = &[
    ("port", &["server", "client", "rr", "sweep"]),
    (
        "db",
        &["client", "rr", "sweep", "report", "results", "campaign"],
    ),
    ("format", &["client", "sweep"]),
];

/// Commands with a section: every long option of theirs may have a default.
pub const SECTIONS: &[&str] = &["server", "client", "rr", "sweep"];

/// `argv` with the files' defaults added for every option of `leaf` (the
/// parsed command `top`) that the command line did not give.
pub fn merge(
    argv: Vec<OsString>,
    config: &Config,
    top: &str,
    leaf: &clap::Command,
    leaf_matches: &ArgMatches,
) -> Vec<OsString> {
    let given = |id: &str| leaf_matches.value_source(id) == Some(ValueSource::CommandLine);
    let mut extra: Vec<OsString> = Vec::new();
    for arg in leaf.get_arguments() {
        let Some(long) = configurable(arg) else {
            continue;
        };
        if given(arg.get_id().as_str()) || conflicts_with_given(leaf, arg, &given) {
            continue;
        }
        // The environment beats the files, as for every Unix tool.
        if long == "db" && std::env::var_os("LINKPERF_DB").is_some_and(|v| !v.is_empty()) {
            continue;
        }
        let Some(entry) = winner(config, top, long) else {
            continue;
        };
        match &entry.value {
            Value::Bool(true) => extra.push(format!("--{long}").into()),
            Value::Bool(false) => {}
            Value::Text(v) | Value::Number(v) => extra.push(format!("--{long}={v}").into()),
            Value::List(items) => {
                extra.extend(items.iter().map(|v| format!("--{long}={v}").into()))
            }
        }
    }
    // Before a `--` that ends the options, else at the end (the leaf's options).
    let at = argv
        .iter()
        .skip(1)
        .position(|a| a == "--")
        .map_or(argv.len(), |i| i + 1);
    let mut merged = argv;
    merged.splice(at..at, extra);
    merged
}

/// Whether an option the command line gave excludes `arg` (clap declares a
/// conflict on one side only: `--no-store` names `--db`).
fn conflicts_with_given(
    cmd: &clap::Command,
    arg: &clap::Arg,
    given: &dyn Fn(&str) -> bool,
) -> bool {
    let id = arg.get_id();
    cmd.get_arguments().any(|other| {
        given(other.get_id().as_str())
            && (cmd
                .get_arg_conflicts_with(arg)
                .iter()
                .any(|c| c.get_id() == other.get_id())
                || cmd
                    .get_arg_conflicts_with(other)
                    .iter()
                    .any(|c| c.get_id() == id))
    })
}

/// The long name of an option a file may set: not help, version or hidden ones.
pub fn configurable(arg: &clap::Arg) -> Option<&str> {
    let long = arg.get_long()?;
    (!arg.is_hide_set() && long != "help" && long != "version").then_some(long)
}

fn shared_for(key: &str, command: &str) -> bool {
    SHARED
        .iter()
        .any(|(k, commands)| *k == key && commands.contains(&command))
}

/// The entry that sets option `long` of `command`, if any file does.
fn winner<'a>(config: &'a Config, command: &str, long: &str) -> Option<&'a Entry> {
    let section = SECTIONS.contains(&command).then_some(command);
    config.lookup(section, long, shared_for(long, command))
}

/// The entries that give `command` (built as `cmd`) a default: each names
/// one of its options with a value that option takes. Other entries are
/// other commands' (`linkperf` checks the whole file).
pub fn check_for(config: &Config, command: &str, cmd: &clap::Command) -> Result<(), String> {
    config
        .check(|entry| {
            let key = entry.key.as_str();
            let mine = match &entry.section {
                None => shared_for(key, command),
                Some(section) => section == command,
            };
            if !mine {
                return Ok(());
            }
            let Some(arg) = cmd.get_arguments().find(|a| configurable(a) == Some(key)) else {
                let keys: Vec<&str> = cmd.get_arguments().filter_map(configurable).collect();
                return Err(format!(
                    "unknown key; accepted in [{command}]: {}",
                    keys.join(", ")
                ));
            };
            check_value(arg, &entry.value)
        })
        .map_err(|e| e.to_string())
}

fn check_value(arg: &clap::Arg, value: &Value) -> Result<(), String> {
    use clap::ArgAction;
    let long = arg.get_long().unwrap_or_default();
    match (arg.get_action(), value) {
        (ArgAction::SetTrue, Value::Bool(_)) => Ok(()),
        (ArgAction::SetTrue, _) => Err(format!("--{long} is a switch: write true or false")),
        (_, Value::Bool(_)) => Err(format!("--{long} takes a value, not true or false")),
        (ArgAction::Append, Value::List(items)) => {
            items.iter().try_for_each(|v| parse_with(arg, v))
        }
        (_, Value::List(_)) => Err(format!("--{long} takes one value, not a list")),
        (_, Value::Text(v) | Value::Number(v)) => parse_with(arg, v),
    }
}

/// The value as the option's own parser reads it on a command line (alone:
/// the command's other options and their relations do not matter here).
fn parse_with(arg: &clap::Arg, value: &str) -> Result<(), String> {
    let mut alone = clap::Arg::new("value")
        .required(true)
        .allow_hyphen_values(true)
        .value_parser(arg.get_value_parser().clone());
    if let Some(name) = arg.get_value_names().and_then(|v| v.first()) {
        alone = alone.value_name(name.clone());
    }
    clap::Command::new("config")
        .no_binary_name(true)
        .arg(alone)
        .try_get_matches_from([value])
        .map(|_| ())
        .map_err(|e| crate::usage::one_line(&e))
}
