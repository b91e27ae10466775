//! The one switch between `std` and `loom` synchronisation types.
//!
//! Code in this crate never names `std::sync` directly: under `--cfg loom` the same code runs
//! against loom's model-checked types, which is how `loom-tests/` checks the hand-over protocol.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU64, Ordering};
#[cfg(loom)]
pub(crate) use loom::sync::{Mutex, MutexGuard};

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::{Mutex, MutexGuard};
