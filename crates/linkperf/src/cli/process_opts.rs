//! iperf3's process-wide options, shared by `client` and `server`: where the
//! output goes (`--logfile`), what precedes each line (`-T` title,
//! `--timestamps`), CPU affinity (`-A`), and for the server running as a
//! daemon (`-D`) with a pidfile (`-I`). They act on file descriptors and the
//! process, before the command starts its threads.

use clap::Args;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::PathBuf;
use std::thread::JoinHandle;

/// Output options (iperf3's spelling), for `client` and `server`.
#[derive(Args, Debug, Clone, Default)]
pub struct OutputArgs {
    /// Append the output to FILE instead of printing it (errors stay on stderr).
    #[arg(long, value_name = "FILE")]
    pub logfile: Option<PathBuf>,
    /// Prefix every output line with the time, as strftime FORMAT (default "%c ").
    #[arg(long, value_name = "FORMAT", num_args = 0..=1, require_equals = true,
          default_missing_value = "%c ")]
    pub timestamps: Option<String>,
    /// Write each output line as soon as it is complete (linkperf always does;
    /// accepted for iperf3's scripts).
    #[arg(long)]
    pub forceflush: bool,
    /// Pin the process (and every thread it starts) to CPU N.
    #[arg(short = 'A', long = "affinity", value_name = "N")]
    pub affinity: Option<usize>,
}

/// Output redirected or prefixed until [`Output::finish`].
pub struct Output {
    copier: Option<JoinHandle<()>>,
}

/// Sets up `--logfile`, `--timestamps` and a title prefix (`-T`) on stdout,
/// and `-A`. Err: one line for the user.
pub fn start(args: &OutputArgs, title: Option<&str>) -> Result<Output, String> {
    if let Some(cpu) = args.affinity {
        pin(cpu)?;
    }
    let file = match &args.logfile {
        Some(path) => Some(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|e| format!("cannot open --logfile {}: {e}", path.display()))?,
        ),
        None => None,
    };
    let prefix = (title.is_some() || args.timestamps.is_some())
        .then(|| (title.map(str::to_string), args.timestamps.clone()));
    let Some((title, stamp)) = prefix else {
        if let Some(file) = file {
            redirect_stdout(file.as_raw_fd())?;
        }
        return Ok(Output { copier: None });
    };
    // Lines go through a pipe to a thread that prefixes them, then on to the
    // file or the original stdout.
    let sink: Box<dyn Write + Send> = match file {
        Some(f) => Box::new(f),
        None => Box::new(std::fs::File::from(dup(1)?)),
    };
    let (read, write) = pipe()?;
    redirect_stdout(write.as_raw_fd())?;
    drop(write);
    let copier = std::thread::spawn(move || copy_prefixed(read, sink, title, stamp));
    Ok(Output {
        copier: Some(copier),
    })
}

impl Output {
    /// Flushes and waits until every line is written.
    pub fn finish(self) {
        let _ = std::io::stdout().flush();
        if let Some(copier) = self.copier {
            // Closing fd 1 (the pipe's last writer) ends the copier.
            if let Ok(null) = std::fs::File::open("/dev/null") {
                let _ = redirect_stdout(null.as_raw_fd());
            }
            let _ = copier.join();
        }
    }
}

fn copy_prefixed(
    read: OwnedFd,
    mut sink: Box<dyn Write + Send>,
    title: Option<String>,
    stamp: Option<String>,
) {
    for line in BufReader::new(std::fs::File::from(read)).lines() {
        let Ok(line) = line else { break };
        let mut out = String::new();
        if let Some(t) = &title {
            out.push_str(t);
            out.push_str(":  ");
        }
        if let Some(format) = &stamp {
            out.push_str(&strftime_now(format));
        }
        out.push_str(&line);
        out.push('\n');
        if sink
            .write_all(out.as_bytes())
            .and_then(|()| sink.flush())
            .is_err()
        {
            break;
        }
    }
}

/// The local time now in strftime `format`.
fn strftime_now(format: &str) -> String {
    let Ok(c_format) = std::ffi::CString::new(format) else {
        return String::new();
    };
    let mut buf = [0u8; 256];
    // SAFETY: time, localtime_r and strftime write only into the locals given.
    let n = unsafe {
        let now = libc::time(std::ptr::null_mut());
        let mut tm: libc::tm = std::mem::zeroed();
        libc::localtime_r(&now, &mut tm);
        libc::strftime(buf.as_mut_ptr().cast(), buf.len(), c_format.as_ptr(), &tm)
    };
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

fn pin(cpu: usize) -> Result<(), String> {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    // SAFETY: a zeroed cpu_set_t is empty; CPU_SET and sched_setaffinity
    // read and write only it.
    let ok = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if cpu >= 8 * std::mem::size_of::<libc::cpu_set_t>() {
            false
        } else {
            libc::CPU_SET(cpu, &mut set);
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
        }
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "-A {cpu}: cannot pin to that CPU ({}); this machine has CPUs 0 to {}",
            std::io::Error::last_os_error(),
            cpus.saturating_sub(1)
        ))
    }
}

fn redirect_stdout(fd: i32) -> Result<(), String> {
    let _ = std::io::stdout().flush();
    // SAFETY: dup2 onto fd 1; both descriptors are open.
    if unsafe { libc::dup2(fd, 1) } < 0 {
        return Err(format!(
            "cannot redirect the output: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

fn dup(fd: i32) -> Result<OwnedFd, String> {
    // SAFETY: F_DUPFD_CLOEXEC returns a new descriptor we own, or -1.
    let new = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 3) };
    if new < 0 {
        return Err(format!(
            "cannot duplicate stdout: {}",
            std::io::Error::last_os_error()
        ));
    }
    // SAFETY: `new` is a fresh descriptor owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(new) })
}

fn pipe() -> Result<(OwnedFd, OwnedFd), String> {
    let mut fds = [0i32; 2];
    // SAFETY: pipe2 fills the two-element array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } < 0 {
        return Err(format!(
            "cannot create a pipe: {}",
            std::io::Error::last_os_error()
        ));
    }
    // SAFETY: both descriptors are fresh and ours.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// The server's `-D`: runs on in a child of a new session, detached from the
/// terminal; the parent writes `pidfile` (if any) and exits 0. Call after
/// the listening sockets are bound (so a taken port is reported first) and
/// before any thread is started; `--logfile` is opened after it.
pub fn daemonize(pidfile: Option<&std::path::Path>) -> Result<(), String> {
    let _ = std::io::stdout().flush();
    // SAFETY: the process has one thread here, so the child is a whole copy.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(format!(
            "-D: cannot fork: {}",
            std::io::Error::last_os_error()
        ));
    }
    if pid > 0 {
        if let Some(path) = pidfile {
            if let Err(e) = std::fs::write(path, format!("{pid}\n")) {
                eprintln!("linkperf: cannot write the pidfile {}: {e}", path.display());
                // SAFETY: kill the child we just made; it serves nobody.
                unsafe { libc::kill(pid, libc::SIGTERM) };
                std::process::exit(1);
            }
        }
        std::process::exit(0);
    }
    // SAFETY: setsid detaches the child from the terminal's session.
    unsafe { libc::setsid() };
    let null = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
        .map_err(|e| format!("-D: /dev/null: {e}"))?;
    // SAFETY: dup2 onto the standard descriptors, which stay open.
    unsafe {
        libc::dup2(null.as_raw_fd(), 0);
        libc::dup2(null.as_raw_fd(), 1);
        libc::dup2(null.as_raw_fd(), 2);
    }
    Ok(())
}
