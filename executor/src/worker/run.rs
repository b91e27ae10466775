//! The per-core loop: poll the `block_on` future when woken, run tasks, take what other
//! threads handed over, expire timers, poll I/O, and go idle when nothing is runnable.
//!
//! The loop is written once, generic over a [`Driver`] (the core's single-threaded side):
//! production runs it on [`Core`], and the loom models in `loom-tests/` run the very same
//! functions on a model core whose "epoll" is a thread park. A change to the sequence here is a
//! change to what the models check.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use tickless_io::internal::Reactor;
use tickless_timer::internal::Op;

use super::block_on::MainWaker;
use super::device::ClockDevice;
use super::loop_watch::LoopHistograms;
use super::shared::{Due, Runnable, Shared, Unpark};
use super::{bump, Core};
use crate::catch::drop_caught;
use crate::histogram::Histogram;

/// Task polls in a row before the loop turns to I/O and timers.
const TASK_BUDGET: usize = 128;
/// Task polls between two non-blocking I/O polls while tasks keep the core busy.
const IO_INTERVAL: u64 = 61;

/// The single-threaded side of a core, as the loop drives it.
pub trait Driver {
    /// What wakes the core from another thread.
    type Unpark: Unpark;
    /// The part other threads touch.
    fn shared(&self) -> &Arc<Shared<Self::Unpark>>;
    /// A poll of the `block_on` future is about to start (the loop counts it, in the watch's
    /// poll word).
    fn main_poll_starts(&self);
    /// Runs queued tasks, at most a budget's worth; returns how many ran.
    fn run_tasks(&self) -> usize;
    /// The buffer the inbox is drained into (kept to reuse its allocation).
    fn ops_buffer(&self) -> &RefCell<Vec<Op<Due>>>;
    /// Acts on one operation handed over by another thread.
    fn apply(&self, op: Op<Due>);
    /// Fires due timers, a budget's worth; returns whether due timers remain.
    fn expire_timers(&self) -> bool;
    /// Whether tasks are queued.
    fn has_ready_tasks(&self) -> bool;
    /// Polls I/O without blocking (fairness while tasks keep the core busy).
    fn poll_io_now(&self);
    /// Nothing is runnable: go idle (production: the paused clock, the idle governor, or
    /// [`idle::sleep`](super::idle::sleep)).
    fn idle(&self);
    /// The idle flush: applies the deferred re-arm; returns the instant the clock event device
    /// is programmed for (the core's own wakeup).
    fn flush_rearm(&self) -> Option<u64>;
    /// Publishes the counters for other threads.
    fn publish(&self);
    /// Blocks until an event: I/O, the clock event device (programmed for `programmed`, what
    /// [`flush_rearm`](Self::flush_rearm) returned), or an unpark.
    fn block(&self, programmed: Option<u64>);
}

/// What one turn ended with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Something is runnable: turn again at once.
    Busy,
    /// The core went idle (and may have slept); turn again.
    Idled,
    /// A stop was requested.
    Stop,
}

/// Runs the loop until `main` completes (`Some(output)`), or, without a main future, until a
/// stop is requested (`None`).
pub fn run<D: Driver, F: Future>(d: &D, mut main: Option<Pin<&mut F>>) -> Option<F::Output> {
    let main_waker = MainWaker::new(d.shared().clone(), main.is_some());
    let waker = Waker::from(main_waker.clone());
    let mut cx = Context::from_waker(&waker);
    let mut since_io = 0u64;
    // The poll word (`worker::watch`): held here, so that a poll costs no look-up of it.
    let watch = &d.shared().watch;
    loop {
        if let Some(main) = main.as_mut() {
            if main_waker.take() {
                d.main_poll_starts();
                watch.main_poll_starts();
                // The main future counts towards I/O fairness as a task does: one that keeps
                // waking itself (a `yield_now` loop) must not keep I/O from being polled.
                since_io += 1;
                let polled = main.as_mut().poll(&mut cx);
                watch.poll_ends();
                if let Poll::Ready(out) = polled {
                    d.publish();
                    return Some(out);
                }
            }
        }
        if turn(d, &main_waker, &mut since_io) == Step::Stop {
            d.publish();
            return None;
        }
    }
}

