//! What the stall detector reports ([`StallReport`], with the stalled thread's
//! [`StallBacktrace`]), and how it takes the backtrace (`trace`: a signal to the thread).
//! The watchdog that notices stalls is `runtime::watchdog`.

mod frames;
pub(crate) mod sched;
pub(crate) mod trace;

pub use sched::ThreadTimes;

use std::fmt;
use std::panic::Location;
use std::sync::Arc;
use std::time::Duration;

use crate::task::id::{Id, Meta};

/// A core's poll that has run longer than the stall threshold, as the stall detector reports
/// it (once per stall) to [`Builder::on_stall`](crate::Builder::on_stall).
///
/// Its `Display` is the one line the default hook writes to stderr.
///
/// # Examples
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use std::time::Duration;
///
/// let reports = Arc::new(Mutex::new(Vec::new()));
/// let seen = reports.clone();
/// let rt = tickless::Builder::new()
///     .cores(1)
///     .stall_threshold(Some(Duration::from_millis(20)))
///     .on_stall(move |report| seen.lock().unwrap().push(report.clone()))
///     .build()?;
/// rt.block_on(async {
///     let task = tickless::spawn(async {
///         std::thread::sleep(Duration::from_millis(200)); // blocks the core
///     });
///     task.await.unwrap();
/// });
/// let reports = reports.lock().unwrap();
/// assert_eq!(reports.len(), 1);
/// assert_eq!(reports[0].spawned_at().unwrap().file(), file!());
/// println!("{}", reports[0]);
/// if let Some(trace) = reports[0].backtrace() {
///     println!("{trace}");
/// }
/// # std::io::Result::Ok(())
/// ```
#[derive(Clone, Debug)]
pub struct StallReport {
    /// The core.
    core: usize,
    /// What the core was polling.
    polled: Polled,
    /// How long the poll had run, at least, when it was reported.
    elapsed: Duration,
    /// The threshold it passed.
    threshold: Duration,
    /// What the thread did over the window the watchdog watched, if the kernel says.
    times: Option<ThreadTimes>,
    /// The stalled thread's stack, if it could be taken.
    backtrace: Option<StallBacktrace>,
    /// Why there is no backtrace, if there is none.
    no_backtrace: Option<&'static str>,
}

/// What a core polls, as its watch word says.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Polled {
    /// The `block_on` future (core 0).
    BlockOn,
    /// A tickless task.
    Task(Meta),
    /// The core's tokio runtime (`Builder::tokio_context`): one of its tasks, or its driver.
    Tokio,
}

impl StallReport {
    /// A report of core `core`'s poll of `polled`; `times`: what its thread did meanwhile.
    pub(crate) fn new(
        core: usize,
        polled: Polled,
        elapsed: Duration,
        threshold: Duration,
        times: Option<ThreadTimes>,
        backtrace: Result<StallBacktrace, &'static str>,
    ) -> StallReport {
        let (backtrace, no_backtrace) = match backtrace {
            Ok(b) => (Some(b), None),
            Err(why) => (None, Some(why)),
        };
        StallReport {
            core,
            polled,
            elapsed,
            threshold,
            times,
            backtrace,
            no_backtrace,
        }
    }

    /// The core whose poll stalled.
    pub fn core(&self) -> usize {
        self.core
    }

    /// The task's meta, if a tickless task's poll stalled.
    fn task(&self) -> Option<Meta> {
        match self.polled {
            Polled::Task(meta) => Some(meta),
            Polled::BlockOn | Polled::Tokio => None,
        }
    }

    /// The id of the task whose poll stalled; `None` when it is the `block_on` future's, or
    /// tokio's ([`in_tokio`](Self::in_tokio)).
    pub fn task_id(&self) -> Option<Id> {
        self.task().map(|t| t.id)
    }

    /// Where that task was spawned; `None` for the `block_on` future and tokio's tasks.
    pub fn spawned_at(&self) -> Option<&'static Location<'static>> {
        self.task().map(|t| t.at)
    }

    /// The task's name, if it was spawned with one ([`task::Builder::name`]); a connection's
    /// task of `tickless_http` is named after the service it serves.
    ///
    /// [`task::Builder::name`]: crate::task::Builder::name
    pub fn task_name(&self) -> Option<&'static str> {
        self.task().and_then(|t| t.name.copied())
    }

    /// Whether the stalled poll is the core's tokio runtime's (`Builder::tokio_context`): a
    /// task spawned with `tokio::spawn`, or tokio's timers and I/O. tickless cannot tell tokio's
    /// tasks apart: the [`backtrace`](Self::backtrace) says which code it was.
    pub fn in_tokio(&self) -> bool {
        matches!(self.polled, Polled::Tokio)
    }

    /// How long the poll had run when it was reported: at least this (the watchdog measures
    /// from the first check that saw the poll, up to half a threshold after it started).
    pub fn elapsed(&self) -> Duration {
        self.elapsed
    }

    /// The threshold in force.
    pub fn threshold(&self) -> Duration {
        self.threshold
    }

    /// What the stalled thread did over the window the watchdog watched the poll: how long it
    /// ran on a CPU, waited for one, or was blocked. `None` where the kernel does not say
    /// (no `/proc/self/task/<tid>/stat`). A reported poll is a stall, not a preemption
    /// (see [`ThreadTimes`]'s `# Stall or preemption`): its thread ran or was blocked.
    pub fn thread_times(&self) -> Option<ThreadTimes> {
        self.times
    }

    /// The stalled thread's stack, taken on that thread while the poll ran; `None` if it
    /// could not be taken (see [`Builder::stall_threshold`](crate::Builder::stall_threshold)'s
    /// `# Backtraces`), or the poll ended before the thread answered.
    pub fn backtrace(&self) -> Option<&StallBacktrace> {
        self.backtrace.as_ref()
    }
}

