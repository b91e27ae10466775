//! Spawning: on the current core (`spawn`, `spawn_local`) and onto a core from any thread
//! (`Handle::spawn`, `Handle::spawn_at`).

use std::future::Future;
use std::panic::Location;
use std::sync::Arc;

use tickless_timer::internal::Op;
use tickless_timer::Slack;

use crate::blocking::BlockingTask;
use crate::context::{with_current, Lent, NO_RUNTIME};
use crate::task::bound::Bound;
use crate::task::deferred::DeferredStart;
use crate::task::harness::{ResultSlot, TaskFuture};
use crate::task::join_handle::JoinHandle;
use crate::worker::harvest::Harvesting;
use crate::worker::load::move_tasks;
use crate::worker::shared::{Due, Peers, Runnable, Shared, TaskMeta};
use crate::worker::Core;

/// The schedule function of every task: the local queue when woken on its core's thread (the
/// core its header names), that core's inbox otherwise. A plain function, so that it captures
/// nothing (see [`Runnable`]).
pub fn schedule(runnable: Runnable) {
    let mut runnable = Some(runnable);
    with_current(|core| {
        let task = runnable.as_ref().expect("not taken yet");
        if task.metadata().is_home(core.key()) {
            core.schedule_local(runnable.take().expect("taken once"));
        }
    });
    if let Some(runnable) = runnable {
        schedule_away(runnable);
    }
}

/// A wake on another thread than the task's core's: through that core's inbox, unless that
/// core runs nothing now (core 0 while no thread is in `block_on`) or has stopped, and the
/// task may move: then it moves to the waking core, if that is a core of its runtime that
/// runs, or to another that does (see `TaskMeta`'s protocol: the waker holds the `Runnable`).
/// Not from a core whose clock is paused (paused time jumps per core, as `Core::evacuate`
/// says): its task waits there for the next `block_on`.
#[inline(never)]
fn schedule_away(runnable: Runnable) {
    let meta = runnable.metadata();
    // Cloned before the hand-over: the task may run and be freed on its core before it returns.
    let home = Arc::clone(meta.home_shared());
    if !meta.movable() || home.keeps_work_while_paused() {
        return home.schedule_remote(runnable);
    }
    // Woken by a harvest of its core's I/O (that core did not come back to its loop for a
    // while: `worker::harvest`), it moves to the harvesting core, as below. Otherwise to its
    // core if a thread runs it, decided under the inbox's lock against core 0's evacuation
    // (see `Shared::schedule_if_driven`); else it moves.
    // A core that steps back (crowded CPUs: `runtime::crowding`) hands its tasks on the same way.
    let runnable = if Harvesting::is_from(home.id.index) || home.is_yielded() {
        runnable
    } else {
        let Err(runnable) = home.schedule_if_driven(runnable) else {
            return;
        };
        runnable
    };
    // The waking core, if it is one of the task's runtime and runs.
    let mut runnable = Some(runnable);
    with_current(|core| {
        let meta = runnable.as_ref().expect("not taken yet").metadata();
        if Arc::ptr_eq(core.peers(), meta.peers()) && core.shared().takes_placed_work() {
            // Its count comes here with it (this thread runs the new home, not the old).
            move_tasks(
                &meta.home_shared().load,
                false,
                &core.shared().load,
                true,
                1,
            );
            meta.set_home(core.key());
            core.schedule_local(runnable.take().expect("taken once"));
        }
    });
    let Some(runnable) = runnable else { return };
    let meta = runnable.metadata();
    let home = meta.home_shared();
    let target = Arc::clone(meta.peers().driven_other(home.id.index).unwrap_or(home));
    // This thread runs neither (the old home is not the current core, and the current core,
    // if any, does not take work, so it is not the target).
    move_tasks(&home.load, false, &target.load, false, 1);
    meta.set_home(target.id.key());
    target.schedule_remote(runnable);
}

/// Spawns a `Send` future on `core`, from the thread running it, and queues it there.
///
/// A `Send` task may be run by whichever thread runs the core (core 0's changes between
/// `block_on` calls), and moves to another core when this one cannot run it (see
/// `Builder::steal_after`).
pub(crate) fn spawn_on<F, T>(
    core: &Core,
    future: F,
    at: &'static Location<'static>,
) -> JoinHandle<T>
where
    F: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let (wrapped, slot) = TaskFuture::new(future, at, core.shared());
    let (runnable, task) = async_task::Builder::new()
        .metadata(TaskMeta::new(core.key(), core.peers().clone(), true))
        .spawn(move |meta| wrapped.in_task(meta), schedule);
    queue_own(core, runnable, task, slot)
}

