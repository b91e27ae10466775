//! The runtime: its builder, cores, handles, stats and shutdown.

use std::fmt;
use std::future::Future;
use std::io;
use std::marker::PhantomData;
use std::rc::Rc;
use std::sync::mpsc;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

use tickless_timer::{Config, RearmPolicy, Slack};

use crate::core::{with_current, Core, CoreConfig, CoreId, Shared, NO_RUNTIME};
use crate::stats::{CoreStats, Stats};
use crate::task::{spawn_remote, JoinHandle};

/// How long dropping a runtime waits for its cores to drop their tasks and exit.
const DROP_TIMEOUT: Duration = Duration::from_secs(10);

/// Configures a [`Runtime`].
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use tickless::{Builder, RearmPolicy};
///
/// let rt = Builder::new()
///     .cores(2)
///     .timer_policy(RearmPolicy::OnIdle)
///     .timer_resolution(Duration::from_micros(10))
///     .build()?;
/// rt.block_on(tickless::time::sleep(Duration::from_micros(50)));
/// # std::io::Result::Ok(())
/// ```
#[derive(Debug, Clone)]
pub struct Builder {
    /// Number of cores; `None`: one per CPU the process may run on.
    cores: Option<usize>,
    /// Pin each core's thread to its CPU.
    pin: bool,
    /// Per-core settings.
    core: CoreConfig,
}

impl Default for Builder {
    fn default() -> Self {
        Builder::new()
    }
}

impl Builder {
    /// The defaults: one core per CPU the process may run on, not pinned; `Lazy` re-arming,
    /// 1 µs timer resolution, no default slack, no idle spinning, real time.
    pub fn new() -> Builder {
        Builder {
            cores: None,
            pin: false,
            core: CoreConfig {
                timer: Config::default(),
                default_slack: Slack::None,
                paused: false,
                spin: Duration::ZERO,
                epoch: Instant::now(),
                always_wake: false,
            },
        }
    }

    /// The number of cores (executor threads, core 0 being the thread that calls
    /// [`Runtime::block_on`]). Default: every CPU the process may run on.
    ///
    /// # Panics
    ///
    /// If `n` is zero.
    pub fn cores(&mut self, n: usize) -> &mut Self {
        assert!(n > 0, "a runtime needs at least one core");
        self.cores = Some(n);
        self
    }

    /// Pins core `i`'s thread to the `i`-th CPU the process may run on (core 0: the thread
    /// that builds the runtime, which gets its old affinity back when the runtime is dropped).
    /// Default `false`. [`build`](Self::build) fails, naming the CPU, if pinning is impossible.
    pub fn pin(&mut self, pin: bool) -> &mut Self {
        self.pin = pin;
        self
    }

    /// When the timerfd is re-programmed; see [`RearmPolicy`]. Default `Lazy`.
    pub fn timer_policy(&mut self, policy: RearmPolicy) -> &mut Self {
        self.core.timer.policy = policy;
        self
    }

    /// The timer wheel's tick: deadlines round up to it. Default 1 µs.
    ///
    /// # Panics
    ///
    /// If `resolution` is zero.
    pub fn timer_resolution(&mut self, resolution: Duration) -> &mut Self {
        assert!(!resolution.is_zero(), "timer resolution must be non-zero");
        self.core.timer.resolution = resolution;
        self
    }

    /// How late a timer (sleep, timeout, interval tick) may fire when it does not say
    /// (default: none). Slack lets a core serve many timers with one wakeup.
    pub fn default_slack(&mut self, slack: Duration) -> &mut Self {
        self.core.default_slack = Slack::Bounded(slack);
        self
    }

    /// The idle governor: on going idle, poll I/O without blocking for up to `window` before
    /// parking; when the core's next timer is closer than `window`, spin until it instead of
    /// arming the timerfd and parking. Default zero (park at once). Spinning trades CPU for
    /// latency: worth it for cross-core ping-pong, not for idle servers.
    pub fn spin_before_park(&mut self, window: Duration) -> &mut Self {
        self.core.spin = window;
        self
    }

    /// For experiments only: wake a sleeping core on every hand-over from another thread,
    /// whatever its deadline, instead of only when the hand-over shortens the core's sleep. This
    /// is the baseline the sleep-word rule saves wakeups against (see the `nohz_kick` example).
    /// Default `false`.
    pub fn always_wake_remote(&mut self, always: bool) -> &mut Self {
        self.core.always_wake = always;
        self
    }

