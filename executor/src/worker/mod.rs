//! One core: its run queue, timers, reactor and loop.
//!
//! A core is one thread's executor. Its state is split by who may touch it:
//!
//! - [`Core`] (this file): what only the core's thread touches (run queue, timers, reactor,
//!   live tasks, counters), behind `Rc` and `RefCell`.
//! - [`Shared`](shared::Shared): what other threads touch (the inbox and its sleep word, the
//!   eventfd, the stop flag, the published counters), behind `Arc`.
//!
//! The rest of the folder is one concept a file: [`run`] (the loop and one turn of it),
//! [`idle`] (the idle sequence and the idle governor), [`block_on`] (the `block_on` future and
//! its waker), [`shutdown`] (dropping every task on its core), [`timers`] (the time types'
//! interface to the wheel), [`placement`] (where `spawn` puts a new task) and [`load`] (what it
//! compares), [`registry`] (reaching a core by id), [`clock`], [`device`], [`config`] and [`id`].
//!
//! In the crate's layers (ARCHITECTURE.md), this file is the core: `run`, `idle`, `shutdown` and
//! `block_on` are above it (with `context`, the current core, between), the other files of the
//! folder below it; none of them, nor the files below the core (`catch`, `blocking`), names
//! `Core`.

pub(crate) mod block_on;
pub(crate) mod clock;
pub(crate) mod config;
pub mod device;
pub(crate) mod governor;
pub(crate) mod harvest;
pub(crate) mod harvest_state;
pub(crate) mod id;
pub(crate) mod idle;
pub(crate) mod kennel;
pub(crate) mod load;
pub(crate) mod loop_watch;
pub(crate) mod placement;
pub(crate) mod registry;
pub(crate) mod run;
pub(crate) mod runq;
pub(crate) mod shared;
pub(crate) mod shutdown;
pub(crate) mod spill;
pub(crate) mod steal;
pub(crate) mod timers;
pub(crate) mod unpark;

pub(crate) use config::Siblings;
pub(crate) mod tokio_context;
pub(crate) mod watch;

use std::cell::{Cell, RefCell};
use std::io;
use std::rc::Rc;
use std::sync::Arc;
use std::task::Waker;

use slab::Slab;
use tickless_io::internal::Reactor;
use tickless_timer::internal::Op;

use crate::blocking::BlockingPool;
use crate::catch::{drop_caught, wake_caught, Caught};
use crate::histogram::Histogram;
use crate::stats::CoreStats;
use clock::{nanos, Clock};
use config::CoreConfig;
use device::ClockDevice;
use governor::Governor;
use id::{CoreId, CoreKey};
use loop_watch::{LoopHistograms, LoopWatch};
use placement::Placement;
use shared::{Due, Peers, Runnable, Shared};
use timers::Timers;
use tokio_context::CoreTokio;
use watch::Watch;

/// Counters only the core touches (the others live where they are counted: the timer queue,
/// the hand-over, the clock, the reactor).
#[derive(Default)]
struct Counters {
    /// Blocking waits in epoll.
    parks: Cell<u64>,
    /// Idle transitions spent spinning instead of parking.
    spins: Cell<u64>,
    /// Of those, spins to a timer the clock event device woke the core ahead of.
    lead_spins: Cell<u64>,
    /// Of those, spins the idle governor started.
    governor_spins: Cell<u64>,
    /// Of the governor's spins, those that caught work.
    governor_caught: Cell<u64>,
    /// Of the governor's spins, those on a CPU another core last woke on.
    governor_crowded: Cell<u64>,
    /// Time the governor's spins took, ns.
    governor_spun_ns: Cell<u64>,
    /// Of the governor's spins, those cut to their first look (the core busy) that found
    /// nothing: each parked at once.
    governor_busy_looks: Cell<u64>,
    /// Parks instead of a spin toward a timer whose slack covers the park's wakeup.
    slack_parks: Cell<u64>,
    /// Idle transitions.
    idles: Cell<u64>,
    /// Task polls that panicked.
    task_panics: Cell<u64>,
    /// Tasks `spawn` placed on another core.
    placed: Cell<u64>,
    /// Tasks this core took from other cores' queues.
    steals: Cell<u64>,
    /// Tasks this core moved to its stealable queue.
    spilled: Cell<u64>,
    /// Tasks queued on the run queue, from any side.
    queued: Cell<u64>,
    /// Of those, tasks other threads handed over.
    remote_queued: Cell<u64>,
    /// Tasks polled here for the first time.
    started: Cell<u64>,
    /// Time not idle, ns, up to `awake_since`.
    busy_ns: Cell<u64>,
    /// The clock reading the current busy stretch began at (the last wake, or the loop's
    /// start).
    awake_since: Cell<u64>,
}

