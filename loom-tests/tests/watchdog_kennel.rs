//! The stall detector's watchdog parks while every core is idle, on the production code:
//! `tickless`'s `sleep_while_idle` (the watchdog's side: lie down, fence, look at every core,
//! park), `Shared::running_again` (a core woken from its park: "running" in its sleep word,
//! then `Kennel::rouse`'s fence and look at the kennel), `Watch::enter` (a thread starts
//! running a core, as core 0's `block_on` does), `Watch::tokio_runs` (the core's tokio runtime
//! wakes from its park on the core's thread, whose sleep word still says "asleep": "running
//! tokio" in the watch, then the same fence), `Kennel::attach` and `Kennel::stop`.
//!
//! Whatever the interleaving, a watchdog that lay down while a core was waking does not stay
//! parked once the core runs (a lost wake leaves it parked for good: loom reports the
//! deadlock when the model joins it), and a stop always ends it. Removing either `SeqCst`
//! fence (the watchdog's in `Kennel::lie_down`, or the core's in `Kennel::rouse`) lets both
//! sides read the other's old value, and the model fails.
#![cfg(loom)]

use std::rc::Rc;
use std::sync::Arc;

use loom::thread;
use tickless::loom_exports::{sleep_while_idle, Kennel, Shared};
use tickless_io::internal::Reactor;

/// A runtime of `n` cores watched from `kennel`, each run by a thread (`Watch::enter`, its
/// guard leaked: the cores stay run) and parked in epoll (its sleep word says "asleep").
fn parked_cores(n: usize, kennel: &Arc<Kennel>) -> (Vec<Rc<Reactor>>, Vec<Arc<Shared>>) {
    let reactors: Vec<Rc<Reactor>> = (0..n).map(|_| Reactor::new().unwrap()).collect();
    let cores: Vec<Arc<Shared>> = reactors
        .iter()
        .map(|r| Arc::new(Shared::for_model_watched(r.unparker(), kennel.clone())))
        .collect();
    for core in &cores {
        std::mem::forget(core.watch().enter());
        assert!(core.inbox().try_sleep(None), "nothing was handed over");
    }
    (reactors, cores)
}

/// The watchdog's thread: attaches, then sleeps while every core is idle.
fn watchdog(cores: Vec<Arc<Shared>>, kennel: Arc<Kennel>) -> thread::JoinHandle<()> {
    thread::spawn(move || {
        kennel.attach();
        sleep_while_idle(&cores, &kennel);
    })
}

#[test]
fn a_core_waking_from_its_park_wakes_the_watchdog_that_lay_down() {
    loom::model(|| {
        let kennel = Arc::new(Kennel::default());
        let (_reactors, cores) = parked_cores(2, &kennel);
        let dog = watchdog(cores.clone(), kennel.clone());
        // Core 1 wakes (I/O, its timer, a kick), on its own thread.
        let core = {
            let core = cores[1].clone();
            thread::spawn(move || core.running_again())
        };
        core.join().unwrap();
        // It saw core 1 running and stayed up, or was woken: a parked watchdog is a deadlock.
        dog.join().unwrap();
    });
}

#[test]
fn a_core_s_tokio_runtime_waking_in_its_park_wakes_the_watchdog_that_lay_down() {
    loom::model(|| {
        let kennel = Arc::new(Kennel::default());
        let (_reactors, cores) = parked_cores(2, &kennel);
        let dog = watchdog(cores.clone(), kennel.clone());
        // Core 1 is parked in its tokio runtime (`Builder::tokio_context`), which wakes for a
        // tokio task: the core's sleep word still says "asleep", and a tokio task that blocks
        // now must be watched.
        let core = {
            let core = cores[1].clone();
            thread::spawn(move || core.watch().tokio_runs())
        };
        core.join().unwrap();
        dog.join().unwrap();
    });
}

#[test]
fn a_thread_entering_core_zero_wakes_the_watchdog() {
    loom::model(|| {
        let kennel = Arc::new(Kennel::default());
        let reactor = Reactor::new().unwrap();
        // Core 0 between two `block_on`s: run by no thread (idle to the watchdog), its sleep
        // word "running", as `block_on` left it.
        let core = Arc::new(Shared::for_model_watched(
            reactor.unparker(),
            kennel.clone(),
        ));
        let dog = watchdog(vec![core.clone()], kennel.clone());
        // A `block_on` begins here, and runs until the watchdog has got up.
        let running = core.watch().enter();
        dog.join().unwrap();
        drop(running);
    });
}

#[test]
fn a_stop_ends_a_watchdog_parked_or_about_to_be() {
    loom::model(|| {
        let kennel = Arc::new(Kennel::default());
        let (_reactors, cores) = parked_cores(1, &kennel);
        let dog = watchdog(cores, kennel.clone());
        // The runtime's drop: before or after the watchdog attached or lay down.
        kennel.stop();
        dog.join().unwrap();
    });
}
