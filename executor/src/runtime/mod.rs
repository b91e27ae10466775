//! The runtime: its cores, handles, stats and shutdown. The paths are tokio's:
//! `tickless::runtime::{Builder, Handle, Runtime}`.

mod builder;
mod core_zero;
mod crowding;
mod handle;
mod histograms;
mod hooks;
pub(crate) mod lease;
mod metrics;
#[cfg(feature = "metrics")]
mod reporter;
mod thread;
#[cfg(any(feature = "tokio-compat", loom))]
pub(crate) mod tokio_hand_over;
mod tokio_stand_in;
pub(crate) mod watchdog;

use std::fmt;
use std::future::Future;
use std::rc::Rc;
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle as ThreadHandle;
use std::time::{Duration, Instant};

pub use crate::histogram::HistogramConfiguration;
pub use crate::stall::{StallBacktrace, StallReport, ThreadTimes};
pub use crate::task::hooks::{TaskMeta, DEFAULT_STALL_THRESHOLD, MIN_STALL_THRESHOLD};
pub use builder::{
    Builder, DEFAULT_HARVEST_AFTER, DEFAULT_SLACK_KNEE, DEFAULT_SLACK_MAX, DEFAULT_WAKEUP_LEAD_MAX,
    MAX_SLACK, MAX_TIMER_RESOLUTION, MAX_WAKEUP_LEAD,
};
pub use handle::{Handle, TryCurrentError};
pub use metrics::RuntimeMetrics;
#[cfg(feature = "metrics")]
pub use reporter::{RuntimeMetricsReporter, RuntimeMetricsReporterBuilder};

pub use crate::worker::placement::Placement;

use crate::blocking::BlockingPool;
use crate::stats::Stats;
use crate::sync::{lock, Mutex};
use crate::worker::shared::{Peers, Shared};
use crate::worker::Core;
use core_zero::CoreZero;

/// How long dropping a runtime waits for its cores to drop their tasks and exit, and for its
/// running blocking jobs (see "Dropping" on [`Runtime`]).
const DROP_TIMEOUT: Duration = Duration::from_secs(10);

