//! The core's idle path, on the production code: the loop (`run`, `turn`, `take_handed_over`),
//! the idle sequence (`sleep`), the `block_on` waker (`MainWaker`), the shared half's kick and
//! stop request, and shutdown's `close`, all driven by a model core whose epoll is a thread park.
//!
//! A wake of the `block_on` future, a stop request or a remote hand-over racing the core going
//! to sleep is never lost (a lost one leaves the core parked: loom reports the deadlock), and a
//! core is woken only when it sleeps, once per sleep. A hand-over racing the core's shutdown is
//! taken or refused, never lost and never both, and no kick writes the eventfd once the core has
//! closed it.
#![cfg(loom)]

use std::cell::{Cell, RefCell};
use std::future::{poll_fn, Pending};
use std::pin::pin;
// `std`'s `Arc`, as in the executor: `Waker::from` needs it.
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::sync::Mutex;
use loom::thread;
use tickless::loom_exports::{
    close, run, sleep, take_handed_over, turn, Driver, Due, MainWaker, Shared, Step, Unpark,
};
use tickless_timer::internal::Op;

/// The deadline the model core's clock event device is armed for.
const ARMED: u64 = 1_000;

/// The core's eventfd: a write sets the counter and wakes the core's `epoll_wait`; the core's
/// read clears it.
struct EventFd {
    /// The counter. Only read-modify-writes touch it: loom 0.7.3 lets a read-modify-write
    /// (`swap`, `fetch_and`) read its own thread's earlier write instead of a plain store that
    /// happens before it (a `store(true)`, an unpark, a `swap(false)` that reads `false`: the
    /// model core would park on a write it has seen; see tokio-rs/loom#389).
    counter: AtomicUsize,
    /// The core's thread, blocked in (or about to enter) its `epoll_wait`.
    core: thread::Thread,
    /// The core has let the eventfd go (`close` returned): writing it now is a bug.
    closed: AtomicBool,
    /// Writes.
    writes: AtomicUsize,
}

/// What other threads wake the model core with. (`Clone` only for trying a mutation of `kick`
/// that clones it out of its lock.)
#[derive(Clone)]
struct ModelUnparker(Arc<EventFd>);

impl Unpark for ModelUnparker {
    fn unpark(&self) {
        let fd = &self.0;
        assert!(
            !fd.closed.load(Ordering::Acquire),
            "a kick wrote the eventfd after the core closed it"
        );
        fd.writes.fetch_add(1, Ordering::Relaxed);
        fd.counter.fetch_add(1, Ordering::Release);
        fd.core.unpark();
    }
}

/// The model core: no tasks, no timers, no I/O; its blocking poll waits for the eventfd (or,
/// with `timer_fires`, returns at once, as `epoll_wait` does when the armed timerfd expires).
struct ModelCore {
    shared: Arc<Shared<ModelUnparker>>,
    eventfd: Arc<EventFd>,
    ops: RefCell<Vec<Op<Due>>>,
    /// What `flush_rearm` reports armed.
    armed: Option<u64>,
    /// The armed timer fires while the core blocks: `block` returns without an unpark.
    timer_fires: bool,
    /// Hand-overs applied.
    applied: Cell<usize>,
    /// Blocking polls entered.
    blocks: Cell<usize>,
}

impl ModelCore {
    /// A core on the current thread.
    fn new(armed: Option<u64>, timer_fires: bool) -> ModelCore {
        let eventfd = Arc::new(EventFd {
            counter: AtomicUsize::new(0),
            core: thread::current(),
            closed: AtomicBool::new(false),
            writes: AtomicUsize::new(0),
        });
        ModelCore {
            shared: Arc::new(Shared::for_model(ModelUnparker(eventfd.clone()))),
            eventfd,
            ops: RefCell::new(Vec::new()),
            armed,
            timer_fires,
            applied: Cell::new(0),
            blocks: Cell::new(0),
        }
    }

    /// Wakes sent to the core, by the sleep-word rule.
    fn wakes_sent(&self) -> usize {
        self.shared.inbox().stats().remote_wakes_sent as usize
    }

    /// Every wake sent found the core asleep, and every sleep was woken once: the core slept
    /// exactly as often as it was sent a wake, and each wake wrote the eventfd.
    fn assert_one_wake_per_sleep(&self) {
        let sent = self.wakes_sent();
        assert_eq!(sent, self.blocks.get(), "wakes sent vs sleeps");
        assert_eq!(self.eventfd.writes.load(Ordering::Relaxed), sent);
    }
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

    fn apply(&self, op: Op<Due>) {
        match op {
            Op::Now(Due::Wake(w)) => {
                self.applied.set(self.applied.get() + 1);
                w.wake();
            }
            _ => unreachable!("the models hand over only wakes"),
        }
    }

    fn expire_timers(&self) -> bool {
        false
    }

    fn has_ready_tasks(&self) -> bool {
        false
    }

    fn poll_io_now(&self) {}

    fn idle(&self) {
        sleep(self);
    }

    fn flush_rearm(&self) -> Option<u64> {
        self.armed
    }

    fn publish(&self) {}

    fn block(&self, _armed: Option<u64>) {
        self.blocks.set(self.blocks.get() + 1);
        if self.timer_fires {
            return;
        }
        // Returns only for a write since the last read: a lost wakeup parks for good.
        while self.eventfd.counter.swap(0, Ordering::Acquire) == 0 {
            thread::park();
        }
    }
}

