//! An accept loop watching whether a core serves (`tickless`'s `Shared::yielded_watching` and
//! `Shared::driven_watching`, `worker/shared/serve_watch.rs`) against the change it watches
//! (`Shared::set_yielded`, the watchdog stepping a core back; `Shared::leave_and_take`, core
//! 0's `block_on` returning), on the production code.
//!
//! Whatever the interleaving, the loop either reads the new value or is woken after it: a
//! listener whose core stopped serving is never left unaccepted (core 0's loop adopts the
//! listener of a core that stepped back; core 1's loop core 0's while no thread drives it).
//! Reading the flag before registering the waker (or outside the lock) loses the wake when the
//! change falls between the two, and the model fails.
#![cfg(loom)]

mod common;

use std::sync::Arc;
use std::task::Waker;

use common::io_tasks::{task, woken};
use loom::thread;
use tickless::loom_exports::Shared;
use tickless_io::internal::Reactor;

fn two_cores() -> (Arc<Shared>, Arc<Shared>) {
    let (r0, r1) = (Reactor::new().unwrap(), Reactor::new().unwrap());
    let mut cores = Shared::for_model_runtime(vec![r0.unparker(), r1.unparker()]);
    let one = Arc::new(cores.pop().unwrap());
    let zero = Arc::new(cores.pop().unwrap());
    (zero, one)
}

#[test]
fn a_loop_watching_a_core_that_steps_back_reads_it_or_is_woken() {
    loom::model(|| {
        let (_zero, one) = two_cores();
        let watchdog = {
            let one = one.clone();
            thread::spawn(move || one.set_yielded(true))
        };
        // Core 0's accept loop, polling the adopted listener of core 1.
        let t = task();
        let stepped_back = one.yielded_watching(&Waker::from(t.clone()));
        watchdog.join().unwrap();
        assert!(
            stepped_back || woken(&t),
            "core 1 stepped back, and core 0's loop neither saw it nor was woken"
        );
    });
}

#[test]
fn a_loop_watching_core_0_leave_reads_it_or_is_woken() {
    loom::model(|| {
        let (zero, _one) = two_cores();
        let leaving = {
            let zero = zero.clone();
            thread::spawn(move || zero.leave_and_take(&mut Vec::new()))
        };
        // Core 1's accept loop, polling the adopted listener of core 0.
        let t = task();
        let driven = zero.driven_watching(&Waker::from(t.clone()));
        leaving.join().unwrap();
        assert!(
            !driven || woken(&t),
            "core 0 was left, and core 1's loop neither saw it nor was woken"
        );
    });
}
