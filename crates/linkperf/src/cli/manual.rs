//! `linkperf man` and `linkperf completions`: the manual pages and the shell
//! completion scripts, generated from the same clap definitions as `--help`
//! so they cannot drift from the flags.

use crate::args::Cli;
use clap::{Args, CommandFactory};
use clap_complete::Shell;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct ManArgs {
    /// The subcommand whose page to print (e.g. `client`, `campaign run`);
    /// none: linkperf(1).
    #[arg(value_name = "COMMAND")]
    pub command: Vec<String>,
    /// Write every page (linkperf.1, linkperf-client.1, ...) into DIR instead.
    #[arg(long, value_name = "DIR", conflicts_with = "command")]
    pub dir: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: Shell,
    /// Write the script into DIR under the name the shell looks for
    /// (linkperf.bash, _linkperf, linkperf.fish) instead of printing it.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// The command tree, built: clap then names `linkperf client`'s page
/// `linkperf-client`, as `man linkperf-client` finds it.
fn command() -> clap::Command {
    let mut cmd = Cli::command();
    cmd.build();
    cmd
}

/// The tree the pages describe: `linkperf help` is not given a page.
fn man_tree() -> clap::Command {
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    cmd
}

pub fn man(args: ManArgs) -> ExitCode {
    let cmd = man_tree();
    if let Some(dir) = args.dir {
        return match write_pages(&cmd, &dir) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!(
                    "linkperf: cannot write the manual pages to {}: {e}",
                    dir.display()
                );
                ExitCode::from(1)
            }
        };
    }
    let mut page = &cmd;
    for name in &args.command {
        match page.find_subcommand(name) {
            Some(sub) => page = sub,
            None => {
                let names: Vec<&str> = page
                    .get_subcommands()
                    .filter(|s| !s.is_hide_set())
                    .map(|s| s.get_name())
                    .collect();
                eprintln!(
                    "linkperf: no manual page for '{}'; accepted: {}",
                    args.command.join(" "),
                    names.join(", ")
                );
                return ExitCode::from(2);
            }
        }
    }
    let mut out = Vec::new();
    if let Err(e) = page_of(page).render(&mut out) {
        eprintln!("linkperf: cannot render the manual page: {e}");
        return ExitCode::from(1);
    }
    say_raw!("{}", String::from_utf8_lossy(&out));
    ExitCode::SUCCESS
}

/// The page of one command of the built tree (titled linkperf-a-b by clap).
fn page_of(cmd: &clap::Command) -> clap_mangen::Man {
    let source = format!("linkperf {}", env!("CARGO_PKG_VERSION"));
    clap_mangen::Man::new(cmd.clone())
        .source(source)
        .manual("linkperf manual")
}

/// Every page of the tree: linkperf.1, then one per subcommand at any depth.
fn write_pages(root: &clap::Command, dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let mut stack = vec![root];
    while let Some(cmd) = stack.pop() {
        page_of(cmd).generate_to(dir)?;
        stack.extend(cmd.get_subcommands().filter(|s| !s.is_hide_set()));
    }
    Ok(())
}

pub fn completions(args: CompletionsArgs) -> ExitCode {
    let mut cmd = command();
    match args.dir {
        Some(dir) => {
            let written = std::fs::create_dir_all(&dir)
                .and_then(|()| clap_complete::generate_to(args.shell, &mut cmd, "linkperf", &dir));
            match written {
                Ok(_) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!(
                        "linkperf: cannot write the completions to {}: {e}",
                        dir.display()
                    );
                    ExitCode::from(1)
                }
            }
        }
        None => {
            let mut out = Vec::new();
            clap_complete::generate(args.shell, &mut cmd, "linkperf", &mut out);
            say_raw!("{}", String::from_utf8_lossy(&out));
            ExitCode::SUCCESS
        }
    }
}
