//! The controller's HTTP endpoint (`--http ADDR`): `/metrics` (Prometheus
//! exposition from memory), `/` (the dashboard) and `/series?test=&src=&dst=`
//! (a pair's time series), both read from the archive. GET only, one short
//! request per connection; a thread per connection, at most a few at once.

use super::dashboard;
use super::metrics::{self, Live};
use super::schedule::Schedule;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const MAX_CONNECTIONS: usize = 16;

/// Binds `addr` and serves in background threads; the error names the address.
pub fn serve(
    addr: &str,
    schedule: Arc<Schedule>,
    db: Option<String>,
    live: Arc<Mutex<Live>>,
) -> Result<std::net::SocketAddr, String> {
    let listener =
        TcpListener::bind(addr).map_err(|e| format!("cannot listen on {addr} (--http): {e}"))?;
    let bound = listener.local_addr().map_err(|e| e.to_string())?;
    let open = Arc::new(AtomicUsize::new(0));
    std::thread::Builder::new()
        .name("lp-monitor-http".into())
        .spawn(move || {
            for stream in listener.incoming().flatten() {
                if open.load(Ordering::Relaxed) >= MAX_CONNECTIONS {
                    continue;
                }
                open.fetch_add(1, Ordering::Relaxed);
                let (schedule, db, live, open) =
                    (schedule.clone(), db.clone(), live.clone(), open.clone());
                let _ = std::thread::Builder::new()
                    .name("lp-monitor-req".into())
                    .spawn(move || {
                        let _ = handle(stream, &schedule, db.as_deref(), &live);
                        open.fetch_sub(1, Ordering::Relaxed);
                    });
            }
        })
        .map_err(|e| e.to_string())?;
    Ok(bound)
}

fn handle(
    mut stream: TcpStream,
    schedule: &Schedule,
    db: Option<&str>,
    live: &Mutex<Live>,
) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    // Skip the headers: nothing in them changes the answer.
    let mut header = String::new();
    while reader.read_line(&mut header)? > 2 {
        header.clear();
    }
    let mut parts = line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let (status, kind, body) = if method != "GET" {
        (405, "text/plain", "only GET\n".to_string())
    } else {
        route(path, query, schedule, db, live)
    };
    let reason = match status {
        200 => "OK",
        404 => "Not Found",
        405 => "Method Not Allowed",
        _ => "Service Unavailable",
    };
    write!(
        stream,
        "HTTP/1.1 {status} {reason}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    )?;
    stream.flush()
}

fn route(
    path: &str,
    query: &str,
    schedule: &Schedule,
    db: Option<&str>,
    live: &Mutex<Live>,
) -> (u16, &'static str, String) {
    const HTML: &str = "text/html; charset=utf-8";
    let now = crate::monitor::now_ms();
    match path {
        "/metrics" => {
            let text = metrics::render(&live.lock().unwrap_or_else(|e| e.into_inner()));
            (200, "text/plain; version=0.0.4; charset=utf-8", text)
        }
        "/" | "/series" => {
            let page = linkperf_store::Store::open_existing(db)
                .map_err(|e| e.to_string())
                .and_then(|mut store| {
                    if path == "/" {
                        dashboard::dashboard(schedule, &mut store, now)
                            .map(|d| linkperf_report::dashboard(&d))
                    } else {
                        let get = |k: &str| param(query, k).unwrap_or_default();
                        dashboard::series(&mut store, &get("test"), &get("src"), &get("dst"), now)
                            .map(|s| linkperf_report::pair_series(&s))
                    }
                });
            match page {
                Ok(html) => (200, HTML, html),
                Err(e) => (
                    503,
                    "text/plain",
                    format!("the archive cannot be read: {e}\n"),
                ),
            }
        }
        _ => (
            404,
            "text/plain",
            "not found: try /, /metrics or /series\n".into(),
        ),
    }
}

/// A query parameter, percent-decoded.
fn param(query: &str, key: &str) -> Option<String> {
    query.split('&').find_map(|kv| {
        let (k, v) = kv.split_once('=')?;
        (k == key).then(|| decode(v))
    })
}

fn decode(v: &str) -> String {
    let bytes = v.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
                match u8::from_str_radix(hex, 16) {
                    Ok(b) => {
                        out.push(b);
                        i += 3;
                        continue;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            b'+' => out.push(b' '),
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    #[test]
    fn query_values_are_decoded() {
        assert_eq!(
            super::param("test=a%2Fb&src=x+y", "test").as_deref(),
            Some("a/b")
        );
        assert_eq!(
            super::param("test=a%2Fb&src=x+y", "src").as_deref(),
            Some("x y")
        );
        assert_eq!(super::param("src=%4", "src").as_deref(), Some("%4"));
    }
}
