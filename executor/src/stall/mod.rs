//! What the stall detector reports ([`StallReport`], with the stalled thread's
//! [`StallBacktrace`]), and how it takes the backtrace (`trace`: a signal to the thread).
//! The watchdog that notices stalls is `runtime::watchdog`.

pub(crate) mod trace;

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
    /// The task being polled, if it is a task's poll.
    task: Option<Meta>,
    /// How long the poll had run, at least, when it was reported.
    elapsed: Duration,
    /// The threshold it passed.
    threshold: Duration,
    /// The stalled thread's stack, if it could be taken.
    backtrace: Option<StallBacktrace>,
    /// Why there is no backtrace, if there is none.
    no_backtrace: Option<&'static str>,
}

impl StallReport {
    /// A report of core `core`'s poll of `task` (none: the `block_on` future's).
    pub(crate) fn new(
        core: usize,
        task: Option<Meta>,
        elapsed: Duration,
        threshold: Duration,
        backtrace: Result<StallBacktrace, &'static str>,
    ) -> StallReport {
        let (backtrace, no_backtrace) = match backtrace {
            Ok(b) => (Some(b), None),
            Err(why) => (None, Some(why)),
        };
        StallReport {
            core,
            task,
            elapsed,
            threshold,
            backtrace,
            no_backtrace,
        }
    }

    /// The core whose poll stalled.
    pub fn core(&self) -> usize {
        self.core
    }

    /// The id of the task whose poll stalled; `None` when it is the `block_on` future's.
    pub fn task_id(&self) -> Option<Id> {
        self.task.map(|t| t.id)
    }

    /// Where that task was spawned; `None` for the `block_on` future.
    pub fn spawned_at(&self) -> Option<&'static Location<'static>> {
        self.task.map(|t| t.at)
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
        match self.task {
            Some(t) => write!(f, "task {} (spawned at {})", t.id, t.at)?,
            None => write!(f, "the block_on future")?,
        }
        write!(
            f,
            " has been in one poll for at least {:?} (threshold {:?})",
            self.elapsed, self.threshold
        )?;
        match (&self.backtrace, self.no_backtrace) {
            (Some(b), _) => match b.innermost_user_frame() {
                Some(frame) => write!(f, "; in {frame}"),
                None => Ok(()),
            },
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

    /// The innermost frame outside std, core, libc and this crate's runtime: the user's code
    /// that stalls, for the one-line report.
    fn innermost_user_frame(&self) -> Option<String> {
        const NOT_USER: [&str; 6] = ["std::", "core::", "tickless::", "backtrace::", "__", "<"];
        self.frames()
            .into_iter()
            .find(|(name, place)| place.is_some() && !NOT_USER.iter().any(|p| name.starts_with(p)))
            .map(|(name, place)| format!("{name} at {}", place.unwrap_or_default()))
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