/// Adds one to a counter of `CoreStats` (none, in a build made to measure what the observers
/// cost: see `watch::WATCHED`).
fn bump(c: &Cell<u64>) {
    c.set(c.get() + u64::from(watch::WATCHED));
}

/// One core's state, owned by its thread.
///
/// Every field is private: the loop (in this folder) drives it, and the rest of the crate goes
/// through the methods below, which state the invariants once.
pub(crate) struct Core {
    /// What other threads may touch.
    shared: Arc<Shared>,
    /// Its id in one word.
    key: CoreKey,
    /// The run queue's length as this core knows it (`runq::Owned`): exact after its own
    /// accesses, an upper bound after a thief's, so that "anything queued?" is one load.
    runnable: Cell<usize>,
    /// How many runnable tasks the run queue (`shared.runq`, [`queue`](Self::queue)) takes
    /// before `Send` ones spill to the stealable queue (`shared.spill`; `usize::MAX`: never,
    /// when nothing steals).
    spill_room: usize,
    /// How many runnable tasks the run queue takes before a push looks further (a spill, or
    /// a `Send` task queued behind another, which is announced to thieves): 1 with stealing,
    /// `usize::MAX` without (one compare for both).
    quiet_room: usize,
    /// Per core index: the poll word this core last saw that core at, and when (ns), to tell
    /// a core stuck in one poll (or off its CPU) from one that moves on.
    seen: RefCell<Vec<(u64, u64)>>,
    /// An upper bound of the stealable queue's length, as this core knows it (it alone adds;
    /// thieves only take): while 0, the queue is not looked at.
    spilled: Cell<usize>,
    /// How long a backlog waits before an idle core takes it, ns (`Builder::steal_after`).
    steal_after: Option<u64>,
    /// The instant an idle look at the other cores' backlogs is due (a young one was seen), if
    /// a timer for it is armed.
    steal_check: Cell<Option<u64>>,
    /// The last backlog (by its start) this core told an idle peer of.
    told_backlog: Cell<u64>,
    /// Tasks taken from another core, kept to reuse the allocation.
    stolen_buf: RefCell<Vec<Runnable>>,
    /// Whether the core has followed the watchdog's "step back" (`Shared::is_yielded`):
    /// handed its `Send` tasks on.
    stepped_back: Cell<bool>,
    /// Taking the ready I/O of peers that do not come back to their loop
    /// (`Builder::harvest_after`); `None`: never.
    harvest: Option<harvest_state::Harvest>,
    /// The timers, the clock and the timerfd.
    timers: Timers,
    /// The core's own tokio runtime (`Builder::tokio_context`), which the core parks in.
    /// Declared before `reactor`: it drops (leaving tokio's reactor, stopping tokio's runtime
    /// and its tasks) while the core's epoll descriptor is still open.
    tokio: Option<CoreTokio>,
    /// The I/O driver.
    reactor: Rc<Reactor>,
    /// Wakers of every task that has been polled, from its first poll until its future is
    /// dropped: the live futures shutdown must drop here, and how it reaches the ones nobody
    /// will wake.
    tasks: RefCell<Slab<Waker>>,
    /// A fixed idle spin window in nanoseconds (`Builder::spin_before_park`); zero: none.
    spin_ns: u64,
    /// The idle governor, when it runs (no fixed window, `Builder::idle_governor(true)`).
    governor: Option<Cell<Governor>>,
    /// The runtime's blocking pool.
    blocking: Arc<BlockingPool>,
    /// Counters.
    counters: Counters,
    /// Destructors and wakes of user values that panicked (`catch` counts them here); the
    /// reactor counts its wakers' panics itself.
    caught: Caught,
    /// Hand-overs taken in one go, kept to reuse the allocation.
    ops_buf: RefCell<Vec<Op<Due>>>,
    /// Where `spawn` puts new tasks.
    placement: Placement,
    /// The runtime's cores, for placing tasks.
    peers: Arc<Peers>,
    /// The next other core placement looks at (taken in turn).
    next_peer: Cell<usize>,
    /// The reactor's accept count as of the start of the task poll running now, or of the
    /// last spawn that used an accept: a spawn finding it moved follows an accept.
    accepts_seen: Cell<u64>,
    /// Timers fired in one batch, kept to reuse the allocation.
    fired_buf: RefCell<Vec<Due>>,
    /// Keys of the live-task set whose task moved, kept to reuse the allocation.
    orphan_buf: RefCell<Vec<usize>>,
    /// The loop's timing, for its histograms when they are on (`loop_watch`).
    loop_watch: LoopWatch,
    /// Whether task polls are seen by a histogram (poll times or the loop's): the task loop
    /// to pick, a field of the core's own so the choice costs no load through `shared`.
    polls_observed: bool,
    /// Whether I/O polls are timed (the loop histograms are on), likewise.
    io_observed: bool,
}

