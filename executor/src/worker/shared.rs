//! The part of a core other threads may touch: its inbox, its eventfd, its stop flag, its
//! stealable queue, its published counters, and the word on why it died; what its inbox and its
//! timer wheel carry ([`Due`], which holds a [`Runnable`], whose [`TaskMeta`] names the task's
//! core among the runtime's [`Peers`], which hold the `Shared`s: one type knot, so one file).

use std::sync::{Arc, OnceLock};
use std::task::Waker;

use tickless_io::internal::{Harvester, Unparker};

pub use super::unpark::Unpark;
use tickless_timer::internal::{Inbox, Op, Wake as WakeDecision};

use crate::histogram::{Histogram, DEFAULT_LATENESS_HISTOGRAM};
use crate::stats::{CoreStats, Published};
use crate::sync::{lock, AtomicBool, AtomicU64, AtomicUsize, Mutex, Ordering};
use crate::task::DeferredStart;
use crate::worker::id::thread_token;
use crate::worker::id::CoreId;
use crate::worker::id::CoreKey;
#[cfg(loom)]
use crate::worker::kennel::Kennel;
use crate::worker::load::{move_tasks, Load};
use crate::worker::loop_watch::LoopHistograms;
use crate::worker::runq::RunQueue;
use crate::worker::spill::Spill;
use crate::worker::watch::Watch;
use serve_watch::ServeWatch;

mod serve_watch;

/// `Shared::yielded`: the core serves.
pub(crate) const SERVES: usize = 0;
/// `Shared::yielded`: the core stepped back from crowded CPUs.
pub(crate) const STEPPED_BACK: usize = 1;
/// `Shared::yielded`: the core serves, and owes a core that serves again a share of its tasks.
pub(crate) const SHARE_OUT: usize = 2;

/// A task ready to run, carrying (in its header) its [`TaskMeta`]: the core it belongs to now,
/// and the runtime's cores. Its schedule function then captures nothing, which lets a wake by
/// value hand the waker's reference to the queued task instead of taking a new one and
/// dropping the old (one atomic less on every wake on the task's own core). A wake from another
/// thread clones the core's `Arc` before the hand-over, since once handed over the task (and
/// the header that holds the metadata) may run and be freed on its core before the hand-over
/// returns.
pub type Runnable = async_task::Runnable<TaskMeta>;

/// Every core of a runtime, by index: set once, when the last core has started (before
/// `build` returns, so before any task of the runtime can be woken).
#[derive(Default)]
pub struct Peers {
    /// The cores, by index.
    cores: OnceLock<Box<[Arc<Shared>]>>,
    /// How many of their stealable queues are not empty (`worker::spill`): an idle core
    /// looks at the others only when this is not 0, one load.
    backlogs: AtomicUsize,
}

impl Peers {
    /// Records the runtime's cores, by index.
    pub(crate) fn set(&self, cores: Box<[Arc<Shared>]>) {
        // Set once, by the builder; a second call would be a bug, and changes nothing.
        let _first = self.cores.set(cores);
    }

    /// Every core, by index; `None` while the runtime is still starting.
    #[inline]
    pub(crate) fn all(&self) -> Option<&[Arc<Shared>]> {
        self.cores.get().map(|cores| &cores[..])
    }

    /// The runtime's count of non-empty stealable queues.
    #[inline]
    pub fn backlogs(&self) -> &AtomicUsize {
        &self.backlogs
    }

    /// For the loom models: a runtime of the given cores.
    #[cfg(loom)]
    pub fn for_model(cores: Vec<Arc<Shared>>) -> Arc<Peers> {
        let peers = Arc::new(Peers::default());
        peers.set(cores.into_boxed_slice());
        peers
    }
}

