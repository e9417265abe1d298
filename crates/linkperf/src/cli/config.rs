//! Defaults from the configuration files (`linkperf-config` reads them): which
//! keys exist (a few shared top-level keys, and a section per command whose
//! keys are that command's long options), checking each value with the
//! option's own parser, merging the winners under the command line, and
//! `linkperf config show`.

use crate::args::{one_line, Cli};
use clap::parser::ValueSource;
use clap::{ArgMatches, CommandFactory, Subcommand};
use linkperf_config::{Config, Entry, Files, Value};
use std::ffi::OsString;
use std::process::ExitCode;

/// Top-level keys, and the commands each gives a default to.
const SHARED: &[(&str, &[&str])] = &[
    ("port", &["server", "client", "rr", "sweep"]),
    (
        "db",
        &["client", "rr", "sweep", "report", "results", "campaign"],
    ),
    ("format", &["client", "sweep"]),
];

/// Commands with a section: every long option of theirs may have a default.
const SECTIONS: &[&str] = &["server", "client", "rr", "sweep"];

/// Commands that read the files (the others, e.g. `man`, never fail on them).
const READERS: &[&str] = &[
    "server", "client", "rr", "sweep", "report", "results", "campaign",
];

#[derive(Subcommand, Debug)]
pub enum ConfigCommand {
    /// Print the effective configuration, each value with the file and line
    /// it came from (or "default"), as a configuration file.
    Show,
}

fn built() -> clap::Command {
    let mut cmd = Cli::command();
    cmd.build();
    cmd
}

/// `argv` with the files' defaults added for every option of the command
/// that the command line did not give; Err: one line (file, line, key).
pub fn with_defaults(argv: Vec<OsString>, matches: &ArgMatches) -> Result<Vec<OsString>, String> {
    let Some((top, mut leaf_matches)) = matches.subcommand() else {
        return Ok(argv);
    };
    if !READERS.contains(&top) {
        return Ok(argv);
    }
    let config = Config::load(&Files::from_env()).map_err(|e| e.to_string())?;
    let root = built();
    check(&config, &root)?;
    let mut leaf = root.find_subcommand(top).expect("parsed command");
    while let Some((name, m)) = leaf_matches.subcommand() {
        leaf = leaf.find_subcommand(name).expect("parsed subcommand");
        leaf_matches = m;
    }
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
        let Some(entry) = winner(&config, top, long) else {
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
    Ok(merged)
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
fn configurable(arg: &clap::Arg) -> Option<&str> {
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

/// Every entry of every file names a known key with a value its option takes.
fn check(config: &Config, root: &clap::Command) -> Result<(), String> {
    config
        .check(|entry| check_entry(entry, root))
        .map_err(|e| e.to_string())
}

fn check_entry(entry: &Entry, root: &clap::Command) -> Result<(), String> {
    let (command, key) = match &entry.section {
        None => {
            if !SHARED.iter().any(|(k, _)| *k == entry.key) {
                let keys: Vec<&str> = SHARED.iter().map(|(k, _)| *k).collect();
                return Err(format!(
                    "unknown key; accepted at the top level: {}, and sections [{}]",
                    keys.join(", "),
                    SECTIONS.join("] [")
                ));
            }
            // Every shared key is an option of `client` too.
            ("client", entry.key.as_str())
        }
        Some(section) if SECTIONS.contains(&section.as_str()) => {
            (section.as_str(), entry.key.as_str())
        }
        Some(_) => {
            return Err(format!(
                "unknown section; accepted: [{}]",
                SECTIONS.join("] [")
            ));
        }
    };
    let cmd = root
        .find_subcommand(command)
        .expect("a listed command exists");
    let Some(arg) = cmd.get_arguments().find(|a| configurable(a) == Some(key)) else {
        let keys: Vec<&str> = cmd.get_arguments().filter_map(configurable).collect();
        return Err(format!(
            "unknown key; accepted in [{command}]: {}",
            keys.join(", ")
        ));
    };
    check_value(arg, &entry.value)
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
        .map_err(|e| one_line(&e))
}

/// `linkperf config show`.
pub fn run(command: ConfigCommand) -> ExitCode {
    let ConfigCommand::Show = command;
    let files = Files::from_env();
    let config = match Config::load(&files) {
        Ok(c) => c,
        Err(e) => return usage(e),
    };
    let root = built();
    if let Err(e) = check(&config, &root) {
        return usage(e);
    }
    let read: Vec<&std::path::Path> = config.files_read().collect();
    for path in files.all() {
        let state = if read.contains(&path) {
            "read"
        } else {
            "absent"
        };
        say!("# {} ({state})", path.display());
    }
    let client = root.find_subcommand("client").expect("client command");
    for (key, _) in SHARED {
        let (value, source) = shared_value(&config, client, key);
        say!("{key} = {value}  # {source}");
    }
    for section in SECTIONS {
        let cmd = root.find_subcommand(section).expect("section command");
        let set: Vec<(&str, &Entry)> = cmd
            .get_arguments()
            .filter_map(configurable)
            .filter_map(|long| Some((long, config.lookup(Some(section), long, false)?)))
            .filter(|(_, e)| e.section.is_some())
            .collect();
        if set.is_empty() {
            continue;
        }
        say!("\n[{section}]");
        for (long, entry) in set {
            say!("{long} = {}  # {}", entry.value, entry.source);
        }
    }
    ExitCode::SUCCESS
}

/// A top-level key's value and where it comes from: a file, the
/// environment (`$LINKPERF_DB`), or the built-in default.
fn shared_value(config: &Config, client: &clap::Command, key: &str) -> (String, String) {
    if key == "db" {
        if let Some(v) = std::env::var("LINKPERF_DB").ok().filter(|v| !v.is_empty()) {
            return (format!("{v:?}"), "$LINKPERF_DB".into());
        }
    }
    if let Some(e) = config.lookup(None, key, true) {
        return (e.value.to_string(), e.source.to_string());
    }
    let default = if key == "db" {
        linkperf_store::default_path()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|e| e.to_string())
    } else {
        client
            .get_arguments()
            .find(|a| a.get_long() == Some(key))
            .and_then(|a| a.get_default_values().first())
            .map(|v| v.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let shown = if key == "port" {
        default
    } else {
        format!("{default:?}")
    };
    (shown, "default".into())
}

fn usage(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("linkperf: {message}");
    ExitCode::from(2)
}
