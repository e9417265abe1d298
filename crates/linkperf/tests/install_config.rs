//! The configuration files, as a user writes them: real files in a temporary
//! `$XDG_CONFIG_HOME` and a temporary system file (`$LINKPERF_SYSTEM_CONFIG`
//! stands for /etc/linkperf/config.toml), a real server and client on
//! loopback. Defaults reach the test (the byte count asked for arrives at the
//! server), flags override them, `config show` names each value's file and
//! line, and a bad file is refused on one line with file, line and key.

mod common;

use common::{free_port, wait_child, Run, CLIENT_WATCHDOG};
use serde_json::Value;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A user config directory and a system file, removed at the end.
struct Home {
    root: PathBuf,
}

impl Home {
    fn new(name: &str) -> Home {
        let root =
            std::env::temp_dir().join(format!("linkperf-config-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("xdg/linkperf")).unwrap();
        Home { root }
    }
    fn user_file(&self) -> PathBuf {
        self.root.join("xdg/linkperf/config.toml")
    }
    fn system_file(&self) -> PathBuf {
        self.root.join("etc-config.toml")
    }
    fn write_user(&self, text: &str) {
        std::fs::write(self.user_file(), text).unwrap();
    }
    fn write_system(&self, text: &str) {
        std::fs::write(self.system_file(), text).unwrap();
    }
    /// `linkperf ARGS` reading only this home's files.
    fn command(&self, args: &[&str]) -> Command {
        self.command_of(common::bin(), args)
    }
    /// `program ARGS` (`linkperf` or `linkperf-server`) reading only this home's files.
    fn command_of(&self, program: &str, args: &[&str]) -> Command {
        let mut c = Command::new(program);
        c.args(args)
            .env("XDG_CONFIG_HOME", self.root.join("xdg"))
            .env("LINKPERF_SYSTEM_CONFIG", self.system_file())
            .env_remove("LINKPERF_DB")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    }
    fn spawn(&self, args: &[&str]) -> Child {
        self.command(args).spawn().expect("spawn linkperf")
    }
    fn run(&self, args: &[&str]) -> Run {
        wait_child(self.spawn(args), CLIENT_WATCHDOG)
    }
}

impl Drop for Home {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// A server started by `linkperf server` with no flags: its port and
/// address come from the files. Waits for its "listening on" line.
fn server_from_files(home: &Home, port: u16) -> common::KillOnDrop {
    serve_from_files(home.spawn(&["server"]), port)
}

/// A started server's first line must say it listens on 127.0.0.1:`port`.
fn serve_from_files(mut child: Child, port: u16) -> common::KillOnDrop {
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            let _ = tx.send(line);
        }
    });
    let line = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the server printed no line");
    assert_eq!(
        line,
        format!("linkperf server listening on 127.0.0.1:{port}")
    );
    common::KillOnDrop(child)
}

fn received_bytes(report: &Value) -> u64 {
    common::u64_at(report, "/summary/received/bytes")
}

#[test]
fn defaults_from_both_files_reach_the_test_and_flags_override_them() {
    let home = Home::new("merge");
    let port = free_port();
    let db = home.root.join("archive.db");
    // The system file says where the server listens (its section beats its
    // top-level port) and what the client sends; the user's file, stronger,
    // sets the client's port, format (over the system's) and archive.
    home.write_system(&format!(
        "port = 1\nformat = \"text\"\n[server]\nport = {port}\nbind = \"127.0.0.1\"\n\
         [client]\nbytes = \"256K\"\n"
    ));
    home.write_user(&format!(
        "format = \"json\"\ndb = {db:?}\n[client]\nport = {port}\n"
    ));
    let _server = server_from_files(&home, port);

    let run = home.run(&["client", "127.0.0.1"]);
    let report = run.report();
    assert_eq!(received_bytes(&report), 256 * 1024, "the files' -n 256K");
    assert_eq!(report["test"]["port"], port);
    // Stored where the file's `db` says: `results list` (same files) finds it.
    let list = home.run(&["results", "list", "-J"]);
    list.assert_success("results list with the files' db");
    let entries = list.json()["entries"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        entries.len(),
        1,
        "one run in {}: {}",
        db.display(),
        list.stdout
    );
    assert!(db.exists());

    // Flags beat both files: 128K, text output, not stored.
    let run = home.run(&[
        "client",
        "127.0.0.1",
        "-n",
        "128K",
        "--format",
        "text",
        "--no-store",
    ]);
    run.assert_success("client with flags over the files");
    assert!(
        serde_json::from_str::<Value>(&run.stdout).is_err(),
        "--format text printed JSON"
    );
    let run = home.run(&["client", "127.0.0.1", "-n", "128K", "--no-store"]);
    assert_eq!(
        received_bytes(&run.report()),
        128 * 1024,
        "-n 128K over the file's 256K"
    );
    // `-J` conflicts with the file's format only as a default: the flag wins.
    let run = home.run(&["client", "127.0.0.1", "--json-stream", "--no-store"]);
    run.assert_success("--json-stream over the file's format = json");
    assert!(
        run.stdout.lines().count() > 1,
        "not a JSON stream: {}",
        run.stdout
    );
}

