//! The manual pages and the shell completions cover every flag: the test walks
//! every subcommand through `--help` (what a user sees, rendered by clap
//! itself), and checks each flag it lists against `linkperf man` and the
//! bash, zsh and fish scripts of `linkperf completions`.

use std::collections::BTreeMap;
use std::process::Command;

fn linkperf(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_linkperf"))
        .args(args)
        .output()
        .expect("run linkperf");
    assert!(
        out.status.success(),
        "linkperf {args:?} exited {:?}: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8 output")
}

/// One flag as `--help` lists it: `-p, --port <PORT>` gives ("p", "port").
#[derive(Debug, Clone)]
struct Flag {
    short: Option<char>,
    long: Option<String>,
}

/// Lines of one `--help` section ("Options:", "Commands:"), to the next
/// heading (clap leaves blank lines between entries when one has long help).
fn section<'a>(help: &'a str, title: &str) -> Vec<&'a str> {
    help.lines()
        .skip_while(|l| l.trim_end() != title)
        .skip(1)
        .take_while(|l| l.is_empty() || l.starts_with(' '))
        .filter(|l| !l.trim().is_empty())
        .collect()
}

fn flags_of(help: &str) -> Vec<Flag> {
    let mut flags = Vec::new();
    for line in section(help, "Options:") {
        // An entry is indented 2 spaces (6 without a short flag); a
        // description on its own lines, 10 or more.
        let entry = line.trim_start();
        if !entry.starts_with('-') || line.len() - entry.len() > 6 {
            continue;
        }
        let mut flag = Flag {
            short: None,
            long: None,
        };
        for word in entry.split_whitespace() {
            let word = word.trim_end_matches(',');
            if let Some(long) = word.strip_prefix("--") {
                flag.long = Some(long.split(['=', '[', '<']).next().unwrap().to_string());
                break;
            } else if let Some(short) = word.strip_prefix('-') {
                flag.short = short.chars().next();
            } else {
                break;
            }
        }
        flags.push(flag);
    }
    flags
}

fn subcommands_of(help: &str) -> Vec<String> {
    section(help, "Commands:")
        .iter()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect()
}

/// Every command path (`[]`, `["client"]`, `["campaign", "run"]`, ...) with its flags.
fn walk() -> BTreeMap<Vec<String>, Vec<Flag>> {
    let mut found = BTreeMap::new();
    let mut todo: Vec<Vec<String>> = vec![vec![]];
    while let Some(path) = todo.pop() {
        let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
        args.push("--help");
        let help = linkperf(&args);
        for sub in subcommands_of(&help) {
            let mut p = path.clone();
            p.push(sub);
            todo.push(p);
        }
        found.insert(path, flags_of(&help));
    }
    found
}

/// roff writes a dash as `\-`; the page as a reader sees it.
fn unroff(page: &str) -> String {
    page.replace("\\-", "-")
}

/// The `opts="..."` words of one command's block in the bash script.
fn bash_opts<'a>(script: &'a str, path: &[String]) -> Vec<&'a str> {
    let mut key = "linkperf".to_string();
    for p in path {
        key.push_str("__subcmd__");
        key.push_str(p);
    }
    key.push(')');
    let mut lines = script.lines().skip_while(|l| l.trim() != key);
    assert!(lines.next().is_some(), "bash completion has no block {key}");
    let opts = lines
        .find_map(|l| l.trim().strip_prefix("opts=\""))
        .unwrap_or_else(|| panic!("bash block {key} has no opts"));
    opts.trim_end_matches('"').split_whitespace().collect()
}

/// The fish lines that complete for one command (not for its subcommands):
/// a command with subcommands is named "X; and not __fish_seen_subcommand_from ...".
fn fish_lines<'a>(script: &'a str, path: &[String]) -> Vec<&'a str> {
    let condition = match path {
        [] => "__fish_linkperf_needs_command".to_string(),
        [one] => format!("__fish_linkperf_using_subcommand {one}"),
        [one, two] => {
            format!("__fish_linkperf_using_subcommand {one}; and __fish_seen_subcommand_from {two}")
        }
        deeper => panic!("fish check knows two levels, not {deeper:?}"),
    };
    let exact = format!("-n \"{condition}\"");
    let parent = format!("-n \"{condition}; and not ");
    script
        .lines()
        .filter(|l| l.contains(&exact) || l.contains(&parent))
        .collect()
}

