//! README.md's "Units" table is the grammar users read: every spelling in it
//! must parse to the value its row states, or be refused where it says so.

use std::path::PathBuf;

/// The rows of the table under "## Units": (kind, spellings, meaning).
fn rows() -> Vec<(String, Vec<String>, String)> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    let text = std::fs::read_to_string(&path).expect("README.md");
    let section = text
        .split("\n## Units\n")
        .nth(1)
        .expect("README.md has a '## Units' section");
    let section = section.split("\n## ").next().unwrap();
    let mut rows = Vec::new();
    for line in section.lines().filter(|l| l.starts_with("| ")) {
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        if cells.len() != 3 || cells[0] == "kind" {
            continue;
        }
        let spellings: Vec<String> = cells[1]
            .split('`')
            .skip(1)
            .step_by(2)
            .map(String::from)
            .collect();
        rows.push((cells[0].to_string(), spellings, cells[2].to_string()));
    }
    rows
}

/// "100 000 000 bit/s" -> 100000000; "0.25 s" -> 0.25.
fn number(meaning: &str) -> f64 {
    let digits: String = meaning
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == ' ' || *c == '.')
        .filter(|c| *c != ' ')
        .collect();
    digits
        .parse()
        .unwrap_or_else(|_| panic!("no number in '{meaning}'"))
}

#[test]
fn every_spelling_in_the_readme_table_means_what_the_table_says() {
    let rows = rows();
    assert!(rows.len() >= 15, "the table has only {} rows", rows.len());
    let mut checked = 0;
    for (kind, spellings, meaning) in &rows {
        assert!(!spellings.is_empty(), "row without spellings: {meaning}");
        for s in spellings {
            let got: Result<f64, String> = match kind.as_str() {
                "rate" => linkperf_units::parse_rate(s)
                    .map(|v| v as f64)
                    .map_err(|e| e.to_string()),
                "size" => linkperf_units::parse_size(s)
                    .map(|v| v as f64)
                    .map_err(|e| e.to_string()),
                "duration" => linkperf_units::parse_duration(s)
                    .map(|d| d.as_secs_f64())
                    .map_err(|e| e.to_string()),
                "percentage" => linkperf_units::parse_percent(s)
                    .map(|f| f * 100.0)
                    .map_err(|e| e.to_string()),
                other => panic!("unknown kind '{other}' in the Units table"),
            };
            if meaning.starts_with("refused") {
                let e = got.expect_err(&format!(
                    "{kind} '{s}' is accepted; the README says {meaning}"
                ));
                // Every refusal says what is accepted.
                assert!(e.contains("; accepted: "), "{e}");
                // A refusal whose row names the fix carries it.
                if let Some(fix) = meaning.split("write `").nth(1) {
                    let fix = fix.split('`').next().unwrap();
                    assert!(e.contains(&format!("write {fix}")), "{s}: {e}");
                }
            } else {
                let want = number(meaning);
                let v = got.unwrap_or_else(|e| panic!("{kind} '{s}': {e}"));
                assert!(
                    (v - want).abs() <= want.abs() * 1e-12,
                    "{kind} '{s}' = {v}, README says {meaning}"
                );
            }
            checked += 1;
        }
    }
    assert!(checked >= 60, "only {checked} spellings checked");
}