    /// Starts with time paused, as tokio's `start_paused`: the clock moves only through
    /// [`time::advance`](crate::time::advance), or by itself to the next timer when every task
    /// waits and no I/O is ready. Timers then fire in deadline order with no real sleeping.
    /// Each core has its own paused clock.
    pub fn start_paused(&mut self, paused: bool) -> &mut Self {
        self.core.paused = paused;
        self
    }

    /// Creates the runtime: core 0 on this thread, the others on threads of their own.
    ///
    /// # Errors
    ///
    /// Creating a core's epoll instance, timerfd or eventfd failed (typically `EMFILE`), a
    /// thread could not be spawned, or pinning was asked for and is impossible (the error names
    /// the CPU).
    pub fn build(&mut self) -> io::Result<Runtime> {
        let allowed = tickless_io::cpu::allowed_cpus()?;
        let n = self.cores.unwrap_or(allowed.len().max(1));
        let cpus: Vec<Option<usize>> = (0..n)
            .map(|i| self.pin.then(|| allowed.get(i).copied()).flatten())
            .collect();
        if self.pin {
            if let Some(i) = cpus.iter().position(Option::is_none) {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "cannot pin core {i}: the process may run on {} CPUs ({allowed:?})",
                        allowed.len()
                    ),
                ));
            }
        }
        let runtime = CoreId::new_runtime();
        let mut config = self.core;
        config.epoch = Instant::now();
        // Core 0 is the calling thread: pin it for the runtime's life, and give it its old
        // affinity back when the runtime is dropped.
        let restore_affinity = match cpus[0] {
            Some(cpu) => {
                let saved = allowed.clone();
                tickless_io::cpu::pin_current_thread(cpu)?;
                Some(saved)
            }
            None => None,
        };
        let core0 = Core::new(CoreId { runtime, index: 0 }, config)?;
        let mut shared = vec![core0.shared.clone()];
        let mut threads = Vec::new();
        let (done_tx, done_rx) = mpsc::channel();
        for (index, cpu) in cpus.iter().enumerate().skip(1) {
            let (tx, rx) = mpsc::sync_channel(1);
            let done = done_tx.clone();
            let cpu = *cpu;
            let thread = thread::Builder::new()
                .name(format!("tickless-core-{index}"))
                .spawn(move || core_thread(CoreId { runtime, index }, config, cpu, tx, done))?;
            let started = rx.recv().unwrap_or_else(|_| {
                Err(io::Error::other(format!(
                    "core {index}'s thread died while starting"
                )))
            });
            match started {
                Ok(s) => {
                    shared.push(s);
                    threads.push(Some(thread));
                }
                Err(e) => {
                    let partial = Runtime {
                        core: core0,
                        shared,
                        threads,
                        done: done_rx,
                        restore_affinity,
                        _not_send: PhantomData,
                    };
                    drop(partial);
                    return Err(e);
                }
            }
        }
        Ok(Runtime {
            core: core0,
            shared,
            threads,
            done: done_rx,
            restore_affinity,
            _not_send: PhantomData,
        })
    }
}

/// Tells the runtime a core's thread is gone, however it ends (a panic included).
struct Done(mpsc::Sender<usize>, usize);

impl Drop for Done {
    fn drop(&mut self) {
        let _ = self.0.send(self.1);
    }
}

/// The body of the thread of core `id.index > 0`.
fn core_thread(
    id: CoreId,
    config: CoreConfig,
    cpu: Option<usize>,
    started: mpsc::SyncSender<io::Result<Arc<Shared>>>,
    done: mpsc::Sender<usize>,
) {
    let _done = Done(done, id.index);
    let core = cpu
        .map_or(Ok(()), tickless_io::cpu::pin_current_thread)
        .and_then(|()| Core::new(id, config));
    let core = match core {
        Ok(core) => core,
        Err(e) => {
            let _ = started.send(Err(e));
            return;
        }
    };
    let _ = started.send(Ok(core.shared.clone()));
    let _entered = core.enter();
    core.run_until_stopped();
    core.shutdown();
}