/// One turn of the loop after the main future's poll: stop check, tasks, hand-overs, timers,
/// then either fairness I/O (busy) or the idle transition.
pub fn turn<D: Driver>(d: &D, main: &MainWaker<D::Unpark>, since_io: &mut u64) -> Step {
    if d.shared().stop_requested() {
        return Step::Stop;
    }
    *since_io += d.run_tasks() as u64;
    take_handed_over(d);
    let timers_left = d.expire_timers();
    if timers_left || d.has_ready_tasks() || main.is_woken() {
        if *since_io >= IO_INTERVAL {
            *since_io = 0;
            d.poll_io_now();
        }
        return Step::Busy;
    }
    *since_io = 0;
    d.idle();
    Step::Idled
}

/// Takes tasks woken, tasks spawned and timers handed over from other threads. Cheap when
/// nothing was (one load).
pub fn take_handed_over<D: Driver>(d: &D) {
    let shared = d.shared();
    if !shared.inbox.is_dirty() {
        return;
    }
    let mut ops = d.ops_buffer().borrow_mut();
    shared.inbox.drain(&mut ops);
    for op in ops.drain(..) {
        d.apply(op);
    }
}

impl Core {
    /// Runs the loop until `main` completes.
    pub(crate) fn block_on<F: Future>(self: &Rc<Self>, main: F) -> F::Output {
        let mut main = std::pin::pin!(main);
        let _slack = self.precise_slack();
        let _running = self.shared.watch.enter();
        self.busy_from_now();
        let out = run(&**self, Some(main.as_mut()))
            .expect("the loop returns only with the output while there is a main future");
        // The busy stretch up to here, for other threads (`run` published before it).
        self.busy_until(self.timers.clock().now());
        self.publish();
        out
    }

    /// Runs the loop until the runtime asks the core to stop (cores other than core 0).
    pub(crate) fn run_until_stopped(&self) {
        let _slack = self.precise_slack();
        let _running = self.shared.watch.enter();
        self.busy_from_now();
        run::<Self, std::future::Pending<()>>(self, None);
        // Published by the shutdown that follows.
        self.busy_until(self.timers.clock().now());
    }

    /// With the epoll device, the thread's kernel timer slack at 1 ns while the loop runs
    /// (core 0 runs on the caller's thread, which gets its own back after).
    fn precise_slack(&self) -> PreciseSlack {
        PreciseSlack(
            (self.timers.device() == ClockDevice::Epoll).then(Reactor::precise_timer_slack),
        )
    }

    /// Polls I/O once, and tells the timers when their device may have fired. Returns whether
    /// any event came.
    pub(crate) fn poll_io(&self, timeout: Option<Duration>) -> bool {
        let polled = self.look(|| self.reactor.poll(timeout));
        self.polled(polled, false)
    }

    /// One look at I/O (`wait`: a poll of the core's epoll instance, or a park in its tokio
    /// runtime), timed into the loop histograms when they are on.
    #[inline]
    fn look<T>(&self, wait: impl FnOnce() -> T) -> T {
        if !self.io_observed {
            return wait();
        }
        match &self.shared.loop_histograms {
            Some(h) => self.look_timed(h, wait),
            None => wait(),
        }
    }

    /// [`look`](Self::look) with the histograms on: the clock read around the wait, and the
    /// tasks it queued counted (`worker::loop_watch`).
    #[inline(never)]
    fn look_timed<T>(&self, h: &LoopHistograms, wait: impl FnOnce() -> T) -> T {
        let clock = self.timers.clock();
        self.loop_watch.io_poll_starts(h, clock.now());
        let queued = self.counters.queued.get();
        let out = wait();
        let woken = self.counters.queued.get() - queued;
        let runnable = self.runnable.get() + self.spilled.get();
        self.loop_watch
            .io_poll_returns(clock.now(), woken, runnable);
        out
    }