/// What every task carries in its header: the core it belongs to now (where its wakes go, and
/// whose thread may poll it), the runtime's cores, and whether it may move.
///
/// # Protocol
///
/// `home` changes only while the task is scheduled and not running: async-task calls the
/// schedule function of a task once per wake that made it scheduled, and runs it once per
/// schedule, so the thread that holds the `Runnable` is the only one that may read or write
/// `home` (a steal moves a `Runnable`; a wake of a task whose core does not run re-homes it
/// before the hand-over; see `task::spawn::schedule`). The release of the hand-over that
/// passes the `Runnable` on (the inbox, a spill queue's lock) orders the store before the new
/// home's loads. Relaxed loads and stores therefore suffice.
///
/// Whoever changes `home` moves the task's count from the old home's load to the new one's
/// in the same step (`worker::load::move_tasks`); the task's future, when dropped, takes it off
/// the home it names then (`task::harness`).
pub struct TaskMeta {
    /// The [`CoreKey`] of the core the task belongs to now.
    home: AtomicU64,
    /// The runtime's cores.
    peers: Arc<Peers>,
    /// Whether the task may move to another core: a `Send` task (`spawn`, `Handle::spawn`),
    /// not a `spawn_local` one.
    movable: bool,
}

impl TaskMeta {
    /// The metadata of a task of core `home` of the runtime of `peers`.
    pub(crate) fn new(home: CoreKey, peers: Arc<Peers>, movable: bool) -> TaskMeta {
        TaskMeta {
            home: AtomicU64::new(home.get()),
            peers,
            movable,
        }
    }

    /// For the loom models: a movable task of `home`, one of `peers`.
    #[cfg(loom)]
    pub fn for_model(home: &Shared, peers: Arc<Peers>) -> TaskMeta {
        TaskMeta::new(home.id.key(), peers, true)
    }

    /// For the loom models: a task of `home` that may not move (a `spawn_local` one's).
    #[cfg(loom)]
    pub fn for_model_local(home: &Shared, peers: Arc<Peers>) -> TaskMeta {
        TaskMeta::new(home.id.key(), peers, false)
    }

    /// The core the task belongs to now, in one word (see the protocol).
    #[inline]
    pub(crate) fn home(&self) -> CoreKey {
        CoreKey::from_raw(self.home.load(Ordering::Relaxed))
    }

    /// Moves the task to the core `key` (see the protocol: only the holder of its `Runnable`).
    #[inline]
    pub(crate) fn set_home(&self, key: CoreKey) {
        self.home.store(key.get(), Ordering::Relaxed);
    }

    /// Whether the task belongs to the core `key` (one load and a compare).
    #[inline]
    pub(crate) fn is_home(&self, key: CoreKey) -> bool {
        self.home.load(Ordering::Relaxed) == key.get()
    }

    /// The shared half of the core the task belongs to now.
    #[inline]
    pub fn home_shared(&self) -> &Arc<Shared> {
        self.try_home_shared()
            .expect("a task is woken only once its runtime's cores are set")
    }

    /// [`home_shared`](Self::home_shared), or `None` while the runtime's cores are not set yet
    /// (a task dropped while its runtime is being built).
    #[inline]
    pub(crate) fn try_home_shared(&self) -> Option<&Arc<Shared>> {
        let key = self.home();
        let cores = self.peers.all()?;
        match cores.get(key.id().index) {
            Some(core) if core.id.key() == key => Some(core),
            // The loom models' runtimes are not indexed from 0.
            _ => cores.iter().find(|c| c.id.key() == key),
        }
    }

    /// The runtime's cores.
    pub(crate) fn peers(&self) -> &Arc<Peers> {
        &self.peers
    }

    /// Whether the task may move to another core.
    #[inline]
    pub(crate) fn movable(&self) -> bool {
        self.movable
    }
}

/// What a core does when an entry of its timer wheel or its inbox is due: the values both
/// carry (the inbox's are due at once).
pub enum Due {
    /// A `Sleep`'s task, to wake.
    Wake(Waker),
    /// A task to put in the run queue: a remote spawn (`Handle::spawn`), or a task woken from
    /// another thread.
    Schedule(Runnable),
    /// A task to put in the run queue from a deadline on (`Handle::spawn_at`), in the wheel
    /// until then.
    ScheduleAt(Runnable, Arc<DeferredStart>),
    /// Abort a `spawn_at` task still waiting in the wheel (from its `JoinHandle::abort`).
    Abort(Arc<DeferredStart>),
    /// Look at the other cores' backlogs (`worker::steal`): a backlog seen young is old enough
    /// to take now.
    StealCheck,
}

