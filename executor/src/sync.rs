//! The one switch between `std` and `loom` for the synchronisation that loom models check
//! (the join slot). The rest of the runtime's cross-thread state lives in `tickless-timer`'s
//! hand-over, which has its own switch; the process-wide core registry is a `static` and stays
//! on `std` (loom has no `const` mutex), and is only ever locked on cold paths.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, Ordering};
#[cfg(loom)]
pub(crate) use loom::sync::Mutex;

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::Mutex;
