//! A core that serves again after stepping back asks the others to share their tasks out
//! (`tickless`'s `Shared::serve_again`, `worker/steal.rs`): a compare-exchange on each
//! serving core's `yielded` word (`SERVES` to `SHARE_OUT`), then its notify. The asked core
//! takes the request at its idle transitions (`Shared::take_share_out`, the compare-exchange
//! back, in `Core::follow_yield`) before it sleeps, by the production idle sequence (`sleep`)
//! and loop (`run`, `turn`), driven by a model core whose epoll is a thread park.
//!
//! Whatever the interleaving, the asked core takes the request (and wakes its tasks to share
//! them out) instead of sleeping through it: the request written after the notify lets the
//! core look, find nothing, drain the notify's `DIRTY` bit and sleep for good (loom reports the
//! deadlock). And a step back (the watchdog's `set_yielded(true)`) racing the request is never
//! undone by it: the core ends stepped back, whichever came first. (That second model is
//! why `set_yielded` swaps rather than stores: loom 0.7.3 let the request's compare-exchange
//! read past a plain store, tokio-rs/loom#389, and the model failed.)
//!
//! Seen failing: `serve_again` notifying before its compare-exchange deadlocks the first
//! model (the core looks, finds nothing, drains the notify and sleeps for good).
#![cfg(loom)]

use std::cell::{Cell, RefCell};
use std::future::poll_fn;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Poll, Waker};

use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::thread;
use tickless::loom_exports::{run, sleep, Driver, Due, Shared, Unpark};
use tickless_timer::internal::Op;

/// The model core's eventfd: a write bumps the counter and unparks the core's thread.
struct EventFd {
    counter: AtomicUsize,
    core: thread::Thread,
}

#[derive(Clone)]
struct ModelUnparker(Arc<EventFd>);

impl Unpark for ModelUnparker {
    fn unpark(&self) {
        self.0.counter.fetch_add(1, Ordering::Release);
        self.0.core.unpark();
    }
}

/// The asked core: no tasks but the `block_on` future, which completes once the core took
/// the request (as `Core::share_out` wakes every live task to hand some on).
struct ModelCore {
    shared: Arc<Shared<ModelUnparker>>,
    eventfd: Arc<EventFd>,
    ops: RefCell<Vec<Op<Due>>>,
    /// The request was taken.
    shared_out: Cell<bool>,
    /// The `block_on` future's waker, woken when the request is taken.
    main: RefCell<Option<Waker>>,
}

impl Driver for ModelCore {
    type Unpark = ModelUnparker;

    fn shared(&self) -> &Arc<Shared<ModelUnparker>> {
        &self.shared
    }

    fn main_poll_starts(&self) {}

    fn run_tasks(&self) -> usize {
        0
    }

    fn ops_buffer(&self) -> &RefCell<Vec<Op<Due>>> {
        &self.ops
    }

    fn apply(&self, _op: Op<Due>) {
        unreachable!("the model hands over nothing but notifies");
    }

    fn expire_timers(&self) -> bool {
        false
    }

    fn has_ready_tasks(&self) -> bool {
        false
    }

    fn poll_io_now(&self) {}

    /// `Core::go_idle`'s order: the request looked at (`follow_yield`), then the sleep.
    fn idle(&self) {
        if self.shared.take_share_out() {
            self.shared_out.set(true);
            if let Some(main) = self.main.borrow_mut().take() {
                main.wake();
            }
            return;
        }
        sleep(self);
    }

    fn flush_rearm(&self) -> Option<u64> {
        None
    }

    fn publish(&self) {}

    fn block(&self, _armed: Option<u64>) {
        // Returns only for a write since the last read: a lost wakeup parks for good.
        while self.eventfd.counter.swap(0, Ordering::Acquire) == 0 {
            thread::park();
        }
    }
}

/// Core 0 (the one that serves again; its own notify goes to a counter no thread waits on) and
/// core 1, the model core on the current thread, both serving.
fn two_cores() -> (Arc<Shared<ModelUnparker>>, ModelCore) {
    let eventfd = || {
        Arc::new(EventFd {
            counter: AtomicUsize::new(0),
            core: thread::current(),
        })
    };
    let (fd0, fd1) = (eventfd(), eventfd());
    let mut cores = Shared::for_model_runtime(vec![ModelUnparker(fd0), ModelUnparker(fd1.clone())]);
    let one = Arc::new(cores.pop().unwrap());
    let zero = Arc::new(cores.pop().unwrap());
    let core = ModelCore {
        shared: one,
        eventfd: fd1,
        ops: RefCell::new(Vec::new()),
        shared_out: Cell::new(false),
        main: RefCell::new(None),
    };
    (zero, core)
}

/// Core 0 serves again, on a thread of its own: it asks core 1 to share out.
fn serve_again(zero: &Arc<Shared<ModelUnparker>>, core: &ModelCore) -> thread::JoinHandle<()> {
    let cores = vec![zero.clone(), core.shared.clone()];
    thread::spawn(move || cores[0].serve_again(&cores))
}

#[test]
fn a_request_to_share_out_racing_the_asked_core_going_to_sleep_is_taken() {
    loom::model(|| {
        let (zero, core) = two_cores();
        let asking = serve_again(&zero, &core);
        let main = pin!(poll_fn(|cx| {
            if core.shared_out.get() {
                return Poll::Ready(());
            }
            *core.main.borrow_mut() = Some(cx.waker().clone());
            Poll::Pending
        }));
        assert_eq!(run(&core, Some(main)), Some(()));
        asking.join().unwrap();
        assert!(!core.shared.is_yielded());
    });
}

#[test]
fn a_step_back_racing_a_request_to_share_out_stays() {
    loom::model(|| {
        let (zero, core) = two_cores();
        let asking = serve_again(&zero, &core);
        let watchdog = {
            let one = core.shared.clone();
            thread::spawn(move || one.set_yielded(true))
        };
        // The asked core looks once, as at an idle transition.
        let took = core.shared.take_share_out();
        asking.join().unwrap();
        watchdog.join().unwrap();
        assert!(
            core.shared.is_yielded(),
            "a step back was undone by a request to share out (taken: {took}, word {})",
            core.shared.yielded_word()
        );
    });
}
