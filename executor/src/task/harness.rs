//! A task's future as the executor runs it: panics caught, aborts honoured, the result handed
//! to the join slot, an entry in its core's live-task set from its first poll until it is
//! dropped, and its count taken off its home core's load when it is dropped (`worker::load`'s
//! books). It keeps the task's id and spawn location ([`Meta`]): the core publishes them
//! while the task is polled (`task::id`, the stall detector), and the task hooks are given them.
//!
//! Every place here that runs user code (the poll, the future's destructor, the output's
//! destructor when nobody will take it, the waker of whoever awaits the handle) runs it under
//! `catch_unwind`: a bad task costs its own result, never its core or the process.

use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe, Location};
use std::pin::Pin;
use std::ptr::NonNull;
use std::sync::Arc;
use std::task::{Context, Poll};

use crate::catch::drop_caught;
use crate::context::with_current;
use crate::task::hooks::{self, Hooks};
use crate::task::id::Meta;
use crate::task::join_error::JoinError;
use crate::task::join_slot::JoinSlot;
use crate::worker::id::CoreKey;
use crate::worker::registry;
use crate::worker::shared::{Shared, TaskMeta};

/// Where a task leaves its result for its handle.
pub(crate) type ResultSlot<T> = Arc<JoinSlot<Result<T, JoinError>>>;

pin_project_lite::pin_project! {
    /// A spawned future, wrapped.
    pub(crate) struct TaskFuture<F: Future> {
        // `None` once it completed (or panicked): dropped right then, under a panic guard.
        #[pin]
        future: Option<F>,
        // Shared with the `JoinHandle`.
        slot: ResultSlot<F::Output>,
        // The core whose live-task set holds it, and its key there, from its first poll on
        // (moved at its first poll on another core).
        tracked: Option<(CoreKey, usize)>,
        // Its id and spawn location.
        meta: Meta,
        // The metadata of the task that runs it (set as the task is created): its home, whose
        // load counts it.
        task: Option<InTask>,
        // The runtime's task hooks, if any is set.
        hooks: Option<Arc<Hooks>>,
    }

    impl<F: Future> PinnedDrop for TaskFuture<F> {
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            // Unfinished (aborted, or its core shut down): the handle learns it was cancelled,
            // or that the future's destructor panicked.
            let result = match drop_future(this.future) {
                Ok(()) => Err(JoinError::cancelled()),
                Err(e) => Err(e),
            };
            complete(this.slot, result);
            if let Some(hooks) = this.hooks {
                hooks::call(&hooks.terminate, *this.meta);
            }
            leave_books(*this.tracked, this.task.as_ref().map(InTask::meta));
        }
    }
}

/// A reference to the metadata of the task a [`TaskFuture`] runs in, which async-task keeps in
/// the task's header.
#[derive(Clone, Copy)]
struct InTask(NonNull<TaskMeta>);

// SAFETY: it is used as a `&TaskMeta` (see `meta`), and `TaskMeta` is `Sync`: sending or sharing
// it is sending or sharing that reference.
unsafe impl Send for InTask {}
// SAFETY: as for `Send`.
unsafe impl Sync for InTask {}

impl InTask {
    /// The task's metadata.
    fn meta(&self) -> &TaskMeta {
        // SAFETY: the pointer comes from the reference async-task hands the future's
        // constructor (`TaskFuture::in_task`): the metadata is in the task's header, pinned
        // there before the future is made, and dropped only after the future is (async-task's
        // `spawn_unchecked` lets a future borrow it for this reason). The reference is held by
        // the future, so it is used only while the future lives. No `&mut` to it is ever made.
        unsafe { self.0.as_ref() }
    }
}

impl<F: Future> TaskFuture<F> {
    /// `future`, spawned at `at` onto the core of `shared` (whose hooks it takes, calling the
    /// spawn hook now), wrapped for spawning; and the slot its handle reads.
    pub(crate) fn new(
        future: F,
        at: &'static Location<'static>,
        shared: &Shared,
    ) -> (TaskFuture<F>, ResultSlot<F::Output>) {
        let meta = Meta::new(at);
        let slot = Arc::new(JoinSlot::for_task(meta.id));
        let hooks = shared.watch.hooks.clone();
        if let Some(hooks) = &hooks {
            hooks::call(&hooks.spawn, meta);
        }
        let wrapped = TaskFuture {
            future: Some(future),
            slot: slot.clone(),
            tracked: None,
            meta,
            task: None,
            hooks,
        };
        (wrapped, slot)
    }

    /// The future, in the task whose metadata is `meta` (async-task's constructor hands it
    /// over): when dropped, it takes its count off its home's load then.
    pub(crate) fn in_task(mut self, meta: &TaskMeta) -> TaskFuture<F> {
        self.task = Some(InTask(NonNull::from(meta)));
        self
    }
}

