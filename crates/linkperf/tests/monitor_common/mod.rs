//! Shared by the monitor tests: agents on loopback, the controller as a
//! child process with its JSON-lines log collected, a private Prometheus,
//! headless Chromium and the archive read back through the store crate.

#![allow(dead_code)]

use crate::common::{bin, free_port, poll, Server};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A `linkperf server --allow-third-party` on loopback (killed on drop).
pub fn agent() -> Server {
    Server::start_with(&["--allow-third-party"])
}

/// A port nothing listens on: a host that is down.
pub fn dead_port() -> u16 {
    free_port()
}

/// `linkperf monitor run` as a child; its log lines parsed as they come.
pub struct Controller {
    pub child: Child,
    pub log: Arc<Mutex<Vec<Value>>>,
    pub stderr: Arc<Mutex<String>>,
}

impl Controller {
    pub fn start(file: &Path, extra: &[&str]) -> Controller {
        let mut child = Command::new(bin())
            .args(["monitor", "run"])
            .arg(file)
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start linkperf monitor run");
        let log = Arc::new(Mutex::new(Vec::new()));
        let stderr = Arc::new(Mutex::new(String::new()));
        let (out, err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
        let into = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                let v: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("log line is not JSON ({e}): {line}"));
                into.lock().unwrap().push(v);
            }
        });
        let into = stderr.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                into.lock().unwrap().push_str(&(line + "\n"));
            }
        });
        Controller { child, log, stderr }
    }

    pub fn events(&self, kind: &str) -> Vec<Value> {
        self.log
            .lock()
            .unwrap()
            .iter()
            .filter(|v| v["event"] == kind)
            .cloned()
            .collect()
    }

    /// Waits until `n` events of `kind` were logged (panics after `limit`).
    pub fn wait_events(&self, kind: &str, n: usize, limit: Duration) -> Vec<Value> {
        poll(limit, Duration::from_millis(50), || {
            let e = self.events(kind);
            (e.len() >= n).then_some(e)
        })
        .unwrap_or_else(|| {
            panic!(
                "fewer than {n} '{kind}' events within {limit:?}; log: {:?}; stderr: {}",
                self.log.lock().unwrap(),
                self.stderr.lock().unwrap()
            )
        })
    }

    /// Waits for the exit (panics after `limit`); returns the exit code.
    pub fn wait(&mut self, limit: Duration) -> Option<i32> {
        let status = poll(limit, Duration::from_millis(50), || {
            self.child.try_wait().ok().flatten()
        })
        .unwrap_or_else(|| {
            let _ = self.child.kill();
            panic!("the controller did not exit within {limit:?}")
        });
        // Let the reader threads take the last lines.
        std::thread::sleep(Duration::from_millis(200));
        status.code()
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One `[[host]]` per (name, port) on 127.0.0.1.
pub fn hosts_toml(hosts: &[(&str, u16)]) -> String {
    hosts
        .iter()
        .map(|(n, p)| format!("[[host]]\nname = \"{n}\"\naddress = \"127.0.0.1:{p}\"\n"))
        .collect()
}

/// The HTTP body of `GET path` from `addr` (the controller's own server).
pub fn http_get(addr: &str, path: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).expect("connect to --http");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, body.to_string())
}

/// A private Prometheus scraping `target` every second (killed on drop).
pub struct Prometheus {
    child: Child,
    pub addr: String,
}

impl Prometheus {
    pub fn start(dir: &Path, target: &str) -> Option<Prometheus> {
        let bin = Path::new("/usr/bin/prometheus");
        if !bin.exists() {
            return None;
        }
        let config = dir.join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\nscrape_configs:\n  \
                 - job_name: linkperf\n    static_configs:\n      - targets: ['{target}']\n"
            ),
        )
        .unwrap();
        let addr = format!("127.0.0.1:{}", free_port());
        let child = Command::new(bin)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("tsdb").display()
            ))
            .arg(format!("--web.listen-address={addr}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join("prometheus.log")).unwrap())
            .spawn()
            .expect("start prometheus");
        Some(Prometheus { child, addr })
    }

    /// The instant vector of `query` (an empty list until it has samples).
    pub fn query(&self, query: &str) -> Vec<Value> {
        let q: String = query
            .bytes()
            .map(|b| match b {
                b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' => (b as char).to_string(),
                _ => format!("%{b:02X}"),
            })
            .collect();
        let Ok(mut s) = std::net::TcpStream::connect(&self.addr) else {
            return Vec::new();
        };
        use std::io::{Read, Write};
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let _ = write!(
            s,
            "GET /api/v1/query?query={q} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        );
        let mut text = String::new();
        let _ = s.read_to_string(&mut text);
        let body = text.split_once("\r\n\r\n").map(|x| x.1).unwrap_or("");
        // Chunked or not, the JSON object is between the first '{' and the last '}'.
        let (Some(a), Some(b)) = (body.find('{'), body.rfind('}')) else {
            return Vec::new();
        };
        serde_json::from_str::<Value>(&body[a..=b])
            .ok()
            .and_then(|v| v["data"]["result"].as_array().cloned())
            .unwrap_or_default()
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn chromium() -> Option<PathBuf> {
    std::env::var("PATH")
        .unwrap_or_default()
        .split(':')
        .map(|d| Path::new(d).join("chromium"))
        .find(|p| p.is_file())
}

/// Chromium's DOM of `url` after it loaded (at most 60 s).
pub fn dump_dom(browser: &Path, profile: &Path, url: &str) -> String {
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start chromium");
    let mut out = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut out, &mut s);
        s
    });
    let done = poll(Duration::from_secs(60), Duration::from_millis(100), || {
        child.try_wait().ok().flatten()
    });
    if done.is_none() {
        let _ = child.kill();
        let _ = child.wait();
        panic!("chromium did not finish within 60 s: {url}");
    }
    reader.join().unwrap()
}