/// A tickless runtime: one executor per core, each with its own run queue, timer wheel,
/// timerfd and epoll instance.
///
/// Core 0 runs on the thread that calls [`block_on`](Self::block_on); the other cores run on
/// threads of their own, and are reached through [`handle`](Self::handle). A `Runtime` is
/// `Send` and `Sync`, as tokio's: a client that owns one moves between threads, and one in a
/// `static` is used from any (see [Moving it between threads](#moving-it-between-threads)).
///
/// # Dropping
///
/// Dropping it stops every core, drops every task's future on its own core, closes the
/// runtime's file descriptors and joins the threads: a [`shutdown`](Self::shutdown) with a
/// timeout of 10 s. Awaiting a handle of a dropped task gives a cancelled [`JoinError`].
/// Blocking jobs not yet started are dropped; running ones cannot be interrupted, so the drop
/// waits for them, within the same 10 s, and then leaves them running on their threads,
/// detached. tokio's drop waits for them without a bound; a drop here never hangs for ever on
/// a job that never returns. What was left (a core stuck in a task, a core that died, blocking
/// jobs still running) is printed to stderr as a [`ShutdownError`], since a drop cannot return
/// it; call [`shutdown`](Self::shutdown) to choose the timeout (`Duration::MAX`: wait as
/// long as it takes, as tokio) and get the error instead.
///
/// Dropping it (or calling `shutdown`) inside one of its own tasks panics at once, as tokio's
/// does: stopping the runtime waits for its cores, one of which is running the task that
/// stops it. Drop it outside the runtime, after `block_on` returns, or hand it to a thread of
/// its own (`std::thread::spawn(move || drop(rt))`). The panic costs the task its result (a
/// [`JoinError`] that `is_panic`); the runtime's other cores are asked to stop, and core 0,
/// whose tasks cannot be dropped on another core's thread, is leaked with them.
///
/// # A core that dies
///
/// Tasks' panics are caught where they run; a core's thread dies only of a panic in the
/// runtime itself or in the system under it (its epoll instance failing, say). Such a core
/// still drops its tasks, so their handles resolve as cancelled, and closes its inbox, so later
/// spawns onto it are refused the same way as after a shutdown: their handles resolve as
/// cancelled at once, and nothing waits forever. [`shutdown`](Self::shutdown) then reports
/// the core and the panic's message in [`ShutdownError::panicked`].
///
/// [`JoinError`]: crate::task::JoinError
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// let rt = tickless::Runtime::new()?; // one core per CPU; core 0 is this thread
/// let answer = rt.block_on(async {
///     tickless::time::sleep(Duration::from_micros(10)).await;
///     tickless::spawn(async { 42 }).await
/// });
/// assert_eq!(answer.unwrap(), 42);
/// rt.shutdown(Duration::from_secs(1))?; // or just drop it
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// A blocking client that owns its runtime, tokio's pattern for a synchronous wrapper, moves
/// to another thread with it:
///
/// ```
/// struct Client {
///     rt: tickless::Runtime,
/// }
///
/// impl Client {
///     fn answer(&self) -> u32 {
///         self.rt.block_on(async { tickless::spawn(async { 42 }).await.unwrap() })
///     }
/// }
///
/// let client = Client { rt: tickless::Builder::new().cores(1).build()? };
/// let answer = std::thread::spawn(move || client.answer()).join().unwrap();
/// assert_eq!(answer, 42);
/// # std::io::Result::Ok(())
/// ```
///
/// # Moving it between threads
///
/// Core 0 has no thread of its own: whichever thread is in `block_on` runs it, with the tasks
/// on it. Tasks spawned in one `block_on` run on in the next, whatever its thread.
///
/// - **One thread at a time.** `block_on` called while another thread is in one waits for it to
///   return, then runs (tokio's multi-thread runtime would run both at once: a `block_on`
///   future that waits for another thread's `block_on` to make progress waits for ever here).
///   Nested in a task or a `block_on` it panics, as before.
/// - **`spawn_local` tasks stay on their thread.** While a `spawn_local` task of core 0 is
///   alive, `block_on` on another thread panics, saying so; call it on the thread that
///   spawned the task, or let the task finish there first (abort it and await its handle in
///   a `block_on` on that thread: an aborted task's future is dropped when core 0 next runs
///   it). `tickless::spawn`'s tasks
///   (`Send`) have no such tie. Shut down or dropped on another thread, the runtime cannot drop
///   such a task's future there: it leaks it (its destructor never runs), resolves its handle as
///   cancelled, and reports it in [`ShutdownError::leaked_local`]. A leaked accept loop's
///   listener (`serve_per_core`, `tickless-http`'s `serve` on core 0) is shut down all the
///   same: the port takes no connection that nobody would serve.
/// - **Pinning.** With [`Builder::pin`], the building thread stays pinned to core 0's CPU for
///   the runtime's life (given its affinity back when the runtime is dropped on it); another
///   thread is pinned for the length of its `block_on` call only.
pub struct Runtime {
    /// Core 0, run by the thread in `block_on`.
    core: CoreZero,
    /// Every core's shared half, by index.
    shared: Vec<Arc<Shared>>,
    /// The same, as every task's metadata holds them (set when the last core has started).
    peers: Arc<Peers>,
    /// Threads of cores 1.., `None` once joined or given up on.
    threads: Vec<Option<ThreadHandle<()>>>,
    /// Indexes of core threads that have ended.
    done: Mutex<mpsc::Receiver<usize>>,
    /// The blocking pool.
    blocking: Arc<BlockingPool>,
    /// The building thread's affinity before core 0 was pinned to it, to restore when the
    /// runtime is dropped on that thread.
    restore_affinity: Option<Vec<usize>>,
    /// `shutdown` ran: dropping has nothing left to stop or report.
    stopped: bool,
    /// The stall detector's watchdog thread, if the detector is on.
    watchdog: Option<watchdog::Watchdog>,
}

/// A core that died of a panic, as [`Runtime::shutdown`] reports it.
///
/// A core dies only of a panic in the runtime itself or in the system under it (see
/// [A core that dies](Runtime#a-core-that-dies)); a task's panic never kills its core.
///
/// # Examples
///
/// Reporting the cores that died, if any:
///
/// ```
/// use std::time::Duration;
///
/// let rt = tickless::Builder::new().cores(2).build()?;
/// if let Err(e) = rt.shutdown(Duration::from_secs(5)) {
///     for dead in &e.panicked {
///         eprintln!("core {} died: {}", dead.core, dead.message);
///     }
/// }
/// # std::io::Result::Ok(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CorePanic {
    /// The core's index.
    pub core: usize,
    /// The panic's message.
    pub message: String,
}

