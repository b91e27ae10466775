//! A stall or a preemption: what the stalled thread did over the watchdog's window, and the
//! rule that tells a poll that held its core from a thread the kernel did not run
//! ([`ThreadTimes`]).
//!
//! # How the times are taken
//!
//! At each of its checks of a poll, from its second on, the watchdog looks at the poll's
//! thread ([`Window::look`]): its CPU-time clock (read from the watchdog, as
//! `pthread_getcpuclockid` gives it) says how long it ran since the last look, exactly; the
//! rest of that span it was off its CPU, and its state now (`/proc/self/task/<tid>/stat`)
//! says which way: runnable (`R`), waiting for a CPU; otherwise (`S`, `D`: a system call, a
//! sleep, a lock, a page fault) blocked. The kernel's own `schedstat` is no help there: it
//! adds a wait to the thread's total only once the wait ends, so a thread kept off its CPU
//! all along would look blocked. The split is as fine as the checks (half a threshold): a
//! thread that blocked and is runnable again at the look counts as having waited.

use std::io::Read;
use std::time::{Duration, Instant};

/// What a core's thread did over a window of wall time while one poll ran: how long it ran on
/// a CPU, how long it waited for one (runnable, preempted or not yet scheduled), and the rest
/// (blocked: sleeping in a system call, `std::thread::sleep`, a lock, a page fault), from its
/// CPU-time clock and its state at each of the watchdog's checks.
///
/// # Stall or preemption
///
/// The stall threshold is wall time. A poll that has run that long may have held its core
/// (running, or blocked in a system call: either way the core's other tasks wait on it), or
/// its thread may merely not have been given a CPU (a crowded host): that is the kernel's
/// doing, and no task of the core's would do better. The detector tells them apart over the
/// window it watched the poll (from its second look at the poll on, up to the report):
///
/// - **preempted** when the thread waited for a CPU longer than it ran and was blocked
///   together (more than half the window), and ran and was blocked together less than a whole
///   threshold: [`is_preempted`](Self::is_preempted). Such a poll is not reported; it is
///   counted in [`CoreStats::preemptions`](crate::CoreStats::preemptions), and still watched:
///   if it goes on to run or block a threshold of its own, it is reported then;
/// - a **stall** otherwise, and reported: the thread ran (a loop, a hash) or was blocked (a
///   synchronous `sleep`, a blocking `read`) at least half the time, or a threshold's worth
///   in all, however long it also waited for a CPU.
///
/// So a poll that blocks or computes is reported as it always was on a host with CPUs to
/// spare (its thread never waits long for one), and a thread that the host kept off its CPU
/// past the threshold is not.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use tickless::runtime::ThreadTimes;
///
/// let ms = Duration::from_millis;
/// let threshold = ms(25);
/// // 40 ms watched: 1 ms on a CPU, 39 ms in the run queue: the host's doing.
/// assert!(ThreadTimes::new(ms(40), ms(1), ms(39)).is_preempted(threshold));
/// // 40 ms watched: 1 ms on a CPU, 38 ms in `std::thread::sleep`: a stall.
/// assert!(!ThreadTimes::new(ms(40), ms(1), ms(1)).is_preempted(threshold));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThreadTimes {
    /// The wall time watched.
    window: Duration,
    /// The thread's time on a CPU in it.
    running: Duration,
    /// Its time runnable but waiting for a CPU in it.
    waiting: Duration,
}

impl ThreadTimes {
    /// A window of `window` in which the thread ran `running` and waited for a CPU `waiting`
    /// (the rest: blocked). Each is capped at the window.
    pub fn new(window: Duration, running: Duration, waiting: Duration) -> ThreadTimes {
        let running = running.min(window);
        ThreadTimes {
            window,
            running,
            waiting: waiting.min(window - running),
        }
    }

    /// The wall time watched: from the watchdog's second look at the poll to its report.
    pub fn window(&self) -> Duration {
        self.window
    }

