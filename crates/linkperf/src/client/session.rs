//! Runs a started test to its end: the local streams' events and the
//! server's messages on one channel, interval lines paired (`pairing.rs`) and
//! passed on as both ends report them, Ctrl-C and a vanished server. Must not set the
//! test up or build the report.

use super::exchange::Event;
use super::pairing::IntervalPairing;
use crate::control::{Control, Incoming};
use crate::report::IntervalReport;
use linkperf_engine::{LocalSide, SideEvent};
use linkperf_proto::results::SideResult;
use linkperf_proto::session::ClientSession;
use linkperf_proto::{ClientMessage, ServerMessage, TestConfig};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;

/// What both ends measured, and how the run went.
pub(super) struct Outcome {
    pub local: SideResult,
    pub remote: SideResult,
    pub intervals: Vec<IntervalReport>,
    pub interrupted: bool,
    /// Errors met while running (the server's, a lost connection), in order.
    pub errors: Vec<String>,
}

/// The state of a running test on the client.
struct Session<'a> {
    control: &'a Control<ClientSession>,
    config: &'a TestConfig,
    side: Option<LocalSide>,
    local: Option<SideResult>,
    remote: Option<SideResult>,
    merger: IntervalPairing,
    interrupted: bool,
    errors: Vec<String>,
    lost: Option<String>,
}

/// Runs the started `side` until both ends have finished, the server is
/// lost, or `cancel` is set and the server confirms the end.
pub(super) fn run(
    control: &Control<ClientSession>,
    events: &Receiver<Event>,
    config: &TestConfig,
    side: LocalSide,
    on_interval: &mut dyn FnMut(&IntervalReport),
    cancel: Option<&AtomicBool>,
) -> Outcome {
    let mut s = Session {
        control,
        config,
        side: Some(side),
        local: None,
        remote: None,
        merger: IntervalPairing::default(),
        interrupted: false,
        errors: Vec::new(),
        lost: None,
    };
    while s.local.is_none() || s.remote.is_none() {
        if let (Some(flag), false) = (cancel, s.interrupted) {
            if flag.load(Ordering::Relaxed) {
                s.interrupt();
            }
        }
        let event = match events.recv_timeout(Duration::from_millis(100)) {
            Ok(e) => e,
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => break,
        };
        s.on_event(event, on_interval);
        if let Some(why) = s.lost.take() {
            s.server_gone(why);
            break;
        }
    }
    s.merger.drain(config, true, on_interval);
    Outcome {
        local: s.local.unwrap_or_default(),
        remote: s.remote.unwrap_or_default(),
        intervals: s.merger.lines,
        interrupted: s.interrupted,
        errors: s.errors,
    }
}

impl Session<'_> {
    /// Ctrl-C: stop sending and ask the server to end the test; both ends
    /// still report what they measured.
    fn interrupt(&mut self) {
        self.interrupted = true;
        if let Some(s) = &self.side {
            s.stop_senders();
        }
        let _ = self.control.send(&ClientMessage::Cancel {
            reason: "interrupted".into(),
        });
    }

    fn on_event(&mut self, event: Event, on_interval: &mut dyn FnMut(&IntervalReport)) {
        match event {
            Event::Side(SideEvent::Interval(v)) => {
                self.merger.push_local(self.config, v);
                self.merger.drain(self.config, false, on_interval);
            }
            Event::Side(SideEvent::SendersDone(packets)) => {
                let _ = self.control.send(&ClientMessage::SendersDone { packets });
            }
            Event::Side(SideEvent::AllDone) => {
                if let Some(s) = self.side.take() {
                    let result = s.finish();
                    let _ = self.control.send(&ClientMessage::Finished {
                        result: Box::new(result.clone()),
                    });
                    self.local = Some(result);
                }
            }
            Event::Server(Incoming::Message(ServerMessage::Interval { streams })) => {
                self.merger.push_remote(self.config, streams);
                self.merger.drain(self.config, false, on_interval);
            }
            Event::Server(Incoming::Message(ServerMessage::SendersDone { packets })) => {
                if let Some(s) = &self.side {
                    s.peer_senders_done(&packets);
                }
            }
            Event::Server(Incoming::Message(ServerMessage::Finished { result })) => {
                self.remote = Some(*result)
            }
            Event::Server(Incoming::Message(ServerMessage::Error { message })) => {
                self.errors.push(format!("server: {message}"));
                self.lost = Some(message);
            }
            Event::Server(Incoming::Message(_)) => {}
            Event::Server(Incoming::Lost(why)) => self.lost = Some(why),
        }
    }

    /// The server is gone: keep what this end measured.
    fn server_gone(&mut self, why: String) {
        if let Some(s) = self.side.take() {
            s.abort();
            self.local = Some(s.finish());
        }
        self.errors
            .push(format!("the server went away mid-test: {why}"));
    }
}