/// The part of a core other threads may touch.
///
/// # Protocol
///
/// Every cross-thread hand-off goes through `inbox` and its sleep word (see
/// `tickless_timer::internal::Inbox`): a pusher that the rule tells to wake the core calls
/// [`kick`](Self::kick), which writes the eventfd under the `unparker` lock. A stop request is
/// the `stop` flag, then a notify: the core re-checks the flag after its last drain and before
/// it publishes its sleep (`worker::idle::sleep`), so a stop whose DIRTY bit the drain consumed
/// is seen. At shutdown the core takes the unparker out under the same lock, so a kick either
/// writes an eventfd the core still watches or finds none: it never writes a closed one.
pub struct Shared<U = Unparker> {
    /// Which core.
    pub(crate) id: CoreId,
    /// Every cross-thread hand-off (timers, woken tasks, spawns) and the sleep word.
    pub(crate) inbox: Inbox<Due>,
    /// Writes the core's eventfd; `None` once the core is gone (which closes the eventfd even
    /// while wakers of its tasks live on). Locked only to wake a sleeping core.
    unparker: Mutex<Option<U>>,
    /// Set to ask the core's loop to stop (and when it died).
    stop: AtomicBool,
    /// Whether a thread runs the core's loop now: for cores 1 and up, their own thread, from
    /// their start on; for core 0, the thread in `block_on`, while it is there. Placement
    /// sends work only to a core that is driven (core 0 runs nothing while no thread is in
    /// `block_on`).
    driven: AtomicBool,
    /// Whether the core steps back because the CPUs are crowded (`Builder::yield_when_crowded`,
    /// `runtime::crowding`): it takes no placed work, and a wake of its `Send` tasks from
    /// another thread moves them; set by the stall detector's watchdog, a hint ordering nothing.
    /// `SERVES`, `STEPPED_BACK`, or `SHARE_OUT` (it serves, and a core that serves again
    /// asked it for a share of its `Send` tasks): one word, so that the core's look at its
    /// parks and fairness polls stays one load (`Core::follow_yield`).
    pub(crate) yielded: AtomicUsize,
    /// Whether the core's clock is paused (`Builder::start_paused`, `time::pause`): a task of
    /// the core woken while no thread runs it then stays for the next `block_on` instead of
    /// moving, since paused time jumps per core. Written by the core's thread whenever its
    /// clock pauses or resumes; a hint, ordering nothing, as `driven` is.
    paused: AtomicBool,
    /// Tasks that belong to the core now and are not yet finished, for placement and
    /// `num_alive_tasks` (`worker::load`'s books).
    pub(crate) load: Load,
    /// The core's runnable tasks, which its thread pushes and pops, and whose `Send` ones a
    /// thief takes while the core is stuck (`worker::runq`, `worker::steal`).
    pub(crate) runq: RunQueue<Runnable>,
    /// Whether the core will look at the other cores by itself (a `Due::StealCheck` waits in
    /// its wheel or inbox, or it is awake and looks as it goes idle): a core with tasks
    /// queued behind its poll tells it only otherwise. Set by the core as it arms its check,
    /// or by the core that tells it; cleared by the core as it looks; a hint.
    look_due: AtomicBool,
    /// The runnable `Send` tasks the core's private queue had no room for: where idle cores
    /// steal from (`worker::spill`).
    pub(crate) spill: Spill<Runnable>,
    /// Keys of the core's live-task set whose task moved to another core (or whose future was
    /// dropped on another thread): the core removes them at its next turn.
    orphans: Mutex<Vec<usize>>,
    /// Whether `orphans` may hold keys (a hint the core reads each idle transition).
    has_orphans: AtomicBool,
    /// The CPU the core's thread ran on when it last woke from a park (`usize::MAX`: not yet
    /// known), for the idle governor of the other cores.
    cpu: AtomicUsize,
    /// The core's counters as of its last idle transition, for other threads.
    published: Published,
    /// Why the core's thread ended by a panic (the panic's message), if it did.
    death: Mutex<Option<String>>,
    /// The [`thread_token`] of the thread that runs the core: its own thread; for core 0, the
    /// thread in `block_on`, or that last was (the building thread at first).
    home: AtomicU64,
    /// The core's `spawn_local` tasks whose future is alive (core 0's only: see
    /// `task::bound`), which bind core 0 to the thread that spawned them.
    local_tasks: AtomicUsize,
    /// Those of them whose future was leaked, not dropped: the runtime was dropped on another
    /// thread.
    local_leaked: AtomicUsize,
    /// The listening descriptors of the core's thread-bound accept loops (`serve_per_core`,
    /// `tickless-http`'s `serve`), while each loop runs: shut down if the runtime leaks the
    /// loop instead of dropping it (see [`shut_leaked_listeners`](Self::shut_leaked_listeners)).
    listeners: Mutex<Vec<std::os::fd::RawFd>>,
    /// The accept loops that watch whether the core serves (`driven`, `yielded`), woken when
    /// it stops or starts: see `serve_watch`.
    pub(crate) serve_watch: ServeWatch,
    /// The poll in progress, for `task::id` and the stall detector; the task hooks.
    pub(crate) watch: Watch,
    /// Another core's way into this core's ready I/O (`worker::harvest`); `None` in the loom
    /// models' cores.
    /// Dropped at the core's shutdown, with its unparker: it keeps the core's epoll set open.
    pub(crate) harvester: Mutex<Option<Harvester>>,
    /// How long the core's task polls took (`Builder::enable_metrics_poll_time_histogram`);
    /// `None` unless asked for.
    pub(crate) poll_times: Option<Histogram>,
    /// The loop's own histograms (`Builder::enable_metrics_loop_histograms`); `None` unless
    /// asked for.
    pub(crate) loop_histograms: Option<LoopHistograms>,
    /// How late the core's timers fired: the clock reading they were expired by, less their
    /// deadline.
    pub(crate) lateness: Histogram,
}

