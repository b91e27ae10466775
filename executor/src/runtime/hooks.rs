//! The builder's observers: the task hooks (`Builder::on_task_spawn`, `on_task_terminate`,
//! `on_before_task_poll`, `on_after_task_poll`, as tokio's) and the stall detector
//! (`Builder::stall_threshold`, `on_stall`).

use std::sync::Arc;
use std::time::Duration;

use crate::runtime::{Builder, StallReport};
use crate::task::hooks::TaskMeta;

impl Builder {
    /// Calls `f` when a task is spawned, on the spawning thread, before the task can run; as
    /// tokio's `Builder::on_task_spawn`.
    ///
    /// `f` is told the task's id and where it was spawned ([`TaskMeta`]). It runs for every
    /// task of the runtime: [`spawn`](crate::spawn), [`spawn_local`](crate::spawn_local),
    /// [`Handle::spawn`](crate::Handle::spawn), `JoinSet`'s spawns, and the task a
    /// [`spawn_blocking`](crate::task::spawn_blocking) awaits its job in. A panic of `f` is
    /// caught (and counted in [`CoreStats::wake_panics`](crate::CoreStats::wake_panics) where
    /// a core is current); the spawn goes on.
    ///
    /// # Costs
    ///
    /// With no task hook set, a task checks one word per poll and one at its end; with one,
    /// every task holds a reference to the runtime's hooks (one reference count per spawn).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use std::sync::Arc;
    ///
    /// let spawned = Arc::new(AtomicUsize::new(0));
    /// let count = spawned.clone();
    /// let rt = tickless::Builder::new()
    ///     .cores(1)
    ///     .on_task_spawn(move |_| {
    ///         count.fetch_add(1, Ordering::Relaxed);
    ///     })
    ///     .build()?;
    /// rt.block_on(async {
    ///     for _ in 0..3 {
    ///         tickless::spawn(async {}).await.unwrap();
    ///     }
    /// });
    /// assert_eq!(spawned.load(Ordering::Relaxed), 3);
    /// # std::io::Result::Ok(())
    /// ```
    pub fn on_task_spawn<F>(&mut self, f: F) -> &mut Self
    where
        F: Fn(&TaskMeta<'_>) + Send + Sync + 'static,
    {
        self.observers.hooks.spawn = Some(Arc::new(f));
        self
    }

    /// Calls `f` when a task terminates: it completed, panicked, was aborted, or was dropped
    /// unfinished by the runtime's shutdown; as tokio's `Builder::on_task_terminate`. It runs
    /// where the task's future is dropped (its core, for all but a task leaked by a shutdown
    /// on another thread), after the task's last poll hooks. A panic of `f` is caught.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use std::sync::Arc;
    ///
    /// let ended = Arc::new(AtomicUsize::new(0));
    /// let count = ended.clone();
    /// let rt = tickless::Builder::new()
    ///     .cores(1)
    ///     .on_task_terminate(move |_| {
    ///         count.fetch_add(1, Ordering::Relaxed);
    ///     })
    ///     .build()?;
    /// rt.block_on(async {
    ///     tickless::spawn(async {}).await.unwrap();
    ///     let stuck = tickless::spawn(std::future::pending::<()>());
    ///     stuck.abort();
    ///     assert!(stuck.await.unwrap_err().is_cancelled());
    /// });
    /// assert_eq!(ended.load(Ordering::Relaxed), 2); // one completed, one aborted
    /// # std::io::Result::Ok(())
    /// ```
    pub fn on_task_terminate<F>(&mut self, f: F) -> &mut Self
    where
        F: Fn(&TaskMeta<'_>) + Send + Sync + 'static,
    {
        self.observers.hooks.terminate = Some(Arc::new(f));
        self
    }

    /// Calls `f` on the task's core just before each poll of a task; as tokio's
    /// `Builder::on_before_task_poll`. Inside it, [`task::id`](crate::task::id()) is the
    /// task's. A panic of `f` is caught, and the poll goes on.
    ///
    /// # Examples
    ///
    /// Counting polls per task:
    ///
    /// ```
    /// use std::collections::HashMap;
    /// use std::sync::{Arc, Mutex};
    ///
    /// let polls = Arc::new(Mutex::new(HashMap::new()));
    /// let seen = polls.clone();
    /// let rt = tickless::Builder::new()
    ///     .cores(1)
    ///     .on_before_task_poll(move |meta| {
    ///         *seen.lock().unwrap().entry(meta.id()).or_insert(0) += 1;
    ///     })
    ///     .build()?;
    /// let id = rt.block_on(async {
    ///     let task = tickless::spawn(async {
    ///         tickless::yield_now().await; // two polls
    ///     });
    ///     let id = task.id();
    ///     task.await.unwrap();
    ///     id
    /// });
    /// assert_eq!(polls.lock().unwrap()[&id], 2);
    /// # std::io::Result::Ok(())
    /// ```
    pub fn on_before_task_poll<F>(&mut self, f: F) -> &mut Self
    where
        F: Fn(&TaskMeta<'_>) + Send + Sync + 'static,
    {
        self.observers.hooks.before_poll = Some(Arc::new(f));
        self
    }

    /// Calls `f` on the task's core just after each poll of a task (after the future's drop,
    /// when that poll completed it); as tokio's `Builder::on_after_task_poll`. A panic of `f`
    /// is caught.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use std::sync::Arc;
    ///
    /// let after = Arc::new(AtomicUsize::new(0));
    /// let count = after.clone();
    /// let rt = tickless::Builder::new()
    ///     .cores(1)
    ///     .on_after_task_poll(move |_| {
    ///         count.fetch_add(1, Ordering::Relaxed);
    ///     })
    ///     .build()?;
    /// rt.block_on(async { tickless::spawn(async {}).await.unwrap() });
    /// assert_eq!(after.load(Ordering::Relaxed), 1);
    /// # std::io::Result::Ok(())
    /// ```
    pub fn on_after_task_poll<F>(&mut self, f: F) -> &mut Self
    where
        F: Fn(&TaskMeta<'_>) + Send + Sync + 'static,
    {
        self.observers.hooks.after_poll = Some(Arc::new(f));
        self
    }

    /// The stall detector's threshold (default: `Some(25 ms)`, seastar's; `None` turns the
    /// detector off): a core whose one poll (a task's, the `block_on` future's, or, with the
    /// tokio context, what tokio runs on the core's thread: a `tokio::spawn` task) runs longer
    /// than this is reported once, from another thread, to [`on_stall`](Self::on_stall), and
    /// counted in [`CoreStats::stalls`](crate::CoreStats::stalls). A task that blocks its core
    /// (a synchronous call, a long computation, a lock held elsewhere) stops every connection
    /// on that core: the report names the core, the task's id, spawn location and name
    /// ([`task::Builder::name`](crate::task::Builder::name)), how long the poll has run so
    /// far, what the thread did meanwhile, and the stalled thread's backtrace, with the
    /// innermost frame of the user's code (by its name where the binary has no debug info).
    ///
    /// A core parked in epoll (or in its tokio runtime) is idle, not stalled, however long it
    /// sleeps. A poll whose thread the host kept off its CPU (it waited for one longer than it
    /// ran and was blocked, and ran and was blocked less than a threshold) is a preemption,
    /// not a stall: counted in [`CoreStats::preemptions`](crate::CoreStats::preemptions), not
    /// reported (see [`ThreadTimes`](crate::runtime::ThreadTimes)).
    ///
    /// # How it works, and what it costs
    ///
    /// One watchdog thread per runtime checks every core every half threshold. A core counts
    /// each poll's start and end in one word (a relaxed store each, which is also how the
    /// core counts its polls), and a task's poll publishes the task's id and spawn location
    /// (two more, which [`task::id`](crate::task::id()) reads too): no clock read, no
    /// read-modify-write, and the same with the detector off. A poll seen by two checks a
    /// threshold apart is reported: between one and one and a half thresholds after it started (a poll
    /// shorter than one and a half may go unreported). While any core runs, the watchdog wakes
    /// 2 / threshold times a second (80 at 25 ms); while every core is parked, it sleeps until
    /// one wakes, so an idle runtime is not woken at all (a core waking from a park pays a
    /// fence and a load, and the first one after the watchdog slept, a futex wake).
    ///
    /// # Backtraces
    ///
    /// The backtrace is taken on the stalled thread, by a signal (`SIGRTMIN + 7`) whose
    /// handler walks the stack into a static buffer, allocating and locking nothing; the
    /// watchdog resolves the addresses. This needs glibc's `_dl_find_object` (glibc 2.35 and
    /// libgcc 12 on), through which the unwinder finds unwind tables without the loader's
    /// lock; elsewhere, or where the signal already has a handler, reports come without a
    /// backtrace and say why. A system call the stalled thread is in restarts after the
    /// handler (`SA_RESTART`), except the few the kernel never restarts (`epoll_wait`,
    /// `poll`, a `select` with a timeout), which return `EINTR` as for any signal.
    ///
    /// # Errors
    ///
    /// [`build`](Self::build) rejects a threshold under [`MIN_STALL_THRESHOLD`](
    /// crate::runtime::MIN_STALL_THRESHOLD) (1 ms).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// // Report polls longer than 100 ms (to stderr, by default).
    /// let rt = tickless::Builder::new()
    ///     .stall_threshold(Some(Duration::from_millis(100)))
    ///     .build()?;
    /// # drop(rt);
    /// // No detector, no watchdog thread.
    /// let quiet = tickless::Builder::new().stall_threshold(None).build()?;
    /// # drop(quiet);
    /// # std::io::Result::Ok(())
    /// ```
    pub fn stall_threshold(&mut self, threshold: Option<Duration>) -> &mut Self {
        self.observers.stall_threshold = threshold;
        self
    }

    /// Where the stall detector reports (see [`stall_threshold`](Self::stall_threshold)):
    /// `f` is called on the watchdog's thread, once per stall, while the poll still runs. The
    /// default writes the report's one line to stderr, as
    /// `tickless: core 1 stalled: task 12 (spawned at src/main.rs:9:5) has been in one poll for
    /// at least 26ms (threshold 25ms), running 0ns and blocked 13ms of the last 13ms; in
    /// app::handler at src/main.rs:30`. A panic of `f` is
    /// caught. `f` holds up the watchdog (and so the next reports, and the runtime's drop,
    /// which joins the watchdog's thread) while it runs; the
    /// report's `Display` resolves the backtrace's innermost user frame, which the first time
    /// reads the binary's debug information (up to a second or so for a large debug build).
    ///
    /// # Examples
    ///
    /// Counting stalls, and logging each one's backtrace:
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use std::sync::Arc;
    /// use std::time::Duration;
    ///
    /// let stalls = Arc::new(AtomicUsize::new(0));
    /// let count = stalls.clone();
    /// let rt = tickless::Builder::new()
    ///     .cores(1)
    ///     .stall_threshold(Some(Duration::from_millis(20)))
    ///     .on_stall(move |report| {
    ///         count.fetch_add(1, Ordering::Relaxed);
    ///         eprintln!("{report}");
    ///         if let Some(trace) = report.backtrace() {
    ///             eprintln!("{trace}");
    ///         }
    ///     })
    ///     .build()?;
    /// rt.block_on(async {
    ///     std::thread::sleep(Duration::from_millis(200)); // the block_on future blocks
    /// });
    /// assert_eq!(stalls.load(Ordering::Relaxed), 1);
    /// assert_eq!(rt.stats().cores[0].stalls, 1);
    /// # std::io::Result::Ok(())
    /// ```
    pub fn on_stall<F>(&mut self, f: F) -> &mut Self
    where
        F: Fn(&StallReport) + Send + Sync + 'static,
    {
        self.observers.on_stall = Some(Arc::new(f));
        self
    }
}
