//! The server's event log: one line per event, RFC 3339 timestamp, the
//! peer's address on every line; text (results on stdout, refusals and
//! failures on stderr, as before) or JSON objects, to the terminal or to a
//! file (`--logfile`).

use serde_json::json;
use std::fs::File;
use std::io::Write;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

/// How much an event matters: results and refusals are always logged
/// (unless quiet), details only when asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Info,
    Warn,
}

impl Level {
    fn name(self) -> &'static str {
        match self {
            Level::Info => "info",
            Level::Warn => "warn",
        }
    }
}

pub struct EventLog {
    format: LogFormat,
    file: Option<Mutex<File>>,
    quiet: bool,
}

impl EventLog {
    /// A log to the terminal (or nowhere when `quiet`), or appended to `file`.
    pub fn new(format: LogFormat, file: Option<&Path>, quiet: bool) -> Result<EventLog, String> {
        let file = match file {
            Some(path) => Some(Mutex::new(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .map_err(|e| format!("cannot open --logfile {}: {e}", path.display()))?,
            )),
            None => None,
        };
        Ok(EventLog {
            format,
            file,
            quiet,
        })
    }

    /// Logs one event: `event` is a short kebab-case name ("test-done",
    /// "refused"), `message` one line for a person.
    pub fn event(&self, level: Level, peer: SocketAddr, event: &str, message: &str) {
        if self.quiet && self.file.is_none() {
            return;
        }
        let now_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0);
        let stamp = linkperf_report::rfc3339(now_ms);
        let message = message.replace('\n', " ");
        let line = match self.format {
            LogFormat::Text => format!("{stamp} {} {event} {peer}: {message}", level.name()),
            LogFormat::Json => json!({
                "time": stamp,
                "level": level.name(),
                "event": event,
                "peer": peer.to_string(),
                "message": message,
            })
            .to_string(),
        };
        match &self.file {
            Some(file) => {
                if let Ok(mut f) = file.lock() {
                    let _ = writeln!(f, "{line}");
                }
            }
            // A closed terminal must not end the server (println! panics).
            None if level == Level::Info => {
                let _ = writeln!(std::io::stdout(), "{line}");
            }
            None => {
                let _ = writeln!(std::io::stderr(), "{line}");
            }
        }
    }
}

impl Default for EventLog {
    fn default() -> Self {
        EventLog {
            format: LogFormat::Text,
            file: None,
            quiet: false,
        }
    }
}
