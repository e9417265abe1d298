//! Headless Chromium (Debian's `chromium` package) for the render tests:
//! find it (or record the skip), run it with a time limit, keep its output
//! where asked, and check what it rendered: the plots in the DOM and the ink
//! of a screenshot.

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
    let (buf, channels, w, h) = pixels(png_path);
    let (mut inked, mut coloured) = (0usize, 0usize);
    for px in buf.chunks(channels) {
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

/// The pixels of an 8-bit colour PNG: the bytes, channels per pixel, width
/// and height.
pub fn pixels(png_path: &Path) -> (Vec<u8>, usize, u32, u32) {
    let file = std::fs::File::open(png_path).expect("open screenshot");
    let decoder = png::Decoder::new(std::io::BufReader::new(file));
    let mut reader = decoder.read_info().expect("png header");
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).expect("png frame");
    let channels = info.color_type.samples();
    assert_eq!(info.bit_depth, png::BitDepth::Eight, "8-bit screenshot");
    assert!(channels >= 3, "colour screenshot");
    buf.truncate(info.buffer_size());
    (buf, channels, info.width, info.height)
}

/// The browser, or `None` after recording why the test is skipped. Under CI
/// (CI set) a missing browser is a failure: .ci/run installs it.
pub fn chromium_or_skip() -> Option<PathBuf> {
    let bin = chromium();
    if bin.is_none() {
        if std::env::var_os("CI").is_some() {
            panic!("chromium is not installed: apt-get install -y chromium");
        }
        linkperf_testsupport::skip("chromium not found (Debian: apt-get install -y chromium)");
    }
    bin
}

/// Headless Chromium with a profile of its own, writing pages and
/// screenshots to a folder: $LINKPERF_REPORT_OUT (kept), else a temporary
/// one that `finish` removes (left behind when a check fails, to look at).
pub struct Browser {
    pub bin: PathBuf,
    pub out: PathBuf,
    profile: PathBuf,
    keep: bool,
}

impl Browser {
    /// The browser with a folder named after `name`, or `None` after
    /// recording why the test is skipped (see [`chromium_or_skip`]).
    pub fn or_skip(name: &str) -> Option<Browser> {
        chromium_or_skip().map(|bin| Browser::new(bin, name))
    }

    /// `name` names the temporary folder.
    pub fn new(bin: PathBuf, name: &str) -> Browser {
        let (out, keep) = match std::env::var_os("LINKPERF_REPORT_OUT") {
            Some(d) => (PathBuf::from(d), true),
            None => (
                std::env::temp_dir().join(format!("{name}-{}", std::process::id())),
                false,
            ),
        };
        std::fs::create_dir_all(&out).expect("output dir");
        let profile = out.join("profile");
        Browser {
            bin,
            out,
            profile,
            keep,
        }
    }

    /// Writes `html` as NAME.html; returns its path.
    pub fn write_page(&self, name: &str, html: &str) -> PathBuf {
        let file = self.out.join(format!("{name}.html"));
        std::fs::write(&file, html).expect("write page");
        file
    }

    /// The document Chromium built from `url` (scripts run, serialised).
    pub fn dump_dom(&self, url: &str) -> String {
        run_chromium(
            &self.bin,
            &self.profile,
            &["--dump-dom".to_string(), url.to_string()],
            Duration::from_secs(120),
        )
    }

    /// Screenshots `url` in a `width` x `height` window into NAME.png;
    /// returns its path.
    pub fn screenshot(&self, url: &str, name: &str, width: u32, height: u32) -> PathBuf {
        let png = self.out.join(format!("{name}.png"));
        let _ = std::fs::remove_file(&png);
        run_chromium(
            &self.bin,
            &self.profile,
            &[
                format!("--screenshot={}", png.display()),
                format!("--window-size={width},{height}"),
                url.to_string(),
            ],
            Duration::from_secs(120),
        );
        png
    }
}

impl Browser {
    /// Removes the temporary folder once every check has passed.
    pub fn finish(self) {
        if !self.keep {
            let _ = std::fs::remove_dir_all(&self.out);
        }
    }
}

/// The DOM of page `name` is a whole document with at least `plots` SVG
/// plots, as many drawn lines, and every point inside the picture.
pub fn check_dom_plots(name: &str, dom: &str, plots: usize) {
    assert!(
        dom.contains("</html>"),
        "{name}: chromium returned no document ({} bytes)",
        dom.len()
    );
    let svgs = super::count(dom, "<svg");
    assert!(
        svgs >= plots,
        "{name}: {svgs} plots in the DOM, expected {plots}"
    );
    // Every plot has at least one line with real points in it.
    let lines = super::polylines(dom);
    assert!(
        lines.iter().filter(|l| l.len() >= 2).count() >= plots,
        "{name}: too few drawn lines: {lines:?}"
    );
    for (x, y) in lines.iter().flatten() {
        assert!(
            x.is_finite() && y.is_finite() && *x >= 0.0 && *y >= 0.0,
            "{name}: bad point ({x}, {y})"
        );
    }
}

/// The screenshot of page `name` has the size asked for, is not blank, and
/// shows the palette's colours of its `plots` plots.
pub fn check_ink(name: &str, png: &Path, size: (u32, u32), plots: usize) {
    let (fraction, coloured, w, h) = ink(png);
    assert_eq!((w, h), size, "{name}: screenshot size");
    // Plots, text and table rules: a blank or failed page is ~0.
    assert!(
        fraction > 0.03,
        "{name}: screenshot nearly blank ({:.1}% inked) at {}",
        fraction * 100.0,
        png.display()
    );
    // The palette's lines and markers: these pages with their plots
    // removed have 1000-1800 such pixels (links, marked cells); with
    // them, 5000 and more.
    assert!(
        coloured > 2500 + plots * 1000,
        "{name}: only {coloured} coloured pixels: are the plots drawn? {}",
        png.display()
    );
    eprintln!(
        "{name}: {:.1}% inked, {coloured} coloured pixels, {}",
        fraction * 100.0,
        png.display()
    );
}