    /// After a poll: a timerfd event, or with the epoll device any poll, makes the timers look
    /// at the clock (a read only if something is armed): nothing else tells them the deadline
    /// passed while the core was busy. `woken`: the poll blocked from before the instant the
    /// device was programmed for (its wakeup's latency teaches the lead).
    #[inline]
    fn polled(&self, polled: std::io::Result<tickless_io::internal::Polled>, woken: bool) -> bool {
        let polled = match polled {
            Ok(p) => p,
            // epoll_wait on a valid epoll fd fails only on a broken invariant.
            Err(e) => panic!("tickless: polling the core's epoll instance failed: {e}"),
        };
        if polled.timer_event || self.timers.device() == ClockDevice::Epoll {
            self.timers.device_event(woken);
        }
        polled.events > 0
    }

    /// Whether a park until `programmed` (the device's instant) begins before it, so that the
    /// wakeup's latency can be measured; a clock read, made only when the instant is near by
    /// the loop's last reading (which is never ahead: an instant far by it is far), since the
    /// lead matters for short waits and a timeout seconds out should cost a park nothing.
    fn parks_before(&self, programmed: Option<u64>) -> bool {
        programmed.is_some_and(|p| {
            p.saturating_sub(self.timers.last_now()) <= LEARN_WITHIN_NS
                && p > self.timers.clock().now()
        })
    }
}

/// How near (by the loop's last clock reading) the device's instant must be for a park to
/// read the clock, so that its wakeup teaches the lead.
const LEARN_WITHIN_NS: u64 = 4_000_000;

/// The kernel timer slack the thread had before the loop lowered it, restored on drop.
struct PreciseSlack(Option<u64>);

impl Drop for PreciseSlack {
    fn drop(&mut self) {
        if let Some(ns) = self.0 {
            Reactor::restore_timer_slack(ns);
        }
    }
}

impl Core {
    /// [`run_queued`](Self::run_queued), each poll timed into `times` (the poll-time
    /// histogram) and seen by the loop histograms (`loop_histograms`), whichever are on. Out
    /// of line: the untimed loop stays as small as it was.
    #[inline(never)]
    fn run_timed(
        &self,
        times: Option<&Histogram>,
        loop_histograms: Option<&LoopHistograms>,
    ) -> usize {
        let clock = self.timers.clock();
        self.run_queued(|runnable| {
            let start = times.map(|_| clock.now());
            if let Some(h) = loop_histograms {
                self.loop_watch
                    .task_poll_starts(h, || start.unwrap_or_else(|| clock.now()));
            }
            runnable.run();
            if let Some((times, start)) = times.zip(start) {
                times.record(clock.now().saturating_sub(start));
            }
        })
    }

    /// Runs queued tasks, at most a budget's worth, each by `run`; returns how many ran.
    #[inline(always)]
    fn run_queued(&self, mut run: impl FnMut(Runnable)) -> usize {
        let mut ran = 0;
        // Held, so that a poll costs no look-up of it (the call would make it a reload).
        let watch = &self.shared.watch;
        while ran < TASK_BUDGET {
            // Pop in its own statement: a task may wake others while it runs.
            let next = self.next_task();
            let Some(runnable) = next else { break };
            self.poll_starts();
            // Counts the poll, and tells the stall detector that it runs.
            watch.poll_starts();
            // The task's future catches its own panics (`task::harness`): `run` unwinds only
            // on a broken invariant of the runtime.
            run(runnable);
            watch.poll_ends();
            ran += 1;
        }
        ran
    }
}

impl Driver for Core {
    type Unpark = tickless_io::internal::Unparker;

    fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    #[inline]
    fn main_poll_starts(&self) {
        self.poll_starts();
    }

    fn run_tasks(&self) -> usize {
        if self.spilled.get() > 0 {
            // Spilled tasks get their turn even while local wakes keep the private queue busy.
            self.refill();
        }
        // The histograms pick the loop once a turn, not a branch a poll.
        if self.polls_observed {
            let shared = &self.shared;
            return self.run_timed(shared.poll_times.as_ref(), shared.loop_histograms.as_ref());
        }
        self.run_queued(|runnable| {
            runnable.run();
        })
    }

