//! How new parameters reach a running forwarding thread: a queue with an eventfd that wakes
//! the thread from ppoll(2), and a flag it checks on every turn of its loop (so a change
//! lands within one turn even while it spins). The thread acknowledges each update with the
//! time it took effect.

use crate::params::DirectionParams;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Mutex};

/// New parameters for one direction.
pub struct Update {
    pub params: DirectionParams,
    pub mtu: u32,
    /// Time between cells arriving at the direction's cell switch (it follows the links
    /// into the switch: see `Topology::input_cell_ns`).
    pub cell_input_ns: f64,
    pub done: mpsc::Sender<Applied>,
}

/// When an update took effect (ns on the emulator's clock) and what it dropped.
#[derive(Debug, Clone, Copy)]
pub struct Applied {
    pub at_ns: u64,
    /// Packets dropped because the queue shrank below its content.
    pub dropped_resize: u64,
}

pub struct Mailbox {
    updates: Mutex<Vec<Update>>,
    pending: AtomicBool,
    event: OwnedFd,
}

impl Mailbox {
    pub fn new() -> std::io::Result<Mailbox> {
        // SAFETY: eventfd(2) with constant flags.
        let raw = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if raw < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Mailbox {
            updates: Mutex::new(Vec::new()),
            pending: AtomicBool::new(false),
            // SAFETY: a fresh descriptor nothing else owns.
            event: unsafe { OwnedFd::from_raw_fd(raw) },
        })
    }

    /// The descriptor that becomes readable when updates are waiting.
    pub fn fd(&self) -> i32 {
        self.event.as_raw_fd()
    }

    pub fn post(&self, update: Update) {
        self.updates
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(update);
        self.pending.store(true, Ordering::Release);
        let one = 1u64.to_ne_bytes();
        // SAFETY: an 8-byte write to our eventfd.
        unsafe { libc::write(self.event.as_raw_fd(), one.as_ptr().cast(), 8) };
    }

    pub fn has_pending(&self) -> bool {
        self.pending.load(Ordering::Acquire)
    }

    /// Everything posted so far, oldest first.
    pub fn take(&self) -> Vec<Update> {
        self.pending.store(false, Ordering::Release);
        let mut counter = [0u8; 8];
        // SAFETY: an 8-byte read from our non-blocking eventfd (resets it).
        unsafe { libc::read(self.event.as_raw_fd(), counter.as_mut_ptr().cast(), 8) };
        std::mem::take(&mut *self.updates.lock().unwrap_or_else(|e| e.into_inner()))
    }
}
