//! One core: its run queue, timers, reactor and loop.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use async_task::Runnable;
use slab::Slab;
use tickless_io::{EnterGuard, Reactor, Unparker};
use tickless_timer::{Config, Handover, Op, Slack, TimerHandle, TimerQueue, Wake as WakeDecision};

use crate::clock::Clock;
use crate::device::TimerFdDevice;
use crate::stats::CoreStats;

/// Task polls in a row before the loop turns to I/O and timers.
const TASK_BUDGET: usize = 128;
/// Timers fired in one batch before the loop turns back to tasks and I/O.
const TIMER_BUDGET: usize = 1024;
/// Task polls between two non-blocking I/O polls while tasks keep the core busy.
const IO_INTERVAL: u64 = 61;

/// Identifies a core across runtimes: the runtime's number and the core's index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct CoreId {
    /// Unique per runtime in the process.
    pub(crate) runtime: u64,
    /// Index of the core in its runtime.
    pub(crate) index: usize,
}

impl CoreId {
    pub(crate) fn new_runtime() -> u64 {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        NEXT.fetch_add(1, Ordering::Relaxed)
    }
}

/// The part of a core other threads may touch: its inbox and its unparker.
pub(crate) struct Shared {
    /// Which core.
    pub(crate) id: CoreId,
    /// Timer inserts and cancels from other threads, and the published sleep word.
    pub(crate) handover: Handover<Waker>,
    /// Tasks woken from other threads.
    pub(crate) remote: Mutex<Vec<Runnable>>,
    /// Writes the core's eventfd.
    unparker: Unparker,
    /// Set once the core has dropped every task's future: remote wakes are then dropped.
    pub(crate) closed: AtomicBool,
}

impl Shared {
    /// Schedules a task woken on another thread: through the inbox, waking the core only if it
    /// sleeps (once per burst).
    pub(crate) fn schedule_remote(&self, runnable: Runnable) {
        if self.closed.load(Ordering::Acquire) {
            // The core has shut down and dropped every task's future on its own thread: this
            // runnable's task is closed, and dropping it here drops no future.
            drop(runnable);
            return;
        }
        self.remote
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(runnable);
        self.kick(self.handover.notify(0));
    }

    /// Hands a timer operation to the core.
    pub(crate) fn push_timer(&self, op: Op<Waker>) {
        self.kick(self.handover.push(op));
    }

    /// Acts on the sleep-word rule's decision.
    fn kick(&self, decision: WakeDecision) {
        if decision == WakeDecision::Needed {
            self.unparker.unpark();
        }
    }
}

/// Every live core of every runtime in the process, for the rare operations that must reach a
/// core from a thread that is not running it (a `Sleep` dropped on another thread).
static REGISTRY: Mutex<Vec<(CoreId, Weak<Shared>)>> = Mutex::new(Vec::new());

fn registry() -> std::sync::MutexGuard<'static, Vec<(CoreId, Weak<Shared>)>> {
    REGISTRY.lock().unwrap_or_else(|e| e.into_inner())
}

/// Cancels a timer of `core` from another thread: through its inbox, waking nobody. A core
/// that is gone has no timer to cancel.
pub(crate) fn remote_cancel(core: CoreId, handle: TimerHandle) {
    let shared = registry()
        .iter()
        .find(|(id, _)| *id == core)
        .and_then(|(_, w)| w.upgrade());
    if let Some(shared) = shared {
        shared.push_timer(Op::Cancel(handle));
    }
}

/// Counters only the core touches.
#[derive(Default)]
struct Counters {
    /// Task polls (the `block_on` future included).
    polls: Cell<u64>,
    /// Blocking waits in epoll.
    parks: Cell<u64>,
}

fn bump(c: &Cell<u64>) {
    c.set(c.get() + 1);
}

