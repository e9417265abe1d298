//! Headless Chromium (Debian's `chromium` package) for the render tests:
//! find it, run it with a time limit, and measure a screenshot's ink.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub fn chromium() -> Option<PathBuf> {
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        for dir in std::env::var("PATH").unwrap_or_default().split(':') {
            let p = Path::new(dir).join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// Runs Chromium with `args`, at most `limit`; returns its stdout.
pub fn run_chromium(bin: &Path, profile: &Path, args: &[String], limit: Duration) -> String {
    let mut cmd = Command::new(bin);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        "--hide-scrollbars",
    ])
    .arg(format!("--user-data-dir={}", profile.display()))
    .args(args)
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::null());
    let mut child = cmd.spawn().expect("start chromium");
    let mut stdout = child.stdout.take().expect("stdout piped");
    // Read on a thread so a full pipe cannot stall the browser.
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut stdout, &mut s);
        s
    });
    let start = Instant::now();
    loop {
        match child.try_wait().expect("wait for chromium") {
            Some(_) => break,
            None if start.elapsed() > limit => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("chromium did not finish within {limit:?}: {args:?}");
            }
            None => std::thread::sleep(Duration::from_millis(100)),
        }
    }
    reader.join().expect("reader thread")
}

/// Fraction of pixels that are not (near) white, the count of strongly
/// coloured ones (plot lines, markers, bars: text and rules are grey), and
/// the image size.
pub fn ink(png_path: &Path) -> (f64, usize, u32, u32) {
    let file = std::fs::File::open(png_path).expect("open screenshot");
    let decoder = png::Decoder::new(std::io::BufReader::new(file));
    let mut reader = decoder.read_info().expect("png header");
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).expect("png frame");
    let channels = info.color_type.samples();
    assert_eq!(info.bit_depth, png::BitDepth::Eight, "8-bit screenshot");
    let (w, h) = (info.width, info.height);
    assert!(channels >= 3, "colour screenshot");
    let (mut inked, mut coloured) = (0usize, 0usize);
    for px in buf[..info.buffer_size()].chunks(channels) {
        let (r, g, b) = (px[0] as i32, px[1] as i32, px[2] as i32);
        if r.min(g).min(b) < 235 {
            inked += 1;
        }
        if r.max(g).max(b) - r.min(g).min(b) > 80 {
            coloured += 1;
        }
    }
    (inked as f64 / (w as f64 * h as f64), coloured, w, h)
}
