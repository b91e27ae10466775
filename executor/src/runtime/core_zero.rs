//! Core 0 as the runtime owns it: run by whichever thread calls `block_on`, one at a time.
//!
//! This is what makes a [`Runtime`](super::Runtime) `Send` and `Sync`, as tokio's is (a
//! blocking client that owns a runtime moves between threads; a runtime in a `static` is used
//! from many). Core 0's state is single-threaded (`Rc`, `RefCell`); it is safe to move it,
//! and to use it from one thread at a time, because of what is kept here:
//!
//! - **One thread at a time.** Every use of core 0 is made holding its [`Lease`] (`block_on`,
//!   the live stats, and the stand-in thread's turns, which run core 0 while no thread is in
//!   `block_on`: `runtime::tokio_stand_in`) or owning the runtime (its shutdown and drop), and
//!   the lease's mutex orders one holder's uses before the next's.
//! - **Nothing of core 0 outside it.** No handle to core 0's single-threaded parts stays on a
//!   thread once `block_on` returns: the core's `Rc` is held by the runtime and by the guard
//!   `block_on` enters it with (the thread-local that points at it is cleared when that guard
//!   drops); its reactor's `Rc` likewise (tickless-io gives out no `Rc` of the current
//!   reactor, and its entry guards hold none: see `tickless_io`'s context). Wakers, join
//!   handles, streams and timers reach core 0 through its `Arc`'d shared half only.
//! - **`!Send` tasks stay on their thread.** A `spawn_local` future on core 0 is bound to the
//!   thread that spawned it (`task::bound`): `block_on` on another thread panics while one
//!   lives, and a drop elsewhere leaks it instead of dropping it.
//! - **What belongs to a thread is set per call.** The thread-locals (current core, reactor,
//!   core 0's tokio runtime), the kernel timer slack, and, when the runtime pins its cores, the CPU
//!   affinity of a thread other than the building one are set when `block_on` starts and
//!   restored when it ends.

use std::future::Future;
use std::rc::Rc;
use std::sync::Arc;

use super::lease::Lease;
#[cfg(feature = "tokio-compat")]
use super::tokio_hand_over::Turn;
#[cfg(feature = "tokio-compat")]
use super::tokio_stand_in::DriveCoreZero;
use super::tokio_stand_in::StandIn;
use crate::context::{assert_not_in_runtime, with_current};
use crate::stats::CoreStats;
use crate::worker::id::{thread_token, CoreId};
use crate::worker::shared::Shared;
use crate::worker::Core;

/// Core 0, with its lease; see the module's docs.
pub(super) struct CoreZero {
    /// The core and its lease, shared with the stand-in thread, which runs core 0 while no
    /// thread is in `block_on` (`Builder::tokio_context`).
    parts: Arc<Parts>,
    /// What drives core 0's tokio runtime (`Builder::tokio_context`) while no thread is in
    /// `block_on`.
    stand_in: StandIn,
}

/// Core 0 and what says who runs it.
struct Parts {
    /// The core. Used only holding `lease`, or owning the runtime.
    core: Rc<Core>,
    /// Its id, to compare with the current core's without touching the core.
    id: CoreId,
    /// Which thread runs it now.
    lease: Lease,
    /// The CPU it is pinned to, if the runtime pins its cores.
    cpu: Option<usize>,
    /// The [`thread_token`] of the thread that built the runtime (pinned for the runtime's
    /// life, if pinning).
    built_on: u64,
}

// SAFETY: core 0's single-threaded state is reached only through this type, whose every use
// of it is made holding the lease or owning the runtime (`CoreZero`'s `&mut self`/`self`), and
// none of whose `Rc`s is left on a thread after the use ends (the module's docs list how). So
// moving it to another thread moves every handle to that state with it, and `!Send` futures
// never move: a `spawn_local` future is bound to its thread (`task::bound`). The stand-in
// thread's `Arc` of it is dropped before the runtime's shutdown goes on (`stop_stand_in` joins
// the thread), so the `Rc` is dropped where the runtime is.
unsafe impl Send for Parts {}
// SAFETY: through `&Parts`, core 0 is used only holding the lease (`block_on`, `stats`, the
// stand-in's turns), so by one thread at a time, each use ordered after the last by the
// lease's mutex; `cpu` and `built_on` are read only.
unsafe impl Sync for Parts {}