/// Spawns a `!Send` future on `core`, from the thread running it, and queues it there.
///
/// On cores 1 and up, an async-task local task: it checks that its future is only polled and
/// dropped on the core's thread, which never changes. On core 0, whose thread may change
/// between `block_on` calls, the future is [`Bound`] to this thread instead (see
/// `task::bound`).
pub(crate) fn spawn_local_on<F, T>(
    core: &Core,
    future: F,
    at: &'static Location<'static>,
) -> JoinHandle<T>
where
    F: Future<Output = T> + 'static,
    T: 'static,
{
    let builder =
        async_task::Builder::new().metadata(TaskMeta::new(core.key(), core.peers().clone(), false));
    if core.id().index != 0 {
        let (wrapped, slot) = TaskFuture::new(future, at, core.shared());
        let (runnable, task) = builder.spawn_local(move |meta| wrapped.in_task(meta), schedule);
        return queue_own(core, runnable, task, slot);
    }
    let bound = Bound::new(future, core.shared().clone());
    let (wrapped, slot) = TaskFuture::new(bound, at, core.shared());
    // SAFETY: async-task asks that the runnable of a `!Send` future be used and dropped on
    // the thread that spawned it. The future is a `TaskFuture` of a `Bound`: it reaches the
    // user's future only through `Bound`, which is polled on its spawning thread only (core 0
    // polls tasks only in `block_on`, which never moves core 0 to another thread while a
    // bound task lives; debug builds assert it at every poll) and, dropped on another thread,
    // leaks the future with its box rather than drop it. The
    // rest of the wrapper is thread-safe: the join slot is an `Arc` of a locked slot, to which
    // a drop elsewhere writes only a cancellation (the output is written on the spawning
    // thread, when the future completes, and the future is dropped right then), and the
    // live-task key is given back through the core the dropping thread runs (and its count
    // through its home's load, whose words are atomic). The schedule
    // function is a plain `fn` (`Send`, `Sync`, `'static`) and the future is `'static`.
    let (runnable, task) =
        unsafe { builder.spawn_unchecked(move |meta| wrapped.in_task(meta), schedule) };
    queue_own(core, runnable, task, slot)
}

/// Queues a task just spawned on `core` by its own thread, and gives its handle.
fn queue_own<T>(
    core: &Core,
    runnable: Runnable,
    task: async_task::Task<(), TaskMeta>,
    slot: ResultSlot<T>,
) -> JoinHandle<T> {
    task.detach();
    core.shared().load.add_own();
    let waker = runnable.waker();
    let movable = runnable.metadata().movable();
    core.schedule_local(runnable);
    JoinHandle::new(slot, waker, core.id(), movable, None)
}

/// Spawns a `Send` future onto the core of `shared`, one of `peers`, from any thread: it runs
/// there at once, or from `deadline` (ns on the runtime's clock) on, through the core's timer
/// hand-over. Its first run is on that core, whether or not a thread runs it now (a task spawned
/// onto core 0 outside `block_on` waits for the next one); `movable`: from then on, it may
/// move (see `Builder::steal_after`).
#[track_caller]
pub fn spawn_remote<F, T>(
    peers: &Arc<Peers>,
    shared: &Arc<Shared>,
    future: F,
    deadline: Option<u64>,
    movable: bool,
) -> JoinHandle<T>
where
    F: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    spawn_remote_at(peers, shared, future, deadline, movable, Location::caller())
}

/// [`spawn_remote`], spawned at `at`.
pub(crate) fn spawn_remote_at<F, T>(
    peers: &Arc<Peers>,
    shared: &Arc<Shared>,
    future: F,
    deadline: Option<u64>,
    movable: bool,
    at: &'static Location<'static>,
) -> JoinHandle<T>
where
    F: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let (wrapped, slot) = TaskFuture::new(future, at, shared);
    let (runnable, task) = async_task::Builder::new()
        .metadata(TaskMeta::new(shared.id.key(), peers.clone(), movable))
        .spawn(move |meta| wrapped.in_task(meta), schedule);
    task.detach();
    shared.load.add_remote();
    let waker = runnable.waker();
    let deferred = match deadline {
        None => {
            // Straight to the core named, not through `schedule`, which would move the task
            // if that core runs nothing now.
            shared.schedule_remote(runnable);
            None
        }
        Some(deadline) => {
            let deferred = Arc::new(DeferredStart::new());
            shared.push(Op::Insert {
                deadline,
                slack: Slack::None,
                value: Due::ScheduleAt(runnable, deferred.clone()),
            });
            Some((deferred, shared.clone()))
        }
    };
    // Queued where a thread runs: `evacuate` moves it off core 0 when that thread leaves.
    let movable = movable && deadline.is_none() && shared.takes_placed_work();
    JoinHandle::new(slot, waker, shared.id, movable, deferred)
}