impl<U: Unpark> Shared<U> {
    /// The shared half of core `id`, waking it with `unparker`.
    pub(crate) fn with_unparker(id: CoreId, unparker: U, always_wake: bool) -> Self {
        Shared {
            id,
            inbox: if always_wake {
                Inbox::always_waking()
            } else {
                Inbox::new()
            },
            unparker: Mutex::new(Some(unparker)),
            stop: AtomicBool::new(false),
            driven: AtomicBool::new(id.index != 0),
            paused: AtomicBool::new(false),
            yielded: AtomicUsize::new(SERVES),
            load: Load::default(),
            runq: RunQueue::default(),
            look_due: AtomicBool::new(false),
            spill: Spill::default(),
            orphans: Mutex::new(Vec::new()),
            has_orphans: AtomicBool::new(false),
            cpu: AtomicUsize::new(usize::MAX),
            published: Published::default(),
            death: Mutex::new(None),
            home: AtomicU64::new(thread_token()),
            local_tasks: AtomicUsize::new(0),
            local_leaked: AtomicUsize::new(0),
            listeners: Mutex::new(Vec::new()),
            serve_watch: ServeWatch::default(),
            watch: Watch::default(),
            harvester: Mutex::new(None),
            poll_times: None,
            loop_histograms: None,
            lateness: Histogram::new(DEFAULT_LATENESS_HISTOGRAM),
        }
    }

    /// For the loom models: the shared half of a core of its own runtime.
    #[cfg(loom)]
    pub fn for_model(unparker: U) -> Self {
        let id = CoreId {
            runtime: CoreId::new_runtime(),
            index: 1,
        };
        Self::with_unparker(id, unparker, false)
    }

    /// For the loom models: the shared halves of the cores of one runtime, indexed from 0, each
    /// driven (core 0 as while a thread is in `block_on`).
    #[cfg(loom)]
    pub fn for_model_runtime(unparkers: Vec<U>) -> Vec<Self> {
        let runtime = CoreId::new_runtime();
        (unparkers.into_iter().enumerate())
            .map(|(index, unparker)| {
                let shared = Self::with_unparker(CoreId { runtime, index }, unparker, false);
                shared.driven.store(true, Ordering::Relaxed);
                shared
            })
            .collect()
    }

    /// For the loom models: the shared half of a core of its own runtime, watched by the
    /// stall detector whose watchdog sleeps in `kennel`.
    #[cfg(loom)]
    pub fn for_model_watched(unparker: U, kennel: Arc<Kennel>) -> Self {
        let mut shared = Self::for_model(unparker);
        shared.watch = Watch::new(None, Some(kennel));
        shared
    }

    /// For the loom models: what the stall detector watches.
    #[cfg(loom)]
    pub fn watch(&self) -> &Watch {
        &self.watch
    }

    /// For the loom models: which core.
    #[cfg(loom)]
    pub fn core_id(&self) -> CoreId {
        self.id
    }

    /// For the loom models: the stealable queue.
    #[cfg(loom)]
    pub fn spill(&self) -> &Spill<Runnable> {
        &self.spill
    }