/// The error of [`Runtime::shutdown`] (and what dropping a runtime prints): cores still inside
/// a task when the timeout passed, cores whose thread had died of a panic, and blocking jobs
/// still running at the timeout. Its `Display` says each of them.
///
/// # Examples
///
/// A blocking job that is still running when the timeout passes:
///
/// ```
/// use std::sync::mpsc;
/// use std::time::Duration;
///
/// let rt = tickless::Builder::new().cores(2).build()?;
/// let (started, has_started) = mpsc::channel();
/// let (release, released) = mpsc::channel::<()>();
/// let _job = rt.handle(1).spawn_blocking(move || {
///     started.send(()).unwrap();
///     let _ = released.recv(); // waits until told
/// });
/// has_started.recv().unwrap();
/// let err = rt.shutdown(Duration::from_millis(100)).unwrap_err();
/// assert_eq!(err.blocking, 1); // left running, detached
/// println!("{err}");
/// release.send(()).unwrap(); // the job's thread ends now
/// # std::io::Result::Ok(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShutdownError {
    /// Indexes of the cores that did not stop in time; their threads were left running.
    pub stuck: Vec<usize>,
    /// The cores whose thread died of a panic, with its message.
    pub panicked: Vec<CorePanic>,
    /// Blocking jobs still running when the timeout passed; their threads were left running,
    /// detached.
    pub blocking: usize,
    /// `spawn_local` futures of core 0 leaked instead of dropped, because the runtime was shut
    /// down on another thread than the one that spawned them (a `!Send` future may be dropped
    /// on its own thread only; see "Moving it between threads" on [`Runtime`]). Their
    /// destructors never ran; their handles resolved as cancelled.
    pub leaked_local: usize,
}

impl fmt::Display for ShutdownError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut sep = "";
        if !self.stuck.is_empty() {
            write!(
                f,
                "cores {:?} did not stop within the shutdown timeout (a task never yields?)",
                self.stuck
            )?;
            sep = "; ";
        }
        for p in &self.panicked {
            write!(
                f,
                "{sep}core {} died: it panicked with {:?}",
                p.core, p.message
            )?;
            sep = "; ";
        }
        match self.blocking {
            0 => {}
            1 => write!(
                f,
                "{sep}1 blocking job still running at the shutdown timeout (its thread was left \
                 running, detached)"
            )?,
            n => write!(
                f,
                "{sep}{n} blocking jobs still running at the shutdown timeout (their threads were \
                 left running, detached)"
            )?,
        }
        if self.blocking > 0 {
            sep = "; ";
        }
        if self.leaked_local > 0 {
            write!(
                f,
                "{sep}{} `spawn_local` future(s) of core 0 leaked, not dropped: the runtime was \
                 shut down on another thread than the one that spawned them",
                self.leaked_local
            )?;
        }
        Ok(())
    }
}

impl std::error::Error for ShutdownError {}

impl Runtime {
    /// A runtime of core 0 alone, to which the builder adds the others.
    fn new_parts(
        core: Rc<Core>,
        cpu: Option<usize>,
        blocking: Arc<BlockingPool>,
        done: mpsc::Receiver<usize>,
        restore_affinity: Option<Vec<usize>>,
    ) -> Runtime {
        Runtime {
            shared: vec![core.shared().clone()],
            peers: core.peers().clone(),
            core: CoreZero::new(core, cpu),
            threads: Vec::new(),
            done: Mutex::new(done),
            blocking,
            restore_affinity,
            stopped: false,
            watchdog: None,
        }
    }

    /// Adds a started core.
    fn add_core(&mut self, shared: Arc<Shared>, thread: ThreadHandle<()>) {
        self.shared.push(shared);
        self.threads.push(Some(thread));
    }

    /// Runs `future` to completion on this thread (core 0), running the core's other tasks, I/O
    /// and timers meanwhile. The other cores run all along, `block_on` or not. A panic of
    /// `future` itself propagates to the caller, as tokio's does; the runtime stays usable.
    /// Called from several threads at once, the calls run one after another (see [Moving it
    /// between threads](Self#moving-it-between-threads)).
    ///
    /// # Panics
    ///
    /// When called from inside a runtime (a task or another `block_on`): runtimes don't nest.
    /// When called on another thread than the last `block_on`'s while a `spawn_local` task of
    /// core 0 is alive: that task may run on its own thread only.
    ///
    /// # Examples
    ///
    /// ```
    /// let rt = tickless::Builder::new().cores(1).build()?;
    /// assert_eq!(rt.block_on(async { 1 + 1 }), 2);
    /// // Tasks spawned onto core 0 run inside `block_on`, whichever call it is.
    /// let task = rt.handle(0).spawn(async { "ran" });
    /// assert_eq!(rt.block_on(task).unwrap(), "ran");
    /// # std::io::Result::Ok(())
    /// ```
    pub fn block_on<F: Future>(&self, future: F) -> F::Output {
        self.core.block_on(future)
    }

