//! `testbed exec`: a command in a host's namespace whose life is tied to ours. Killing the
//! `linkperf testbed exec` process kills the command: with SIGKILL through the kernel's
//! parent-death signal, with SIGTERM, SIGINT, SIGHUP or SIGQUIT by passing the signal on.

use crate::error::TestbedError;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::Command;

/// Signals passed on to the command when someone sends them to us.
const FORWARDED: [libc::c_int; 4] = [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGQUIT];

fn signal_set(signals: &[libc::c_int]) -> libc::sigset_t {
    // SAFETY: sigemptyset/sigaddset initialise and fill a sigset_t we own.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for &s in signals {
            libc::sigaddset(&mut set, s);
        }
        set
    }
}

/// Runs `cmd` to completion and returns its exit code (128 + N if signal N ended it). Must be
/// called from the thread that lives as long as the process (the parent-death signal fires
/// when the spawning thread exits), before other threads exist.
pub fn run_tied(mut cmd: Command) -> Result<i32, TestbedError> {
    let mut watched = FORWARDED.to_vec();
    watched.push(libc::SIGCHLD);
    let set = signal_set(&watched);
    let mut previous = signal_set(&[]);
    // SAFETY: blocks the signals in this thread so sigtimedwait below receives them.
    unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut previous) };
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    // SAFETY: only async-signal-safe calls (prctl, getppid, sigprocmask, _exit) in the child.
    unsafe {
        cmd.pre_exec(move || {
            libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            );
            // We may have died before prctl: then nobody would kill the command later.
            if libc::getppid() != parent {
                libc::_exit(137);
            }
            let empty = signal_set(&[]);
            libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
            Ok(())
        });
    }
    let program = cmd.get_program().to_string_lossy().into_owned();
    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(e) => {
            // SAFETY: restores the mask saved above.
            unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &previous, std::ptr::null_mut()) };
            return Err(TestbedError::runtime(format!("cannot run {program}: {e}")));
        }
    };
    let pid = child.id() as libc::pid_t;
    let status = loop {
        if let Some(status) = child
            .try_wait()
            .map_err(|e| TestbedError::runtime(format!("waiting for {program}: {e}")))?
        {
            break status;
        }
        // SAFETY: siginfo_t is plain data; sigtimedwait fills it.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let timeout = libc::timespec {
            tv_sec: 0,
            tv_nsec: 200_000_000,
        };
        // SAFETY: waits for one of the blocked signals, with a timeout as a safety net.
        let signal = unsafe { libc::sigtimedwait(&set, &mut info, &timeout) };
        // Pass on what someone sent to us alone; a terminal's Ctrl-C already reached the
        // command (same process group), and sending it twice could make it abort harder.
        let sent_by_user = info.si_code == libc::SI_USER || info.si_code == libc::SI_QUEUE;
        if FORWARDED.contains(&signal) && sent_by_user {
            // SAFETY: kill(2) on our own child's pid.
            unsafe { libc::kill(pid, signal) };
        }
    };
    // SAFETY: restores the mask saved above.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &previous, std::ptr::null_mut()) };
    Ok(status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0)))
}
