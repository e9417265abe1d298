//! Defaults from the configuration files (`linkperf-config` reads them): which
//! keys exist (a few shared top-level keys, and a section per command whose
//! keys are that command's long options), checking each value with the
//! option's own parser, merging the winners under the command line, and
//! `linkperf config show`.

use crate::args::Cli;
use crate::defaults::{self, configurable, SECTIONS, SHARED};
use clap::{ArgMatches, CommandFactory, Subcommand};
use linkperf_config::{Config, Entry, Files};
use std::ffi::OsString;
use std::process::ExitCode;

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
    Ok(defaults::merge(argv, &config, top, leaf, leaf_matches))
}

/// Every entry of every file names a known key with a value its option takes.
fn check(config: &Config, root: &clap::Command) -> Result<(), String> {
    config.check(known_place).map_err(|e| e.to_string())?;
    SECTIONS.iter().try_for_each(|section| {
        let cmd = root
            .find_subcommand(section)
            .expect("a listed command exists");
        defaults::check_for(config, section, cmd)
    })
}

/// An entry at the top level names a shared key; a section names a command.
fn known_place(entry: &Entry) -> Result<(), String> {
    match &entry.section {
        None if !SHARED.iter().any(|(k, _)| *k == entry.key) => {
            let keys: Vec<&str> = SHARED.iter().map(|(k, _)| *k).collect();
            Err(format!(
                "unknown key; accepted at the top level: {}, and sections [{}]",
                keys.join(", "),
                SECTIONS.join("] [")
            ))
        }
        Some(section) if !SECTIONS.contains(&section.as_str()) => Err(format!(
            "unknown section; accepted: [{}]",
            SECTIONS.join("] [")
        )),
        _ => Ok(()),
    }
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
