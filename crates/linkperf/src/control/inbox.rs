//! A session's queue of events: many senders, one receiver, unbounded, as
//! `std::sync::mpsc`'s channel but holding nothing until something is sent
//! and only what waits. A server keeps one per running test for the test's
//! whole life; std's channel holds a block of 31 slots from the first send
//! on (1.7 KiB a test, most of it never used: a test sees a few events a
//! second), this a queue grown to what waited at once.
//!
//! The receiver's calls return std's `RecvTimeoutError` and `TryRecvError`,
//! so a caller handles both kinds of channel the same way.

use std::collections::VecDeque;
use std::sync::mpsc::{RecvTimeoutError, TryRecvError};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

struct Shared<T> {
    state: Mutex<State<T>>,
    arrived: Condvar,
}

struct State<T> {
    queue: VecDeque<T>,
    senders: usize,
    receiving: bool,
}

impl<T> Shared<T> {
    fn state(&self) -> MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Puts events in the queue; cloned for every producer.
pub struct Sender<T>(Arc<Shared<T>>);

/// Takes events out, oldest first.
pub struct Receiver<T>(Arc<Shared<T>>);

/// A new, empty queue.
pub fn channel<T>() -> (Sender<T>, Receiver<T>) {
    let shared = Arc::new(Shared {
        state: Mutex::new(State {
            queue: VecDeque::new(),
            senders: 1,
            receiving: true,
        }),
        arrived: Condvar::new(),
    });
    (Sender(shared.clone()), Receiver(shared))
}

impl<T> Sender<T> {
    /// Queues `item`; gives it back when the receiver is gone.
    pub fn send(&self, item: T) -> Result<(), T> {
        let mut state = self.0.state();
        if !state.receiving {
            return Err(item);
        }
        state.queue.push_back(item);
        drop(state);
        self.0.arrived.notify_one();
        Ok(())
    }
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Self {
        self.0.state().senders += 1;
        Sender(self.0.clone())
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        let mut state = self.0.state();
        state.senders -= 1;
        if state.senders == 0 {
            drop(state);
            self.0.arrived.notify_all();
        }
    }
}

impl<T> Receiver<T> {
    /// The oldest event, if one waits.
    pub fn try_recv(&self) -> Result<T, TryRecvError> {
        let mut state = self.0.state();
        match state.queue.pop_front() {
            Some(item) => Ok(item),
            None if state.senders == 0 => Err(TryRecvError::Disconnected),
            None => Err(TryRecvError::Empty),
        }
    }

    /// The oldest event, waiting at most `timeout` for one (a timeout past
    /// what the clock can count waits for an event or the senders' end).
    pub fn recv_timeout(&self, timeout: Duration) -> Result<T, RecvTimeoutError> {
        let deadline = Instant::now().checked_add(timeout);
        let mut state = self.0.state();
        loop {
            if let Some(item) = state.queue.pop_front() {
                return Ok(item);
            }
            if state.senders == 0 {
                return Err(RecvTimeoutError::Disconnected);
            }
            let left = deadline.map_or(Duration::MAX, |d| {
                d.saturating_duration_since(Instant::now())
            });
            if left.is_zero() {
                return Err(RecvTimeoutError::Timeout);
            }
            state = self
                .0
                .arrived
                .wait_timeout(state, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        let mut state = self.0.state();
        state.receiving = false;
        // What waits is dropped now, not when the last sender goes.
        state.queue = VecDeque::new();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_arrive_in_order_from_every_sender_and_the_ends_are_seen() {
        let (tx, rx) = channel();
        let other = tx.clone();
        let t = std::thread::spawn(move || {
            for i in 0..1000 {
                other.send(i).unwrap();
            }
        });
        for i in 1000..2000 {
            tx.send(i).unwrap();
        }
        t.join().unwrap();
        let mut seen: Vec<i32> = Vec::new();
        while let Ok(i) = rx.try_recv() {
            seen.push(i);
        }
        // Each sender's events keep their order; none is lost.
        let (a, b): (Vec<i32>, Vec<i32>) = seen.iter().partition(|&&i| i < 1000);
        assert_eq!(a, (0..1000).collect::<Vec<_>>());
        assert_eq!(b, (1000..2000).collect::<Vec<_>>());
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
        drop(tx);
        assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
        assert_eq!(
            rx.recv_timeout(Duration::from_secs(5)),
            Err(RecvTimeoutError::Disconnected)
        );
    }

    #[test]
    fn a_wait_ends_with_an_event_or_at_its_timeout() {
        let (tx, rx) = channel();
        let start = Instant::now();
        assert_eq!(
            rx.recv_timeout(Duration::from_millis(50)),
            Err(RecvTimeoutError::Timeout)
        );
        assert!(start.elapsed() >= Duration::from_millis(50));
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            tx.send(7).unwrap();
            tx
        });
        assert_eq!(rx.recv_timeout(Duration::MAX), Ok(7));
        let tx = t.join().unwrap();
        drop(rx);
        assert_eq!(tx.send(8), Err(8), "the receiver is gone");
    }
}
