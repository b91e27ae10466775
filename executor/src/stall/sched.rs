//! A stall or a preemption: what the stalled thread did over the watchdog's window, from the
//! kernel's scheduler statistics (`/proc/self/task/<tid>/schedstat`: the nanoseconds the thread
//! has run on a CPU, and the nanoseconds it has waited in a run queue for one), and the rule
//! that tells a poll that held its core from a thread the kernel did not run ([`ThreadTimes`]).

use std::io::Read;
use std::time::{Duration, Instant};

/// What a core's thread did over a window of wall time while one poll ran: how long it ran on
/// a CPU, how long it waited for one (runnable, preempted or not yet scheduled), and the rest
/// (blocked: sleeping in a system call, `std::thread::sleep`, a lock, a page fault), from the
/// kernel's scheduler statistics (Linux's `/proc/<pid>/task/<tid>/schedstat`).
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

/// One reading of a thread's scheduler statistics.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sample {
    /// When it was read.
    at: Instant,
    /// Nanoseconds on a CPU so far.
    run: u64,
    /// Nanoseconds waiting in a run queue so far.
    wait: u64,
}

impl Sample {
    /// Reads thread `tid`'s (of this process); `None` where the kernel does not say (no
    /// `/proc`, a kernel without schedstat) or the thread is gone.
    pub(crate) fn read(tid: i32) -> Option<Sample> {
        let mut file = std::fs::File::open(format!("/proc/self/task/{tid}/schedstat")).ok()?;
        let mut buf = [0u8; 96];
        let n = file.read(&mut buf).ok()?;
        let at = Instant::now();
        let (run, wait) = parse(&buf[..n])?;
        Some(Sample { at, run, wait })
    }

    /// What the thread did from this reading to `later`.
    pub(crate) fn until(&self, later: &Sample) -> ThreadTimes {
        ThreadTimes::new(
            later.at.saturating_duration_since(self.at),
            Duration::from_nanos(later.run.saturating_sub(self.run)),
            Duration::from_nanos(later.wait.saturating_sub(self.wait)),
        )
    }
}

/// The first two fields of a `schedstat` line: run and wait nanoseconds.
fn parse(line: &[u8]) -> Option<(u64, u64)> {
    let line = std::str::from_utf8(line).ok()?;
    let mut fields = line.split_ascii_whitespace().map(str::parse::<u64>);
    Some((fields.next()?.ok()?, fields.next()?.ok()?))
}

#[cfg(test)]
mod tests {
    use super::{parse, Sample, ThreadTimes};
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
    fn a_schedstat_line_parses_and_this_thread_s_reads() {
        assert_eq!(parse(b"123 456 7\n"), Some((123, 456)));
        assert_eq!(parse(b"garbage"), None);
        assert_eq!(parse(b""), None);
        // SAFETY: `gettid` has no preconditions.
        let me = unsafe { libc::gettid() };
        if let (Some(a), Some(b)) = (Sample::read(me), Sample::read(me)) {
            let t = a.until(&b);
            assert!(t.running() + t.waiting() + t.blocked() == t.window());
        }
    }
}