    /// The number of cores.
    ///
    /// # Examples
    ///
    /// ```
    /// let rt = tickless::Builder::new().cores(3).build()?;
    /// assert_eq!(rt.cores(), 3);
    /// assert_eq!(rt.stats().cores.len(), rt.cores());
    /// # std::io::Result::Ok(())
    /// ```
    pub fn cores(&self) -> usize {
        self.shared.len()
    }

    /// A handle to core `core`, to spawn onto it from any thread.
    ///
    /// # Panics
    ///
    /// If there is no such core.
    ///
    /// # Examples
    ///
    /// A task on every core:
    ///
    /// ```
    /// let rt = tickless::Builder::new().cores(2).build()?;
    /// let tasks: Vec<_> = (0..rt.cores())
    ///     .map(|core| rt.handle(core).spawn(async { tickless::core_id() }))
    ///     .collect();
    /// // Core 0 runs its tasks inside `block_on`; core 1 runs its own on its thread.
    /// let ran_on = rt.block_on(async {
    ///     let mut ran_on = Vec::new();
    ///     for task in tasks {
    ///         ran_on.push(task.await.unwrap());
    ///     }
    ///     ran_on
    /// });
    /// assert_eq!(ran_on, [0, 1]);
    /// # std::io::Result::Ok(())
    /// ```
    pub fn handle(&self, core: usize) -> Handle {
        let shared = self.shared.get(core).unwrap_or_else(|| {
            panic!(
                "no core {core}: the runtime has {} cores",
                self.shared.len()
            )
        });
        Handle::new(shared.clone(), self.peers.clone(), self.blocking.clone())
    }

    /// Counters per core and in total. Every core's remote-wake counters are exact. The rest
    /// are as of the core's last park (exact while it sleeps, and once its loop has ended),
    /// except core 0's when read on the thread in `block_on` or while no thread is in one:
    /// exact then. So core 0's, read from another thread while one is in `block_on`, are as
    /// of its last park or the end of the last `block_on`, never behind an earlier reading.
    ///
    /// # Examples
    ///
    /// ```
    /// let rt = tickless::Builder::new().cores(2).build()?;
    /// let before = rt.stats().cores[0];
    /// rt.block_on(async { tickless::spawn(async {}).await.unwrap() });
    /// let spent = rt.stats().cores[0] - before; // what happened in between
    /// assert!(spent.polls >= 2); // the task's and the `block_on` future's
    /// # std::io::Result::Ok(())
    /// ```
    pub fn stats(&self) -> Stats {
        let cores = self
            .shared
            .iter()
            .enumerate()
            .map(|(i, s)| if i == 0 { self.core.stats() } else { s.stats() })
            .collect();
        Stats::from_cores(cores, self.blocking.counts())
    }

    /// The runtime's metrics, by tokio's names (`tokio::runtime::Runtime::metrics`): readable
    /// from any thread, exact to each core's last publish (see [`RuntimeMetrics`]).
    ///
    /// # Examples
    ///
    /// ```
    /// let rt = tickless::Builder::new().cores(1).build()?;
    /// let metrics = rt.metrics();
    /// rt.block_on(async {
    ///     for _ in 0..10 {
    ///         tickless::spawn(async {}).await.unwrap();
    ///     }
    /// });
    /// // Core 0 published when `block_on` returned.
    /// assert!(metrics.worker_poll_count(0) >= 10);
    /// assert_eq!(metrics.spawned_tasks_count(), 10);
    /// # std::io::Result::Ok(())
    /// ```
    pub fn metrics(&self) -> RuntimeMetrics {
        RuntimeMetrics::new(self.peers.clone(), self.blocking.clone())
    }