impl fmt::Display for StallReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "tickless: core {} stalled: ", self.core)?;
        match self.polled {
            Polled::Task(t) => {
                write!(f, "task {}", t.id)?;
                if let Some(name) = t.name {
                    write!(f, " \"{name}\"")?;
                }
                write!(f, " (spawned at {})", t.at)?;
            }
            Polled::BlockOn => write!(f, "the block_on future")?,
            Polled::Tokio => write!(f, "the core's tokio runtime (a tokio::spawn task)")?,
        }
        write!(
            f,
            " has been in one poll for at least {:?} (threshold {:?})",
            self.elapsed, self.threshold
        )?;
        if let Some(t) = self.times {
            write!(
                f,
                ", running {:?} and blocked {:?} of the last {:?}",
                t.running(),
                t.blocked(),
                t.window()
            )?;
        }
        match (&self.backtrace, self.no_backtrace) {
            (Some(b), _) => {
                let mut user = b.user_frames().map(describe);
                if let Some(inner) = user.next() {
                    write!(f, "; in {inner}")?;
                    if let Some(outer) = user.last() {
                        write!(f, ", called from {outer}")?;
                    }
                }
                Ok(())
            }
            (None, Some(why)) => write!(f, "; {why}"),
            (None, None) => Ok(()),
        }
    }
}

/// A stalled thread's stack: instruction addresses taken in a signal handler on that thread,
/// resolved to symbols (function, file, line) on first use.
#[derive(Clone)]
pub struct StallBacktrace {
    /// The addresses, innermost first, from the interrupted frame on.
    ips: Arc<[usize]>,
}

impl StallBacktrace {
    /// The addresses the handler took, innermost first, from the interrupted frame on.
    pub(crate) fn from_handler(ips: Vec<usize>) -> StallBacktrace {
        StallBacktrace { ips: ips.into() }
    }

    /// The instruction addresses, innermost first.
    pub fn addresses(&self) -> &[usize] {
        &self.ips
    }

    /// The frames, resolved: `(function, file:line)` each, innermost first (an inlined
    /// function gives a frame of its own).
    pub fn frames(&self) -> Vec<(String, Option<String>)> {
        let mut out = Vec::new();
        for &ip in self.ips.iter() {
            backtrace::resolve(ip as *mut std::ffi::c_void, |sym| {
                let name = sym
                    .name()
                    .map_or_else(|| format!("{ip:#x}"), |n| format!("{n:#}"));
                let place = sym
                    .filename()
                    .map(|file| format!("{}:{}", file.display(), sym.lineno().unwrap_or(0)));
                out.push((name, place));
            });
        }
        out
    }

    /// The frames of the user's code in the stalled poll (the rule is `frames`'), innermost
    /// first: from the innermost on, up to the executor's frames that poll the task.
    fn user_frames(&self) -> impl Iterator<Item = (String, Option<String>)> {
        self.frames()
            .into_iter()
            .skip_while(|(name, _)| !frames::is_user_frame(name))
            .take_while(|(name, _)| !frames::is_executor_frame(name))
            .filter(|(name, _)| frames::is_user_frame(name))
    }

    /// The innermost frame of the user's code, where the thread is held: its function, and
    /// where it is when the binary has debug info. Told by name alone (a release build without
    /// debug info has no locations), so that it never falls back on a frame of glibc's. The
    /// rule: neither a C symbol nor std's, core's, alloc's, tickless's, tokio's, nor the HTTP
    /// frameworks' (hyper, axum, tower); the user's trait methods count, and so do the
    /// libraries the user calls (a hashing crate).
    pub fn innermost_user_frame(&self) -> Option<String> {
        self.user_frames().next().map(describe)
    }

    /// The outermost frame of the user's code in the stalled poll: the task's own future (a
    /// request handler's, under hyper's and axum's frames), when the thread is held in a
    /// library it called. Frames outside the poll (the caller of `block_on`) are not counted.
    pub fn outermost_user_frame(&self) -> Option<String> {
        self.user_frames().last().map(describe)
    }
}

/// `function at file:line`, or the function alone where there is no location.
fn describe((name, place): (String, Option<String>)) -> String {
    match place {
        Some(place) => format!("{name} at {place}"),
        None => name,
    }
}

impl fmt::Display for StallBacktrace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (name, place)) in self.frames().into_iter().enumerate() {
            writeln!(f, "{i:4}: {name}")?;
            if let Some(place) = place {
                writeln!(f, "          at {place}")?;
            }
        }
        Ok(())
    }
}

impl fmt::Debug for StallBacktrace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StallBacktrace")
            .field("frames", &self.ips.len())
            .finish()
    }
}