/// Spawns a `Send` future that placement sent from `core` (this thread's) to `target`: queued
/// there if a thread still runs it, decided under its inbox's lock (core 0's `block_on` may have
/// returned since placement looked: see `Shared::schedule_if_driven`), else here, its count
/// moved back with it.
fn spawn_placed<F, T>(
    core: &Core,
    target: &Arc<Shared>,
    future: F,
    at: &'static Location<'static>,
) -> JoinHandle<T>
where
    F: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let (wrapped, slot) = TaskFuture::new(future, at, target);
    let (runnable, task) = async_task::Builder::new()
        .metadata(TaskMeta::new(target.id.key(), core.peers().clone(), true))
        .spawn(move |meta| wrapped.in_task(meta), schedule);
    task.detach();
    target.load.add_remote();
    let waker = runnable.waker();
    let Err(runnable) = target.schedule_if_driven(runnable) else {
        return JoinHandle::new(slot, waker, target.id, true, None);
    };
    move_tasks(&target.load, false, &core.shared().load, true, 1);
    runnable.metadata().set_home(core.key());
    core.schedule_local(runnable);
    JoinHandle::new(slot, waker, core.id(), true, None)
}

/// Spawns a `!Send` future on the current core.
///
/// The task runs on this core only; its output is reached through the [`JoinHandle`].
///
/// # Panics
///
/// Outside a tickless runtime.
///
/// # Examples
///
/// ```
/// use std::rc::Rc;
///
/// let rt = tickless::Runtime::new()?;
/// let out = rt.block_on(async {
///     let local = Rc::new(21); // not `Send`
///     tickless::spawn_local(async move { *local * 2 }).await
/// });
/// assert_eq!(out.unwrap(), 42);
/// # std::io::Result::Ok(())
/// ```
#[track_caller]
pub fn spawn_local<F>(future: F) -> JoinHandle<F::Output>
where
    F: Future + 'static,
    F::Output: 'static,
{
    let at = Location::caller();
    with_current(|core| spawn_local_on(core, future, at)).expect(NO_RUNTIME)
}

/// Spawns a `Send` future, as `tokio::spawn` does: on the current core, or, when the task
/// spawning it has just accepted a connection, possibly on another core.
///
/// Where a task first runs is decided here; after that it moves only when its core cannot run
/// it (stuck, preempted or overloaded past
/// [`Builder::steal_after`](crate::Builder::steal_after), or core 0 outside `block_on`). The rule
/// ([`Placement::Spread`](crate::runtime::Placement::Spread), the default): a spawn that
/// follows an accept in the same poll of the spawning task (the usual accept loop handing a
/// connection to its task) goes to the less loaded of this core and one other, taken in turn,
/// counting the tasks spawned onto each and not yet finished; every other spawn (a connection
/// spawning a writer, a task spawning a helper) stays on this core, where the streams it may
/// capture are registered. The accepted stream is registered with no core yet: it registers
/// with the core that polls it, the connection task's (and moves there if the accept loop used
/// it first). So a server written the tokio way (one
/// listener, one accept loop, `spawn` per connection) uses every core. A placed spawn costs
/// what a [`Handle::spawn`](crate::Handle::spawn) costs: one push into the other core's inbox,
/// and an eventfd write only if that core sleeps. `Builder::placement(Placement::Local)` keeps
/// every task on its spawning core; [`spawn_local`] always does.
///
/// Inside a [`spawn_blocking`] closure (no core runs on its thread) the task goes to the core
/// that spawned the blocking job, as [`Handle::current().spawn`](crate::Handle::spawn) would:
/// tokio's `spawn` from a blocking thread spawns onto its runtime the same way.
///
/// # Panics
///
/// Outside a tickless runtime (and outside a `spawn_blocking` closure of one).
///
/// # Examples
///
/// ```
/// let rt = tickless::Runtime::new()?;
/// let out = rt.block_on(async {
///     let task = tickless::spawn(async { "hello" });
///     task.await
/// });
/// assert_eq!(out.unwrap(), "hello");
/// # std::io::Result::Ok(())
/// ```
#[track_caller]
pub fn spawn<F>(future: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let at = Location::caller();
    if with_current(|_| ()).is_none() {
        // No core here: a `spawn_blocking` thread spawns onto the core that lent it its
        // context (`context::Lent`), as `Handle::current().spawn` would.
        return spawn_lent(future, at);
    }
    with_current(|core| match core.placement_target() {
        Some(target) => spawn_placed(core, &target, future, at),
        None => spawn_on(core, future, at),
    })
    .expect(NO_RUNTIME)
}

