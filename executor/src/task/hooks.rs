//! The task hooks of `Builder::on_task_spawn`, `on_task_terminate`, `on_before_task_poll` and
//! `on_after_task_poll`, as tokio's, and what they are given ([`TaskMeta`]).
//!
//! A hook is user code the runtime calls: each call is made under `catch_unwind`, and a panic
//! of a hook costs only that call (it is counted as a caught wake, so it shows in the core's
//! `wake_panics`).

use std::fmt;
use std::marker::PhantomData;
use std::panic::Location;
use std::sync::Arc;
use std::time::Duration;

use crate::catch::call_caught;
use crate::stall::StallReport;
use crate::task::id::{Id, Meta};

/// What a task hook is told of the task: its id and where it was spawned, as tokio's
/// `tokio::runtime::TaskMeta`.
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
///     .on_task_spawn(move |meta| {
///         assert_eq!(meta.spawned_at().file(), file!()); // the `spawn` call below
///         count.fetch_add(1, Ordering::Relaxed);
///     })
///     .build()?;
/// rt.block_on(async { tickless::spawn(async {}).await.unwrap() });
/// assert_eq!(spawned.load(Ordering::Relaxed), 1);
/// # std::io::Result::Ok(())
/// ```
#[derive(Clone, Copy)]
pub struct TaskMeta<'a> {
    /// The task's id and spawn location.
    meta: Meta,
    /// Ties the value to the hook's call, as tokio's does (it may borrow more some day).
    _call: PhantomData<&'a ()>,
}

impl<'a> TaskMeta<'a> {
    /// The task's.
    pub(crate) fn new(meta: Meta) -> TaskMeta<'a> {
        TaskMeta {
            meta,
            _call: PhantomData,
        }
    }

    /// The task's id.
    pub fn id(&self) -> Id {
        self.meta.id
    }

    /// Where the task was spawned: the call to `spawn`, `spawn_local`, `Handle::spawn`,
    /// `JoinSet::spawn`, `spawn_blocking` or the like (they are `#[track_caller]`).
    pub fn spawned_at(&self) -> &'static Location<'static> {
        self.meta.at
    }
}

impl fmt::Debug for TaskMeta<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskMeta")
            .field("id", &self.meta.id)
            .field("spawned_at", &self.meta.at)
            .finish()
    }
}

/// A task hook.
pub(crate) type TaskHook = Arc<dyn Fn(&TaskMeta<'_>) + Send + Sync + 'static>;

/// The task hooks a runtime was built with (`None`: not set).
#[derive(Clone, Default)]
pub(crate) struct Hooks {
    /// `Builder::on_task_spawn`.
    pub(crate) spawn: Option<TaskHook>,
    /// `Builder::on_task_terminate`.
    pub(crate) terminate: Option<TaskHook>,
    /// `Builder::on_before_task_poll`.
    pub(crate) before_poll: Option<TaskHook>,
    /// `Builder::on_after_task_poll`.
    pub(crate) after_poll: Option<TaskHook>,
}

impl Hooks {
    /// Whether any task hook is set (a runtime without one gives its tasks no `Hooks`).
    pub(crate) fn any(&self) -> bool {
        self.spawn.is_some()
            || self.terminate.is_some()
            || self.before_poll.is_some()
            || self.after_poll.is_some()
    }
}

impl fmt::Debug for Hooks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hooks")
            .field("on_task_spawn", &self.spawn.is_some())
            .field("on_task_terminate", &self.terminate.is_some())
            .field("on_before_task_poll", &self.before_poll.is_some())
            .field("on_after_task_poll", &self.after_poll.is_some())
            .finish()
    }
}

/// Calls `hook` (if set) for `task`, catching a panic: counted as a caught wake on the current
/// core, and its payload dropped under a guard of its own.
#[inline]
pub(crate) fn call(hook: &Option<TaskHook>, task: Meta) {
    if let Some(hook) = hook {
        call_hook(hook, task);
    }
}

/// [`call`]'s slow path, out of line.
#[inline(never)]
fn call_hook(hook: &TaskHook, task: Meta) {
    call_caught(|| hook(&TaskMeta::new(task)));
}

/// The stall detector's hook.
pub(crate) type StallHook = Arc<dyn Fn(&StallReport) + Send + Sync + 'static>;

/// The stall detector's default threshold, as seastar's `blocked-reactor-notify-ms`.
pub const DEFAULT_STALL_THRESHOLD: Duration = Duration::from_millis(25);
/// The smallest stall threshold [`Builder::build`](crate::Builder::build) accepts.
pub const MIN_STALL_THRESHOLD: Duration = Duration::from_millis(1);

/// What a runtime tells the user's code about its tasks.
#[derive(Clone)]
pub(crate) struct Observers {
    /// The task hooks.
    pub(crate) hooks: Hooks,
    /// The stall detector's threshold; `None`: off.
    pub(crate) stall_threshold: Option<Duration>,
    /// Where stalls are reported; `None`: one line to stderr.
    pub(crate) on_stall: Option<StallHook>,
}

impl Default for Observers {
    fn default() -> Self {
        Observers {
            hooks: Hooks::default(),
            stall_threshold: Some(DEFAULT_STALL_THRESHOLD),
            on_stall: None,
        }
    }
}

impl fmt::Debug for Observers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Observers")
            .field("hooks", &self.hooks)
            .field("stall_threshold", &self.stall_threshold)
            .field("on_stall", &self.on_stall.is_some())
            .finish()
    }
}

impl Observers {
    /// The task hooks the cores give their tasks: `None` when none is set, so that a task
    /// then checks one word per poll and calls nothing.
    pub(crate) fn task_hooks(&self) -> Option<Arc<Hooks>> {
        self.hooks.any().then(|| Arc::new(self.hooks.clone()))
    }

    /// The stall hook: the one set, or one that writes the report's line to stderr.
    pub(crate) fn stall_hook(&self) -> StallHook {
        self.on_stall
            .clone()
            .unwrap_or_else(|| Arc::new(|report: &StallReport| eprintln!("{report}")))
    }
}