impl CoreZero {
    /// Core 0 of a runtime being built on this thread (pinned to `cpu`, if any).
    pub(super) fn new(core: Rc<Core>, cpu: Option<usize>) -> CoreZero {
        let parts = Arc::new(Parts {
            id: core.id(),
            core,
            lease: Lease::new(),
            cpu,
            built_on: thread_token(),
        });
        CoreZero {
            stand_in: StandIn::new(&parts.core, parts.clone()),
            parts,
        }
    }

    /// Runs `future` on this thread as core 0's `block_on` future, running core 0 meanwhile.
    pub(super) fn block_on<F: Future>(&self, future: F) -> F::Output {
        // Before the lease: a `block_on` inside this runtime's own would wait for itself.
        assert_not_in_runtime();
        // Core 0 and its tokio runtime: the stand-in thread gives them back (it holds the
        // lease while it runs core 0), and takes them again once the last `block_on` has
        // given the lease back (`Left` drops after `_lease`).
        self.stand_in.entered();
        let _left = Left(&self.stand_in);
        let _lease = self.parts.lease.take();
        self.parts.run(future, true)
    }

    /// Core 0's counters: live when this thread runs it or may take it now, else as of its
    /// last idle transition (another thread is in `block_on`).
    pub(super) fn stats(&self) -> CoreStats {
        let parts = &self.parts;
        let own = with_current(|c| c.id() == parts.id).unwrap_or(false);
        if own {
            return parts.core.stats();
        }
        match parts.lease.try_take() {
            Some(_held) => {
                // Outside `block_on`, core 0 may take no turn that would drop the live-task
                // entries of its tasks that moved on: they count no more.
                parts.core.take_orphans();
                parts.core.stats()
            }
            None => parts.core.shared().stats(),
        }
    }

    /// The core, to shut down: only with the runtime owned (`&mut`).
    pub(super) fn owned(&mut self) -> &Rc<Core> {
        &self.parts.core
    }

    /// Ends the thread that drives core 0's tokio runtime outside `block_on`, before core 0
    /// shuts down (its tokio runtime is then driven by nobody, and stopped with the core).
    pub(super) fn stop_stand_in(&self) {
        self.stand_in.stop();
    }

    /// Leaks the core: its state is never dropped (the runtime is dropped on a thread that
    /// cannot enter core 0's context, inside another core's task).
    pub(super) fn leak(&mut self) {
        std::mem::forget(Rc::clone(&self.parts.core));
    }

    /// Whether this thread built the runtime.
    pub(super) fn is_building_thread(&self) -> bool {
        thread_token() == self.parts.built_on
    }
}

impl Parts {
    /// Runs core 0 on this thread, the lease held, until `future` completes (`evacuate`: a
    /// `block_on`, whose end sends core 0's `Send` tasks to a core that runs; the stand-in's
    /// turn ends only for a `block_on` that takes core 0 next, or for the shutdown).
    fn run<F: Future>(&self, future: F, evacuate: bool) -> F::Output {
        let me = thread_token();
        let shared = self.core.shared();
        if shared.home() != me {
            let bound = shared.local_tasks();
            assert!(
                bound == 0,
                "tickless: `block_on` called on another thread than the last one while core 0 \
                 has {bound} `spawn_local` task(s) alive: a `!Send` task runs on the thread that \
                 spawned it only. Call `block_on` on that thread, or, before leaving it, let \
                 those tasks finish there: await their handles in that `block_on`, or abort \
                 them and then await the handles (an aborted task's future is dropped when \
                 core 0 next runs, on that thread). Use `tickless::spawn` for tasks that must \
                 not tie core 0 to a thread."
            );
            shared.set_home(me);
        }
        let _driven = Driven::new(shared);
        let _pinned = self.pin_here(me);
        let _entered = self.core.enter();
        let _leave = evacuate.then(|| Leave(&self.core));
        #[cfg(feature = "tokio-compat")]
        let _tokio = self.core.tokio().map(|t| t.enter());
        self.core.block_on(future)
    }