    /// How long the thread ran on a CPU in the window.
    pub fn running(&self) -> Duration {
        self.running
    }

    /// How long it was runnable but waiting for a CPU (in a run queue) in the window.
    pub fn waiting(&self) -> Duration {
        self.waiting
    }

    /// How long it was neither: blocked (sleeping in a system call, on a lock, a page fault).
    pub fn blocked(&self) -> Duration {
        self.window - self.running - self.waiting
    }

    /// Whether the window is the host's doing rather than the poll's (see the type's
    /// `# Stall or preemption`): the thread waited for a CPU longer than it ran and was
    /// blocked together, and ran and was blocked together less than `threshold`.
    pub fn is_preempted(&self, threshold: Duration) -> bool {
        let own = self.running + self.blocked();
        self.waiting > own && own < threshold
    }
}

/// One look at a thread: its CPU time, and whether it is runnable.
#[derive(Clone, Copy, Debug)]
struct Look {
    /// When it was taken.
    at: Instant,
    /// The thread's CPU time so far.
    cpu: Duration,
    /// Whether the thread was runnable (running, or waiting for a CPU: state `R`), rather
    /// than blocked (`S`, `D`, or anything else).
    runnable: bool,
}

impl Look {
    /// Looks at thread `tid` (of this process); `None` where the kernel does not say (no
    /// `/proc`) or the thread is gone.
    fn take(tid: i32) -> Option<Look> {
        let runnable = runnable(tid)?;
        let cpu = cpu_time(tid)?;
        Some(Look {
            at: Instant::now(),
            cpu,
            runnable,
        })
    }
}

/// What a thread did over the watchdog's window, look by look.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Window {
    /// The thread.
    tid: i32,
    /// The window's first look.
    first: Instant,
    /// Its last look.
    last: Look,
    /// Its time on a CPU so far.
    running: Duration,
    /// Its time off its CPU while it was runnable at the look that ended it.
    waiting: Duration,
}

impl Window {
    /// A window that starts now on thread `tid`; `None` where the kernel does not say.
    pub(crate) fn start(tid: i32) -> Option<Window> {
        let first = Look::take(tid)?;
        Some(Window {
            tid,
            first: first.at,
            last: first,
            running: Duration::ZERO,
            waiting: Duration::ZERO,
        })
    }

    /// Looks again (at a later check): the time since the last look is running time as the
    /// thread's CPU clock says, and the rest waiting if the thread is runnable now, blocked
    /// otherwise. `None` where the thread cannot be looked at any more.
    pub(crate) fn look(&mut self) -> Option<ThreadTimes> {
        let now = Look::take(self.tid)?;
        let span = now.at.saturating_duration_since(self.last.at);
        let ran = now.cpu.saturating_sub(self.last.cpu).min(span);
        self.running += ran;
        if now.runnable {
            self.waiting += span - ran;
        }
        self.last = now;
        Some(ThreadTimes::new(
            now.at.saturating_duration_since(self.first),
            self.running,
            self.waiting,
        ))
    }
}