    /// Stops every core, drops every task's future on its own core and joins the threads,
    /// waiting at most `timeout` for the other cores (`Duration::MAX`: as long as it takes).
    ///
    /// # Errors
    ///
    /// The cores still inside a task when the timeout passed (a task that never yields; their
    /// threads are left running, detached), the cores that had died of a panic (see
    /// [A core that dies](Self#a-core-that-dies)), and the blocking jobs still running at the
    /// timeout (detached; blocking jobs not yet started are dropped, as tokio's are). A
    /// blocking job's closure that panics when dropped is caught there, never here.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let rt = tickless::Builder::new().cores(2).build()?;
    /// let forever = rt.handle(1).spawn(std::future::pending::<()>());
    /// rt.shutdown(Duration::from_secs(5))?;
    /// // The task's future was dropped on its core: its handle says it was cancelled.
    /// assert!(forever.join().unwrap_err().is_cancelled());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn shutdown(mut self, timeout: Duration) -> Result<(), ShutdownError> {
        self.stop(timeout)
    }

    fn stop(&mut self, timeout: Duration) -> Result<(), ShutdownError> {
        if std::mem::replace(&mut self.stopped, true) {
            return Ok(());
        }
        if let Some(index) = self.own_core_here() {
            for s in &self.shared[1..] {
                s.request_stop();
            }
            // Core 0's tasks may be dropped only in core 0's context, which this thread (a
            // task of core `index`) cannot enter.
            self.core.leak();
            panic!(
                "tickless: the runtime was dropped or shut down inside one of its own tasks (on \
                 core {index}): stopping it waits for every core, this one included, to finish \
                 what it runs. Drop it outside the runtime, after `block_on` returns, or on a \
                 thread of its own: `std::thread::spawn(move || drop(rt))`."
            );
        }
        for s in &self.shared[1..] {
            s.request_stop();
        }
        self.core.stop_stand_in();
        // Core 0's tasks are dropped here, in its own context (even when this runtime is
        // dropped inside another one).
        {
            let core = self.core.owned();
            let _entered = core.enter_for_shutdown();
            core.shutdown();
        }
        // No deadline if the timeout cannot be added to now: wait as long as it takes.
        let deadline = Instant::now().checked_add(timeout);
        while self.threads.iter().any(Option::is_some) {
            // Uncontended: `stop` has the runtime to itself.
            let done = lock(&self.done);
            let index = match deadline {
                Some(d) => done
                    .recv_timeout(d.saturating_duration_since(Instant::now()))
                    .ok(),
                None => done.recv().ok(),
            };
            drop(done);
            let Some(index) = index else { break };
            if let Some(t) = self.threads[index - 1].take() {
                // The thread has finished; a panic that killed its core was recorded by it.
                let _ = t.join();
            }
        }
        // Every task is dropped: close the blocking pool (its queued jobs are dropped) and wait
        // for the jobs that run, in what is left of the timeout.
        let blocking = self.blocking.close(deadline);
        let stuck: Vec<usize> = (1..self.shared.len())
            .filter(|&i| self.threads[i - 1].take().is_some())
            .collect();
        let panicked: Vec<CorePanic> = self
            .shared
            .iter()
            .enumerate()
            .filter_map(|(core, s)| s.death().map(|message| CorePanic { core, message }))
            .collect();
        let leaked_local = self.shared[0].local_leaked();
        if leaked_local > 0 {
            // Their listeners must not take connections that nobody will serve.
            self.shared[0].shut_leaked_listeners();
        }
        if stuck.is_empty() && panicked.is_empty() && blocking == 0 && leaked_local == 0 {
            Ok(())
        } else {
            Err(ShutdownError {
                stuck,
                panicked,
                blocking,
                leaked_local,
            })
        }
    }
}

impl Runtime {
    /// The index of the core of this runtime that runs on this thread now, if any.
    fn own_core_here(&self) -> Option<usize> {
        crate::context::with_current(|core| {
            self.shared
                .iter()
                .position(|s| Arc::ptr_eq(s, core.shared()))
        })
        .flatten()
    }
}

impl fmt::Debug for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Runtime")
            .field("cores", &self.shared.len())
            .finish_non_exhaustive()
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        if let Err(e) = self.stop(DROP_TIMEOUT) {
            // Drop cannot return the error; say it rather than hang or stay silent.
            eprintln!("tickless: dropping the runtime: {e}");
        }
        // Dropped on another thread, the building thread keeps its pinning: no thread may
        // change another's affinity safely (it may have exited, and its id been reused).
        if let Some(cpus) = self
            .restore_affinity
            .take()
            .filter(|_| self.core.is_building_thread())
        {
            if let Err(e) = tickless_io::internal::cpu::set_current_affinity(&cpus) {
                eprintln!("tickless: restoring this thread's CPU affinity {cpus:?}: {e}");
            }
        }
    }
}