    /// For the loom models: the run queue.
    #[cfg(loom)]
    pub fn runq(&self) -> &RunQueue<Runnable> {
        &self.runq
    }

    /// For the loom models: a task of the core is counted on its load (as a spawn onto it
    /// does).
    #[cfg(loom)]
    pub fn count_task_for_model(&self) {
        self.load.add_remote();
    }

    /// For the loom models: the core's load.
    #[cfg(loom)]
    pub fn load_for_model(&self) -> usize {
        self.load.get()
    }

    /// For the loom models: the inbox and its sleep word (its wake counters, the published
    /// sleep).
    #[cfg(loom)]
    pub fn inbox(&self) -> &Inbox<Due> {
        &self.inbox
    }

    /// Schedules a task woken on another thread: through the inbox, waking the core only if it
    /// sleeps (once per burst). A closed core refuses it, and it is dropped here, which is
    /// allowed: the core closes only once every task's future is dropped (see
    /// `worker::shutdown`), so what is dropped here is a task without its future.
    pub(crate) fn schedule_remote(&self, runnable: Runnable) {
        self.push_now(Due::Schedule(runnable));
    }

    /// Schedules a task woken on another thread here if a thread runs the core now and it
    /// takes work ([`takes_placed_work`](Self::takes_placed_work)), asked under the inbox's
    /// lock; the task back otherwise (and if the core is closed), for the caller to move it.
    ///
    /// # Protocol
    ///
    /// Core 0's evacuation ([`leave_and_take`](Self::leave_and_take)) stops being driven,
    /// then takes its inbox under the same lock, whatever its `DIRTY` bit says. So a wake that
    /// pushed here was taken by that evacuation (its lock came first), or saw core 0 not
    /// driven and moved its task (its lock came after, and the mutex orders the store before
    /// its look): none is left in the inbox until the next `block_on`. Checking before the
    /// push, outside the lock, stranded one exit in about 2,500 (the evacuation had drained
    /// already). `loom-tests/tests/core_zero_leave.rs` checks it on this code.
    pub(crate) fn schedule_if_driven(&self, runnable: Runnable) -> Result<(), Runnable> {
        let op = Op::Now(Due::Schedule(runnable));
        match self.inbox.push_if(op, || self.takes_placed_work()) {
            Ok(decision) => {
                self.kick(decision);
                Ok(())
            }
            Err(Op::Now(Due::Schedule(runnable))) => Err(runnable),
            Err(_) => unreachable!("the operation comes back as it went"),
        }
    }

    /// Hands the core something it must act on now (a task to run, a waker to wake), as a
    /// deadline of "now". `false` if the core is gone (the value is dropped here).
    pub fn push_now(&self, value: Due) -> bool {
        self.push(Op::Now(value))
    }

    /// Hands an operation to the core, waking it if the sleep-word rule says so. An operation
    /// refused by a closed core is dropped here; returns whether it was taken.
    pub(crate) fn push(&self, op: Op<Due>) -> bool {
        match self.inbox.push(op) {
            Ok(decision) => {
                self.kick(decision);
                true
            }
            Err(refused) => {
                drop(refused);
                false
            }
        }
    }

    /// Acts on the sleep-word rule's decision: writes the eventfd when told to, if the core
    /// still has one.
    pub fn kick(&self, decision: WakeDecision) {
        if decision == WakeDecision::Needed {
            if let Some(u) = &*lock(&self.unparker) {
                u.unpark();
            }
        }
    }

    /// Tells the core it must look at its queues now (its `block_on` future was woken, say),
    /// waking it only if it sleeps.
    pub fn notify_now(&self) {
        self.kick(self.inbox.notify(0));
    }

    /// Asks the core to stop, waking it.
    pub fn request_stop(&self) {
        self.stop.store(true, Ordering::Release);
        self.notify_now();
    }

    /// Whether a stop was requested.
    pub fn stop_requested(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }

    /// The core has woken from its park: publishes that it runs (its sleep word), then wakes
    /// the stall detector's watchdog if it sleeps (`Kennel`: after the publish, which the
    /// watchdog reads after it lies down).
    pub fn running_again(&self) {
        self.inbox.woke();
        self.watch.woke();
    }