/// Thread `tid`'s CPU time: its CPU-time clock, the one `pthread_getcpuclockid` gives (the
/// kernel's clock id for a thread is made from its id: `CPUCLOCK_SCHED` of a thread, as glibc
/// makes it), read from another thread.
fn cpu_time(tid: i32) -> Option<Duration> {
    let clock: libc::clockid_t = (!tid << 3) | 6;
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `clock_gettime` writes one `timespec`, which `ts` is; an id of a thread that is
    // gone makes it fail with EINVAL.
    if unsafe { libc::clock_gettime(clock, &mut ts) } != 0 {
        return None;
    }
    Some(Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
}

/// Whether thread `tid` is runnable now (state `R` in `/proc/self/task/<tid>/stat`).
fn runnable(tid: i32) -> Option<bool> {
    let mut file = std::fs::File::open(format!("/proc/self/task/{tid}/stat")).ok()?;
    // `pid (comm) S ...`: a command name is at most 15 bytes, so the state is in the first 64.
    let mut buf = [0u8; 64];
    let n = file.read(&mut buf).ok()?;
    state(&buf[..n]).map(|s| s == b'R')
}

/// The state letter of a `stat` line: the first field after the command name's `)` (the
/// last one: a command name may hold one).
fn state(line: &[u8]) -> Option<u8> {
    let close = line.iter().rposition(|&b| b == b')')?;
    line[close + 1..]
        .iter()
        .copied()
        .find(|b| !b.is_ascii_whitespace())
}

#[cfg(test)]
mod tests {
    use super::{cpu_time, runnable, state, ThreadTimes, Window};
    use std::time::Duration;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn a_thread_kept_off_its_cpu_is_preempted() {
        let threshold = 25 * MS;
        // Runnable the whole window, a few slices of CPU: the host's doing.
        assert!(ThreadTimes::new(40 * MS, MS, 39 * MS).is_preempted(threshold));
        assert!(ThreadTimes::new(100 * MS, 10 * MS, 88 * MS).is_preempted(threshold));
        // Woken from a short block into a long run-queue wait.
        assert!(ThreadTimes::new(30 * MS, 2 * MS, 20 * MS).is_preempted(threshold));
    }

    #[test]
    fn a_thread_that_runs_or_blocks_is_a_stall() {
        let threshold = 25 * MS;
        // std::thread::sleep: neither running nor runnable.
        let slept = ThreadTimes::new(40 * MS, Duration::ZERO, Duration::ZERO);
        assert_eq!(slept.blocked(), 40 * MS);
        assert!(!slept.is_preempted(threshold));
        // A busy loop on a host with CPUs to spare.
        assert!(!ThreadTimes::new(40 * MS, 40 * MS, Duration::ZERO).is_preempted(threshold));
        // Half running, half waiting: not mostly the host's.
        assert!(!ThreadTimes::new(40 * MS, 20 * MS, 20 * MS).is_preempted(threshold));
        // A crowded host, but a threshold's worth of its own work: a stall however long it
        // also waited.
        assert!(!ThreadTimes::new(400 * MS, 30 * MS, 370 * MS).is_preempted(threshold));
        // Blocked in a system call, then a long wait for a CPU: mostly the host's, but a
        // threshold of blocking of its own.
        assert!(!ThreadTimes::new(80 * MS, MS, 50 * MS).is_preempted(threshold));
    }

    #[test]
    fn times_are_capped_at_the_window() {
        // The kernel's counters and the watchdog's clock are read at slightly different
        // instants: the parts never add up to more than the window.
        let t = ThreadTimes::new(10 * MS, 8 * MS, 5 * MS);
        assert_eq!(
            (t.running(), t.waiting(), t.blocked()),
            (8 * MS, 2 * MS, Duration::ZERO)
        );
    }

    #[test]
    fn a_stat_line_s_state_is_read_past_the_command_name() {
        assert_eq!(state(b"12 (tickless-1) R 1 12 12 0"), Some(b'R'));
        assert_eq!(state(b"12 (a) b) c) S 1 12"), Some(b'S'));
        assert_eq!(state(b"12 (no close"), None);
    }

    #[test]
    fn this_thread_is_runnable_and_its_window_adds_up() {
        // SAFETY: `gettid` has no preconditions.
        let me = unsafe { libc::gettid() };
        // Looking at itself, a thread is running: `R`.
        assert_eq!(runnable(me), Some(true));
        assert!(cpu_time(me).is_some_and(|t| t > Duration::ZERO));
        let mut window = Window::start(me).unwrap();
        let t = window.look().unwrap();
        assert_eq!(t.running() + t.waiting() + t.blocked(), t.window());
        assert_eq!(
            t.blocked(),
            Duration::ZERO,
            "runnable at the look: nothing blocked"
        );
    }
}