/// One core's state, owned by its thread.
pub(crate) struct Core {
    /// What other threads may touch.
    pub(crate) shared: Arc<Shared>,
    /// Runnable tasks, woken on this thread.
    pub(crate) queue: RefCell<VecDeque<Runnable>>,
    /// The timers; values are the wakers to wake.
    pub(crate) timers: RefCell<TimerQueue<Waker, TimerFdDevice>>,
    /// The I/O driver.
    pub(crate) reactor: Rc<Reactor>,
    /// Real or paused time.
    pub(crate) clock: Clock,
    /// `now` as of the last expiry: deadlines at or before it are already due.
    pub(crate) last_now: Cell<u64>,
    /// Wakers of every live task, so that shutdown can reach the ones nobody will wake.
    pub(crate) active: RefCell<Slab<Waker>>,
    /// Slack of `sleep` when none is given.
    pub(crate) default_slack: Slack,
    /// Counters.
    counters: Counters,
    /// Remote-woken tasks taken in one go, kept to reuse the allocation.
    remote_buf: RefCell<Vec<Runnable>>,
    /// Timer operations taken in one go, kept to reuse the allocation.
    ops_buf: RefCell<Vec<Op<Waker>>>,
}

thread_local! {
    /// The core running on this thread, if any.
    static CURRENT: RefCell<Option<Rc<Core>>> = const { RefCell::new(None) };
}

/// Runs `f` with the core of this thread; `None` outside a runtime (or during thread exit).
pub(crate) fn with_current<R>(f: impl FnOnce(&Rc<Core>) -> R) -> Option<R> {
    CURRENT
        .try_with(|c| c.borrow().as_ref().map(f))
        .ok()
        .flatten()
}

/// The message every API that needs a runtime panics with outside one.
pub(crate) const NO_RUNTIME: &str =
    "this function must be called from a task or `block_on` of a tickless runtime";

/// Makes a core current on this thread (and its reactor) until dropped.
pub(crate) struct Entered {
    /// The reactor's own guard.
    _reactor: EnterGuard,
}

impl Drop for Entered {
    fn drop(&mut self) {
        let _gone = CURRENT.try_with(|c| c.borrow_mut().take());
    }
}

/// The `block_on` future's waker: a flag, plus the inbox path when woken from another thread.
struct MainWaker {
    /// Set when the main future should be polled again.
    woken: AtomicBool,
    /// The core's shared half.
    shared: Arc<Shared>,
}

impl Wake for MainWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::Release);
        let here = with_current(|c| Arc::ptr_eq(&c.shared, &self.shared)).unwrap_or(false);
        if !here {
            self.shared.kick(self.shared.handover.notify(0));
        }
    }
}

impl Core {
    pub(crate) fn new(
        id: CoreId,
        config: Config,
        default_slack: Slack,
        paused: bool,
    ) -> io::Result<Rc<Core>> {
        let reactor = Reactor::new()?;
        let clock = Clock::new(paused);
        let device = TimerFdDevice {
            reactor: reactor.clone(),
            epoch_mono: clock.epoch_mono,
            paused,
        };
        let shared = Arc::new(Shared {
            id,
            handover: Handover::new(),
            remote: Mutex::new(Vec::new()),
            unparker: reactor.unparker(),
            closed: AtomicBool::new(false),
        });
        registry().push((id, Arc::downgrade(&shared)));
        Ok(Rc::new(Core {
            shared,
            queue: RefCell::new(VecDeque::new()),
            timers: RefCell::new(TimerQueue::new(device, config)),
            reactor,
            clock,
            last_now: Cell::new(0),
            active: RefCell::new(Slab::new()),
            default_slack,
            counters: Counters::default(),
            remote_buf: RefCell::new(Vec::new()),
            ops_buf: RefCell::new(Vec::new()),
        }))
    }

    pub(crate) fn id(&self) -> CoreId {
        self.shared.id
    }