/// [`spawn`] where no core runs: onto the core lent to this `spawn_blocking` thread.
#[cold]
fn spawn_lent<F>(future: F, at: &'static Location<'static>) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let (shared, peers, _pool) = crate::context::lent().ok().flatten().expect(NO_RUNTIME);
    spawn_remote_at(&peers, &shared, future, None, true, at)
}

/// Runs `f` on the runtime's blocking pool, so that work that blocks (a password hash, a file
/// read, a name lookup) does not stall the core and every connection on it; as tokio's
/// `spawn_blocking`.
///
/// The pool starts threads on demand, up to
/// [`Builder::max_blocking_threads`](crate::Builder::max_blocking_threads) (512 by default;
/// more jobs wait in its queue), and retires idle ones after
/// [`Builder::thread_keep_alive`](crate::Builder::thread_keep_alive) (10 s). The result wakes
/// the awaiting task through its core's inbox, which writes the core's eventfd only if the core
/// sleeps. A panic of `f` becomes the handle's [`JoinError`](crate::task::JoinError). Aborting
/// the handle cancels `f` if no thread has started it yet; once started it runs to the end. At
/// runtime shutdown, jobs not yet started are dropped, and running ones are waited for within
/// the shutdown's timeout. Jobs submitted together each get a thread while the cap allows, so
/// one job may wait for another. While the pool has work queued or running, a paused clock does
/// not jump (see [`time::pause`](crate::time::pause)).
///
/// `f` runs in the runtime's context, as on tokio: [`Handle::current`](crate::Handle::current)
/// is the handle of the core that spawned it, [`spawn`] spawns onto that core, and with a
/// tokio context (`Builder::tokio_context`, feature `tokio-compat`) that core's tokio
/// runtime is entered, so `tokio::runtime::Handle::current().block_on(..)` works inside. No
/// core runs on the pool's thread, so what needs one (a tickless timer polled there,
/// [`core_id`](crate::core_id), [`spawn_local`]) still panics there: spawn it instead.
///
/// If the system refuses to start a pool thread while none is alive (`EAGAIN`: out of threads
/// or memory), the queued jobs cannot run: each one's handle gives a [`JoinError`] whose
/// `is_panic()` is true and whose message says "the blocking pool could not start a thread"
/// with the system's error (tokio's `spawn_blocking` panics the same way, at the call). `f` is
/// dropped unrun. A later job tries to start a thread again.
///
/// [`JoinError`]: crate::task::JoinError
///
/// # Panics
///
/// Outside a tickless runtime.
///
/// # Examples
///
/// ```
/// let rt = tickless::Runtime::new()?;
/// let sum = rt.block_on(async {
///     tickless::task::spawn_blocking(|| (1..=1_000u64).sum::<u64>()).await
/// });
/// assert_eq!(sum.unwrap(), 500_500);
/// # std::io::Result::Ok(())
/// ```
#[track_caller]
pub fn spawn_blocking<F, R>(f: F) -> JoinHandle<R>
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    let at = Location::caller();
    with_current(|core| {
        // The closure runs in its core's context: `Handle::current`, `spawn` (and the tokio
        // context's `tokio::runtime::Handle::current`) work there, as on tokio.
        let lent = Lent::of(core);
        spawn_on(
            core,
            BlockingTask::new(core.blocking().clone(), move || lent.run(f)),
            at,
        )
    })
    .expect(NO_RUNTIME)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::sync::{Arc, Mutex};
    use std::task::{Poll, Waker};

    /// A one-shot signal another thread sets: what a channel's receiver does with its waker.
    #[derive(Clone, Default)]
    struct Signal(Arc<Mutex<(bool, Option<Waker>)>>);

    impl Signal {
        fn send(&self) {
            let waker = {
                let mut s = self.0.lock().unwrap();
                s.0 = true;
                s.1.take()
            };
            if let Some(w) = waker {
                w.wake();
            }
        }

        async fn recv(&self) {
            std::future::poll_fn(|cx| {
                let mut s = self.0.lock().unwrap();
                if s.0 {
                    return Poll::Ready(());
                }
                s.1 = Some(cx.waker().clone());
                Poll::Pending
            })
            .await
        }
    }

    /// A spawn placement sent to core 0 while core 0's `block_on` was returning (core 0 runs
    /// nothing by the time of the push) runs on the spawning core, not at the next `block_on`.
    #[test]
    fn a_placed_spawn_onto_a_core_that_stopped_running_stays_on_the_spawning_core() {
        let rt = crate::Builder::new().cores(2).build().unwrap();
        let zero = rt.handle(0).shared().clone();
        // No thread is in `block_on`: core 0 runs nothing, though placement found it running.
        let placed = rt.handle(1).spawn_pinned(move || async move {
            let at = std::panic::Location::caller();
            let task = crate::context::with_current(|core| {
                super::spawn_placed(core, &zero, async { crate::core_id() }, at)
            });
            // (In a tuple: a task whose output is a future reads as a mistake.)
            (task.unwrap(),)
        });
        let (placed,) = placed.join().unwrap();
        let start = std::time::Instant::now();
        while !placed.is_finished() && start.elapsed() < std::time::Duration::from_secs(60) {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert!(placed.is_finished(), "it waits in core 0's inbox");
        assert_eq!(placed.join().unwrap(), 1);
        let (zero, one) = (rt.handle(0).shared().clone(), rt.handle(1).shared().clone());
        let start = std::time::Instant::now();
        while one.load() != 0 && start.elapsed() < std::time::Duration::from_secs(60) {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert_eq!((zero.load(), one.load()), (0, 0));
    }

    /// A task of core 0 woken while core 0 runs nothing, by a task of another runtime's core,
    /// moves to a core of its own runtime, not to the waker's.
    #[test]
    fn a_wake_from_another_runtime_re_homes_the_task_in_its_own() {
        let rt = crate::Builder::new().cores(2).build().unwrap();
        let other = crate::Builder::new().cores(2).build().unwrap();
        let (zero, one) = (rt.handle(0).shared().clone(), rt.handle(1).shared().clone());
        let foreign = other.handle(1);
        let (first, second) = (Signal::default(), Signal::default());
        let (a, b) = (first.clone(), second.clone());
        let ran_on = rt.block_on(async move {
            let task = crate::spawn(async move {
                a.recv().await;
                b.recv().await;
                crate::core_id()
            });
            crate::task::yield_now().await;
            zero.set_driven(false);
            foreign.spawn(async move { first.send() }).join().unwrap();
            assert_eq!((zero.load(), one.load()), (0, 1), "moved to its own core 1");
            zero.set_driven(true);
            second.send();
            task.await.unwrap()
        });
        assert_eq!(ran_on, 1);
        assert_eq!(other.metrics().num_alive_tasks(), 0);
    }

    /// A task of core 0 woken by a thread of no core while core 0 runs nothing (as between
    /// `block_on`'s end and its evacuation) moves to core 1, and its count moves with it at the
    /// wake, not at its next poll there; once it finished, both loads are 0.
    #[test]
    fn a_wake_that_re_homes_a_task_moves_its_count_at_the_wake() {
        let rt = crate::Builder::new().cores(2).build().unwrap();
        let (zero, one) = (rt.handle(0).shared().clone(), rt.handle(1).shared().clone());
        let (first, second) = (Signal::default(), Signal::default());
        let (a, b) = (first.clone(), second.clone());
        let ran_on = rt.block_on(async move {
            let task = crate::spawn(async move {
                a.recv().await;
                b.recv().await;
                crate::core_id()
            });
            // Polled once on core 0, idle there.
            crate::task::yield_now().await;
            assert_eq!((zero.load(), one.load()), (1, 0));
            // Core 0 runs nothing now (without evacuating): the wake re-homes the task.
            zero.set_driven(false);
            std::thread::spawn(move || first.send()).join().unwrap();
            assert_eq!((zero.load(), one.load()), (0, 1), "moved at the wake");
            zero.set_driven(true);
            second.send();
            task.await.unwrap()
        });
        assert_eq!(ran_on, 1);
        let (zero, one) = (rt.handle(0).shared().clone(), rt.handle(1).shared().clone());
        let start = std::time::Instant::now();
        while one.load() != 0 && start.elapsed() < std::time::Duration::from_secs(60) {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert_eq!((zero.load(), one.load()), (0, 0));
        assert_eq!(rt.metrics().num_alive_tasks(), 0);
    }
}