/// zsh names a flag as `'--port=[...`, `'-p+[...`, `'-4[...`, a repeatable
/// one as `'*--vary=[...`, and with the flags it conflicts with first,
/// `'(-6 --version6)--version4[...`.
fn in_zsh(script: &str, dashed: &str) -> bool {
    ["'", ")", "'*"].iter().any(|before| {
        ["[", "=", "+"]
            .iter()
            .any(|after| script.contains(&format!("{before}{dashed}{after}")))
    })
}

#[test]
fn every_flag_of_every_subcommand_is_in_its_man_page_and_in_every_completion_script() {
    let commands = walk();
    // The walk reached the nested commands the pages must cover too.
    for nested in [
        vec!["client"],
        vec!["campaign", "run"],
        vec!["results", "show"],
    ] {
        let nested: Vec<String> = nested.iter().map(|s| s.to_string()).collect();
        assert!(
            commands.contains_key(&nested),
            "the --help walk missed {nested:?}"
        );
    }
    let dir = tempdir();
    linkperf(&["man", "--dir", dir.to_str().unwrap()]);
    let bash = linkperf(&["completions", "bash"]);
    let zsh = linkperf(&["completions", "zsh"]);
    let fish = linkperf(&["completions", "fish"]);
    let mut missing = Vec::new();
    let mut checked = 0;
    for (path, flags) in &commands {
        let page_name = std::iter::once("linkperf")
            .chain(path.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join("-");
        let file = dir.join(format!("{page_name}.1"));
        let page = std::fs::read_to_string(&file)
            .unwrap_or_else(|e| panic!("no manual page {}: {e}", file.display()));
        // `linkperf man client` prints the page that --dir writes.
        let args: Vec<&str> = std::iter::once("man")
            .chain(path.iter().map(String::as_str))
            .collect();
        assert_eq!(
            linkperf(&args),
            page,
            "linkperf {} differs from {page_name}.1",
            args.join(" ")
        );
        let page = unroff(&page);
        let bash_words = bash_opts(&bash, path);
        let fish_here = fish_lines(&fish, path);
        for flag in flags {
            checked += 1;
            let name = format!("{page_name} {flag:?}");
            if let Some(long) = &flag.long {
                let dashed = format!("--{long}");
                if !page.contains(&format!("\\fB{dashed}\\fR")) {
                    missing.push(format!("{name}: --{long} not in {page_name}.1"));
                }
                if !bash_words.contains(&dashed.as_str()) {
                    missing.push(format!("{name}: --{long} not in bash"));
                }
                if !in_zsh(&zsh, &dashed) {
                    missing.push(format!("{name}: --{long} not in zsh"));
                }
                if !fish_here.iter().any(|l| {
                    l.contains(&format!(" -l {long} ")) || l.ends_with(&format!(" -l {long}"))
                }) {
                    missing.push(format!("{name}: --{long} not in fish"));
                }
            }
            if let Some(short) = flag.short {
                let dashed = format!("-{short}");
                if !page.contains(&format!("\\fB{dashed}\\fR")) {
                    missing.push(format!("{name}: -{short} not in {page_name}.1"));
                }
                if !bash_words.contains(&dashed.as_str()) {
                    missing.push(format!("{name}: -{short} not in bash"));
                }
                if !in_zsh(&zsh, &dashed) {
                    missing.push(format!("{name}: -{short} not in zsh"));
                }
                if !fish_here
                    .iter()
                    .any(|l| l.contains(&format!(" -s {short} ")))
                {
                    missing.push(format!("{name}: -{short} not in fish"));
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    println!("{} commands, {checked} flags checked", commands.len());
    assert!(missing.is_empty(), "flags missing:\n{}", missing.join("\n"));
}

#[test]
fn man_and_completions_refuse_what_they_do_not_know_in_one_line() {
    for args in [&["man", "nosuch"][..], &["completions", "tcsh"][..]] {
        let out = Command::new(env!("CARGO_BIN_EXE_linkperf"))
            .args(args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.contains("accepted"),
            "{args:?} names no accepted values: {err}"
        );
    }
}

fn tempdir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("linkperf-man-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
