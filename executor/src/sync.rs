//! The one switch between `std` and `loom` for every atomic and lock of the executor.
//!
//! Code in this crate never names `std::sync`'s atomics or locks directly: under `--cfg loom`
//! the same code runs against loom's model-checked types. `loom-tests/` checks the join slot,
//! the loop's idle sequence with the `block_on` waker, the stop request, a remote hand-over,
//! the unparker's hand-off at shutdown, the server stop, the blocking pool's accounting, a wake
//! racing core 0's evacuation, core 0's lease, the stall detector's kennel (its watchdog's
//! park), the hand-over of core 0's tokio runtime with its stand-in thread, and a thief's claim
//! of a stuck core's run queue against the owner's pushes and pops (whose `membarrier` is a
//! `SeqCst` fence here); the rest (the registry of cores, a
//! `spawn_at` abort, `JoinSet`) compiles under loom but has no model yet.
//!
//! Four things stay `std`'s, on purpose: `Arc` (`Waker::from` needs std's, and a reference
//! count orders nothing the protocols rely on), the `mpsc` channels that start and join core
//! threads (plain message passing), `signal.rs`'s statics, which a signal handler touches
//! (loom cannot model a handler), and the stall detector's words (`worker/watch.rs`, the task
//! id counter), which only the watchdog reads (but for the flag and the kennel its park
//! protocol uses).

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicUsize, Ordering};
#[cfg(loom)]
pub(crate) use loom::sync::{Condvar, Mutex, MutexGuard};

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicUsize, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::{Condvar, Mutex, MutexGuard};

/// A cell whose accesses loom checks for races (the run queue's tasks, `worker::runq`); with
/// std, a plain `UnsafeCell` with loom's `get_mut` API.
#[cfg(loom)]
pub(crate) use loom::cell::{MutPtr, UnsafeCell};

/// std's `UnsafeCell` with loom's `get_mut`.
#[cfg(not(loom))]
pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

#[cfg(not(loom))]
impl<T> UnsafeCell<T> {
    /// A cell holding `value`.
    pub(crate) const fn new(value: T) -> Self {
        UnsafeCell(std::cell::UnsafeCell::new(value))
    }

    /// A pointer to the value, for one access (loom tracks its length).
    #[inline(always)]
    pub(crate) fn get_mut(&self) -> MutPtr<T> {
        MutPtr(self.0.get())
    }
}

/// A pointer to a cell's value for one access (loom's `MutPtr`).
#[cfg(not(loom))]
pub(crate) struct MutPtr<T>(*mut T);

#[cfg(not(loom))]
impl<T> MutPtr<T> {
    /// The value.
    ///
    /// # Safety
    ///
    /// No other reference to the value may be alive while this one is.
    #[inline(always)]
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn deref(&self) -> &mut T {
        // SAFETY: the caller's.
        unsafe { &mut *self.0 }
    }
}

/// Lets other threads run while this one waits for one of them (under loom, a model thread's
/// yield, without which a wait loop never ends).
#[cfg(loom)]
pub(crate) use loom::thread::yield_now;
#[cfg(not(loom))]
pub(crate) use std::thread::yield_now;

/// A thread's handle, the calling thread's, and parking it until unparked (the stall
/// detector's watchdog, in its kennel).
#[cfg(loom)]
pub(crate) use loom::thread::{current, park, Thread};
#[cfg(not(loom))]
pub(crate) use std::thread::{current, park, Thread};

/// Locks `m`, ignoring poisoning: every lock of the runtime guards data that a panic cannot
/// leave half-written (the critical sections call no user code).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
