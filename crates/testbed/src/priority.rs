//! Scheduling priorities of the emulator's threads: forwarders at the lowest real-time
//! priority, the threads that change or report on them one above, the rest at nice -20.

/// The forwarders' real-time priority: the lowest, above every ordinary task and below the
/// kernel's own real-time threads (interrupt threads run at 50).
const RT_PRIORITY: libc::c_int = 1;

/// Real-time priority for the calling thread (SCHED_FIFO at [`RT_PRIORITY`]): a waking
/// forwarder then runs at once, ahead of every ordinary task, where the fair scheduler
/// let it wait milliseconds for a CPU beside a build (measured with `perf sched`). It
/// cannot take a CPU for long: it blocks whenever nothing is due, its spin before a
/// release is bounded (0.5 ms at most), and the kernel's real-time throttling leaves
/// ordinary tasks 5 % of every second in any case. Without the privilege (no
/// CAP_SYS_NICE, or a cgroup without real-time time) it falls back to nice -20.
pub fn raise_priority() {
    set_real_time(RT_PRIORITY);
}

/// One real-time priority above the forwarders, for the threads that change them or
/// report on them (the control socket, the schedule runner). Forwarders of one priority
/// under SCHED_FIFO do not yield to each other: a thread at theirs waits until a busy
/// one blocks, and a loaded run's snapshot request (two emulators' forwarders busy on
/// both CPUs) went unanswered for 6 s. Above them it runs at once, for the moment a
/// request takes.
pub fn raise_priority_above_forwarders() {
    set_real_time(RT_PRIORITY + 1);
}

fn set_real_time(priority: libc::c_int) {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: gettid, sched_setscheduler and setpriority on our own thread id, with a
    // parameter that lives across the call.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::pid_t;
        if libc::sched_setscheduler(tid, libc::SCHED_FIFO, &param) != 0 {
            libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, -20);
        }
    }
}

/// Nice -20 for the calling thread: first among ordinary tasks (a build's compilers share
/// what the forwarders leave), never ahead of a forwarder.
pub fn raise_weight() {
    // SAFETY: gettid and setpriority on our own thread id.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::pid_t;
        libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, -20);
    }
}