    /// Whether a task may be placed here: a thread runs the core now (for core 0, one is in
    /// `block_on`), and it is neither stopping nor dead. (A hint, read again under the inbox's
    /// lock by a wake or a placed spawn, which then stay off a core that stopped running:
    /// [`schedule_if_driven`](Self::schedule_if_driven).)
    pub(crate) fn takes_placed_work(&self) -> bool {
        self.runs() && !self.is_yielded()
    }

    /// Whether a thread runs the core now and it is neither stopping nor dead, stepped back or
    /// not: where work goes when no core takes placed work (core 0 left, the others stepped
    /// back), rather than wait for the next `block_on`.
    pub(crate) fn runs(&self) -> bool {
        self.driven.load(Ordering::Relaxed) && !self.stop.load(Ordering::Relaxed)
    }

    /// For the loom models: the `yielded` word.
    #[cfg(loom)]
    pub fn yielded_word(&self) -> usize {
        self.yielded.load(Ordering::Relaxed)
    }

    /// Whether the core steps back because the CPUs are crowded (see `yielded`).
    #[inline]
    pub fn is_yielded(&self) -> bool {
        self.yielded.load(Ordering::Relaxed) == STEPPED_BACK
    }

    /// The watchdog's decision (`runtime::crowding`): the core steps back, or serves again;
    /// the accept loops that watch it woken. A swap, not a store: the word's other writers are
    /// compare-exchanges (`serve_again`, `take_share_out`), and loom 0.7.3 lets those read past
    /// a plain store (tokio-rs/loom#389: `loom-tests/tests/share_out.rs` saw a step back
    /// undone); a read-modify-write is ordered among them as the memory model orders it anyway.
    pub fn set_yielded(&self, yielded: bool) {
        let word = if yielded { STEPPED_BACK } else { SERVES };
        let change = || {
            self.yielded.swap(word, Ordering::Relaxed);
        };
        self.serve_watch.store(change, true);
    }

    /// An accept loop's look (see `serve_watch`): whether the core stepped back; `waker` is
    /// woken when that changes.
    pub fn yielded_watching(&self, waker: &Waker) -> bool {
        self.serve_watch.load_watching(waker, || self.is_yielded())
    }

    /// Whether a task of the core woken while no thread runs it waits here for the next
    /// `block_on`: the core's clock is paused (a hint: see `paused`), and it is neither
    /// stopping nor dead (a task of a stopped core moves to one that runs, paused or not).
    pub(crate) fn keeps_work_while_paused(&self) -> bool {
        self.paused.load(Ordering::Relaxed) && !self.stop.load(Ordering::Relaxed)
    }

    /// The core's clock paused or resumed (its own thread).
    pub(crate) fn set_paused(&self, paused: bool) {
        self.paused.store(paused, Ordering::Relaxed);
    }

    /// Core 0: a thread is in `block_on` (`true`, holding the lease) or has left it.
    pub(crate) fn set_driven(&self, driven: bool) {
        // A hint for placement, ordering nothing; the watchers' lock orders their own look.
        self.serve_watch
            .store(|| self.driven.store(driven, Ordering::Relaxed), false);
    }

    /// Core 0 is left (its `block_on` returns): not driven any more, and the task that serves
    /// its listener meanwhile, if one waits, is woken; then every operation handed over while
    /// it was driven, into `out` (see [`schedule_if_driven`](Self::schedule_if_driven)'s
    /// protocol: after this, a wake moves its task itself).
    pub fn leave_and_take(&self, out: &mut Vec<Op<Due>>) {
        self.leave();
        self.inbox.drain_locked(out);
    }

    /// Not driven any more, and the accept loops that watch core 0 woken.
    fn leave(&self) {
        self.serve_watch
            .store(|| self.driven.store(false, Ordering::Relaxed), true);
    }

    /// An accept loop's look (see `serve_watch`): `true` while core 0 is driven (core 1's
    /// loop leaves its listener to it); `waker` is woken when it stops being.
    pub fn driven_watching(&self, waker: &Waker) -> bool {
        self.serve_watch
            .load_watching(waker, || self.driven.load(Ordering::Relaxed))
    }

