//! What the README promises a new user: how to get `linkperf` on PATH before
//! the first example that calls it, and the Ctrl-C convention the binary keeps.

use std::path::PathBuf;

fn readme() -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    std::fs::read_to_string(path).expect("README.md")
}

/// Lines of the README's indented code blocks (the examples), in order.
fn example_lines(text: &str) -> Vec<(usize, String)> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| l.starts_with("    ") && !l.trim().is_empty())
        .map(|(i, l)| (i, l.trim().to_string()))
        .collect()
}

#[test]
fn the_install_line_comes_before_the_first_linkperf_example() {
    let text = readme();
    let examples = example_lines(&text);
    let first_use = examples
        .iter()
        .find(|(_, l)| l.starts_with("linkperf "))
        .expect("an example that calls linkperf")
        .0;
    let install = examples
        .iter()
        .find(|(_, l)| l.starts_with("cargo install --path "))
        .unwrap_or_else(|| panic!("no `cargo install --path` example in README.md"));
    assert!(
        install.0 < first_use,
        "the install line (README.md:{}) comes after the first `linkperf` example (README.md:{})",
        install.0 + 1,
        first_use + 1
    );
    // The path it names is this package, whose binary is `linkperf`.
    let path = install.1.trim_start_matches("cargo install --path ").trim();
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    assert_eq!(
        manifest.canonicalize().unwrap(),
        manifest.join("../..").join(path).canonicalize().unwrap(),
        "`cargo install --path {path}` does not install this package"
    );
    assert!(env!("CARGO_BIN_EXE_linkperf").ends_with("/linkperf"));
}

#[test]
fn the_ctrl_c_convention_is_documented() {
    let text = readme();
    let section = text
        .split("\n## Ctrl-C")
        .nth(1)
        .expect("README.md has a Ctrl-C section");
    for command in ["`client`", "`rr`", "`sweep`", "`campaign run`"] {
        assert!(
            section.contains(command),
            "{command} not in the Ctrl-C section"
        );
    }
    assert!(section.contains("exits 130"));
}
