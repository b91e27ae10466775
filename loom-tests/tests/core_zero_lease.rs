//! Core 0's lease (`tickless`'s `runtime::lease`), on the production code: a `Runtime` is
//! `Send` and `Sync`, core 0 runs on whichever thread is in `block_on`, and the lease lets one
//! thread at a time use core 0's single-threaded state.
//!
//! Two threads call `block_on` at once while a third asks for the live stats (`try_take`).
//! Whatever the interleaving, no two of them use core 0 together (loom's `UnsafeCell` reports
//! a concurrent access, and a holder that did not see the last one's writes), and each
//! `block_on` gets it in the end (a lost wakeup of a waiter is a deadlock, which loom reports).
#![cfg(loom)]

use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::thread;
use tickless::loom_exports::Lease;

/// Core 0's state, as the model sees it: single-threaded, used only holding the lease.
struct CoreZero {
    lease: Lease,
    /// What the holders did, in order.
    runs: UnsafeCell<Vec<u32>>,
}

impl CoreZero {
    /// One `block_on`: takes the lease, runs core 0, gives it back.
    fn block_on(&self, who: u32) {
        let _held = self.lease.take();
        // SAFETY: only a holder of the lease touches `runs` (loom checks it).
        self.runs.with_mut(|runs| unsafe { (*runs).push(who) });
    }
}

#[test]
fn two_block_ons_and_a_stats_read_use_core_zero_one_at_a_time_and_both_run() {
    loom::model(|| {
        let core = Arc::new(CoreZero {
            lease: Lease::new(),
            runs: UnsafeCell::new(Vec::new()),
        });
        let other = {
            let core = core.clone();
            thread::spawn(move || core.block_on(1))
        };
        let stats = {
            let core = core.clone();
            thread::spawn(move || {
                if let Some(_held) = core.lease.try_take() {
                    // SAFETY: holding the lease.
                    core.runs.with(|runs| unsafe { (*runs).len() })
                } else {
                    0
                }
            })
        };
        core.block_on(0);
        other.join().unwrap();
        let _ = stats.join().unwrap();
        let _held = core.lease.take();
        // SAFETY: holding the lease, and every other thread has ended.
        let mut runs = core.runs.with(|runs| unsafe { (*runs).clone() });
        runs.sort_unstable();
        assert_eq!(runs, vec![0, 1]);
    });
}
