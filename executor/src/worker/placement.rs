//! Where `tickless::spawn` puts a new task: on the spawning core, or, right after an accept,
//! on the less loaded of this core and another, so that the usual accept loop (one listener,
//! a task per connection) spreads its connections over the cores.
//!
//! # The rule
//!
//! Where a task first runs is decided at spawn (after that, it moves only when its core cannot
//! run it: `worker::steal`). `spawn` keeps a task on the
//! spawning core unless the task being polled has just accepted a connection (the core's
//! reactor counted an accept during this poll, and no spawn has used that accept yet). Such a
//! spawn is the accept loop handing a connection to its task, which captures a stream that is
//! not registered anywhere yet (a stream registers with the core that polls it, and moves to
//! the core of the task that polls it next). It goes to
//! the less loaded of this core and one other core, taken in turn (the power of two choices),
//! by the number of tasks spawned onto each and not yet finished; ties stay local. Every other
//! spawn (a connection spawning a writer, a ping-pong's helper, a task spawning work) stays
//! local, where the streams it may capture are registered.
//!
//! # Cost
//!
//! A placed spawn is a remote spawn: one push into the other core's inbox and at most one
//! eventfd write (none if that core is awake), plus one atomic add on its load counter. A
//! local spawn and a task's finish each pay one plain store to their core's load counter (no
//! atomic read-modify-write: the core is its only writer), and a spawn one load of the
//! reactor's accept counter; every task poll, one load and one store to remember that counter.
//! (The load counter is [`Load`](super::load::Load), in the core's shared half.)

use std::cell::Cell;
use std::sync::Arc;

use crate::worker::shared::{Peers, Shared};

/// How `tickless::spawn` places new tasks ([`Builder::placement`](crate::Builder::placement)).
///
/// # Examples
///
/// ```
/// use tickless::runtime::{Builder, Placement};
///
/// assert_eq!(Placement::default(), Placement::Spread);
/// let rt = Builder::new().cores(2).placement(Placement::Local).build()?;
/// // With `Local`, a task stays on the core that spawned it, even right after an accept.
/// let core = rt.block_on(async { tickless::spawn(async { tickless::core_id() }).await });
/// assert_eq!(core.unwrap(), 0);
/// # std::io::Result::Ok(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Placement {
    /// A task spawned right after an accept goes to the less loaded of the spawning core and
    /// another (see `tickless::spawn`); every other spawn stays on the spawning core.
    #[default]
    Spread,
    /// Every task starts on the spawning core (stealing may still move it later, unless
    /// [`Builder::steal_after`](crate::Builder::steal_after) is `None`, and core 0's `Send`
    /// tasks leave it when its `block_on` returns).
    Local,
}

impl Peers {
    /// The core a spawn on `me` that follows an accept should go to: one other core, taken in
    /// turn from `next`, if it carries less load than `me` and still takes work; `None` to
    /// stay (also while the runtime is still starting).
    pub(crate) fn target(&self, me: &Shared, next: &Cell<usize>) -> Option<Arc<Shared>> {
        let cores = self.all()?;
        let n = cores.len();
        if n < 2 {
            return None;
        }
        // The others in turn: index `me` is skipped by stepping over it.
        let step = next.get() % (n - 1);
        next.set(step + 1);
        let index = if step >= me.id.index { step + 1 } else { step };
        let other = &cores[index];
        // A core that steps back (crowded CPUs) places on another whatever the loads.
        (other.takes_placed_work() && (me.is_yielded() || other.load() < me.load()))
            .then(|| other.clone())
    }
}

impl Peers {
    /// The cores other than the one of index `me`, in index order from the one after it
    /// (none while the runtime is still starting).
    pub(crate) fn others(&self, me: usize) -> impl Iterator<Item = &Arc<Shared>> {
        let cores = self.all().unwrap_or_default();
        let n = cores.len();
        (1..n).map(move |k| &cores[(me + k) % n])
    }

    /// A core other than `me` (an index) that runs now and takes work, the first after `me`:
    /// where a `Send` task goes when its own core runs nothing (core 0 while no thread is in
    /// `block_on`) or has stopped.
    pub(crate) fn driven_other(&self, me: usize) -> Option<&Arc<Shared>> {
        // One that stepped back from crowded CPUs only if no other runs.
        (self.others(me).find(|c| c.takes_placed_work()))
            .or_else(|| self.others(me).find(|c| c.runs()))
    }
}
