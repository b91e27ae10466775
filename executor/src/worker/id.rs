//! Which core: a runtime's number and the core's index in it.

use std::num::NonZeroU64;

use crate::sync::{AtomicU64, Ordering};

/// Bits of a [`CoreKey`] that hold the core's index.
const INDEX_BITS: u32 = 20;

/// A [`CoreId`] in one word, for the hot paths that compare it (a `Sleep` knows its core by
/// it): the runtime's number above the index's 20 bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct CoreKey(NonZeroU64);

/// Identifies a core across runtimes: the runtime's number and the core's index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CoreId {
    /// Unique per runtime in the process.
    pub(crate) runtime: u64,
    /// Index of the core in its runtime.
    pub(crate) index: usize,
}

impl CoreId {
    /// The core's key.
    ///
    /// # Panics
    ///
    /// For a core index of 2^20 or more (a runtime of more than a million cores).
    pub(crate) fn key(self) -> CoreKey {
        assert!(
            self.index < 1 << INDEX_BITS,
            "tickless: at most {} cores a runtime",
            1u64 << INDEX_BITS
        );
        let key = self.runtime << INDEX_BITS | self.index as u64;
        // Runtime numbers start at 1.
        CoreKey(NonZeroU64::new(key).expect("runtime numbers start at 1"))
    }

    /// A runtime number never handed out before in this process.
    pub(crate) fn new_runtime() -> u64 {
        unique()
    }
}

/// A number never handed out before in this process, from 1: runtime numbers and thread
/// tokens share the count (each only needs to differ from its kind's others).
fn unique() -> u64 {
    #[cfg(not(loom))]
    static NEXT: AtomicU64 = AtomicU64::new(1);
    #[cfg(loom)]
    loom::lazy_static! {
        static ref NEXT: AtomicU64 = AtomicU64::new(1);
    }
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// A number for the calling thread, never given to another thread of the process (unlike a
/// thread-local's address, which a later thread may reuse): what a core compares to know
/// whether it runs on its home thread. One thread-local read after the first call.
pub(crate) fn thread_token() -> u64 {
    #[cfg(not(loom))]
    thread_local! {
        static TOKEN: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    }
    #[cfg(loom)]
    loom::thread_local! {
        static TOKEN: std::cell::Cell<u64> = std::cell::Cell::new(0);
    }
    TOKEN.with(|t| {
        if t.get() == 0 {
            t.set(unique());
        }
        t.get()
    })
}

impl CoreKey {
    /// The key as one word (for an atomic).
    #[inline]
    pub(crate) fn get(self) -> u64 {
        self.0.get()
    }

    /// The key of a word [`get`](Self::get) gave.
    #[inline]
    pub(crate) fn from_raw(word: u64) -> CoreKey {
        CoreKey(NonZeroU64::new(word).expect("a core key is never 0"))
    }

    /// The core it names.
    pub(crate) fn id(self) -> CoreId {
        CoreId {
            runtime: self.0.get() >> INDEX_BITS,
            index: (self.0.get() & ((1 << INDEX_BITS) - 1)) as usize,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_names_its_core_and_only_it() {
        let ids = [
            (1, 0),
            (1, 1),
            (2, 0),
            (7, 5),
            (u64::MAX >> INDEX_BITS, (1 << INDEX_BITS) - 1),
        ];
        for (runtime, index) in ids {
            let id = CoreId { runtime, index };
            assert_eq!(id.key().id(), id, "{id:?}");
        }
        for (i, a) in ids.iter().enumerate() {
            for b in &ids[i + 1..] {
                let (a, b) = (
                    CoreId {
                        runtime: a.0,
                        index: a.1,
                    },
                    CoreId {
                        runtime: b.0,
                        index: b.1,
                    },
                );
                assert_ne!(a.key(), b.key(), "{a:?} {b:?}");
            }
        }
    }
}
