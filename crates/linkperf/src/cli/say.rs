//! The print macros both binaries use: a line to stdout that ends the
//! process quietly (exit 141) when stdout is gone, instead of panicking.

/// `println!` that ends the process quietly when stdout is gone (`| head`),
/// instead of panicking on a broken pipe.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        if writeln!(std::io::stdout().lock(), $($arg)*).is_err() {
            std::process::exit(141);
        }
    }};
}

#[allow(unused_macros)] // linkperf-server prints whole lines only
macro_rules! say_raw {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        if write!(std::io::stdout().lock(), $($arg)*).is_err() {
            std::process::exit(141);
        }
    }};
}
