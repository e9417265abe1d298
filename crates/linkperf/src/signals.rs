//! Ctrl-C (and SIGTERM): the first one ends the test early so its partial
//! result is printed and stored; a second one exits at once. Either way the
//! process then exits 128 + the signal (130 for Ctrl-C), the shell's
//! convention, whatever the command: `main` applies it after the command.

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

pub static INTERRUPTED: AtomicBool = AtomicBool::new(false);
/// The first signal received, 0 before any.
static SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(signal: libc::c_int) {
    let _ = SIGNAL.compare_exchange(0, signal, Ordering::SeqCst, Ordering::SeqCst);
    if INTERRUPTED.swap(true, Ordering::SeqCst) {
        // SAFETY: _exit is async-signal-safe.
        unsafe { libc::_exit(128 + SIGNAL.load(Ordering::SeqCst)) };
    }
}

pub fn install() {
    // SAFETY: the handler only touches atomics and calls _exit.
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
}

/// Installs the handlers and returns a flag set once a signal arrives (a
/// watcher thread polls every 20 ms), for loops that take a cancel flag.
pub fn cancel_on_signal() -> std::sync::Arc<AtomicBool> {
    install();
    let cancel = std::sync::Arc::new(AtomicBool::new(false));
    let flag = cancel.clone();
    std::thread::spawn(move || loop {
        if INTERRUPTED.load(Ordering::Relaxed) {
            flag.store(true, Ordering::Relaxed);
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    });
    cancel
}

/// 128 + the signal once the run was interrupted (130 for Ctrl-C).
pub fn exit_code() -> Option<ExitCode> {
    if !INTERRUPTED.load(Ordering::SeqCst) {
        return None;
    }
    let signal = SIGNAL.load(Ordering::SeqCst).clamp(1, 127);
    Some(ExitCode::from(128 + signal as u8))
}