    /// Makes this core current on this thread.
    ///
    /// # Panics
    ///
    /// If a core is already current here: runtimes do not nest.
    pub(crate) fn enter(self: &Rc<Self>) -> Entered {
        CURRENT.with(|c| {
            let mut c = c.borrow_mut();
            assert!(
                c.is_none(),
                "cannot start a tickless runtime from within a runtime: `block_on` was called \
                 from a task or from inside another `block_on`"
            );
            *c = Some(self.clone());
        });
        Entered {
            _reactor: self.reactor.enter(),
        }
    }

    /// Queues a task woken on this thread: no atomic on the queue, no syscall.
    pub(crate) fn schedule_local(&self, runnable: Runnable) {
        self.queue.borrow_mut().push_back(runnable);
    }

    /// Runs the loop until `main` completes.
    pub(crate) fn block_on<F: Future>(self: &Rc<Self>, main: F) -> F::Output {
        let mut main = std::pin::pin!(main);
        let main_waker = Arc::new(MainWaker {
            woken: AtomicBool::new(true),
            shared: self.shared.clone(),
        });
        let waker = Waker::from(main_waker.clone());
        let mut cx = Context::from_waker(&waker);
        let mut since_io = 0u64;
        loop {
            if main_waker.woken.swap(false, Ordering::AcqRel) {
                bump(&self.counters.polls);
                if let Poll::Ready(out) = main.as_mut().poll(&mut cx) {
                    return out;
                }
            }
            since_io += self.run_tasks() as u64;
            self.take_handed_over();
            let timers_left = self.expire_timers();
            let busy = timers_left
                || !self.queue.borrow().is_empty()
                || main_waker.woken.load(Ordering::Acquire);
            if busy {
                if since_io >= IO_INTERVAL {
                    since_io = 0;
                    self.poll_io(Some(Duration::ZERO));
                }
                continue;
            }
            since_io = 0;
            self.idle();
        }
    }

    /// Runs queued tasks, at most a budget's worth. Returns how many ran.
    fn run_tasks(&self) -> usize {
        let mut ran = 0;
        while ran < TASK_BUDGET {
            // Pop in its own statement: a task may wake others while it runs.
            let next = self.queue.borrow_mut().pop_front();
            let Some(runnable) = next else { break };
            bump(&self.counters.polls);
            runnable.run();
            ran += 1;
        }
        ran
    }

    /// Takes tasks woken and timers handed over from other threads.
    fn take_handed_over(&self) {
        if !self.shared.handover.is_dirty() {
            return;
        }
        let mut ops = self.ops_buf.borrow_mut();
        self.shared.handover.drain(&mut ops);
        {
            let mut remote = self.remote_buf.borrow_mut();
            std::mem::swap(
                &mut *remote,
                &mut *self.shared.remote.lock().unwrap_or_else(|e| e.into_inner()),
            );
            self.queue.borrow_mut().extend(remote.drain(..));
        }
        if ops.is_empty() {
            return;
        }
        let mut timers = self.timers.borrow_mut();
        for op in ops.drain(..) {
            match op {
                Op::Insert {
                    deadline,
                    slack,
                    value,
                } => {
                    timers.insert(deadline, slack, value);
                }
                Op::Cancel(handle) => {
                    timers.cancel(handle);
                }
            }
        }
    }

    /// Fires due timers, a budget's worth; `now` is read once. Returns whether due timers remain.
    fn expire_timers(&self) -> bool {
        let mut fired = Vec::new();
        {
            let mut timers = self.timers.borrow_mut();
            if timers.is_empty() {
                return false;
            }
            let now = self.clock.now();
            self.last_now.set(now);
            timers.advance(now);
            while fired.len() < TIMER_BUDGET {
                match timers.pop_expired() {
                    Some((_, waker)) => fired.push(waker),
                    None => break,
                }
            }
        }
        let more = fired.len() == TIMER_BUDGET;
        // Wake outside the borrow: a woken task may be polled... later, but its waker may
        // also touch the timers (a `Sleep` dropped by a waker, say).
        for waker in fired {
            waker.wake();
        }
        more
    }

