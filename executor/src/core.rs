//! One core: its run queue, timers, reactor and loop.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use async_task::Runnable;
use slab::Slab;
use tickless_io::{EnterGuard, Reactor, Unparker};
use tickless_timer::{Config, Handover, Op, Slack, TimerHandle, TimerQueue, Wake as WakeDecision};

use crate::clock::{nanos, Clock};
use crate::device::TimerFdDevice;
use crate::stats::{CoreStats, Published};

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

/// What a core's timer wheel and inbox carry: a waker to wake, or a task to run.
pub(crate) enum TimerValue {
    /// A `Sleep`'s task.
    Wake(Waker),
    /// A task handed to the core (`Handle::spawn`, `spawn_at`, a wake from another thread).
    Run(Runnable),
}

/// Everything a core needs to know, from the runtime, to start.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CoreConfig {
    /// Wheel policy and resolution.
    pub(crate) timer: Config,
    /// Slack of timers that give none.
    pub(crate) default_slack: Slack,
    /// Paused time.
    pub(crate) paused: bool,
    /// Idle spin window (zero: park at once).
    pub(crate) spin: Duration,
    /// The runtime-wide instant that is 0 ns on every core's clock.
    pub(crate) epoch: std::time::Instant,
    /// Wake a sleeping core on every hand-over (the experiment's baseline).
    pub(crate) always_wake: bool,
}

/// The part of a core other threads may touch: its inbox and its eventfd.
pub(crate) struct Shared {
    /// Which core.
    pub(crate) id: CoreId,
    /// Every cross-thread hand-off (timers, woken tasks, spawns) and the sleep word.
    pub(crate) handover: Handover<TimerValue>,
    /// Writes the core's eventfd; `None` once the core is gone (which closes the eventfd even
    /// while wakers of its tasks live on). Locked only to wake a sleeping core.
    unparker: Mutex<Option<Unparker>>,
    /// Set to ask the core's loop to stop.
    pub(crate) stop: AtomicBool,
    /// The core's counters as of its last idle transition, for other threads.
    pub(crate) published: Published,
    /// The runtime-wide epoch, to convert instants into this core's nanoseconds.
    pub(crate) epoch: std::time::Instant,
}

impl Shared {
    /// Schedules a task woken on another thread: through the inbox, waking the core only if it
    /// sleeps (once per burst). After the core closed, the task is already gone: drop it.
    pub(crate) fn schedule_remote(&self, runnable: Runnable) {
        self.push(Op::Now(TimerValue::Run(runnable)));
    }

    /// Hands an operation to the core, waking it if the sleep-word rule says so. An operation
    /// refused by a closed core is dropped here.
    pub(crate) fn push(&self, op: Op<TimerValue>) {
        match self.handover.push(op) {
            Ok(decision) => self.kick(decision),
            Err(refused) => drop(refused),
        }
    }

    /// Acts on the sleep-word rule's decision.
    pub(crate) fn kick(&self, decision: WakeDecision) {
        if decision == WakeDecision::Needed {
            if let Some(u) = &*self.unparker.lock().unwrap_or_else(|e| e.into_inner()) {
                u.unpark();
            }
        }
    }

    /// Asks the core to stop, waking it.
    pub(crate) fn request_stop(&self) {
        self.stop.store(true, Ordering::Release);
        self.kick(self.handover.notify(0));
    }

    /// Whether the core has published that it sleeps.
    pub(crate) fn is_parked(&self) -> bool {
        self.handover.sleeping_until().is_some()
    }

    /// Nanoseconds since the epoch of an instant.
    pub(crate) fn ns(&self, instant: std::time::Instant) -> u64 {
        nanos(instant.saturating_duration_since(self.epoch))
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
        shared.push(Op::Cancel(handle));
    }
}

/// Counters only the core touches.
#[derive(Default)]
struct Counters {
    /// Task polls (the `block_on` future included).
    polls: Cell<u64>,
    /// Blocking waits in epoll.
    parks: Cell<u64>,
    /// Idle transitions spent spinning instead of parking.
    spins: Cell<u64>,
}

fn bump(c: &Cell<u64>) {
    c.set(c.get() + 1);
}

