//! Every live core of every runtime in the process, for the one operation that must reach a
//! core from a thread that is not running it and holds nothing of it: a `Sleep` dropped on
//! another thread cancels its timer.
//!
//! Locked only on that cold path and when a core starts or ends; the hot paths (a timer insert
//! and cancel on the core) never touch it.

use std::sync::{Arc, Weak};

use tickless_timer::internal::Op;
use tickless_timer::TimerHandle;

use crate::sync::{lock, Mutex, MutexGuard};
use crate::worker::id::CoreId;
use crate::worker::shared::Shared;

/// The registry's entries: a core, and its shared half while it lives.
type Entries = Vec<(CoreId, Weak<Shared>)>;

#[cfg(not(loom))]
fn registry() -> MutexGuard<'static, Entries> {
    static REGISTRY: Mutex<Entries> = Mutex::new(Vec::new());
    lock(&REGISTRY)
}

#[cfg(loom)]
fn registry() -> MutexGuard<'static, Entries> {
    loom::lazy_static! {
        static ref REGISTRY: Mutex<Entries> = Mutex::new(Vec::new());
    }
    lock(&REGISTRY)
}

/// Adds a starting core.
pub fn register(shared: &Arc<Shared>) {
    registry().push((shared.id, Arc::downgrade(shared)));
}

/// Removes a core that is shutting down: from here on, its remote cancels are dropped.
pub(crate) fn unregister(id: CoreId) {
    registry().retain(|(core, _)| *core != id);
}

/// The shared half of `core`, if it still runs.
pub(crate) fn find(core: CoreId) -> Option<Arc<Shared>> {
    registry()
        .iter()
        .find(|(id, _)| *id == core)
        .and_then(|(_, w)| w.upgrade())
}

/// Cancels a timer of `core` from another thread: through its inbox, waking nobody. A core
/// that is gone has no timer to cancel.
pub fn remote_cancel(core: CoreId, handle: TimerHandle) {
    if let Some(shared) = find(core) {
        shared.push(Op::Cancel(handle));
    }
}