/// A one-shot event a future waits for: the flag, then the stored waker woken.
#[derive(Default)]
struct Signal {
    set: AtomicBool,
    waiter: Mutex<Option<Waker>>,
}

impl Signal {
    /// Sets the flag and wakes the waiter, if one is stored (from any thread).
    fn raise(&self) {
        self.set.store(true, Ordering::Release);
        let waiter = self.waiter.lock().unwrap().take();
        if let Some(w) = waiter {
            w.wake();
        }
    }

    /// Ready once raised; otherwise stores the waker. The flag is read under the lock that
    /// `raise` takes after setting it, so a raise either finds the waker or is seen here.
    fn poll_wait(&self, cx: &mut Context<'_>) -> Poll<()> {
        let mut waiter = self.waiter.lock().unwrap();
        if self.set.load(Ordering::Acquire) {
            *waiter = None;
            return Poll::Ready(());
        }
        *waiter = Some(cx.waker().clone());
        Poll::Pending
    }
}

impl Wake for Signal {
    fn wake(self: Arc<Self>) {
        self.raise();
    }
}

/// `MainWaker` sets its flag, then notifies the core. The other order lets the core drain the
/// notify's DIRTY bit, find the flag clear and sleep for good.
#[test]
fn a_wake_of_the_block_on_future_racing_its_core_going_to_sleep_is_never_lost() {
    loom::model(|| {
        let core = ModelCore::new(Some(ARMED), false);
        let signal = Arc::new(Signal::default());
        let waker = {
            let signal = signal.clone();
            thread::spawn(move || signal.raise())
        };
        let main = pin!(poll_fn(|cx| signal.poll_wait(cx)));
        assert_eq!(run(&core, Some(main)), Some(()));
        waker.join().unwrap();
        core.assert_one_wake_per_sleep();
    });
}

/// `request_stop` sets the flag, then notifies; the idle sequence re-checks the flag after the
/// drain. Without the re-check, a stop whose DIRTY bit the drain consumed is slept through.
#[test]
fn a_stop_request_racing_the_core_going_idle_is_never_lost() {
    loom::model(|| {
        let core = ModelCore::new(None, false);
        let stopper = {
            let shared = core.shared.clone();
            thread::spawn(move || shared.request_stop())
        };
        assert_eq!(run::<_, Pending<()>>(&core, None), None);
        stopper.join().unwrap();
        core.assert_one_wake_per_sleep();
    });
}

/// A burst of two hand-overs (a waker, then the one the `block_on` future waits for) racing
/// the core going to sleep: both are delivered, and each sleep is woken once (the second push
/// of a burst finds the word already lowered to "running").
#[test]
fn a_remote_hand_over_racing_the_core_going_to_sleep_is_never_lost_and_wakes_once() {
    loom::model(|| {
        let core = ModelCore::new(Some(ARMED), false);
        let first = Arc::new(Signal::default());
        let last = Arc::new(Signal::default());
        let pusher = {
            let shared = core.shared.clone();
            let (first, last) = (first.clone(), last.clone());
            thread::spawn(move || {
                assert!(shared.push_now(Due::Wake(Waker::from(first))));
                assert!(shared.push_now(Due::Wake(Waker::from(last))));
            })
        };
        let main = pin!(poll_fn(|cx| last.poll_wait(cx)));
        assert_eq!(run(&core, Some(main)), Some(()));
        pusher.join().unwrap();
        assert_eq!(core.applied.get(), 2);
        assert!(first.set.load(Ordering::Acquire));
        core.assert_one_wake_per_sleep();
        assert!(core.wakes_sent() <= 2);
    });
}

/// The core sleeps until its armed timer, which fires while a remote hand-over decides to wake
/// it; the core then shuts down. The hand-over is applied, in `close`'s batch, or refused,
/// exactly one of the three; and the kick, serialised with `close` by the unparker's lock,
/// never writes the eventfd after `close` returned.
#[test]
fn shutdown_racing_a_wake_that_takes_the_unparker_loses_nothing_and_writes_no_closed_eventfd() {
    loom::model(|| {
        let core = ModelCore::new(Some(ARMED), true);
        let delivered = Arc::new(Signal::default());
        let pusher = {
            let shared = core.shared.clone();
            let delivered = delivered.clone();
            thread::spawn(move || shared.push_now(Due::Wake(Waker::from(delivered))))
        };
        // One turn of the loop (it goes idle, sleeps, and wakes by its timer), the last drain
        // of shutdown, then the close, which lets the unparker go: from its return on, the
        // eventfd may be closed.
        let main = MainWaker::new(core.shared.clone(), false);
        assert_eq!(turn(&core, &main, &mut 0), Step::Idled);
        take_handed_over(&core);
        let left = close(&core.shared);
        core.eventfd.closed.store(true, Ordering::Release);
        let taken = pusher.join().unwrap();
        let (applied, in_batch) = (core.applied.get(), left.len());
        drop(left);
        assert_eq!(
            applied + in_batch + usize::from(!taken),
            1,
            "applied {applied}, left in the inbox {in_batch}, taken by the push {taken}"
        );
        assert_eq!(delivered.set.load(Ordering::Acquire), applied == 1);
        let writes = core.eventfd.writes.load(Ordering::Relaxed);
        assert!(writes <= core.wakes_sent() && core.wakes_sent() <= core.blocks.get());
        assert!(
            !core.shared.push_now(Due::Wake(Waker::from(delivered))),
            "closed for good"
        );
    });
}