/// One core's state, owned by its thread.
pub(crate) struct Core {
    /// What other threads may touch.
    pub(crate) shared: Arc<Shared>,
    /// Runnable tasks, woken on this thread.
    queue: RefCell<VecDeque<Runnable>>,
    /// The timers.
    pub(crate) timers: RefCell<TimerQueue<TimerValue, TimerFdDevice>>,
    /// The I/O driver.
    reactor: Rc<Reactor>,
    /// Real or paused time.
    pub(crate) clock: Clock,
    /// `now` as of the last expiry: deadlines at or before it are already due.
    pub(crate) last_now: Cell<u64>,
    /// Wakers of every live task that has been polled, so that shutdown can reach the ones
    /// nobody will wake.
    pub(crate) active: RefCell<Slab<Waker>>,
    /// Slack of timers that give none.
    pub(crate) default_slack: Slack,
    /// Idle spin window in nanoseconds.
    spin_ns: u64,
    /// Counters.
    counters: Counters,
    /// Hand-overs taken in one go, kept to reuse the allocation.
    ops_buf: RefCell<Vec<Op<TimerValue>>>,
    /// Timers fired in one batch, kept to reuse the allocation.
    fired_buf: Cell<Vec<TimerValue>>,
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

/// Makes a core current on this thread (and its reactor) until dropped, then restores the
/// core that was current before (none, except while a runtime is dropped inside another).
pub(crate) struct Entered {
    /// The reactor's own guard.
    _reactor: EnterGuard,
    /// The core current before.
    previous: Option<Rc<Core>>,
}

impl Drop for Entered {
    fn drop(&mut self) {
        let previous = self.previous.take();
        let _gone = CURRENT.try_with(|c| c.replace(previous));
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
    pub(crate) fn new(id: CoreId, config: CoreConfig) -> io::Result<Rc<Core>> {
        let reactor = Reactor::new()?;
        let clock = Clock::new(config.epoch, config.paused);
        let device = TimerFdDevice {
            reactor: reactor.clone(),
            epoch_mono: clock.epoch_mono,
            paused: config.paused,
        };
        let shared = Arc::new(Shared {
            id,
            handover: if config.always_wake {
                Handover::always_waking()
            } else {
                Handover::new()
            },
            unparker: Mutex::new(Some(reactor.unparker())),
            stop: AtomicBool::new(false),
            published: Published::default(),
            epoch: config.epoch,
        });
        registry().push((id, Arc::downgrade(&shared)));
        Ok(Rc::new(Core {
            shared,
            queue: RefCell::new(VecDeque::new()),
            timers: RefCell::new(TimerQueue::new(device, config.timer)),
            reactor,
            clock,
            last_now: Cell::new(0),
            active: RefCell::new(Slab::new()),
            default_slack: config.default_slack,
            spin_ns: nanos(config.spin),
            counters: Counters::default(),
            ops_buf: RefCell::new(Vec::new()),
            fired_buf: Cell::new(Vec::new()),
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
            previous: None,
        }
    }

    /// Makes this core current even inside another runtime's context, for its shutdown: the
    /// destructors of its tasks must find their own core (its live-task set, its timers).
    pub(crate) fn enter_for_shutdown(self: &Rc<Self>) -> Entered {
        let previous = CURRENT.with(|c| c.borrow_mut().replace(self.clone()));
        Entered {
            _reactor: self.reactor.enter(),
            previous,
        }
    }

    /// Queues a task woken on this thread: no atomic on the queue, no syscall.
    pub(crate) fn schedule_local(&self, runnable: Runnable) {
        self.queue.borrow_mut().push_back(runnable);
    }

    /// Runs the loop until `main` completes.
    pub(crate) fn block_on<F: Future>(self: &Rc<Self>, main: F) -> F::Output {
        let mut main = std::pin::pin!(main);
        self.run(Some(main.as_mut()))
            .expect("the loop returns only with the output while there is a main future")
    }

    /// Runs the loop until the runtime asks the core to stop (cores other than core 0).
    pub(crate) fn run_until_stopped(self: &Rc<Self>) {
        self.run::<std::future::Pending<()>>(None);
    }

    /// The loop. Returns the main future's output, or `None` when asked to stop.
    fn run<F: Future>(self: &Rc<Self>, mut main: Option<Pin<&mut F>>) -> Option<F::Output> {
        let main_waker = Arc::new(MainWaker {
            woken: AtomicBool::new(main.is_some()),
            shared: self.shared.clone(),
        });
        let waker = Waker::from(main_waker.clone());
        let mut cx = Context::from_waker(&waker);
        let mut since_io = 0u64;
        loop {
            if let Some(main) = main.as_mut() {
                if main_waker.woken.swap(false, Ordering::AcqRel) {
                    bump(&self.counters.polls);
                    if let Poll::Ready(out) = main.as_mut().poll(&mut cx) {
                        self.publish();
                        return Some(out);
                    }
                }
            }
            if self.shared.stop.load(Ordering::Acquire) {
                self.publish();
                return None;
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

    /// Takes tasks woken, tasks spawned and timers handed over from other threads.
    fn take_handed_over(&self) {
        if !self.shared.handover.is_dirty() {
            return;
        }
        let mut ops = self.ops_buf.borrow_mut();
        self.shared.handover.drain(&mut ops);
        for op in ops.drain(..) {
            match op {
                Op::Now(TimerValue::Run(r)) => self.schedule_local(r),
                Op::Now(TimerValue::Wake(w)) => w.wake(),
                Op::Insert {
                    deadline,
                    slack,
                    value,
                } => {
                    self.timers.borrow_mut().insert(deadline, slack, value);
                }
                Op::Cancel(handle) => {
                    self.timers.borrow_mut().cancel(handle);
                }
            }
        }
    }

    /// Fires due timers, a budget's worth. Returns whether due timers remain.
    ///
    /// The timerfd announces every timer it is armed for, and its expiry already advanced the
    /// wheel with the reactor's clock reading: the clock is read here only for timers the
    /// device does not know about (or when time is paused, where reads are free).
    fn expire_timers(&self) -> bool {
        let mut fired = {
            let mut timers = self.timers.borrow_mut();
            if timers.needs_clock() || self.clock.is_paused() {
                if timers.is_empty() {
                    return false;
                }
                let now = self.clock.now();
                self.last_now.set(now);
                timers.advance(now);
            }
            if !timers.has_expired() {
                return false;
            }
            let mut fired = self.fired_buf.take();
            while fired.len() < TIMER_BUDGET {
                match timers.pop_expired() {
                    Some((_, value)) => fired.push(value),
                    None => break,
                }
            }
            fired
        };
        let more = fired.len() == TIMER_BUDGET;
        // Fire outside the borrow: a waker may touch the timers.
        for value in fired.drain(..) {
            match value {
                TimerValue::Wake(w) => w.wake(),
                TimerValue::Run(r) => self.schedule_local(r),
            }
        }
        // Keep the allocation for the next batch.
        self.fired_buf.replace(fired);
        more
    }

    /// Polls I/O once, and handles a timerfd expiry. Returns whether any event came.
    fn poll_io(&self, timeout: Option<Duration>) -> bool {
        let polled = match self.reactor.poll(timeout) {
            Ok(p) => p,
            // epoll_wait on a valid epoll fd fails only on a broken invariant.
            Err(e) => panic!("tickless: polling the core's epoll instance failed: {e}"),
        };
        if let Some(mono) = polled.fired_at_mono {
            // The reactor read the clock to confirm the expiry: no second read.
            let now = self.clock.now_from_mono(mono);
            self.last_now.set(self.last_now.get().max(now));
            self.timers.borrow_mut().device_fired(now);
        }
        polled.events > 0
    }

    /// Whether something is runnable or handed over.
    fn has_work(&self) -> bool {
        !self.queue.borrow().is_empty() || self.shared.handover.is_dirty()
    }

    /// Nothing is runnable: spin if the next timer is close, else apply the deferred re-arm,
    /// publish the sleep and block in epoll.
    fn idle(&self) {
        if self.clock.is_paused() {
            self.timers.borrow_mut().on_idle();
            return self.idle_paused();
        }
        if self.spin_ns > 0 && self.spin() {
            return;
        }
        let armed = self.timers.borrow_mut().on_idle();
        self.publish();
        // A stop request sets the flag, then DIRTY: if our drain consumed its DIRTY, the flag
        // is visible now, and if not, `try_sleep` fails on the DIRTY bit. Checking it only at
        // the top of the loop would lose a stop that raced the drain.
        if self.shared.stop.load(Ordering::Acquire) {
            return;
        }
        if !self.shared.handover.try_sleep(armed) {
            // Something was handed over since we last looked: take it instead of sleeping.
            return;
        }
        bump(&self.counters.parks);
        self.poll_io(None);
        self.shared.handover.woke();
    }

    /// The idle governor: polls I/O without blocking for up to the spin window, or until the
    /// next timer if that is sooner (computed from every timer the core holds: the handed-over
    /// ones were taken just before). Returns `true` if the core found work (or a timer became
    /// due) and should not park.
    fn spin(&self) -> bool {
        let start = self.clock.now();
        let next = self.timers.borrow_mut().next_expiration();
        let timer_soon = next.is_some_and(|t| t.saturating_sub(start) < self.spin_ns);
        let until = match next {
            Some(t) if timer_soon => t,
            _ => start.saturating_add(self.spin_ns),
        };
        bump(&self.counters.spins);
        loop {
            if self.poll_io(Some(Duration::ZERO)) || self.has_work() {
                return true;
            }
            let now = self.clock.now();
            if now >= until {
                if timer_soon {
                    // The timer is due: expire it on the next turn, without parking.
                    self.last_now.set(now);
                    self.timers.borrow_mut().advance(now);
                    return true;
                }
                return false;
            }
            std::hint::spin_loop();
        }
    }

    /// Paused time: poll I/O without blocking; if nothing happened, jump to the next timer.
    fn idle_paused(&self) {
        self.poll_io(Some(Duration::ZERO));
        if self.has_work() {
            return;
        }
        let next = self.timers.borrow_mut().next_expiration();
        match next {
            Some(t) => self.clock.advance_to(t),
            None => {
                // No timer will ever move paused time: wait for I/O or another thread.
                self.publish();
                if self.shared.stop.load(Ordering::Acquire) {
                    return;
                }
                if self.shared.handover.try_sleep(None) {
                    bump(&self.counters.parks);
                    self.poll_io(None);
                    self.shared.handover.woke();
                }
            }
        }
    }

    /// Drops every task's future, on this thread: wake them all so each is queued, then drop
    /// the queued runnables (which drops a task's future without polling it). Then closes the
    /// inbox and drops what it held, and the timers.
    pub(crate) fn shutdown(&self) {
        loop {
            let wakers: Vec<Waker> = self.active.borrow_mut().drain().collect();
            for w in wakers {
                w.wake();
            }
            self.take_handed_over();
            let next = self.queue.borrow_mut().pop_front();
            match next {
                Some(runnable) => drop(runnable),
                None if self.active.borrow().is_empty() => break,
                None => {}
            }
        }
        // From here on, hand-overs are refused and dropped by their pushers; the tasks they
        // carry are already closed, or are remote spawns whose futures are `Send`.
        drop(self.shared.handover.close());
        self.publish();
        // Timers hold wakers and `spawn_at` tasks; drop them here, in the core's context.
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
        registry().retain(|(id, _)| *id != self.id());
        self.shared
            .unparker
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
    }

    /// Publishes the counters for other threads (plain stores, no read-modify-write). Core 0
    /// never needs to: it is the runtime's own thread, which reads its counters directly.
    fn publish(&self) {
        if self.shared.id.index != 0 {
            self.shared.published.store(&self.stats());
        }
    }

    /// This core's counters, exact (on its own thread).
    pub(crate) fn stats(&self) -> CoreStats {
        let t = self.timers.borrow().stats() + self.shared.handover.stats();
        let io = self.reactor.stats();
        CoreStats {
            polls: self.counters.polls.get(),
            parks: self.counters.parks.get(),
            spins: self.counters.spins.get(),
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
