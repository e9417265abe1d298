//! The emulator's control side: the current parameters of every link direction, changes to
//! them (from `testbed set` through the control socket, or from a running schedule), and
//! the schedule runner. A change is checked whole before any of it is applied, then posted
//! to the forwarding threads, which apply it between two packets and say when.

use crate::mailbox::{Mailbox, Update};
use crate::netns::ip_batch;
use crate::params::DirectionParams;
use crate::schedule::{LinkChange, Schedule, ScheduleState};
use crate::state::{unix_ms, unix_ns, Plan};
use serde::{Deserialize, Serialize};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The control socket in the state directory.
pub const CONTROL_SOCKET: &str = "control.sock";
/// How long a change may wait for the forwarding threads to take it.
const APPLY_TIMEOUT: Duration = Duration::from_secs(2);

/// A request on the control socket (one JSON line).
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Request {
    Set {
        changes: Vec<LinkChange>,
    },
    Schedule {
        schedule: Schedule,
    },
    StopSchedule,
    /// Write the counters file now and answer once it is written.
    Snapshot,
}

/// The answer (one JSON line).
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Response {
    pub ok: bool,
    #[serde(default)]
    pub error: Option<String>,
    /// From the request's arrival to the last forwarding thread applying it.
    #[serde(default)]
    pub took_ns: u64,
    /// Packets dropped because a queue shrank below its content.
    #[serde(default)]
    pub dropped_resize: u64,
    /// When the emulator read the request, CLOCK_REALTIME ns (the clock the kernel stamps
    /// packets with): a schedule's time zero; a change is in force on every link by
    /// `received_ns + took_ns`. A client's own clock around the request is off by as much
    /// as the request took to arrive.
    #[serde(default)]
    pub received_ns: u64,
    /// The same moment on CLOCK_MONOTONIC, the clock a schedule's steps are timed on. The
    /// two clocks part when the wall clock is set (a VM's host may step it), so a client
    /// placing packets in a schedule stamps them on this one.
    #[serde(default)]
    pub received_mono_ns: u64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

struct RunningSchedule {
    cancel: Arc<AtomicBool>,
    state: Arc<Mutex<ScheduleState>>,
}

/// Current parameters and the way to change them, shared by the control socket, the
/// schedule runner and the reporter.
pub struct Control {
    plan: Plan,
    /// Parameters in force, per direction (link * 2 + 0 for a_to_b, + 1 for b_to_a).
    params: Vec<Mutex<DirectionParams>>,
    mailboxes: Vec<Arc<Mailbox>>,
    mtus: Mutex<Vec<u32>>,
    /// One change at a time, so two changes never interleave.
    applying: Mutex<()>,
    schedule: Mutex<Option<RunningSchedule>>,
}

impl Control {
    pub fn new(plan: Plan, mailboxes: Vec<Arc<Mailbox>>) -> Control {
        let links = &plan.topology.links;
        let params = links
            .iter()
            .flat_map(|l| [l.a_to_b.clone(), l.b_to_a.clone()])
            .map(Mutex::new)
            .collect();
        let mtus = Mutex::new(links.iter().map(|l| l.mtu).collect());
        Control {
            plan,
            params,
            mailboxes,
            mtus,
            applying: Mutex::new(()),
            schedule: Mutex::new(None),
        }
    }

    pub fn params(&self, direction: usize) -> DirectionParams {
        lock(&self.params[direction]).clone()
    }

    pub fn mtus(&self) -> Vec<u32> {
        lock(&self.mtus).clone()
    }

    pub fn schedule_state(&self) -> Option<ScheduleState> {
        lock(&self.schedule)
            .as_ref()
            .map(|s| lock(&s.state).clone())
    }

    /// Applies `changes` together; returns (ns until the last thread took them, drops).
    pub fn apply(&self, changes: &[LinkChange]) -> Result<(u64, u64), String> {
        let started = Instant::now();
        let _one_at_a_time = lock(&self.applying);
        let links = self.plan.topology.links.len();
        let mut new_params: Vec<Option<DirectionParams>> = vec![None; links * 2];
        let old_mtus = self.mtus();
        let mut mtus = old_mtus.clone();
        for c in changes {
            if c.link >= links {
                return Err(format!("no link {} (the testbed has {links})", c.link));
            }
            for dir in 0..2 {
                let index = c.link * 2 + dir;
                let current = new_params[index]
                    .clone()
                    .unwrap_or_else(|| self.params(index));
                if let Some(p) = c.apply(dir, &current) {
                    new_params[index] = Some(p);
                }
            }
            if let Some(mtu) = c.mtu {
                mtus[c.link] = mtu;
            }
        }
        // Host interface queues first: a failure there leaves the emulator unchanged.
        for c in changes {
            if let Some(packets) = c.txqueuelen {
                for (end, shaper) in self.plan.shaped_ends(c.link) {
                    crate::nic::set_queue(&end.netns, &end.device, &shaper, packets)
                        .map_err(|e| e.to_string())?;
                }
            }
        }
        // A smaller MTU reaches the hosts before the emulator, a larger one after it, so the
        // emulator never drops a frame the devices were allowed to send.
        self.set_device_mtus(&old_mtus, &mtus, |old, new| new < old)?;
        let (done, acks) = mpsc::channel();
        let mut posted = 0;
        let topology = &self.plan.topology;
        let after = |d: usize| new_params[d].clone().unwrap_or_else(|| self.params(d));
        for (index, params) in new_params.iter().enumerate() {
            let mtu_changed = mtus[index / 2] != old_mtus[index / 2];
            // A direction out of a switch takes its cells at the pace of the links into it.
            let input = topology.input_cell_ns(index / 2, index % 2, after);
            let input_changed =
                input != topology.input_cell_ns(index / 2, index % 2, |d| self.params(d));
            if params.is_none() && !mtu_changed && !input_changed {
                continue;
            }
            self.mailboxes[index].post(Update {
                params: after(index),
                mtu: mtus[index / 2],
                cell_input_ns: input,
                done: done.clone(),
            });
            posted += 1;
        }
        let mut dropped = 0;
        for _ in 0..posted {
            let applied = acks
                .recv_timeout(APPLY_TIMEOUT)
                .map_err(|_| "a forwarding thread did not take the change (is it stuck?)")?;
            dropped += applied.dropped_resize;
        }
        let took = started.elapsed().as_nanos() as u64;
        self.set_device_mtus(&old_mtus, &mtus, |old, new| new > old)?;
        for (index, params) in new_params.into_iter().enumerate() {
            if let Some(p) = params {
                *lock(&self.params[index]) = p;
            }
        }
        *lock(&self.mtus) = mtus;
        Ok((took, dropped))
    }

    fn set_device_mtus(
        &self,
        old: &[u32],
        new: &[u32],
        now: impl Fn(u32, u32) -> bool,
    ) -> Result<(), String> {
        for (link, (&o, &n)) in old.iter().zip(new).enumerate() {
            if o == n || !now(o, n) {
                continue;
            }
            for end in &self.plan.links[link].ends {
                ip_batch(&end.netns, &[format!("link set {} mtu {n}", end.device)])
                    .map_err(|e| e.to_string())?;
            }
        }
        Ok(())
    }

    /// Replaces the running schedule (if any) with `schedule`, its time zero at `start`.
    pub fn start_schedule(self: &Arc<Self>, schedule: Schedule, start: Instant) {
        self.stop_schedule();
        let cancel = Arc::new(AtomicBool::new(false));
        let state = Arc::new(Mutex::new(ScheduleState {
            source: schedule.source.clone(),
            steps: schedule.steps.len(),
            repeat_ns: schedule.repeat_ns,
            step: None,
            pass: 0,
            started_unix_ms: unix_ms(),
            next_unix_ms: None,
            worst_late_us: None,
        }));
        *lock(&self.schedule) = Some(RunningSchedule {
            cancel: cancel.clone(),
            state: state.clone(),
        });
        let control = self.clone();
        // The schedule starts at `start`, not when its thread first runs.
        let spawned = std::thread::Builder::new()
            .name("schedule".into())
            .spawn(move || run_schedule(&control, &schedule, start, &cancel, &state));
        if let Err(e) = spawned {
            eprintln!("cannot start the schedule thread: {e}");
        }
    }

    pub fn stop_schedule(&self) {
        if let Some(old) = lock(&self.schedule).take() {
            old.cancel.store(true, Ordering::Relaxed);
        }
    }
}

/// Sleeps until `due`; false if cancelled first. Long waits are cut in pieces so a cancel is
/// noticed; the last piece is one precise sleep (1 ns timer slack is set on this thread).
fn wait_until(due: Instant, cancel: &AtomicBool) -> bool {
    loop {
        if cancel.load(Ordering::Relaxed) {
            return false;
        }
        let now = Instant::now();
        if now >= due {
            return true;
        }
        std::thread::sleep((due - now).min(Duration::from_millis(50)));
    }
}

fn run_schedule(
    control: &Control,
    schedule: &Schedule,
    start: Instant,
    cancel: &AtomicBool,
    state: &Mutex<ScheduleState>,
) {
    // SAFETY: prctl with integer arguments affecting only this thread.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
    crate::priority::raise_priority_above_forwarders();
    let started_ms = lock(state).started_unix_ms;
    let groups = schedule.groups();
    for pass in 0u64.. {
        let offset = pass * schedule.repeat_ns.unwrap_or(0);
        for group in &groups {
            let at = offset + schedule.steps[group.start].at_ns;
            lock(state).next_unix_ms = Some(started_ms + at / 1_000_000);
            let due = start + Duration::from_nanos(at);
            if !wait_until(due, cancel) {
                return;
            }
            let changes: Vec<LinkChange> = schedule.steps[group.clone()]
                .iter()
                .map(|s| s.change.clone())
                .collect();
            if let Err(e) = control.apply(&changes) {
                eprintln!(
                    "schedule {}: step {}: {e}",
                    schedule.source,
                    group.start + 1
                );
            }
            let mut st = lock(state);
            st.landed(due.elapsed());
            st.step = Some(group.end - 1);
            st.pass = pass;
        }
        if schedule.repeat_ns.is_none() {
            lock(state).next_unix_ms = None;
            return;
        }
    }
}

/// Serves the control socket in `dir` until the process exits.
/// Serves the control socket; `snapshot` writes the counters file (for `Request::Snapshot`).
pub fn serve(
    control: Arc<Control>,
    dir: &Path,
    snapshot: impl Fn() + Send + 'static,
) -> std::io::Result<()> {
    let path = dir.join(CONTROL_SOCKET);
    let _ = std::fs::remove_file(&path);
    let listener = UnixListener::bind(&path)?;
    std::thread::Builder::new()
        .name("control".into())
        .spawn(move || {
            // A change must land within a millisecond even on a busy machine.
            crate::priority::raise_priority_above_forwarders();
            for stream in listener.incoming().flatten() {
                handle(&control, &snapshot, stream);
            }
        })?;
    Ok(())
}

fn handle(control: &Arc<Control>, snapshot: &dyn Fn(), stream: UnixStream) {
    let mut line = String::new();
    let mut reader = BufReader::new(&stream);
    if reader.read_line(&mut line).is_err() {
        return;
    }
    let received = Instant::now();
    let received_ns = unix_ns();
    let received_mono_ns = crate::probe::clock_ns(libc::CLOCK_MONOTONIC);
    let response = match serde_json::from_str::<Request>(&line) {
        Err(e) => Err(format!("bad request: {e}")),
        Ok(Request::Set { changes }) => control.apply(&changes),
        Ok(Request::Schedule { schedule }) => {
            control.start_schedule(schedule, received);
            Ok((0, 0))
        }
        Ok(Request::StopSchedule) => {
            control.stop_schedule();
            Ok((0, 0))
        }
        Ok(Request::Snapshot) => {
            snapshot();
            Ok((0, 0))
        }
    };
    let response = match response {
        Ok((took_ns, dropped_resize)) => Response {
            ok: true,
            took_ns,
            dropped_resize,
            received_ns,
            received_mono_ns,
            ..Default::default()
        },
        Err(e) => Response {
            error: Some(e),
            received_ns,
            received_mono_ns,
            ..Default::default()
        },
    };
    if let Ok(mut text) = serde_json::to_string(&response) {
        text.push('\n');
        let _ = (&stream).write_all(text.as_bytes());
    }
}

/// Sends one request to the emulator whose state directory is `dir` and returns its answer.
pub fn request(dir: &Path, request: &Request) -> Result<Response, String> {
    let path = dir.join(CONTROL_SOCKET);
    let stream = UnixStream::connect(&path).map_err(|e| {
        format!(
            "cannot reach the emulator at {} ({e}); is the testbed up?",
            path.display()
        )
    })?;
    stream
        .set_read_timeout(Some(APPLY_TIMEOUT * 3))
        .map_err(|e| e.to_string())?;
    let mut text = serde_json::to_string(request).map_err(|e| e.to_string())?;
    text.push('\n');
    (&stream)
        .write_all(text.as_bytes())
        .map_err(|e| format!("cannot send to the emulator: {e}"))?;
    let mut line = String::new();
    BufReader::new(&stream)
        .read_line(&mut line)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => format!(
                "the emulator at {} did not answer within {} s (stopped, or starved of CPU?)",
                dir.display(),
                (APPLY_TIMEOUT * 3).as_secs()
            ),
            _ => format!("no answer from the emulator: {e}"),
        })?;
    serde_json::from_str(&line).map_err(|e| format!("bad answer from the emulator: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An emulator that takes the request and never answers is named in one line.
    #[test]
    fn a_silent_emulator_is_said_to_be_silent() {
        let dir = std::env::temp_dir().join(format!("lp-control-silent-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let listener = UnixListener::bind(dir.join(CONTROL_SOCKET)).unwrap();
        let e = request(&dir, &Request::Snapshot).unwrap_err();
        drop(listener);
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(
            e.contains("did not answer within 6 s") && !e.contains('\n'),
            "{e}"
        );
    }
}