    fn ops_buffer(&self) -> &RefCell<Vec<Op<Due>>> {
        &self.ops_buf
    }

    fn apply(&self, op: Op<Due>) {
        match op {
            Op::Now(value) => {
                if matches!(value, Due::Schedule(_)) {
                    self.count_remote_schedule();
                }
                self.deliver(value)
            }
            Op::Insert {
                deadline,
                slack,
                value,
            } => self.timers.insert(deadline, slack, value),
            Op::Cancel(handle) => {
                if let Some(value) = self.timers.cancel(handle) {
                    drop_caught(value);
                }
            }
        }
    }

    fn expire_timers(&self) -> bool {
        let mut fired = self.fired_buf.borrow_mut();
        let more = self.timers.expire(&mut fired);
        // Fire outside the queue's borrow: a waker may touch the timers. (Most turns fire
        // nothing: skip the drain, whose drop is out of line.)
        if !fired.is_empty() {
            for value in fired.drain(..) {
                self.deliver(value);
            }
        }
        more
    }

    fn has_ready_tasks(&self) -> bool {
        self.runnable.get() > 0 || self.spilled.get() > 0
    }

    fn poll_io_now(&self) {
        self.poll_io(Some(Duration::ZERO));
        // A busy core takes the ready I/O of peers that do not come back to their loop too,
        // and steps back if the watchdog says the CPUs are crowded.
        self.follow_yield();
        self.harvest_peers(None);
        // The core's tokio runtime (`Builder::tokio_context`) gets its turn too: its tasks,
        // timers and sockets would otherwise wait for the core to go idle.
        if let Some(tokio) = self.tokio() {
            tokio.turn(&self.shared.watch);
        }
    }

    fn idle(&self) {
        self.go_idle();
    }

    fn flush_rearm(&self) -> Option<u64> {
        let armed = self.timers.on_idle();
        // Paused time never arms the real timerfd: the core wakes by itself at no deadline.
        armed.filter(|_| !self.timers.clock().is_paused())
    }

    fn publish(&self) {
        Core::publish(self);
    }

    fn block(&self, programmed: Option<u64>) {
        if let Some(tokio) = self.tokio() {
            // Parked in the core's tokio runtime (`worker/tokio_context.rs`): its wait covers
            // the core's epoll descriptor, which the timerfd's expiry makes readable. But a
            // level-triggered stream still ready after the core's last poll (a read that left
            // bytes behind) is reported again only by a poll of the core's epoll, never as a
            // new edge of its descriptor: poll it first, and park only if it has nothing.
            if self.poll_io(Some(Duration::ZERO)) {
                return;
            }
            bump(&self.counters.parks);
            let woken = self.parks_before(programmed);
            if self.look(|| tokio.park(programmed, &self.shared.watch)) {
                let polled = self.look(|| self.reactor.poll(Some(Duration::ZERO)));
                self.polled(polled, woken);
            }
            return;
        }
        bump(&self.counters.parks);
        match self.timers.device() {
            ClockDevice::TimerFd => {
                let woken = self.parks_before(programmed);
                let polled = self.look(|| self.reactor.poll(None));
                self.polled(polled, woken)
            }
            ClockDevice::Epoll => {
                // One clock read; an instant already past polls without blocking.
                let now = programmed.map(|_| self.timers.clock().now());
                let timeout = programmed
                    .zip(now)
                    .map(|(p, now)| Duration::from_nanos(p.saturating_sub(now)));
                let woken = programmed.zip(now).is_some_and(|(p, now)| p > now);
                // The kernel gets a timeout shortened by its own slack, whose window ends at
                // the instant: a wait that times out before it is stale to the queue
                // (`device_fired`), and the next idle transition parks again for the rest.
                let polled = self.look(|| self.reactor.poll_precise(timeout));
                self.polled(polled, woken)
            }
        };
    }
}