/// A reactor with a timerfd, for the timerfd device.
fn with_timerfd() -> io::Result<(Rc<Reactor>, Option<tickless_io::internal::TimerFd>)> {
    let (reactor, timer) = Reactor::with_timer()?;
    Ok((reactor, Some(timer)))
}

impl Core {
    /// Creates core `id`: its reactor and timerfd, its clock and its shared half, registered
    /// so that other threads can reach it.
    ///
    /// # Errors
    ///
    /// Creating the epoll instance, the timerfd or the eventfd failed (typically `EMFILE`).
    pub(crate) fn new(id: CoreId, config: CoreConfig, siblings: Siblings) -> io::Result<Rc<Core>> {
        let Siblings {
            blocking,
            peers,
            hooks,
            kennel,
        } = siblings;
        let (reactor, timerfd) = match config.device {
            ClockDevice::TimerFd => with_timerfd()?,
            ClockDevice::Epoll => {
                let reactor = Reactor::new()?;
                // One wait that does not block tells whether the kernel has epoll_pwait2.
                match reactor.poll_precise(Some(std::time::Duration::ZERO)) {
                    Err(e) if e.kind() == io::ErrorKind::Unsupported => with_timerfd()?,
                    Err(e) => return Err(e),
                    Ok(_) => (reactor, None),
                }
            }
        };
        // Host names given to `TcpStream::connect` are looked up on the blocking pool.
        reactor.set_resolver(config.resolver);
        let tokio = match config.tokio {
            Some(hooks) => Some(CoreTokio::new(&reactor, hooks)?),
            None => None,
        };
        let clock = Clock::new(config.paused, config.timer.resolution);
        let mut shared = Shared::with_unparker(id, reactor.unparker(), config.always_wake);
        shared.watch = Watch::new(hooks, kennel);
        shared.harvester = crate::sync::Mutex::new(Some(reactor.harvester()));
        shared.poll_times = config
            .poll_times_on
            .then(|| Histogram::new(config.poll_times));
        shared.lateness = Histogram::new(config.lateness);
        shared.loop_histograms = config.loop_histograms.then(LoopHistograms::new);
        let shared = Arc::new(shared);
        registry::register(&shared);
        let timers = Timers::new(
            timerfd,
            clock,
            config.timer,
            config.default_slack,
            shared.clone(),
        );
        Ok(Rc::new(Core {
            key: shared.id.key(),
            shared,
            spill_room: match config.steal_after {
                Some(_) => spill::LOCAL_ROOM,
                None => usize::MAX,
            },
            runnable: Cell::new(0),
            quiet_room: match config.steal_after {
                Some(_) => 1,
                None => usize::MAX,
            },
            seen: RefCell::new(Vec::new()),
            spilled: Cell::new(0),
            steal_after: config.steal_after.map(nanos),
            steal_check: Cell::new(None),
            harvest: config
                .harvest_after
                .map(|d| harvest_state::Harvest::new(nanos(d))),
            stepped_back: Cell::new(false),
            told_backlog: Cell::new(0),
            stolen_buf: RefCell::new(Vec::new()),
            orphan_buf: RefCell::new(Vec::new()),
            loop_watch: LoopWatch::default(),
            polls_observed: config.poll_times_on || config.loop_histograms,
            io_observed: config.loop_histograms,
            timers,
            tokio,
            reactor,
            tasks: RefCell::new(Slab::new()),
            spin_ns: nanos(config.spin),
            governor: (config.governor && config.spin.is_zero())
                .then(|| Cell::new(Governor::new(config.pinned, config.park_when_busy))),
            blocking,
            counters: Counters::default(),
            caught: Caught::default(),
            ops_buf: RefCell::new(Vec::new()),
            fired_buf: RefCell::new(Vec::new()),
            placement: config.placement,
            peers,
            next_peer: Cell::new(0),
            accepts_seen: Cell::new(0),
        }))
    }

