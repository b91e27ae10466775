//! A quiet machine: other processes (a build, another engineer's tests) running during a
//! measurement distort it, badly on two cores. Before each measurement `compare` waits for the
//! machine to be idle (no other runnable task), and during it measures what the rest of the
//! machine used: CPU time the kernel counts as busy (`/proc/stat`, steal included) less what
//! `compare` and its children used (`getrusage`), less the tick sampling's slop. A measurement
//! during which others used more than [`MAX_OTHERS`] CPUs is retried.

use std::fs;
use std::io;
use std::thread;
use std::time::{Duration, Instant};

/// CPUs others may use, on average over a measurement, before it counts as disturbed.
pub const MAX_OTHERS: f64 = 0.10;

/// CPU seconds the machine has been busy (user, nice, system, irq, softirq, steal), all CPUs.
fn machine_busy() -> io::Result<f64> {
    let stat = fs::read_to_string("/proc/stat")?;
    let line = stat
        .lines()
        .next()
        .filter(|l| l.starts_with("cpu "))
        .ok_or_else(|| io::Error::other("no cpu line in /proc/stat"))?;
    let v: Vec<f64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal (guest time is already in user)
    let busy: f64 = [0, 1, 2, 5, 6, 7].iter().filter_map(|&i| v.get(i)).sum();
    // SAFETY: sysconf takes an integer name and cannot fail for _SC_CLK_TCK.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    Ok(busy / hz)
}

/// What `/proc/stat`'s tick-sampled busy time may be off by over a window: two ticks a CPU.
fn slop() -> f64 {
    // SAFETY: sysconf takes an integer name and cannot fail for these.
    let (hz, cpus) = unsafe {
        (
            libc::sysconf(libc::_SC_CLK_TCK),
            libc::sysconf(libc::_SC_NPROCESSORS_ONLN),
        )
    };
    2.0 * cpus.max(1) as f64 / hz.max(1) as f64
}

/// CPU seconds of this process and of its reaped children.
fn ours() -> f64 {
    let get = |who| {
        // SAFETY: an all-zero rusage is a valid value to be overwritten.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `ru` is a valid rusage for the kernel to fill.
        if unsafe { libc::getrusage(who, &mut ru) } != 0 {
            return 0.0;
        }
        let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        tv(ru.ru_utime) + tv(ru.ru_stime)
    };
    get(libc::RUSAGE_SELF) + get(libc::RUSAGE_CHILDREN)
}

/// A stretch of time over which others' CPU use is measured.
#[derive(Debug, Clone, Copy)]
pub struct Window {
    busy: f64,
    ours: f64,
    start: Instant,
}

impl Window {
    /// Starts measuring.
    pub fn start() -> Option<Window> {
        Some(Window {
            busy: machine_busy().ok()?,
            ours: ours(),
            start: Instant::now(),
        })
    }

    /// CPUs others used on average since the start (`None` if unknown). Our children count as
    /// ours once reaped: call it after waiting for them.
    pub fn others(&self) -> Option<f64> {
        let busy = machine_busy().ok()? - self.busy;
        let mine = ours() - self.ours;
        let secs = self.start.elapsed().as_secs_f64().max(1e-3);
        Some(((busy - mine - slop()) / secs).max(0.0))
    }
}

/// Runnable tasks on the machine other than the caller (`procs_running` of `/proc/stat`).
fn others_running() -> Option<u64> {
    let stat = fs::read_to_string("/proc/stat").ok()?;
    let n: u64 = stat
        .lines()
        .find_map(|l| l.strip_prefix("procs_running "))?
        .trim()
        .parse()
        .ok()?;
    Some(n.saturating_sub(1))
}

/// Waits until no other task is runnable in five looks 10 ms apart, or `budget` runs out (it
/// is charged the time waited). Returns whether the machine looked quiet.
pub fn wait_quiet(budget: &mut Duration) -> bool {
    loop {
        let mut busy = false;
        for _ in 0..5 {
            if others_running().unwrap_or(0) > 0 {
                busy = true;
                break;
            }
            thread::sleep(Duration::from_millis(10));
        }
        if !busy {
            return true;
        }
        if budget.is_zero() {
            return false;
        }
        let pause = Duration::from_millis(500).min(*budget);
        thread::sleep(pause);
        *budget = budget.saturating_sub(pause);
    }
}