    /// Pins this thread to core 0's CPU until the guard drops, if the runtime pins its cores
    /// and this is not the building thread (which is pinned for the runtime's life).
    fn pin_here(&self, me: u64) -> Option<RestoreAffinity> {
        let cpu = self.cpu.filter(|_| me != self.built_on)?;
        let saved = tickless_io::internal::cpu::allowed_cpus().ok()?;
        match tickless_io::internal::cpu::pin_current_thread(cpu) {
            Ok(()) => Some(RestoreAffinity(saved)),
            Err(e) => {
                eprintln!("tickless: pinning this `block_on` thread to CPU {cpu}: {e}");
                None
            }
        }
    }
}

/// The stand-in thread runs core 0 itself while no thread is in `block_on`, so that what core
/// 0's tokio tasks use of tickless (its streams, its timers, in core 0's reactor and wheel)
/// keeps working: see `runtime::tokio_stand_in`.
#[cfg(feature = "tokio-compat")]
impl DriveCoreZero for Parts {
    fn drive<'a>(&self, turn: Turn<'a>) -> Option<Turn<'a>> {
        // A `spawn_local` task lives only on the thread that spawned it; with paused time,
        // core 0's clock moves only in `block_on` (as tokio's). Either way core 0 waits for
        // the next `block_on`, and only its tokio runtime is driven meanwhile.
        let declines =
            |shared: &Shared| shared.local_tasks() > 0 || shared.keeps_work_while_paused();
        let shared = self.core.shared();
        if declines(shared) {
            return Some(turn);
        }
        // Nobody is in `block_on` or waiting for it (`HandOver`'s count): this waits only
        // for a reader of the live stats.
        let _lease = self.lease.take();
        if declines(shared) {
            return Some(turn);
        }
        self.run(turn, false);
        None
    }
}

/// Marks core 0 as driven (a thread is in `block_on`) until dropped, for placement.
struct Driven<'a>(&'a Shared);

impl<'a> Driven<'a> {
    /// Core 0 of `shared` is driven from now on.
    fn new(shared: &'a Shared) -> Driven<'a> {
        shared.set_driven(true);
        Driven(shared)
    }
}

impl Drop for Driven<'_> {
    fn drop(&mut self) {
        self.0.set_driven(false);
    }
}

/// Core 0, entered, as its `block_on` returns (or unwinds): no thread runs it from now until
/// the next `block_on`, so its `Send` tasks go to a core that runs (`Core::evacuate`).
struct Leave<'a>(&'a Rc<Core>);

impl Drop for Leave<'_> {
    fn drop(&mut self) {
        // Not driven first (`evacuate` says so before it takes the inbox): a wake from another
        // thread from now on moves its task itself, and the core that serves core 0's
        // listeners meanwhile starts.
        self.0.evacuate();
    }
}

/// Hands core 0's tokio runtime to the stand-in thread when `block_on` returns (or unwinds).
struct Left<'a>(&'a StandIn);

impl Drop for Left<'_> {
    fn drop(&mut self) {
        self.0.left();
    }
}

/// Gives a thread its CPU affinity back when dropped.
struct RestoreAffinity(Vec<usize>);

impl Drop for RestoreAffinity {
    fn drop(&mut self) {
        if let Err(e) = tickless_io::internal::cpu::set_current_affinity(&self.0) {
            eprintln!(
                "tickless: restoring this thread's CPU affinity {:?}: {e}",
                self.0
            );
        }
    }
}