#[test]
fn config_show_names_the_file_and_line_of_every_value() {
    let home = Home::new("show");
    home.write_system("# the site's defaults\ndb = \"/srv/linkperf.db\"\nport = 6000\n\n[server]\nexclusive = true\n");
    home.write_user("\n\nport = 6100\n[server]\nport = 6200\n");
    let run = home.run(&["config", "show"]);
    run.assert_success("config show");
    let user = home.user_file().display().to_string();
    let system = home.system_file().display().to_string();
    let lines: Vec<&str> = run.stdout.lines().collect();
    for want in [
        format!("port = 6100  # {user}:3"),
        format!("db = \"/srv/linkperf.db\"  # {system}:2"),
        "format = \"text\"  # default".to_string(),
        format!("port = 6200  # {user}:5"),
        format!("exclusive = true  # {system}:6"),
    ] {
        assert!(
            lines.contains(&want.as_str()),
            "missing {want:?} in:\n{}",
            run.stdout
        );
    }
    // $LINKPERF_DB beats the files, and show says so.
    let out = home
        .command(&["config", "show"])
        .env("LINKPERF_DB", "/tmp/env.db")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines()
            .any(|l| l == "db = \"/tmp/env.db\"  # $LINKPERF_DB"),
        "{text}"
    );
}

#[test]
fn a_bad_file_is_refused_on_one_line_with_file_line_and_key() {
    let home = Home::new("bad");
    let user = home.user_file();
    let cases: [(&str, usize, &str, &str); 6] = [
        ("port = 5300\nbogus = 1\n", 2, "'bogus'", "accepted"),
        (
            "\n[server]\nport = \"http\"\n",
            3,
            "'server.port'",
            "invalid value 'http'",
        ),
        ("[client]\nformat = \"xml\"\n", 2, "'client.format'", "json"),
        ("[client]\nudp = 1\n", 2, "'client.udp'", "true or false"),
        ("[nosuch]\nx = 1\n", 2, "'nosuch.x'", "[server]"),
        ("port = 1\nport = = 2\n", 2, "", "TOML"),
    ];
    for (text, line, key, says) in cases {
        home.write_user(text);
        for args in [
            &["config", "show"][..],
            &["client", "127.0.0.1", "-t", "1"][..],
            &["server"][..],
        ] {
            let run = home.run(args);
            let err = run.assert_one_line_failure(2);
            let at = format!("{}:{line}:", user.display());
            assert!(
                err.starts_with(&format!("linkperf: {at}")),
                "{args:?} {text:?}: {err}"
            );
            assert!(
                err.contains(key) && err.contains(says),
                "{args:?} {text:?}: {err}"
            );
        }
    }
    // Commands that do not read the files work whatever they hold.
    let run = home.run(&["completions", "bash"]);
    run.assert_success("completions with a bad config file");
}

#[test]
fn the_packaged_example_file_is_accepted_as_it_ships() {
    let home = Home::new("example");
    let example =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../dist/debian/config.toml");
    std::fs::copy(&example, home.system_file()).unwrap();
    let run = home.run(&["config", "show"]);
    run.assert_success("config show with dist/debian/config.toml");
    let system = home.system_file().display().to_string();
    assert!(
        run.stdout
            .contains(&format!("format = \"text\"  # {system}:")),
        "{}",
        run.stdout
    );
}

#[test]
fn linkperf_server_takes_the_server_section_and_leaves_the_others_to_linkperf() {
    let home = Home::new("lean");
    let port = free_port();
    // `linkperf-server` reads what concerns the server: its section and the
    // top-level port it takes (the section wins). A [client] key it cannot
    // know is `linkperf`'s to refuse, not its own.
    home.write_user(&format!(
        "port = 1\n[server]\nport = {port}\nbind = \"127.0.0.1\"\n[client]\nbogus = 1\n"
    ));
    let spawned = home
        .command_of(common::server_bin(), &[])
        .spawn()
        .expect("spawn linkperf-server");
    let _server = serve_from_files(spawned, port);
    let run = home.run(&["client", "127.0.0.1", "-p", &port.to_string(), "-n", "64K"]);
    let err = run.assert_one_line_failure(2);
    assert!(err.contains("'client.bogus'"), "{err}");
    // Without that key the same server, started from the file, serves.
    home.write_user(&format!("[server]\nport = {port}\n"));
    let run = home.run(&[
        "client",
        "127.0.0.1",
        "-p",
        &port.to_string(),
        "-n",
        "64K",
        "--no-store",
        "-J",
    ]);
    assert_eq!(received_bytes(&run.report()), 64 * 1024, "{}", run.stderr);

    // A bad value of its own is refused on one line: file, line, key, why.
    home.write_user("\n[server]\nport = \"http\"\n");
    let run = wait_child(
        home.command_of(common::server_bin(), &[])
            .spawn()
            .expect("spawn linkperf-server"),
        CLIENT_WATCHDOG,
    );
    let err = run.assert_one_line_failure(2);
    let at = format!("linkperf-server: {}:3:", home.user_file().display());
    assert!(err.starts_with(&at), "{err}");
    assert!(
        err.contains("'server.port'") && err.contains("invalid value 'http'"),
        "{err}"
    );
}