    /// Polls I/O once, and handles a timerfd expiry.
    fn poll_io(&self, timeout: Option<Duration>) {
        let polled = match self.reactor.poll(timeout) {
            Ok(p) => p,
            // epoll_wait on a valid epoll fd fails only on a broken invariant.
            Err(e) => panic!("tickless: polling the core's epoll instance failed: {e}"),
        };
        if polled.timer_fired {
            let now = self.clock.now();
            self.last_now.set(now);
            self.timers.borrow_mut().device_fired(now);
        }
    }

    /// Nothing is runnable: apply the deferred re-arm, publish the sleep and block in epoll.
    fn idle(&self) {
        let armed = self.timers.borrow_mut().on_idle();
        if self.clock.is_paused() {
            return self.idle_paused();
        }
        if !self.shared.handover.try_sleep(armed) {
            // Something was handed over since we last looked: take it instead of sleeping.
            return;
        }
        bump(&self.counters.parks);
        self.poll_io(None);
        self.shared.handover.woke();
    }

    /// Paused time: poll I/O without blocking; if nothing happened, jump to the next timer.
    fn idle_paused(&self) {
        self.poll_io(Some(Duration::ZERO));
        if !self.queue.borrow().is_empty() || self.shared.handover.is_dirty() {
            return;
        }
        let next = self.timers.borrow().next_expiration();
        match next {
            Some(t) => self.clock.advance_to(t),
            None => {
                // No timer will ever move paused time: wait for I/O or another thread.
                if self.shared.handover.try_sleep(None) {
                    bump(&self.counters.parks);
                    self.poll_io(None);
                    self.shared.handover.woke();
                }
            }
        }
    }

    /// Drops every task's future, on this thread: wake them all so each is queued, then drop
    /// the queued runnables (which drops a task's future without polling it).
    pub(crate) fn shutdown(&self) {
        loop {
            let wakers: Vec<Waker> = self.active.borrow_mut().drain().collect();
            for w in wakers {
                w.wake();
            }
            let remote =
                std::mem::take(&mut *self.shared.remote.lock().unwrap_or_else(|e| e.into_inner()));
            self.queue.borrow_mut().extend(remote);
            let next = self.queue.borrow_mut().pop_front();
            match next {
                Some(runnable) => drop(runnable),
                None if self.active.borrow().is_empty() => break,
                None => {}
            }
        }
        // Timers hold task wakers; the tasks are gone, so are the values.
        let timers = std::mem::replace(
            &mut *self.timers.borrow_mut(),
            TimerQueue::new(
                TimerFdDevice {
                    reactor: self.reactor.clone(),
                    epoch_mono: self.clock.epoch_mono,
                    paused: true,
                },
                Config::default(),
            ),
        );
        drop(timers);
        // Wakes racing in from other threads until now went to the inbox and were dropped
        // above; from here on they are dropped where they happen.
        self.shared.closed.store(true, Ordering::Release);
        registry().retain(|(id, _)| *id != self.id());
        self.shared
            .remote
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }

    /// This core's counters.
    pub(crate) fn stats(&self) -> CoreStats {
        let t = self.timers.borrow().stats() + self.shared.handover.stats();
        let io = self.reactor.stats();
        CoreStats {
            polls: self.counters.polls.get(),
            parks: self.counters.parks.get(),
            spins: 0,
            timer_inserts: t.inserts,
            timer_cancels: t.cancels,
            timer_fires: t.fires,
            timerfd_rearms: t.rearms,
            timerfd_spurious: t.spurious,
            remote_wakes_sent: t.remote_wakes_sent,
            remote_wakes_avoided: t.remote_wakes_avoided,
            clock_reads: self.clock.reads(),
            io_polls: io.polls,
            io_events: io.events,
        }
    }
}
