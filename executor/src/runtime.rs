//! The runtime: its builder, `block_on`, stats and shutdown.

use std::fmt;
use std::future::Future;
use std::io;
use std::marker::PhantomData;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};
use std::time::Duration;

use tickless_timer::{Config, RearmPolicy, Slack};

use crate::core::{with_current, Core, CoreId};
use crate::stats::Stats;

/// Configures a [`Runtime`].
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use tickless::{Builder, RearmPolicy};
///
/// let rt = Builder::new()
///     .timer_policy(RearmPolicy::OnIdle)
///     .timer_resolution(Duration::from_micros(10))
///     .build()?;
/// rt.block_on(tickless::time::sleep(Duration::from_micros(50)));
/// # std::io::Result::Ok(())
/// ```
#[derive(Debug, Clone)]
pub struct Builder {
    /// Timer wheel configuration (policy, resolution).
    timer: Config,
    /// Slack of `sleep` and `interval` when none is given.
    default_slack: Slack,
    /// Start with time paused.
    start_paused: bool,
}

impl Default for Builder {
    fn default() -> Self {
        Builder::new()
    }
}

impl Builder {
    /// The defaults: `Lazy` re-arming, 1 µs resolution, no default slack, real time.
    pub fn new() -> Builder {
        Builder {
            timer: Config::default(),
            default_slack: Slack::None,
            start_paused: false,
        }
    }

    /// When the timerfd is re-programmed; see [`RearmPolicy`]. Default `Lazy`.
    pub fn timer_policy(&mut self, policy: RearmPolicy) -> &mut Self {
        self.timer.policy = policy;
        self
    }

    /// The timer wheel's tick: deadlines round up to it. Default 1 µs.
    ///
    /// # Panics
    ///
    /// If `resolution` is zero.
    pub fn timer_resolution(&mut self, resolution: Duration) -> &mut Self {
        assert!(!resolution.is_zero(), "timer resolution must be non-zero");
        self.timer.resolution = resolution;
        self
    }

    /// How late a `sleep` or `interval` tick may fire when it does not say (default: none).
    /// Slack lets the core serve many timers with one wakeup.
    pub fn default_slack(&mut self, slack: Duration) -> &mut Self {
        self.default_slack = Slack::Bounded(slack);
        self
    }

    /// Starts with time paused, as tokio's `start_paused`: the clock moves only through
    /// [`time::advance`](crate::time::advance), or by itself to the next timer when every task
    /// waits and no I/O is ready. Timers then fire in deadline order with no real sleeping.
    pub fn start_paused(&mut self, paused: bool) -> &mut Self {
        self.start_paused = paused;
        self
    }

    /// Creates the runtime.
    ///
    /// # Errors
    ///
    /// Creating the core's epoll instance, timerfd or eventfd failed (typically `EMFILE`).
    pub fn build(&mut self) -> io::Result<Runtime> {
        let id = CoreId {
            runtime: CoreId::new_runtime(),
            index: 0,
        };
        let core = Core::new(id, self.timer, self.default_slack, self.start_paused)?;
        Ok(Runtime {
            core,
            _not_send: PhantomData,
        })
    }
}

/// A tickless runtime.
///
/// Core 0 runs on the thread that calls [`block_on`](Self::block_on), so a `Runtime` stays on
/// the thread that made it (it is `!Send`).
///
/// Dropping it drops every task's future, on its own core, and closes the runtime's file
/// descriptors; awaiting a handle of a dropped task gives a cancelled [`JoinError`].
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
    /// Core 0 is this thread.
    _not_send: PhantomData<*const ()>,
}

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
    /// and timers meanwhile.
    ///
    /// # Panics
    ///
    /// When called from inside a runtime (a task or another `block_on`): runtimes don't nest.
    pub fn block_on<F: Future>(&self, future: F) -> F::Output {
        let _entered = self.core.enter();
        self.core.block_on(future)
    }

    /// Counters per core and in total.
    pub fn stats(&self) -> Stats {
        Stats::from_cores(vec![self.core.stats()])
    }
}

impl fmt::Debug for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Runtime")
            .field("cores", &1)
            .finish_non_exhaustive()
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        // Drop futures inside the core's context: their destructors cancel timers and
        // deregister I/O there. If this thread is already in a runtime (dropped from a task),
        // drop them without entering.
        if with_current(|_| ()).is_some() {
            self.core.shutdown();
        } else {
            let _entered = self.core.enter();
            self.core.shutdown();
        }
    }
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