    /// Thief side (`thief`, an idle core, on its thread): takes half of this core's backlog if
    /// it started `age` ns or more before `now`, into `into`, each task re-homed to the thief
    /// before it is handed on (so that a wake after its first run there goes to the thief's
    /// inbox: see [`TaskMeta`]'s protocol), and its count moved to the thief's load. As
    /// [`Spill::steal_older_than`]; nothing (`Ok(0)`) from a core whose clock is paused.
    pub fn steal_into(
        &self,
        thief: &Shared,
        peers: &Peers,
        now: u64,
        age: u64,
        into: &mut Vec<Runnable>,
    ) -> Result<usize, u64> {
        // Paused time jumps per core: a paused core's tasks stay on it (as a wake and
        // `evacuate` leave them), whatever its backlog.
        if self.keeps_work_while_paused() {
            return Ok(0);
        }
        let before = into.len();
        let taken = self
            .spill
            .steal_older_than(now, age, into, peers.backlogs())?;
        for runnable in &into[before..] {
            runnable.metadata().set_home(thief.id.key());
        }
        move_tasks(&self.load, false, &thief.load, true, into.len() - before);
        Ok(taken)
    }

    /// Whether the core will look at the other cores by itself (see `look_due`).
    #[inline]
    pub(crate) fn look_due(&self) -> bool {
        self.look_due.load(Ordering::Relaxed)
    }

    /// Records that the core will look at the other cores by itself, or no longer will.
    #[inline]
    pub(crate) fn set_look_due(&self, due: bool) {
        self.look_due.store(due, Ordering::Relaxed);
    }