/// A tickless runtime: one executor per core, each with its own run queue, timer wheel,
/// timerfd and epoll instance.
///
/// Core 0 runs on the thread that calls [`block_on`](Self::block_on), so a `Runtime` stays on
/// the thread that made it (it is `!Send`); the other cores run on threads of their own, and
/// are reached through [`handle`](Self::handle).
///
/// Dropping it stops every core, drops every task's future on its own core, closes the
/// runtime's file descriptors and joins the threads (see [`shutdown`](Self::shutdown));
/// awaiting a handle of a dropped task gives a cancelled [`JoinError`].
///
/// [`JoinError`]: crate::JoinError
///
/// ```compile_fail
/// fn assert_send<T: Send>() {}
/// assert_send::<tickless::Runtime>();
/// ```
pub struct Runtime {
    /// Core 0.
    core: Rc<Core>,
    /// Every core's shared half, by index.
    shared: Vec<Arc<Shared>>,
    /// Threads of cores 1.., `None` once joined or given up on.
    threads: Vec<Option<thread::JoinHandle<()>>>,
    /// Indexes of core threads that have ended.
    done: mpsc::Receiver<usize>,
    /// The building thread's affinity before core 0 was pinned to it, to restore on drop.
    restore_affinity: Option<Vec<usize>>,
    /// Core 0 is this thread.
    _not_send: PhantomData<*const ()>,
}

/// The error of [`Runtime::shutdown`]: cores still inside a task when the timeout passed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShutdownTimeout {
    /// Indexes of the cores that did not stop in time; their threads were left running.
    pub stuck: Vec<usize>,
}

impl fmt::Display for ShutdownTimeout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cores {:?} did not stop within the shutdown timeout (a task never yields?)",
            self.stuck
        )
    }
}

impl std::error::Error for ShutdownTimeout {}

impl Runtime {
    /// A runtime with the default [`Builder`] settings.
    ///
    /// # Errors
    ///
    /// As [`Builder::build`].
    pub fn new() -> io::Result<Runtime> {
        Builder::new().build()
    }

    /// Runs `future` to completion on this thread (core 0), running the core's other tasks, I/O
    /// and timers meanwhile. The other cores run all along, `block_on` or not.
    ///
    /// # Panics
    ///
    /// When called from inside a runtime (a task or another `block_on`): runtimes don't nest.
    pub fn block_on<F: Future>(&self, future: F) -> F::Output {
        let _entered = self.core.enter();
        self.core.block_on(future)
    }

    /// The number of cores.
    pub fn cores(&self) -> usize {
        self.shared.len()
    }

    /// A handle to core `core`, to spawn onto it from any thread.
    ///
    /// # Panics
    ///
    /// If there is no such core.
    pub fn handle(&self, core: usize) -> Handle {
        let shared = self.shared.get(core).unwrap_or_else(|| {
            panic!(
                "no core {core}: the runtime has {} cores",
                self.shared.len()
            )
        });
        Handle {
            shared: shared.clone(),
        }
    }

    /// Counters per core and in total. Core 0's are exact, and so are every core's remote-wake
    /// counters; the others' are as of each core's last idle transition (exact while it
    /// sleeps).
    pub fn stats(&self) -> Stats {
        let cores = self
            .shared
            .iter()
            .enumerate()
            .map(|(i, s)| {
                if i == 0 {
                    self.core.stats()
                } else {
                    // The hand-over's own counters are live atomics: no need to wait for the
                    // core to publish them.
                    let live = s.handover.stats();
                    CoreStats {
                        remote_wakes_sent: live.remote_wakes_sent,
                        remote_wakes_avoided: live.remote_wakes_avoided,
                        ..s.published.load()
                    }
                }
            })
            .collect();
        Stats::from_cores(cores)
    }

    /// Stops every core, drops every task's future on its own core and joins the threads,
    /// waiting at most `timeout` for the other cores.
    ///
    /// # Errors
    ///
    /// The cores still inside a task when the timeout passed (a task that never yields); their
    /// threads are left running, detached.
    pub fn shutdown(mut self, timeout: Duration) -> Result<(), ShutdownTimeout> {
        self.stop(timeout)
    }

