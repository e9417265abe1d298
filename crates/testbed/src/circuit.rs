//! Switched-circuit set-up on a link (issue 13 item 4): a circuit is released after it has
//! carried nothing for its idle timeout, and the first packet after that (in either
//! direction) waits while a new one is set up; packets behind it wait with it.
//!
//! The state is the link's, not one direction's: a ping's request sets the circuit up and
//! its reply rides on it, as on an ISDN or ATM SVC call. Both forwarding threads of the link
//! share one [`Circuit`]; each direction's own parameters decide what its packets do.

use crate::counters::DirectionCounters;
use std::sync::Mutex;

/// The state of one link's circuit, on the emulator's clock (ns since its epoch).
#[derive(Debug, Default)]
pub struct Circuit {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Whether a circuit has ever been set up (there is none before the first packet).
    established: bool,
    /// When the last packet was offered to the link, either direction.
    last_ns: u64,
    /// When the current circuit is (or will be) ready to carry packets.
    ready_ns: u64,
}

impl Circuit {
    /// A packet offered at `now_ns` to a direction with this idle timeout: returns when it
    /// may start serialisation. A set-up takes `setup_ns()` (asked only then, so a drawn
    /// delay costs nothing per packet); it, and the release before it (which happened
    /// `idle_ns` after the last packet), are counted in `counters`.
    pub fn admit(
        &self,
        now_ns: u64,
        idle_ns: u64,
        setup_ns: impl FnOnce() -> u64,
        counters: &DirectionCounters,
    ) -> u64 {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let idle = now_ns.saturating_sub(s.last_ns.max(s.ready_ns));
        if !s.established || idle >= idle_ns {
            if s.established {
                DirectionCounters::add(&counters.circuit_releases, 1);
            }
            DirectionCounters::add(&counters.circuit_setups, 1);
            s.established = true;
            s.ready_ns = now_ns + setup_ns();
        }
        s.last_ns = s.last_ns.max(now_ns);
        s.ready_ns.max(now_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering::Relaxed;

    const MS: u64 = 1_000_000;

    #[test]
    fn the_first_packet_after_an_idle_timeout_waits_for_the_set_up() {
        let c = Circuit::default();
        let counters = DirectionCounters::default();
        // No circuit at first: set up at 0, ready at 30 ms; a packet at 10 ms waits too.
        assert_eq!(c.admit(0, 100 * MS, || 30 * MS, &counters), 30 * MS);
        assert_eq!(c.admit(10 * MS, 100 * MS, || 30 * MS, &counters), 30 * MS);
        // In use: no wait.
        assert_eq!(c.admit(120 * MS, 100 * MS, || 30 * MS, &counters), 120 * MS);
        // 100 ms idle since 120 ms: released, set up again.
        assert_eq!(c.admit(220 * MS, 100 * MS, || 30 * MS, &counters), 250 * MS);
        assert_eq!(counters.circuit_setups.load(Relaxed), 2);
        assert_eq!(counters.circuit_releases.load(Relaxed), 1);
    }
}
