//! A quiet machine: other processes (a build, another engineer's tests) running during a
//! measurement distort it, badly on two cores. Before each measurement `compare` waits for the
//! machine to be idle (no other runnable task), and during it measures what the rest of the
//! machine used: CPU time the kernel counts as busy (`/proc/stat`, steal included) less what
//! `compare` and its children used (`getrusage`), less the tick sampling's slop. A measurement
//! during which others used more than [`MAX_OTHERS`] CPUs is retried. The time spent on
//! others' account, waiting and retrying, is bounded ([`Patience`]) and reported on stderr.

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

/// `None` if no other task is runnable in five looks 10 ms apart, else how many were at the
/// look that found them.
fn runnable_others() -> Option<u64> {
    for _ in 0..5 {
        let n = others_running().unwrap_or(0);
        if n > 0 {
            return Some(n);
        }
        thread::sleep(Duration::from_millis(10));
    }
    None
}

/// CPUs online.
fn cpus() -> i64 {
    // SAFETY: sysconf takes an integer name and cannot fail for _SC_NPROCESSORS_ONLN.
    unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as i64
}

/// Every process's name and CPU ticks so far, but ours: user + system, its own and its reaped
/// children's (`/proc/<pid>/stat`; a build's short-lived jobs count for the build). Kernel
/// workers go by one name.
fn processes() -> Vec<(u32, String, u64)> {
    let me = std::process::id();
    let Ok(dir) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| {
        let pid: u32 = e.ok()?.file_name().to_str()?.parse().ok()?;
        if pid == me {
            return None;
        }
        let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // `pid (comm) state ...`: the name may hold spaces and parentheses; the last `)` ends it.
        let (head, rest) = stat.rsplit_once(')')?;
        let mut name = head.split_once('(')?.1;
        if name.starts_with("kworker/") {
            name = "kworker";
        }
        let f: Vec<&str> = rest.split_whitespace().collect();
        // After the name: state(0) ... utime(11) stime(12) cutime(13) cstime(14).
        let ticks = (11..15)
            .map(|i| f.get(i)?.parse::<u64>().ok())
            .sum::<Option<u64>>()?;
        Some((pid, name.to_string(), ticks))
    })
    .collect()
}

/// Others' CPU use over a stretch of time: in all, and by process name (the busiest first).
struct Sample {
    window: Option<Window>,
    before: Vec<(u32, String, u64)>,
}

impl Sample {
    fn start() -> Sample {
        Sample {
            window: Window::start(),
            before: processes(),
        }
    }

    /// Seconds since the start.
    fn secs(&self) -> f64 {
        self.window
            .map_or(1.0, |w| w.start.elapsed().as_secs_f64().max(1e-3))
    }

    /// `1.9 of 2 CPUs (busiest: rustc, cargo)`: what others used over the sample, and the
    /// processes that used the most (a rough ranking: their reaped children count for them).
    fn describe(&self) -> String {
        let secs = self.secs();
        // SAFETY: sysconf takes an integer name and cannot fail for _SC_CLK_TCK.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
        let mut by_name: Vec<(String, f64)> = Vec::new();
        for (pid, name, ticks) in processes() {
            // A process that was not there at the start started during the sample.
            let before = self.before.iter().find(|p| p.0 == pid).map_or(0, |p| p.2);
            let used = ticks.saturating_sub(before) as f64 / hz / secs;
            match by_name.iter_mut().find(|(n, _)| *n == name) {
                Some((_, u)) => *u += used,
                None => by_name.push((name, used)),
            }
        }
        by_name.sort_by(|a, b| b.1.total_cmp(&a.1));
        let busiest: Vec<String> = by_name
            .iter()
            .take(3)
            .filter(|(_, u)| *u >= 0.05)
            .map(|(n, _)| n.clone())
            .collect();
        let total = match self.window.and_then(|w| w.others()) {
            Some(o) => format!("{o:.1} of {} CPUs", cpus()),
            None => format!("some of {} CPUs", cpus()),
        };
        if busiest.is_empty() {
            total
        } else {
            format!("{total} (busiest: {})", busiest.join(", "))
        }
    }
}