    fn stop(&mut self, timeout: Duration) -> Result<(), ShutdownTimeout> {
        for s in &self.shared[1..] {
            s.request_stop();
        }
        // Core 0's tasks are dropped here, in its own context (even when this runtime is
        // dropped inside another one).
        {
            let _entered = self.core.enter_for_shutdown();
            self.core.shutdown();
        }
        let deadline = Instant::now() + timeout;
        while self.threads.iter().any(Option::is_some) {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.done.recv_timeout(left) {
                Ok(index) => {
                    if let Some(t) = self.threads[index - 1].take() {
                        // The thread has finished its work; a panic in it was its own core's.
                        let _ = t.join();
                    }
                }
                Err(_) => break,
            }
        }
        let stuck: Vec<usize> = (1..self.shared.len())
            .filter(|&i| self.threads[i - 1].take().is_some())
            .collect();
        if stuck.is_empty() {
            Ok(())
        } else {
            Err(ShutdownTimeout { stuck })
        }
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
        if let Some(cpus) = self.restore_affinity.take() {
            if let Err(e) = tickless_io::cpu::set_current_affinity(&cpus) {
                eprintln!("tickless: restoring this thread's CPU affinity {cpus:?}: {e}");
            }
        }
    }
}

/// A handle to one core of a runtime: `Send`, `Sync` and `Clone`, usable from any thread.
///
/// # Examples
///
/// ```
/// let rt = tickless::Builder::new().cores(2).build()?;
/// let on_core_1 = rt.handle(1).spawn(async { tickless::core_id() });
/// assert_eq!(on_core_1.join().unwrap(), 1);
/// # std::io::Result::Ok(())
/// ```
#[derive(Clone)]
pub struct Handle {
    /// The core's shared half.
    shared: Arc<Shared>,
}

impl Handle {
    /// The core's index.
    pub fn core(&self) -> usize {
        self.shared.id.index
    }

    /// Spawns a `Send` future onto the core. From another thread it goes through the core's
    /// inbox, which wakes the core only if it sleeps (once for a burst).
    pub fn spawn<F>(&self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        spawn_remote(&self.shared, future, None)
    }

    /// Spawns onto the core a future that need not be `Send`: `create` (which must be `Send`)
    /// runs on the core and makes the future there, so it may hold the core's I/O types, `Rc`s
    /// and the like. As tokio-util's `LocalPoolHandle::spawn_pinned`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::rc::Rc;
    ///
    /// let rt = tickless::Builder::new().cores(2).build()?;
    /// let task = rt.handle(1).spawn_pinned(|| async {
    ///     let local = Rc::new(tickless::core_id()); // not `Send`, lives on core 1
    ///     *local
    /// });
    /// assert_eq!(task.join().unwrap(), 1);
    /// # std::io::Result::Ok(())
    /// ```
    pub fn spawn_pinned<C, F>(&self, create: C) -> JoinHandle<F::Output>
    where
        C: FnOnce() -> F + Send + 'static,
        F: Future + 'static,
        F::Output: Send + 'static,
    {
        /// Aborts the inner task if the outer one is dropped first (aborted, or shut down).
        struct AbortOnDrop<T>(Option<JoinHandle<T>>);
        impl<T> Drop for AbortOnDrop<T> {
            fn drop(&mut self) {
                if let Some(inner) = &self.0 {
                    inner.abort();
                }
            }
        }
        spawn_remote(
            &self.shared,
            async move {
                let mut inner = AbortOnDrop(Some(crate::spawn_local(create())));
                let out = inner.0.as_mut().expect("set above").await;
                inner.0 = None;
                match out {
                    Ok(v) => v,
                    // Re-raise the inner task's panic as the outer task's own.
                    Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                    Err(_) => std::future::pending().await,
                }
            },
            None,
        )
    }

    /// Whether the core has published that it sleeps (for monitoring and tests).
    pub fn is_parked(&self) -> bool {
        self.shared.is_parked()
    }

    /// Spawns a `Send` future that becomes runnable on the core at `deadline`. This is a timer
    /// handed to the core: it wakes the core only if the core sleeps past `deadline`.
    pub fn spawn_at<F>(&self, deadline: crate::time::Instant, future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let ns = self.shared.ns(deadline.into_std());
        spawn_remote(&self.shared, future, Some(ns))
    }
}

impl fmt::Debug for Handle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handle")
            .field("core", &self.core())
            .finish()
    }
}

/// The index of the core running the caller.
///
/// # Panics
///
/// Outside a tickless runtime.
pub fn core_id() -> usize {
    with_current(|c| c.id().index).expect(NO_RUNTIME)
}

/// Wakes a parked thread.
struct ThreadWaker(Thread);

impl Wake for ThreadWaker {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

/// Blocks the calling thread until `future` completes, parking between polls.
pub(crate) fn park_on<F: Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    let waker = Waker::from(Arc::new(ThreadWaker(thread::current())));
    let mut cx = Context::from_waker(&waker);
    loop {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
        thread::park();
    }
}
