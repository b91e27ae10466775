//! What `/proc` says about a server process and the generator's thread over a measurement:
//! CPU time, and time spent runnable but waiting for a CPU (the scheduler's `run_delay`).
//!
//! The wait is what tells a runtime's tail from the machine's: a server whose threads waited
//! for a CPU while other processes ran there delayed every request that came meanwhile, and
//! the generator, which times each request from its scheduled send, charges that to the
//! server; a generator that waited sent late and charges its own wait the same way.

use std::fs;
use std::time::Duration;

/// utime + stime of process `pid` from `/proc/<pid>/stat` (fields 14 and 15, counted after
/// the command name, which ends at the last `)`).
pub fn proc_cpu(pid: u32) -> Option<Duration> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    // SAFETY: sysconf takes a name and returns a value or -1.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let hz = u64::try_from(hz).ok().filter(|&h| h > 0)?;
    Some(Duration::from_nanos(ticks * 1_000_000_000 / hz))
}

/// The time a thread spent runnable but not running, from a `schedstat` file's second field
/// (`<run ns> <run_delay ns> <timeslices>`; needs `CONFIG_SCHED_INFO`, which every
/// distribution kernel has).
fn run_delay(path: &str) -> Option<Duration> {
    let s = fs::read_to_string(path).ok()?;
    let ns = s.split_whitespace().nth(1)?.parse().ok()?;
    Some(Duration::from_nanos(ns))
}

/// The time every live thread of process `pid` spent waiting for a CPU so far (a thread
/// that has exited no longer counts: the servers' threads live as long as they do).
pub fn proc_wait(pid: u32) -> Option<Duration> {
    let mut total = Duration::ZERO;
    for entry in fs::read_dir(format!("/proc/{pid}/task")).ok()? {
        let path = entry.ok()?.path().join("schedstat");
        // A thread that exits under us waits no more.
        if let Some(d) = path.to_str().and_then(run_delay) {
            total += d;
        }
    }
    Some(total)
}

/// The time the calling thread spent waiting for a CPU so far.
pub fn thread_wait() -> Option<Duration> {
    run_delay("/proc/thread-self/schedstat")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_cpu_reads_this_process() {
        assert!(proc_cpu(std::process::id()).is_some());
        assert!(proc_cpu(u32::MAX).is_none());
    }

    #[test]
    fn waits_read_this_process_and_thread_and_never_go_back() {
        let (p, t) = (proc_wait(std::process::id()), thread_wait());
        assert!(p.is_some() && t.is_some(), "no schedstat: {p:?} {t:?}");
        // A busy spell gives the scheduler a chance to count; the sums only grow.
        let mut x = 0u64;
        for i in 0..1_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        assert!(thread_wait() >= t);
        assert!(proc_wait(u32::MAX).is_none());
    }
}
