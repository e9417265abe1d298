//! The server's started tests: one thread ("lp-tests") serves the control
//! session of every test once it has started. It relays each side's
//! intervals and end of sending to its client, exchanges the results, and
//! stops a test on Cancel, at the server's longest duration or when its
//! client goes, so a running test costs the server no thread beyond its
//! streams'. It never waits on a client: messages are posted to the control
//! reader, which writes them as each socket takes them, and a side to abort
//! is wound down on a thread of its own. The thread exists while a test
//! runs. Setting a test up is `test`'s; greeting clients is `mod.rs`'s.

use super::session::{ControlSession, Event};
use crate::control::Incoming;
use crate::guard::TestPermit;
use linkperf_engine::cpu::ThreadCpu;
use linkperf_engine::{LocalSide, SideEvent};
use linkperf_proto::config::MAX_SECONDS;
use linkperf_proto::results::SideResult;
use linkperf_proto::{ClientMessage, ServerMessage, TestConfig};
use std::sync::mpsc::TryRecvError;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// What serving a control session came to.
pub(super) enum Served {
    /// The session is over: its log line.
    Done(String),
    /// A test started: the test thread is to serve it from now on.
    Running(Box<Running>),
}

/// Told when a test has ended: its log line, or why it failed.
pub(super) type Ended = Box<dyn FnOnce(Result<String, String>) + Send>;

/// Events one test may have handled in a round before the others get theirs.
const EVENTS_PER_ROUND: usize = 64;

/// The longest the thread sleeps: how late a test past its time is stopped.
const TICK: Duration = Duration::from_millis(500);

/// A started test and its control session.
pub(super) struct Running {
    session: ControlSession,
    config: TestConfig,
    side: Option<LocalSide>,
    local_result: Option<SideResult>,
    peer_finished: bool,
    started: Instant,
    /// The server's longest test in seconds: a `-n` test is stopped there.
    longest: f64,
    /// Past this, a test still running is stopped (the longest, and a second).
    stop_at: Duration,
    /// Past this, the test is aborted (its planned length and two minutes).
    watchdog: Duration,
    _held: Held,
}

/// What a running test holds until it ends.
pub(super) struct Held {
    /// Counts the test among the server's running tests.
    pub _permit: TestPermit,
    /// `-m`: the test's data listener, through which an MPTCP peer's
    /// further subflows (MP_JOIN) arrive.
    pub _joins: Option<std::net::TcpListener>,
}

impl Running {
    /// The test `side` of `session`, started by this thread: from now on
    /// the test thread serves it.
    pub(super) fn new(
        session: ControlSession,
        config: TestConfig,
        mut side: LocalSide,
        held: Held,
    ) -> Running {
        side.release_control_thread();
        let longest = session.guard.limits.max_duration_s.min(MAX_SECONDS);
        let planned = if config.bytes.is_some() {
            longest
        } else {
            config.duration_s.min(longest)
        };
        Running {
            session,
            config,
            side: Some(side),
            local_result: None,
            peer_finished: false,
            started: Instant::now(),
            longest,
            stop_at: Duration::from_secs_f64(longest) + Duration::from_secs(1),
            watchdog: Duration::from_secs_f64(planned) + Duration::from_secs(120),
            _held: held,
        }
    }

