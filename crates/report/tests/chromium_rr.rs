//! Opens the report of real `linkperf rr` runs (fixtures/rr_*.json: `--sizes
//! 64,1K,8K,32K,60K -n 2000` and `-t 2 --load "-t 3"` on loopback) in
//! headless Chromium and checks from the rendered page that the RTT
//! distribution, CDF, tail, size and load plots are drawn and not blank.
//!
//! Skipped with a message when Chromium is absent, except under CI (CI set).
//! LINKPERF_REPORT_OUT=DIR keeps the pages and screenshots in DIR.

mod common;

use common::browser::{chromium, ink, run_chromium};
use std::path::PathBuf;
use std::time::Duration;

struct Page {
    name: &'static str,
    fixture: &'static str,
    plots: usize,
    /// Text the rendered page must show.
    texts: Vec<String>,
}

#[test]
fn rr_reports_render_in_headless_chromium() {
    let Some(bin) = chromium() else {
        if std::env::var_os("CI").is_some() {
            panic!("chromium is not installed: apt-get install -y chromium");
        }
        linkperf_testsupport::skip("chromium not found (Debian: apt-get install -y chromium)");
        return;
    };
    let out = match std::env::var_os("LINKPERF_REPORT_OUT") {
        Some(d) => PathBuf::from(d),
        None => std::env::temp_dir().join(format!("linkperf-rr-chromium-{}", std::process::id())),
    };
    std::fs::create_dir_all(&out).expect("output dir");
    let sizes = common::fixture("rr_sizes.json");
    let load = common::fixture("rr_load.json");
    // What the runs asked for: 2000 transactions at each of the 5 sizes; 100
    // probes/s for the 2 idle seconds.
    let asked = sizes["test"]["count"].as_u64().unwrap()
        * sizes["test"]["sizes"].as_array().unwrap().len() as u64;
    assert_eq!(asked, 10_000);
    let idle = (load["test"]["rate_per_second"].as_f64().unwrap()
        * load["test"]["duration_s"].as_f64().unwrap()) as u64;
    let pages = [
        Page {
            name: "rr-sizes",
            fixture: "rr_sizes.json",
            plots: 4,
            texts: vec![
                format!("RTT distribution of {asked} transactions"),
                "RTT against message size".into(),
                "least-squares line".into(),
                "Message size (KiB)".into(),
                "61440".into(),
                "RTT, log scale".into(),
            ],
        },
        Page {
            name: "rr-load",
            fixture: "rr_load.json",
            plots: 5,
            texts: vec![
                "Idle against loaded".into(),
                format!("idle (before the load)</th><td class=\"n\">{idle}</td>"),
                "loaded (percentiles)".into(),
                "RTT percentiles idle and under load".into(),
                "RTT per interval".into(),
            ],
        },
    ];
    let profile = out.join("profile");
    for page in &pages {
        let export = common::real_rr_run(page.fixture);
        let html = linkperf_report::render(&export).expect("render");
        let file = out.join(format!("{}.html", page.name));
        std::fs::write(&file, &html).expect("write page");
        let url = format!("file://{}", file.display());
        let dom = run_chromium(
            &bin,
            &profile,
            &["--dump-dom".to_string(), url.clone()],
            Duration::from_secs(120),
        );
        assert!(dom.contains("</html>"), "{}: no document", page.name);
        let svgs = common::count(&dom, "<svg");
        assert!(svgs >= page.plots, "{}: {svgs} plots", page.name);
        let lines = common::polylines(&dom);
        assert!(
            lines.iter().filter(|l| l.len() >= 2).count() >= page.plots,
            "{}: too few drawn lines",
            page.name
        );
        for (x, y) in lines.iter().flatten() {
            assert!(
                x.is_finite() && y.is_finite() && *x >= 0.0 && *y >= 0.0,
                "{}: bad point ({x}, {y})",
                page.name
            );
        }
        for t in &page.texts {
            assert!(dom.contains(t.as_str()), "{}: page lacks {t:?}", page.name);
        }
        let png = out.join(format!("{}.png", page.name));
        let _ = std::fs::remove_file(&png);
        run_chromium(
            &bin,
            &profile,
            &[
                format!("--screenshot={}", png.display()),
                "--window-size=1200,3000".to_string(),
                url,
            ],
            Duration::from_secs(120),
        );
        let (fraction, coloured, w, h) = ink(&png);
        assert_eq!((w, h), (1200, 3000), "{}: screenshot size", page.name);
        assert!(
            fraction > 0.03,
            "{}: screenshot nearly blank ({:.1}% inked) at {}",
            page.name,
            fraction * 100.0,
            png.display()
        );
        assert!(
            coloured > 2500 + page.plots * 1000,
            "{}: only {coloured} coloured pixels: are the plots drawn? {}",
            page.name,
            png.display()
        );
        eprintln!(
            "{}: {:.1}% inked, {coloured} coloured pixels, {}",
            page.name,
            fraction * 100.0,
            png.display()
        );
    }
    if std::env::var_os("LINKPERF_REPORT_OUT").is_none() {
        let _ = std::fs::remove_dir_all(&out);
    }
}