/// How long a progress line waits for the next one, at most.
const PROGRESS_EVERY: Duration = Duration::from_secs(10);

/// The time `compare` may spend, in all, on account of other processes: waiting for the
/// machine to be quiet before a measurement, and running again a measurement they disturbed.
/// Once it is spent, `compare` measures without waiting (and says so). Its waits are reported
/// on stderr: once when the first begins (what it waits for, and how long it will), then a line
/// every [`PROGRESS_EVERY`] of waiting.
#[derive(Debug)]
pub struct Patience {
    total: Duration,
    left: Duration,
    /// Time spent waiting so far, in all.
    waited: Duration,
    /// `waited` at which the next progress line is due.
    next_word: Duration,
    /// Whether the first wait was announced.
    announced: bool,
    /// Whether running out was announced.
    spent_said: bool,
}

impl Patience {
    /// `total` of patience.
    pub fn new(total: Duration) -> Patience {
        Patience {
            total,
            left: total,
            waited: Duration::ZERO,
            next_word: PROGRESS_EVERY,
            announced: false,
            spent_said: false,
        }
    }

    /// Whether it is spent.
    pub fn is_spent(&self) -> bool {
        self.left.is_zero()
    }

    /// `96 of the 120 s left`.
    pub fn left_text(&self) -> String {
        format!(
            "{} of the {} s left",
            self.left.as_secs(),
            self.total.as_secs()
        )
    }

    /// Charges `d` (a measurement run again) to it.
    pub fn charge(&mut self, d: Duration) {
        self.left = self.left.saturating_sub(d);
        self.say_if_spent();
    }

    fn say_if_spent(&mut self) {
        if self.left.is_zero() && !self.spent_said && !self.total.is_zero() {
            self.spent_said = true;
            let rerun = self.total.saturating_sub(self.waited).as_secs();
            eprintln!(
                "compare: spent the {} s allowed for other processes ({} s waiting{}): measuring \
                 the rest without waiting; the notes will say which figures are disturbed",
                self.total.as_secs(),
                self.waited.as_secs(),
                if rerun > 0 {
                    format!(", {rerun} s re-running disturbed measurements")
                } else {
                    String::new()
                }
            );
        }
    }

    /// Waits until no other task is runnable in five looks 10 ms apart, or until it is spent
    /// (it is charged the time waited). Returns whether the machine looked quiet.
    pub fn wait_quiet(&mut self) -> bool {
        let began = Instant::now();
        let mut sample = Sample::start();
        let mut spoke = false;
        loop {
            let Some(runnable) = runnable_others() else {
                if spoke {
                    eprintln!(
                        "compare: quiet after {:.0} s; measuring ({})",
                        began.elapsed().as_secs_f64(),
                        self.left_text()
                    );
                }
                return true;
            };
            if self.left.is_zero() {
                self.say_if_spent();
                return false;
            }
            let pause = Duration::from_millis(500).min(self.left);
            thread::sleep(pause);
            self.left = self.left.saturating_sub(pause);
            self.waited += pause;
            if !self.announced {
                self.announced = true;
                spoke = true;
                eprintln!(
                    "compare: waiting for the machine to be quiet: {runnable} other task(s) \
                     runnable, other processes using {}.\n\
                     compare:   Each measurement starts once no other process is runnable. compare \
                     gives them {} s at most in all,\n\
                     compare:   waiting and re-running the measurements they disturb; then it \
                     measures anyway, and says so.",
                    sample.describe(),
                    self.total.as_secs()
                );
                sample = Sample::start();
            } else if self.waited >= self.next_word && !self.left.is_zero() {
                self.next_word = self.waited + PROGRESS_EVERY;
                spoke = true;
                eprintln!(
                    "compare: still waiting for quiet, {} of {} s used: others used {} over \
                     the last {:.0} s",
                    (self.total - self.left).as_secs(),
                    self.total.as_secs(),
                    sample.describe(),
                    sample.secs()
                );
                sample = Sample::start();
            }
            self.say_if_spent();
        }
    }
}