    /// Handles what has arrived and checks the clock; `Some` when the test
    /// is over. Its CPU time goes to the test's side.
    fn step(&mut self) -> Option<Result<SideResult, String>> {
        if let Some(end) = self.check_clock() {
            return Some(end);
        }
        let mut before = None;
        let mut outcome = None;
        let mut handled = 0;
        while handled < EVENTS_PER_ROUND {
            let event = match self.session.events.try_recv() {
                Ok(event) => event,
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    outcome = Some(Ok(self.local_result.take().unwrap_or_default()));
                    break;
                }
            };
            before.get_or_insert_with(ThreadCpu::now);
            handled += 1;
            outcome = self.handle(event);
            if outcome.is_some() {
                break;
            }
        }
        if let (Some(before), Some(side)) = (before, &mut self.side) {
            side.add_control_cpu(&ThreadCpu::since(&before));
        }
        if handled == EVENTS_PER_ROUND {
            wake(); // more may wait: the next round comes at once
        }
        outcome
    }

    /// A `-n` test that reaches the server's longest duration has its side
    /// stopped; a test that overruns by two minutes more is aborted.
    fn check_clock(&mut self) -> Option<Result<SideResult, String>> {
        let elapsed = self.started.elapsed();
        if elapsed > self.stop_at && self.local_result.is_none() {
            let why = format!(
                "the test reached this server's limit of {} s (--server-max-duration); stopped",
                self.longest
            );
            let _ = self.session.control.post(&ServerMessage::Error {
                message: why.clone(),
            });
            return Some(Err(format!("refused: {why}")));
        }
        (elapsed > self.watchdog)
            .then(|| Err("test overran its duration by two minutes; aborted".into()))
    }

    fn handle(&mut self, event: Event) -> Option<Result<SideResult, String>> {
        let control = &self.session.control;
        match event {
            Event::Side(SideEvent::Interval(streams)) => {
                let _ = control.post(&ServerMessage::Interval { streams });
            }
            Event::Side(SideEvent::SendersDone(packets)) => {
                let _ = control.post(&ServerMessage::SendersDone { packets });
            }
            Event::Side(SideEvent::AllDone) => {
                if let Some(side) = self.side.take() {
                    let result = side.finish();
                    let _ = control.post(&ServerMessage::Finished {
                        result: Box::new(result.clone()),
                    });
                    self.local_result = Some(result);
                }
            }
            Event::Client(Incoming::Message(ClientMessage::SendersDone { packets })) => {
                if let Some(s) = &self.side {
                    s.peer_senders_done(&packets);
                }
            }
            Event::Client(Incoming::Message(ClientMessage::Cancel { .. })) => {
                if let Some(s) = &self.side {
                    s.stop_senders();
                }
            }
            Event::Client(Incoming::Message(ClientMessage::Finished { .. })) => {
                self.peer_finished = true
            }
            Event::Client(Incoming::Message(_)) | Event::Data(..) => {}
            Event::Client(Incoming::Lost(why)) => return Some(Err(format!("test aborted: {why}"))),
        }
        match (&self.local_result, self.peer_finished) {
            (Some(_), true) => self.local_result.take().map(Ok),
            _ => None,
        }
    }

    /// Ends the test: a side still running is aborted and wound down on a
    /// thread of its own (its streams may take a moment), then the session
    /// closes (what was posted still leaves) and `ended` is told.
    fn end(mut self, outcome: Result<SideResult, String>, ended: Ended) {
        let line = outcome.map(|r| {
            crate::text::server_line(&self.session.peer, &self.config, &r, Default::default())
        });
        let Some(side) = self.side.take() else {
            drop(self);
            return ended(line);
        };
        side.abort();
        let job = Arc::new(Mutex::new(Some(move || {
            let _ = side.finish();
            drop(self);
            ended(line);
        })));
        let theirs = job.clone();
        let spawned = std::thread::Builder::new()
            .name("lp-abort".into())
            .spawn(move || take_job(&theirs).map(|j| j()));
        if spawned.is_err() {
            if let Some(j) = take_job(&job) {
                j();
            }
        }
    }
}

fn take_job<J>(job: &Mutex<Option<J>>) -> Option<J> {
    job.lock().unwrap_or_else(|p| p.into_inner()).take()
}

/// Tests handed to the thread and not yet taken; whether something arrived
/// since the thread last looked; whether the thread runs.
struct Pool {
    /// Boxed: a running test's state is over a KiB, and a vector of them
    /// grows by doubling.
    added: Vec<(Box<Running>, Ended)>,
    woken: bool,
    serving: bool,
}

static POOL: Mutex<Pool> = Mutex::new(Pool {
    added: Vec::new(),
    woken: false,
    serving: false,
});
static WOKEN: Condvar = Condvar::new();

fn pool() -> std::sync::MutexGuard<'static, Pool> {
    POOL.lock().unwrap_or_else(|p| p.into_inner())
}

/// Has the test thread serve `test` from now on (starting the thread if
/// none runs); `ended` is told when the test is over. Err: no thread could
/// be started (the test is ended).
pub(super) fn add(test: Box<Running>, ended: Ended) -> Result<(), String> {
    let mut pool = pool();
    if !pool.serving {
        if let Err(e) = std::thread::Builder::new()
            .name("lp-tests".into())
            .spawn(serve)
        {
            drop(pool);
            let why = format!("no thread to run the test: {e}");
            test.end(Err(why.clone()), ended);
            return Err(why);
        }
        pool.serving = true;
    }
    pool.added.push((test, ended));
    pool.woken = true;
    WOKEN.notify_one();
    Ok(())
}

/// Something arrived for a test (a control message, a side's event).
pub(super) fn wake() {
    let mut pool = pool();
    if pool.serving {
        pool.woken = true;
        WOKEN.notify_one();
    }
}

/// The test thread: steps every test when woken (and every [`TICK`]),
/// until none is left.
fn serve() {
    let mut tests: Vec<(Box<Running>, Ended)> = Vec::new();
    loop {
        {
            let mut pool = pool();
            tests.append(&mut pool.added);
            if tests.is_empty() {
                pool.serving = false;
                return;
            }
            pool.woken = false;
        }
        let mut i = 0;
        while i < tests.len() {
            let test = &mut tests[i].0;
            let stepped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| test.step()))
                .unwrap_or_else(|_| Some(Err("internal error serving the test".into())));
            match stepped {
                None => i += 1,
                Some(outcome) => {
                    let (test, ended) = tests.swap_remove(i);
                    test.end(outcome, ended);
                }
            }
        }
        let pool = pool();
        if !pool.woken && pool.added.is_empty() {
            let _ = WOKEN.wait_timeout(pool, TICK);
        }
    }
}
