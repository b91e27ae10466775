//! The one switch between `std` and `loom` for every atomic and lock of the executor.
//!
//! Code in this crate never names `std::sync`'s atomics or locks directly: under `--cfg loom`
//! the same code runs against loom's model-checked types. `loom-tests/` checks the join slot,
//! the loop's idle sequence with the `block_on` waker, the stop request, a remote hand-over,
//! the unparker's hand-off at shutdown, the server stop, the blocking pool's accounting, a wake
//! racing core 0's evacuation, core 0's lease, the stall detector's kennel (its watchdog's
//! park) and the hand-over of core 0's tokio runtime with its stand-in thread; the rest (the registry of cores, a
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
