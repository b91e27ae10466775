//! Which core: a runtime's number and the core's index in it.

use crate::sync::{AtomicU64, Ordering};

/// Identifies a core across runtimes: the runtime's number and the core's index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct CoreId {
    /// Unique per runtime in the process.
    pub(crate) runtime: u64,
    /// Index of the core in its runtime.
    pub(crate) index: usize,
}

impl CoreId {
    /// A runtime number never handed out before in this process.
    pub(crate) fn new_runtime() -> u64 {
        #[cfg(not(loom))]
        static NEXT: AtomicU64 = AtomicU64::new(1);
        #[cfg(loom)]
        loom::lazy_static! {
            static ref NEXT: AtomicU64 = AtomicU64::new(1);
        }
        NEXT.fetch_add(1, Ordering::Relaxed)
    }
}
