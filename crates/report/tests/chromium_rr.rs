//! Opens the report of real `linkperf rr` runs (fixtures/rr_*.json: `--sizes
//! 64,1K,8K,32K,60K -n 2000` and `-t 2 --load "-t 3"` on loopback) in
//! headless Chromium and checks from the rendered page that the RTT
//! distribution, CDF, tail, size and load plots are drawn and not blank.
//!
//! Skipped with a message when Chromium is absent, except under CI (CI set).
//! LINKPERF_REPORT_OUT=DIR keeps the pages and screenshots in DIR.

mod common;

use common::browser::{check_dom_plots, check_ink, Browser};

struct Page {
    name: &'static str,
    fixture: &'static str,
    plots: usize,
    /// Text the rendered page must show.
    texts: Vec<String>,
}

#[test]
fn rr_reports_render_in_headless_chromium() {
    let Some(browser) = Browser::or_skip("linkperf-rr-chromium") else {
        return;
    };
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
    for page in &pages {
        let export = common::real_rr_run(page.fixture);
        let html = linkperf_report::render(&export).expect("render");
        let url = format!("file://{}", browser.write_page(page.name, &html).display());
        let dom = browser.dump_dom(&url);
        check_dom_plots(page.name, &dom, page.plots);
        for t in &page.texts {
            assert!(dom.contains(t.as_str()), "{}: page lacks {t:?}", page.name);
        }
        let png = browser.screenshot(&url, page.name, 1200, 3000);
        check_ink(page.name, &png, (1200, 3000), page.plots);
    }
    browser.finish();
}