    /// The core's poll word (`worker::watch`): a thief that reads the same value
    /// `steal_after` apart knows the core has not come back to its run queue meanwhile.
    #[inline]
    pub(crate) fn poll_word(&self) -> u64 {
        self.watch
            .poll_word()
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// A task tracked under `key` in this core's live-task set moved away, or was dropped on
    /// another thread: the core removes the key at its next turn.
    pub(crate) fn orphan(&self, key: usize) {
        lock(&self.orphans).push(key);
        self.has_orphans.store(true, Ordering::Release);
    }

    /// Whether `orphans` may hold keys (one relaxed load: the core's check at every idle
    /// transition; [`take_orphans`](Self::take_orphans) orders what it takes).
    #[inline]
    pub(crate) fn may_have_orphans(&self) -> bool {
        self.has_orphans.load(Ordering::Relaxed)
    }

    /// Core side: the keys of moved tasks to remove from the live-task set, if any.
    pub(crate) fn take_orphans(&self, into: &mut Vec<usize>) {
        if self.has_orphans.swap(false, Ordering::Acquire) {
            into.append(&mut lock(&self.orphans));
        }
    }

    /// Its load, as placement compares it.
    pub(crate) fn load(&self) -> usize {
        self.load.get()
    }

    /// Core side, at the end of shutdown: no kick will write the eventfd after this returns.
    pub fn close_unparker(&self) -> Option<U> {
        // Nobody harvests a core that has stopped: its epoll set closes with the reactor.
        lock(&self.harvester).take();
        lock(&self.unparker).take()
    }

    /// Records the CPU the core's thread woke on (core side, after a park).
    #[inline]
    pub(crate) fn set_cpu(&self, cpu: Option<usize>) {
        // A hint for other cores' governors, ordering nothing.
        self.cpu.store(cpu.unwrap_or(usize::MAX), Ordering::Relaxed);
    }

    /// The CPU the core's thread last woke on, if known.
    #[inline]
    pub(crate) fn cpu(&self) -> Option<usize> {
        Some(self.cpu.load(Ordering::Relaxed)).filter(|&c| c != usize::MAX)
    }

    /// Whether the core has published that it sleeps.
    pub(crate) fn is_parked(&self) -> bool {
        self.inbox.sleeping_until().is_some()
    }

    /// Publishes the core's counters for other threads (its own thread only).
    pub(crate) fn publish(&self, stats: &CoreStats) {
        self.published.store(stats);
    }

    /// The counters as of the core's last idle transition, with the live remote-wake counters
    /// (the hand-over's own atomics need no publishing).
    pub(crate) fn stats(&self) -> CoreStats {
        let live = self.inbox.stats();
        CoreStats {
            remote_wakes_sent: live.remote_wakes_sent,
            remote_wakes_avoided: live.remote_wakes_avoided,
            remote_arms: live.remote_arms,
            ..self.published.load()
        }
    }

    /// Whether the calling thread is the one that runs this core (for core 0: the thread in
    /// `block_on`, or that last was).
    pub(crate) fn is_core_thread(&self) -> bool {
        self.home() == thread_token()
    }

    /// The [`thread_token`] of the thread that runs this core, or last ran it.
    pub(crate) fn home(&self) -> u64 {
        // Written by the thread that holds core 0's lease, read by it or as a hint.
        self.home.load(Ordering::Relaxed)
    }

    /// Core 0 moves to the thread `token` (from `block_on`, holding its lease).
    pub(crate) fn set_home(&self, token: u64) {
        self.home.store(token, Ordering::Relaxed);
    }

    /// The core's live `spawn_local` tasks that are bound to its home thread.
    pub(crate) fn local_tasks(&self) -> usize {
        self.local_tasks.load(Ordering::Relaxed)
    }

    /// A bound `spawn_local` task was spawned.
    pub(crate) fn add_local(&self) {
        self.local_tasks.fetch_add(1, Ordering::Relaxed);
    }

    /// A bound `spawn_local` task's future is gone: dropped, or leaked if `leaked`.
    pub(crate) fn remove_local(&self, leaked: bool) {
        self.local_tasks.fetch_sub(1, Ordering::Relaxed);
        if leaked {
            self.local_leaked.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// An accept loop of this core listens on `fd` until it unregisters it (before the
    /// descriptor closes).
    pub(crate) fn register_listener(&self, fd: std::os::fd::RawFd) {
        lock(&self.listeners).push(fd);
    }

    /// The accept loop listening on `fd` ends; its descriptor closes after this.
    pub(crate) fn unregister_listener(&self, fd: std::os::fd::RawFd) {
        let mut listeners = lock(&self.listeners);
        if let Some(i) = listeners.iter().position(|&l| l == fd) {
            listeners.swap_remove(i);
        }
    }

    /// After a shutdown that leaked thread-bound futures (on another thread than theirs): the
    /// listeners their accept loops held stay open with them, and would go on taking
    /// connections that nobody serves (and, with `SO_REUSEPORT`, a share of a new server's).
    /// Shuts each one down, which takes it out of the port's listening set: new connections
    /// are refused, or go to the port's other listeners. Returns how many.
    pub(crate) fn shut_leaked_listeners(&self) -> usize {
        let listeners = std::mem::take(&mut *lock(&self.listeners));
        for &fd in &listeners {
            // SAFETY: `fd` is still open: an accept loop unregisters it before its listener
            // closes, and this loop was leaked, not dropped, so it never will. `shutdown` only
            // changes the socket's state; an error (not a socket any more) changes nothing.
            unsafe { libc::shutdown(fd, libc::SHUT_RDWR) };
        }
        listeners.len()
    }

    /// How many bound `spawn_local` futures were leaked rather than dropped on a thread not
    /// theirs.
    pub(crate) fn local_leaked(&self) -> usize {
        self.local_leaked.load(Ordering::Relaxed)
    }

    /// Records that the core's thread died of a panic with `message`; it no longer sleeps.
    pub(crate) fn set_death(&self, message: String) {
        *lock(&self.death) = Some(message);
        // Nothing is placed on it any more.
        self.stop.store(true, Ordering::Release);
        // It died where it was, possibly inside its sleep: say it does not sleep any more.
        self.inbox.woke();
    }

    /// The message of the panic the core's thread died of, if it did.
    pub(crate) fn death(&self) -> Option<String> {
        lock(&self.death).clone()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::{Shared, Unpark};
    use crate::worker::id::CoreId;

    /// A core nobody wakes.
    struct Nobody;

    impl Unpark for Nobody {
        fn unpark(&self) {}
    }

    #[test]
    fn only_the_listeners_still_registered_are_shut_down_after_a_leak() {
        let shared = Shared::with_unparker(
            CoreId {
                runtime: CoreId::new_runtime(),
                index: 0,
            },
            Nobody,
            false,
        );
        // Descriptors that are no sockets: `shutdown` fails on them and changes nothing.
        shared.register_listener(-3);
        shared.register_listener(-2);
        shared.register_listener(-1);
        // The loop of -2 ended: its descriptor may be reused by anything now.
        shared.unregister_listener(-2);
        assert_eq!(shared.shut_leaked_listeners(), 2);
        assert_eq!(shared.shut_leaked_listeners(), 0, "taken once");
    }
}