impl<F: Future> Future for TaskFuture<F> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.project();
        let meta = *this.meta;
        let tracked = this.tracked;
        with_current(|core| {
            match *tracked {
                Some((home, _)) if home == core.key() => {}
                // First poll on this core (the first of all, or after a move): register here so
                // that this core's shutdown reaches it, and leave the old core's set.
                moved => {
                    if let Some((old, key)) = moved {
                        core.orphan_on(old, key);
                    }
                    *tracked = Some((core.key(), core.track_task(cx.waker(), moved.is_some())));
                }
            }
            core.shared().watch.task_starts(&meta);
        });
        // The id stays published after the poll: it is read only while a poll runs.
        match this.hooks.as_deref() {
            // No task hook: one test a poll.
            None => poll_task(this.future, this.slot, cx),
            Some(hooks) => poll_hooked(hooks, meta, this.future, this.slot, cx),
        }
    }
}

/// [`poll_task`] between the poll hooks, out of line: a runtime with no task hook never gets
/// here.
#[inline(never)]
fn poll_hooked<F: Future>(
    hooks: &Hooks,
    meta: Meta,
    future: Pin<&mut Option<F>>,
    slot: &ResultSlot<F::Output>,
    cx: &mut Context<'_>,
) -> Poll<()> {
    hooks::call(&hooks.before_poll, meta);
    let poll = poll_task(future, slot, cx);
    hooks::call(&hooks.after_poll, meta);
    poll
}

/// A task's future is being dropped: takes it out of the live-task set of the core `tracked`
/// names, if any (here, if this thread runs that core; through the core's orphans otherwise: a
/// moved task dropped on another core, or a `Send` task dropped by a thread of no core), and its
/// count off its home's load (its own word if this thread runs it, the remote one otherwise).
fn leave_books(tracked: Option<(CoreKey, usize)>, task: Option<&TaskMeta>) {
    let done = with_current(|here| {
        if let Some(meta) = task {
            if meta.is_home(here.key()) {
                here.shared().load.remove();
            } else if let Some(home) = meta.try_home_shared() {
                home.load.remove_remote();
            }
        }
        match tracked {
            Some((core, key)) if here.key() == core => here.untrack_task(key),
            Some((core, key)) => here.orphan_on(core, key),
            None => {}
        }
    });
    if done.is_some() {
        return;
    }
    if let Some(home) = task.and_then(TaskMeta::try_home_shared) {
        home.load.remove_remote();
    }
    if let Some((core, key)) = tracked {
        if let Some(shared) = registry::find(core.id()) {
            shared.orphan(key);
        }
    }
}

/// Polls the task's future (if it is still there and not aborted), catching a panic; hands the
/// result to the slot when it completes. Inlined into the task's poll: a call here costs the
/// task's every poll a frame.
#[inline(always)]
fn poll_task<F: Future>(
    mut future: Pin<&mut Option<F>>,
    slot: &ResultSlot<F::Output>,
    cx: &mut Context<'_>,
) -> Poll<()> {
    if slot.is_aborted() {
        // Returning drops this wrapper, here on its core; its drop reports the cancel.
        return Poll::Ready(());
    }
    let Some(polled) = future.as_mut().as_pin_mut() else {
        // Finished already; a stray poll after completion.
        return Poll::Ready(());
    };
    let result = match catch_unwind(AssertUnwindSafe(|| polled.poll(cx))) {
        Ok(Poll::Pending) => return Poll::Pending,
        Ok(Poll::Ready(out)) => match drop_future(future) {
            // The future is dropped as soon as it is done, as tokio does.
            Ok(()) => Ok(out),
            Err(e) => {
                drop_caught(out);
                Err(e)
            }
        },
        Err(payload) => {
            with_current(|core| core.count_task_panic());
            // The panicked future is dropped too; a second panic there is only counted.
            let _second = drop_future(future);
            Err(JoinError::panic(payload))
        }
    };
    complete(slot, result);
    Poll::Ready(())
}

/// Drops the future in place, catching a panic of its destructor (counted on the core) as the
/// task's error.
fn drop_future<F>(future: Pin<&mut Option<F>>) -> Result<(), JoinError> {
    let mut future = future;
    catch_unwind(AssertUnwindSafe(|| future.set(None))).map_err(|payload| {
        with_current(|core| core.count_drop_panic());
        JoinError::panic(payload)
    })
}

/// Hands `result` to the slot (waking the waiter, under a panic guard), and drops it here if
/// nobody will take it.
fn complete<T>(slot: &ResultSlot<T>, result: Result<T, JoinError>) {
    match catch_unwind(AssertUnwindSafe(|| slot.complete(result))) {
        Ok(Some(unclaimed)) => drop_caught(unclaimed),
        Ok(None) => {}
        // The waiter's waker panicked.
        Err(_) => {
            with_current(|core| core.count_wake_panic());
        }
    }
}
