//! Opens rendered reports in headless Chromium (Debian's `chromium` package)
//! and checks from the rendered page that the plots and tables are there and
//! not blank: the DOM after rendering, and the pixels of a screenshot.
//!
//! Skipped with a message when Chromium is absent, except under CI (CI set),
//! where a missing browser is a failure: .ci/run installs it.
//! LINKPERF_REPORT_OUT=DIR keeps the pages and screenshots in DIR.

mod common;

use common::browser::{check_dom_plots, check_ink, pixels, Browser};
use common::svg;
use std::path::Path;

struct Page {
    name: &'static str,
    export: serde_json::Value,
    /// Rendered SVG plots expected at least.
    plots: usize,
    /// Table body rows expected at least.
    rows: usize,
    /// Text the rendered page must show.
    texts: &'static [&'static str],
    /// A run whose row a link leads to: the screenshot of `page#run-ID`
    /// must show that row highlighted.
    target_run: Option<i64>,
}

#[test]
fn reports_render_in_headless_chromium() {
    let Some(browser) = Browser::or_skip("linkperf-report-chromium") else {
        return;
    };
    for page in &pages() {
        check_page(&browser, page);
    }
    browser.finish();
}

/// The pages checked: each page kind, from the shared exports.
fn pages() -> Vec<Page> {
    vec![
        Page {
            name: "sweep-1-param",
            export: common::window_sweep(),
            plots: 1,
            rows: 11 + 55,
            texts: &[
                "Socket buffer (-w), log scale",
                "CPU (%)",
                "4 MiB",
                "Gbit/s",
            ],
            target_run: Some(150),
        },
        Page {
            name: "sweep-2-params",
            export: common::real_two_param_sweep(),
            plots: 2,
            rows: 3 + 6 + 6,
            texts: &["length=8K", "length=128K", "Mean received throughput"],
            target_run: Some(503),
        },
        Page {
            name: "run-tcp",
            export: common::real_run("run_tcp_p2.json"),
            plots: 3,
            rows: 1 + 1,
            texts: &["stream 0", "stream 1", "sum of streams", "RTT (µs)"],
            target_run: None,
        },
        Page {
            name: "run-interrupted",
            export: interrupted(common::real_run("run_tcp_p2.json")),
            plots: 3,
            rows: 1 + 1,
            texts: &["Interrupted: run 41 was stopped early (stopped after 3 s of 3 s)"],
            target_run: None,
        },
        Page {
            name: "run-udp",
            export: common::real_run("run_udp.json"),
            plots: 2,
            rows: 1 + 1,
            texts: &[
                "Loss (%)",
                "Jitter (µs)",
                "sum as sent",
                "jitter, mean of intervals",
                "jitter, final RFC 3550 estimate",
            ],
            target_run: None,
        },
        Page {
            name: "campaign",
            export: common::campaign(),
            plots: 4,
            rows: 2 + 5 + 8,
            texts: &["session 1", "sent (by the sender)", "target 950 Mbit/s"],
            target_run: None,
        },
    ]
}

/// Renders `page`, opens it in the browser, and checks its DOM and its
/// screenshot; then follows the link to its target run, if any.
fn check_page(browser: &Browser, page: &Page) {
    let html = linkperf_report::render(&page.export).expect("render");
    let file = browser.write_page(page.name, &html);
    let url = format!("file://{}", file.display());
    let dom = browser.dump_dom(&url);
    check_dom_plots(page.name, &dom, page.plots);
    let rows = common::count(&dom, "<tr");
    assert!(
        rows >= page.rows,
        "{}: {rows} table rows, expected {}",
        page.name,
        page.rows
    );
    for t in page.texts {
        assert!(
            dom.contains(&linkperf_report_escape(t)),
            "{}: page lacks {t:?}",
            page.name
        );
    }
    check_rendered_dom(page, &dom);

    let png = browser.screenshot(&url, page.name, 1200, 2000);
    check_ink(page.name, &png, (1200, 2000), page.plots);
    assert_eq!(
        highlighted(&png),
        0,
        "{}: a row highlighted with no link followed",
        page.name
    );
    if let Some(run) = page.target_run {
        // Following a run link scrolls to its row and highlights it.
        assert!(
            html.contains(&format!("href=\"#run-{run}\"")),
            "a link to run {run}"
        );
        // Taller than the page: headless Chromium paints only the first
        // screen of a page scrolled to a fragment.
        let png = browser.screenshot(
            &format!("{url}#run-{run}"),
            &format!("{}-run-{run}", page.name),
            1200,
            9000,
        );
        let lit = highlighted(&png);
        // One table row: some 1100 x 18 pixels; without the fragment, none.
        assert!(
            lit > 5000 && lit < 60_000,
            "{}: run {run}'s row is not shown highlighted ({lit} pixels) in {}",
            page.name,
            png.display()
        );
    }
}

/// The export with its run marked as stopped early (Ctrl-C).
fn interrupted(mut export: serde_json::Value) -> serde_json::Value {
    export["runs"][0]["report"]["interrupted"] = serde_json::json!(true);
    export
}

/// What the browser built from the page: links lead somewhere, a run's
/// lines start at the first interval's start, axes count in nice steps,
/// error bars stay above zero, and an interrupted run has its banner.
fn check_rendered_dom(page: &Page, dom: &str) {
    assert_eq!(
        svg::dangling_links(dom),
        Vec::<String>::new(),
        "{}: links without a target",
        page.name
    );
    let banner = dom.contains("class=\"banner\"");
    assert_eq!(
        banner,
        page.name.contains("interrupted"),
        "{}: banner shown: {banner}",
        page.name
    );
    for (title, plot) in svg::plots(dom) {
        for axis in svg::numeric_axes(plot) {
            if axis.vertical || title.contains("per interval") {
                if let Err(e) = svg::check_linear_axis(&axis) {
                    panic!("{}: {title}: {e}", page.name);
                }
            }
        }
        if let Some(y) = svg::numeric_axes(plot).into_iter().find(|a| a.vertical) {
            for (_, top, bottom, _) in svg::error_bars(plot) {
                assert!(
                    y.value(bottom) > -0.01 * (y.ticks[1].0 - y.ticks[0].0) && top <= bottom,
                    "{}: {title}: an error bar reaches {} below zero",
                    page.name,
                    y.value(bottom)
                );
            }
        }
        if title.starts_with("Throughput per interval") {
            let x = svg::numeric_axes(plot)
                .into_iter()
                .find(|a| !a.vertical)
                .expect("time axis");
            for l in svg::polylines(plot) {
                assert!(
                    (l.points[0].0 - x.pixel(0.0)).abs() < 0.6,
                    "{}: a line starts at {:.3} s, not at the first interval's start 0 s",
                    page.name,
                    x.value(l.points[0].0)
                );
            }
        }
    }
}

/// Pixels of the highlight a `#row` link gives its target row.
fn highlighted(png_path: &Path) -> usize {
    let (buf, channels, _, _) = pixels(png_path);
    buf.chunks(channels)
        .filter(|p| p[0] == 0xff && p[1] == 0xf3 && p[2] == 0xbf)
        .count()
}

/// What `text` looks like in serialised HTML (Chromium escapes & < > in text).
fn linkperf_report_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