    /// Which core.
    pub(crate) fn id(&self) -> CoreId {
        self.shared.id
    }

    /// Which core, in one word.
    #[inline]
    pub(crate) fn key(&self) -> CoreKey {
        self.key
    }

    /// The part other threads may touch.
    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// The timers: what the time types register, poll, reset and cancel.
    pub(crate) fn timers(&self) -> &Timers {
        &self.timers
    }

    /// Every core of the runtime, by index: for serving on all of them from a task, and what
    /// every task's metadata holds.
    pub(crate) fn peers(&self) -> &Arc<Peers> {
        &self.peers
    }

    /// The runtime's blocking pool.
    pub(crate) fn blocking(&self) -> &Arc<BlockingPool> {
        &self.blocking
    }

    /// The reactor, for entering it.
    pub(crate) fn reactor(&self) -> &Rc<Reactor> {
        &self.reactor
    }

    /// The core's tokio runtime, if it has a tokio context.
    pub(crate) fn tokio(&self) -> Option<&CoreTokio> {
        self.tokio.as_ref()
    }

    /// The run queue, the owner's access (`worker::runq`: two plain stores and a load), which
    /// leaves its length in `runnable`.
    #[inline(always)]
    fn queue(&self) -> runq::Owned<'_, Runnable> {
        self.shared.runq.owner(&self.runnable)
    }

    /// Queues a task woken on this thread: no atomic read-modify-write, no syscall, while the
    /// run queue is quiet; past that, [`schedule_crowded`](Self::schedule_crowded).
    #[inline]
    pub(crate) fn schedule_local(&self, runnable: Runnable) {
        // Counted in every build: harvesting reads it.
        self.counters.queued.set(self.counters.queued.get() + 1);
        let mut queue = self.queue();
        if queue.len() < self.quiet_room && self.spilled.get() == 0 {
            queue.push_back(runnable);
            return;
        }
        drop(queue);
        self.schedule_crowded(runnable);
    }

    /// The next task to run: the run queue's, or, when it is empty, the oldest of the
    /// stealable queue's, which refill it. An empty run queue is not entered.
    #[inline]
    fn next_task(&self) -> Option<Runnable> {
        if self.runnable.get() > 0 {
            let next = self.queue().pop_front();
            if next.is_some() {
                return next;
            }
        }
        if self.spilled.get() == 0 {
            return None;
        }
        self.refill();
        self.queue().pop_front()
    }

    /// Queues a runnable `Send` task where other cores may take it (the private queue is full,
    /// or holds older spilled tasks' successors): one uncontended lock. The first task of a
    /// backlog tells an idle peer to look at it once it is old enough.
    #[cold]
    fn spill(&self, runnable: Runnable) {
        let clock = self.timers.clock();
        let started = self
            .shared
            .spill
            .push(runnable, || clock.now(), self.peers.backlogs());
        self.spilled.set(self.spilled.get() + 1);
        bump(&self.counters.spilled);
        if started {
            self.tell_idle_peer();
        }
    }

    /// Moves the oldest spilled tasks into the private queue, up to its room (at least one).
    #[cold]
    #[inline(never)]
    fn refill(&self) {
        let mut queue = self.queue();
        let room = self.spill_room.saturating_sub(queue.len()).max(1);
        let left = self
            .shared
            .spill
            .refill(&mut queue, room, self.peers.backlogs());
        self.spilled.set(left);
    }

    /// A backlog started here: hands a peer (a parked one if any) a timer for the instant it
    /// becomes old enough to steal, so that a peer sleeps through a backlog this core drains in
    /// time, and takes it if this core is stuck (in a long poll, or preempted) by then. One
    /// peer, once per `steal_after` at most.
    fn tell_idle_peer(&self) {
        let Some(age) = self.steal_after else {
            return;
        };
        if self.timers.clock().is_paused() {
            // Nobody may take it (`Shared::steal_into`): no peer to wake.
            return;
        }
        let since = self.shared.spill.since();
        if since.saturating_sub(self.told_backlog.get()) < age && self.told_backlog.get() != 0 {
            return;
        }
        let me = self.id().index;
        // A parked peer first (an awake one looks when it goes idle, but may be spinning
        // towards a park it will not come out of by itself).
        let peer = (self.peers.others(me))
            .find(|c| c.is_parked() && c.takes_placed_work())
            .or_else(|| self.peers.driven_other(me));
        if let Some(peer) = peer {
            self.told_backlog.set(since);
            peer.push(Op::Insert {
                deadline: since.saturating_add(age),
                slack: tickless_timer::Slack::None,
                value: Due::StealCheck,
            });
        }
    }

    /// The key `key` of core `core`'s live-task set is stale: its task moved here, or is being
    /// dropped here. Tells that core (which removes it at its next turn).
    pub(crate) fn orphan_on(&self, core: CoreKey, key: usize) {
        if let Some(shared) = self.peers.all().and_then(|c| c.get(core.id().index)) {
            if shared.id.key() == core {
                shared.orphan(key);
            }
        }
    }

    /// Adds a task, at its first poll here, to the live-task set that shutdown reaches;
    /// returns its key there. A task polled on another core before (`moved`) is not counted
    /// as started again. (Its load came here when it moved: `worker::load`'s books.)
    pub(crate) fn track_task(&self, waker: &Waker, moved: bool) -> usize {
        if !moved {
            bump(&self.counters.started);
        }
        self.tasks.borrow_mut().insert(waker.clone())
    }

    /// Removes a task from the live-task set: its future is being dropped, or it moved to
    /// another core. (The set is never borrowed while a future drops: shutdown clones the
    /// wakers out before waking them.)
    pub(crate) fn untrack_task(&self, key: usize) {
        self.tasks.borrow_mut().try_remove(key);
    }

    /// Removes the keys of tasks that moved away, or were dropped elsewhere, from the live-task
    /// set (one relaxed load when there are none).
    #[inline]
    pub(crate) fn take_orphans(&self) {
        if self.shared.may_have_orphans() {
            self.take_orphans_now();
        }
    }

    /// [`take_orphans`](Self::take_orphans)' work, out of line. Returns whether there were
    /// any.
    #[inline(never)]
    fn take_orphans_now(&self) -> bool {
        let mut keys = self.orphan_buf.borrow_mut();
        self.shared.take_orphans(&mut keys);
        let any = !keys.is_empty();
        for key in keys.drain(..) {
            self.untrack_task(key);
        }
        any
    }

    /// A poll starts: remember the accept count, so that a spawn in it can tell whether it
    /// follows an accept (see [`placement`]). (The poll is counted, and watched, by the
    /// caller's `Watch::poll_starts`.)
    #[inline]
    fn poll_starts(&self) {
        self.accepts_seen.set(self.reactor.accepts());
    }

    /// Where a `Send` task spawned now should go (see [`placement`]): `None` for this core.
    pub(crate) fn placement_target(&self) -> Option<Arc<Shared>> {
        let accepts = self.reactor.accepts();
        if accepts == self.accepts_seen.get() || self.placement == Placement::Local {
            return None;
        }
        // This spawn uses the accept; another spawn in the same poll stays local.
        self.accepts_seen.set(accepts);
        let target = self.peers.target(&self.shared, &self.next_peer)?;
        bump(&self.counters.placed);
        Some(target)
    }

    /// Counts a task poll that panicked.
    pub(crate) fn count_task_panic(&self) {
        bump(&self.counters.task_panics);
    }

    /// Counts a destructor of a task's future or output that panicked.
    pub(crate) fn count_drop_panic(&self) {
        self.caught.count_drop();
    }

    /// Counts a wake that panicked.
    pub(crate) fn count_wake_panic(&self) {
        self.caught.count_wake();
    }

    /// The panic counters `catch` counts in while this core is entered.
    pub(crate) fn caught(&self) -> &Caught {
        &self.caught
    }

    /// Acts on a fired timer or a handed-over value: wakes it or queues its task.
    fn deliver(&self, value: Due) {
        match value {
            Due::Wake(w) => wake_caught(w),
            // Nothing to run: the core goes idle after this turn, and looks then.
            Due::StealCheck => self.steal_check.set(None),
            Due::Schedule(r) | Due::ScheduleAt(r, _) => self.schedule_local(r),
            Due::Abort(deferred) => {
                // The task still waits in the wheel: cancel its timer and drop it now (its
                // future's drop reports the cancel to its handle). If it already fired, it is
                // queued, and its next poll sees the abort.
                if let Some(value) = deferred.take().and_then(|h| self.timers.cancel(h)) {
                    // Its future's drop takes it off this core's load.
                    drop_caught(value);
                }
            }
        }
    }

    /// Publishes the counters for other threads (plain stores, no read-modify-write): before
    /// every park, and when the loop ends. Core 0 too: while one thread is in `block_on`,
    /// another reads these.
    fn publish(&self) {
        self.shared.publish(&self.stats());
    }

    /// This core's counters, exact (on its own thread).
    pub(crate) fn stats(&self) -> CoreStats {
        let t = self.timers.stats() + self.shared.inbox.stats();
        let io = self.reactor.stats();
        let c = &self.counters;
        CoreStats {
            polls: self.shared.watch.polls(),
            parks: c.parks.get(),
            spins: c.spins.get(),
            idles: c.idles.get(),
            timer_inserts: t.inserts,
            timer_cancels: t.cancels,
            timer_cancels_detached: t.cancels_detached,
            timer_fires: t.fires,
            // The epoll device programs nothing: its arming is the wait's timeout.
            timerfd_rearms: match self.timers.device() {
                ClockDevice::TimerFd => t.rearms,
                ClockDevice::Epoll => 0,
            },
            device_spurious: t.spurious,
            timer_early: t.early,
            lead_spins: c.lead_spins.get(),
            governor_spins: c.governor_spins.get(),
            governor_caught: c.governor_caught.get(),
            governor_crowded: c.governor_crowded.get(),
            governor_spun_us: c.governor_spun_ns.get() / 1_000,
            governor_busy_looks: c.governor_busy_looks.get(),
            slack_parks: c.slack_parks.get(),
            governor_window_ns: self.governor_window(),
            wakeup_lead_ns: self.timers.lead(),
            remote_wakes_sent: t.remote_wakes_sent,
            remote_wakes_avoided: t.remote_wakes_avoided,
            remote_arms: t.remote_arms,
            clock_reads: self.timers.clock().reads(),
            io_polls: io.polls,
            io_events: io.events,
            task_panics: c.task_panics.get(),
            stalls: self.shared.watch.stalls(),
            preemptions: self.shared.watch.preemptions(),
            watchdog_rouses: self.shared.watch.rouses(),
            drop_panics: self.caught.drops(),
            wake_panics: self.caught.wakes() + io.waker_panics,
            alive_tasks: self.tasks.borrow().len() as u64,
            accepts: io.accepts,
            tasks_placed: c.placed.get(),
            steals: c.steals.get(),
            yields: self.shared.watch.yields(),
            harvest_looks: self.harvest.as_ref().map_or(0, |h| h.looks.get()),
            harvests: self.harvest.as_ref().map_or(0, |h| h.harvests.get()),
            harvested_events: self.harvest.as_ref().map_or(0, |h| h.events.get()),
            tasks_spilled: c.spilled.get(),
            io_rebinds: io.rebinds,
            io_registrations: io.registrations,
            io_registered: io.registered,
            local_schedules: c.queued.get().saturating_sub(c.remote_queued.get()),
            remote_schedules: c.remote_queued.get(),
            tasks_started: c.started.get(),
            local_queue_depth: self.queue().len() as u64,
            pending_timers: self.timers.pending() as u64,
            busy_ns: c.busy_ns.get(),
            // Work stealing counts here.
        }
    }

    /// A task handed over by another thread is about to be queued (counted apart from the
    /// core's own schedules).
    pub(crate) fn count_remote_schedule(&self) {
        bump(&self.counters.remote_queued);
    }

    /// The loop starts (or core 0's `block_on` does): a busy stretch begins now.
    pub(crate) fn busy_from_now(&self) {
        self.counters.awake_since.set(self.timers.clock().now());
    }

    /// The core goes idle at `at` (a clock reading): the busy stretch since the last wake
    /// ends there. Nothing is counted on paused time, whose readings are not real time.
    pub(crate) fn busy_until(&self, at: u64) {
        let c = &self.counters;
        if !self.timers.clock().is_paused() {
            let stretch = at.saturating_sub(c.awake_since.get());
            c.busy_ns.set(c.busy_ns.get().saturating_add(stretch));
        }
        c.awake_since.set(at);
    }

    /// The core woke from a park at `at` (a clock reading): a busy stretch begins.
    pub(crate) fn woke_at(&self, at: u64) {
        self.counters.awake_since.set(at);
    }
}
