//! The per-core reactor: one `mio::Poll`, the slab of registrations, the timerfd's events and
//! the unparker.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::fmt;
use std::io;
use std::marker::PhantomData;
use std::os::fd::{AsRawFd, RawFd};
use std::panic::{self, AssertUnwindSafe};
use std::rc::Rc;
use std::sync::Arc;
use std::task::Waker;
use std::time::Duration;

use mio::unix::SourceFd;
use mio::{Interest, Token};

use crate::home::{Home, Key, Slot, TAKEN_TIMER, TAKEN_UNPARK};
use crate::net::addr::Resolve;
use crate::ready::Ready;
use crate::registration::{Level, ScheduledIo};
use crate::stats::{Counter, IoStats};
use crate::sys;
use crate::timerfd::TimerFd;
use crate::unparker::Unparker;

/// The timerfd's token; above every registration token (see [`token`]).
const TIMER_TOKEN: Token = Token(usize::MAX - 1);
/// The unparker's token; above every registration token (see [`token`]).
const UNPARK_TOKEN: Token = Token(usize::MAX - 2);
/// Low bits of a token: the slab key.
const KEY_BITS: u32 = usize::BITS / 2;
/// Mask of the slab key in a token; also the largest key a token can carry.
const KEY_MASK: usize = (1 << KEY_BITS) - 1;
/// Mask of the generation, which takes the high bits less the top one, so that no
/// registration token reaches the reserved ones.
const GENERATION_MASK: usize = (1 << (KEY_BITS - 1)) - 1;
/// epoll events fetched per `epoll_wait`; more stay queued for the next poll.
const EVENTS_CAPACITY: usize = 1024;

/// The token of the registration at `key` with `generation`.
///
/// The generation makes a stale event for a removed registration miss a new one that reuses
/// its slab key.
fn token(key: usize, generation: usize) -> Token {
    Token((generation & GENERATION_MASK) << KEY_BITS | key)
}

/// epoll events a harvest fetches at most (more stay for the owner or the next harvest).
const HARVEST_EVENTS: usize = 64;

/// Dispatches `events` into the slots `key` holds, moving the wakers concerned into `wake`;
/// returns the events of the reactor's own descriptors among them ([`TAKEN_TIMER`],
/// [`TAKEN_UNPARK`]: the unparker is not drained here).
#[inline(always)]
fn dispatch(
    events: &[libc::epoll_event],
    key: &Key<'_>,
    wake: &mut VecDeque<Waker>,
    home: &Home,
) -> u8 {
    let mut own = 0;
    for event in events {
        let (bits, data) = (event.events, event.u64);
        match Token(data as usize) {
            TIMER_TOKEN => own |= TAKEN_TIMER,
            UNPARK_TOKEN => own |= TAKEN_UNPARK,
            Token(token) => {
                let slot = key.get(token & KEY_MASK);
                if let Some(slot) = slot.filter(|s| s.generation == token >> KEY_BITS) {
                    slot.io
                        .dispatch(Ready::from_epoll(bits), wake, home.epoll_set());
                }
            }
        }
    }
    own
}

/// Another thread's way into a reactor's ready I/O: what a core that runs uses to take the
/// events of a core that cannot poll them (its thread is off its CPU, or inside a long poll),
/// so that the tasks waiting on them are not held up by that core.
///
/// `Send` and `Sync`, unlike the [`Reactor`] it comes from ([`Reactor::harvester`]); it keeps
/// the epoll set open, not the reactor alive.
///
/// # Implementation
///
/// A harvest takes the reactor's key (its home's slab lock) if nobody holds it, fetches the
/// events ready now (`epoll_wait` with no timeout) and dispatches them into the registrations
/// as the owner's own poll would, under the key; the wakers go to the caller, who wakes them
/// outside every lock. Events of the reactor's own timerfd and unparker are not the harvester's:
/// it hands them back (`Home::hand_back`: a flag the owner's next poll reads, and an unpark,
/// since the owner may be waiting in `epoll_wait` for the very edge the harvester took).
#[derive(Clone)]
pub struct Harvester {
    /// The harvested reactor's cross-thread part.
    home: Arc<Home>,
}

impl Harvester {
    /// Dispatches the events ready in the reactor's epoll set now, at most 64, moving the
    /// wakers they concern into `wake` (to be woken by the caller, outside this call). `None`
    /// if another thread holds the reactor's key (its owner dispatching, or another harvester)
    /// or the reactor is gone; otherwise the number of events of registrations taken.
    pub fn harvest(&self, wake: &mut VecDeque<Waker>) -> Option<usize> {
        if self.home.is_closed() {
            return None;
        }
        let key = self.home.try_key()?;
        let mut events = [sys::NO_EVENT; HARVEST_EVENTS];
        // An error can only mean a broken epoll descriptor: nothing taken.
        let n =
            sys::epoll_wait(self.home.epoll_fd(), &mut events, sys::Wait::Millis(0)).unwrap_or(0);
        let own = dispatch(&events[..n], &key, wake, &self.home);
        drop(key);
        if own != 0 {
            self.home.hand_back(own);
        }
        Some(n - own.count_ones() as usize)
    }
}

impl fmt::Debug for Harvester {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Harvester")
            .field("home", &self.home)
            .finish()
    }
}

/// What one [`Reactor::poll`] saw.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Polled {
    /// Events `epoll_wait` returned, the timerfd's and the unparker's included.
    pub events: usize,
    /// The timerfd became readable: it expired, or the event is stale (it was re-armed later or
    /// disarmed after expiring). The timerfd's owner, which knows what it armed, tells which
    /// from a clock reading; the reactor reads neither the clock nor the descriptor.
    pub timer_event: bool,
    /// Another thread unparked this core; the eventfd has been drained.
    pub unparked: bool,
    /// A signal interrupted the wait (`EINTR`): nothing was seen.
    pub interrupted: bool,
}

/// Per-core counters; see [`IoStats`] for what each means.
#[derive(Debug, Default)]
struct Counters {
    /// `epoll_wait` calls.
    polls: Counter,
    /// Events returned.
    events: Counter,
    /// Unparker events that found the eventfd written.
    unparks: Counter,
    /// Events of the timerfd.
    timer_events: Counter,
    /// Wakers woken.
    wakes: Counter,
    /// Wakers that panicked.
    waker_panics: Counter,
    /// Registrations dropped on another thread whose slots this reactor freed.
    orphans: Counter,
    /// Descriptors registered so far.
    registered: Counter,
}

/// A core's I/O driver: an epoll instance, its registrations, the events of its timerfd and its
/// unparker.
///
/// One per core thread, and bound to it: `Reactor` is neither `Send` nor `Sync`. The runtime
/// [`enter`](Self::enter)s it so that I/O types created on the thread register with it, and
/// calls [`poll`](Self::poll) from its loop.
///
/// ```compile_fail
/// fn assert_send<T: Send>() {}
/// assert_send::<tickless_io::internal::Reactor>();
/// ```
///
/// ```compile_fail
/// fn assert_sync<T: Sync>() {}
/// assert_sync::<tickless_io::internal::Reactor>();
/// ```
///
/// # Implementation
///
/// Descriptors are registered under a token holding their slab key and a generation:
/// edge-triggered through mio, except the byte streams (pipes, TCP and Unix streams), which are
/// level-triggered with their interest kept to what tasks wait for (see `registration::Level`),
/// so that a read that filled its buffer needs no second read to learn that the stream is
/// drained.
/// [`poll`](Self::poll) is one `epoll_wait`; it ORs each event's readiness into the
/// registration, collects the wakers concerned, and wakes them only after releasing every
/// borrow, so a waker may freely create or drop I/O objects on this reactor.
pub struct Reactor {
    /// The epoll instance and the buffer for the events of one `epoll_wait`, in one cell so
    /// that a poll borrows once. Borrowed mutably only inside `poll`, and never while a waker
    /// runs.
    poll: RefCell<(mio::Poll, Box<[libc::epoll_event]>)>,
    /// The generation the next registration gets.
    next_generation: Cell<usize>,
    /// Wakers collected during dispatch, woken after, first in first out; kept to reuse its
    /// allocation. Borrowed during dispatch and for each `pop_front`, never while a waker
    /// runs, so a waker that polls this reactor re-entrantly adds to it and wakes what is left.
    wake_list: RefCell<VecDeque<Waker>>,
    /// The core's cross-thread wakeup, registered under [`UNPARK_TOKEN`].
    unparker: Unparker,
    /// What registrations reach from other threads: the owner's identity, the orphan list.
    home: Arc<Home>,
    /// How host names are looked up for this reactor's connects (`None`: a blocking lookup).
    resolver: Cell<Option<Resolve>>,
    /// Counters reported by `stats`.
    counters: Counters,
    /// Keeps the reactor `!Send`: its registrations check they run on the thread it was
    /// created on, which only holds if it stays there.
    _not_send: PhantomData<*const ()>,
}

impl Reactor {
    /// Creates a reactor: an epoll instance with an unparker registered, and no timerfd (see
    /// [`with_timer`](Self::with_timer)).
    ///
    /// Also sets `SIGPIPE` to be ignored, once per process and only if it still has its
    /// default disposition, so that writing to a closed pipe or socket returns `BrokenPipe`
    /// instead of killing the process (Rust binaries do this before `main`, but embedders in
    /// other languages may not).
    ///
    /// # Errors
    ///
    /// Creating the epoll instance, the timerfd or the eventfd failed (typically `EMFILE`).
    pub fn new() -> io::Result<Rc<Reactor>> {
        sys::ignore_sigpipe();
        let poll = mio::Poll::new()?;
        let unparker = Unparker::new()?;
        poll.registry().register(
            &mut SourceFd(&unparker.raw_fd()),
            UNPARK_TOKEN,
            Interest::READABLE,
        )?;
        let home = Arc::new(Home::new(&poll, unparker.clone())?);
        Ok(Rc::new(Reactor {
            home,
            poll: RefCell::new((poll, vec![sys::NO_EVENT; EVENTS_CAPACITY].into())),
            next_generation: Cell::new(0),
            wake_list: RefCell::new(VecDeque::new()),
            unparker,
            resolver: Cell::new(None),
            counters: Counters::default(),
            _not_send: PhantomData,
        }))
    }

    /// Sets how [`TcpStream::connect`](crate::TcpStream::connect) looks up host names on this
    /// reactor's thread: the runtime sets a lookup on its blocking pool, so that a slow DNS
    /// server never stalls the core. Without one, the lookup blocks (as std's does).
    pub fn set_resolver(&self, resolve: Resolve) {
        self.resolver.set(Some(resolve));
    }

    /// The resolver set with [`set_resolver`](Self::set_resolver).
    pub fn resolver(&self) -> Option<Resolve> {
        self.resolver.get()
    }

    /// The epoll instance's descriptor, for an event loop that waits on this reactor from
    /// its own epoll (tickless's tokio context parks a core in tokio's reactor: this
    /// descriptor is readable while events are ready here). Polling it still goes through
    /// [`poll`](Self::poll); the descriptor is closed when the reactor drops.
    pub fn epoll_fd(&self) -> RawFd {
        self.poll.borrow().0.as_raw_fd()
    }

    /// The cross-thread part its registrations hold.
    pub(crate) fn home(&self) -> &Arc<Home> {
        &self.home
    }

    /// A handle through which another thread takes this reactor's ready events when this
    /// reactor's thread cannot (see [`Harvester`]).
    pub fn harvester(&self) -> Harvester {
        Harvester {
            home: Arc::clone(&self.home),
        }
    }

    /// A handle that wakes this reactor's blocking [`poll`](Self::poll) from any thread.
    pub fn unparker(&self) -> Unparker {
        self.unparker.clone()
    }

    /// Creates a reactor and its clock event device: a timerfd registered with it, whose
    /// events [`poll`](Self::poll) reports as [`Polled::timer_event`]. The timerfd is handed to
    /// the caller alone (the core's timer driver): nothing reachable from the reactor, or from
    /// the I/O objects registered with it, can re-program it behind the driver's back.
    ///
    /// # Errors
    ///
    /// As [`new`](Self::new), and creating or registering the timerfd failed.
    ///
    /// # Examples
    ///
    /// ```
    /// use tickless_io::internal::{Reactor, TimerFd};
    ///
    /// let (reactor, timer) = Reactor::with_timer()?;
    /// timer.arm(TimerFd::now_mono_ns()); // a deadline of "now" fires at once
    /// assert!(reactor.poll(None)?.timer_event);
    /// # std::io::Result::Ok(())
    /// ```
    pub fn with_timer() -> io::Result<(Rc<Reactor>, TimerFd)> {
        let reactor = Reactor::new()?;
        let timer = TimerFd::new()?;
        reactor.poll.borrow().0.registry().register(
            &mut SourceFd(&timer.raw_fd()),
            TIMER_TOKEN,
            Interest::READABLE,
        )?;
        Ok((reactor, timer))
    }

    /// Waits for events, at most `timeout` (`None`: until one arrives), and dispatches them.
    ///
    /// One `epoll_wait`. Wakes the tasks waiting on ready registrations, each wake inside
    /// `catch_unwind` so that a panicking waker cannot take the reactor down (the panic is
    /// counted in [`IoStats::waker_panics`]). Reports an event of the timerfd (without reading
    /// it) and drains the unparker if it was written. A signal interrupting the wait returns
    /// `Ok` with nothing seen.
    ///
    /// `timeout` has epoll's millisecond granularity and is rounded up; precise wakeups come
    /// from the timerfd (see [`with_timer`](Self::with_timer)). `Some(Duration::ZERO)` polls
    /// without blocking.
    ///
    /// # Errors
    ///
    /// `epoll_wait` failed with something other than `EINTR`: only possible if the epoll
    /// descriptor itself is broken.
    #[inline]
    pub fn poll(&self, timeout: Option<Duration>) -> io::Result<Polled> {
        let ms = match timeout {
            None => -1,
            // Rounded up, as mio does: a wait never ends before the time asked.
            Some(Duration::ZERO) => 0,
            Some(d) => {
                let ms = d.as_secs().saturating_mul(1_000)
                    + u64::from(d.subsec_nanos().div_ceil(1_000_000));
                libc::c_int::try_from(ms).unwrap_or(libc::c_int::MAX)
            }
        };
        self.wait(sys::Wait::Millis(ms))
    }

    /// Waits for events, at most `timeout` (`None`: until one arrives), and dispatches them as
    /// [`poll`](Self::poll) does, with a timeout in nanoseconds: the clock event device
    /// without a timerfd. One `epoll_pwait2` (Linux 5.11). [`Polled::timer_event`] says the
    /// wait timed out.
    ///
    /// The kernel does not end such a wait at its timeout but anywhere in a window after it,
    /// as long as the larger of the thread's timer slack (`PR_SET_TIMERSLACK`, 50 µs by
    /// default; [`precise_timer_slack`](Self::precise_timer_slack) lowers it to 1 ns) and a
    /// share of the timeout: a thousandth (a two-hundredth for a thread whose nice value is
    /// above zero; none for a real-time thread), at most 100 ms; on an idle CPU, at its end.
    /// So this passes the kernel a timeout shortened by that share: the wait ends by
    /// `timeout` plus the wakeup's own latency (and the part of the timer slack larger than
    /// the share), and may time out up to the share before `timeout`, when another interrupt
    /// comes within the window: a caller that must not wake early waits again for the rest,
    /// whose share is a thousandth as long. A 1 s timeout is given to the kernel as
    /// 999.000999 ms, a 100 ms one as 99.900099 ms. The share is asked of the kernel at a
    /// thread's first precise wait, and again by `precise_timer_slack` and
    /// [`restore_timer_slack`](Self::restore_timer_slack): a thread that changes its nice
    /// value or scheduling policy in between keeps the old share until then.
    ///
    /// # Errors
    ///
    /// [`Unsupported`](io::ErrorKind::Unsupported) where the thread cannot use
    /// `epoll_pwait2`: the kernel has none (`ENOSYS`), or a seccomp filter refuses it
    /// (`EPERM`, as filters older than the call answer); otherwise as [`poll`](Self::poll).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickless_io::internal::Reactor;
    ///
    /// let reactor = Reactor::new()?;
    /// match reactor.poll_precise(Some(Duration::from_micros(50))) {
    ///     Ok(polled) => assert!(polled.timer_event), // nothing else happened: it timed out
    ///     Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::Unsupported),
    /// }
    /// # std::io::Result::Ok(())
    /// ```
    pub fn poll_precise(&self, timeout: Option<Duration>) -> io::Result<Polled> {
        let Some(timeout) = timeout else {
            return self.wait(sys::Wait::Millis(-1));
        };
        // A zero timeout never blocks, and needs no window.
        let kernel = if timeout.is_zero() {
            timeout
        } else {
            sys::wait_slack().shorten(timeout)
        };
        let ts = sys::KernelTimespec::from_duration(kernel);
        let mut polled = self.wait(sys::Wait::Nanos(ts))?;
        polled.timer_event = polled.events == 0 && !polled.interrupted;
        if polled.timer_event {
            self.counters.timer_events.incr();
        }
        Ok(polled)
    }

    /// Lowers the calling thread's kernel timer slack to 1 ns, so that a
    /// [`poll_precise`](Self::poll_precise) wait ends by its timeout rather than up to 50 µs
    /// after it: the window the kernel gives the wait is then the share of its timeout alone,
    /// which `poll_precise` makes up for (a timerfd, which the kernel never delays, needs
    /// none of this). Returns the slack it had, for
    /// [`restore_timer_slack`](Self::restore_timer_slack): the setting is the thread's, not
    /// the reactor's.
    pub fn precise_timer_slack() -> u64 {
        sys::set_timer_slack(1)
    }

    /// Gives the calling thread back the kernel timer slack `ns` that
    /// [`precise_timer_slack`](Self::precise_timer_slack) returned.
    pub fn restore_timer_slack(ns: u64) {
        sys::set_timer_slack(ns);
    }

    /// One wait and the dispatch of its events.
    ///
    /// The wait itself holds no lock: a core that harvests this reactor's events meanwhile
    /// (see [`Harvester`]) reads the same epoll set. The dispatch holds the home's key, and
    /// adds the events of this reactor's own descriptors that a harvester took and handed back.
    fn wait(&self, wait: sys::Wait) -> io::Result<Polled> {
        let mut polled = Polled::default();
        {
            let (poll, events) = &mut *self.poll.borrow_mut();
            self.counters.polls.incr();
            let n = match sys::epoll_wait(poll.as_raw_fd(), events, wait) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {
                    polled.interrupted = true;
                    return Ok(polled);
                }
                Err(e) => return Err(e),
            };
            // An empty poll (a spin's look) takes no key.
            let own = if n > 0 {
                let mut wake = self.wake_list.borrow_mut();
                let key = self.home.key();
                dispatch(&events[..n], &key, &mut wake, &self.home)
            } else {
                0
            };
            // A harvester that took the owner's own events hands them back before it unparks
            // the owner (`Home::hand_back`): they are read with the unparker's event.
            let own = if own & TAKEN_UNPARK != 0 {
                own | self.home.take_handed_back()
            } else {
                own
            };
            polled.events = n;
            polled.timer_event = own & TAKEN_TIMER != 0;
            if own & TAKEN_UNPARK != 0 {
                polled.unparked |= self.unparker.drain();
            }
        }
        self.counters.events.add(polled.events as u64);
        if polled.unparked {
            self.counters.unparks.incr();
        }
        if self.home.has_orphans() {
            self.free_orphans();
        }
        if polled.timer_event {
            self.counters.timer_events.incr();
        }
        self.wake_all();
        Ok(polled)
    }

    /// Frees the slots of registrations dropped or moved away from this thread (see
    /// [`Home`]); they left the epoll set already. The tasks still waiting in a slot that moved
    /// away are woken (by the caller's [`wake_all`](Self::wake_all)): they poll again and find
    /// where it went. Called when [`Home::has_orphans`] says so.
    #[cold]
    #[inline(never)]
    fn free_orphans(&self) {
        let orphans = self.home.take_orphans();
        // Bind the slots so they (and any wakers they hold) drop after the slab borrow ends.
        let mut slab = self.home.key();
        let slots: Vec<(Slot, bool)> = {
            let registrations = &mut *slab;
            orphans
                .into_iter()
                .filter_map(|(key, moved)| Some((registrations.try_remove(key)?, moved)))
                .collect()
        };
        self.counters.orphans.add(slots.len() as u64);
        let mut wake = self.wake_list.borrow_mut();
        for (slot, moved) in &slots {
            if *moved {
                // Not out of the epoll set again here: the descriptor may have come back to
                // this reactor under a new slot by now, and epoll knows it by number.
                slot.io.take_waiters(&mut wake);
            }
        }
        drop(slab);
        drop(wake);
        drop(slots);
    }

    /// Wakes and empties the wake list, in order, each wake isolated by `catch_unwind`.
    fn wake_all(&self) {
        loop {
            // A statement of its own: the borrow must end before the waker runs.
            let next = self.wake_list.borrow_mut().pop_front();
            let Some(waker) = next else { break };
            self.counters.wakes.incr();
            if panic::catch_unwind(AssertUnwindSafe(|| waker.wake())).is_err() {
                self.counters.waker_panics.incr();
            }
        }
    }

    /// A snapshot of this reactor's counters.
    pub fn stats(&self) -> IoStats {
        IoStats {
            polls: self.counters.polls.get(),
            events: self.counters.events.get(),
            timer_events: self.counters.timer_events.get(),
            unparks_received: self.counters.unparks.get(),
            wakes: self.counters.wakes.get(),
            waker_panics: self.counters.waker_panics.get(),
            orphans_freed: self.counters.orphans.get(),
            registrations: self.home.key().len() as u64,
            registered: self.counters.registered.get(),
            epoll_ctls: self.home.counters.epoll_ctls.get(),
            read_would_blocks: self.home.counters.read_would_blocks.get(),
            write_would_blocks: self.home.counters.write_would_blocks.get(),
            accepts: self.accepts(),
            rebinds: self.home.counters.rebinds.get(),
        }
    }

    /// Connections accepted so far by the listeners this reactor drives (one load): what tells
    /// the runtime that a task just accepted one (see `tickless::spawn`'s placement).
    #[inline]
    pub fn accepts(&self) -> u64 {
        self.home.counters.accepts.get()
    }

    /// Registers `fd` for `interest`, edge-triggered through mio, or level-triggered if
    /// `level` (joining the epoll set now if `join_now`, read interest armed, write interest
    /// armed only while a task waits to write; otherwise at the first wait: see [`Level`]);
    /// returns its slab key and shared state.
    pub(crate) fn register(
        &self,
        fd: RawFd,
        interest: Interest,
        level: bool,
        join_now: bool,
    ) -> io::Result<(usize, Arc<ScheduledIo>)> {
        let mut registrations = self.home.key();
        let entry = registrations.vacant_entry();
        let key = entry.key();
        if key > KEY_MASK {
            return Err(io::Error::other(
                "too many descriptors registered with one reactor",
            ));
        }
        let generation = self.next_generation.get() & GENERATION_MASK;
        self.next_generation.set(generation.wrapping_add(1));
        let token = token(key, generation);
        let level = if level {
            let epfd = self.poll.borrow().0.as_raw_fd();
            Some(Level::add(
                epfd,
                fd,
                token.0 as u64,
                interest,
                join_now,
                &self.home.counters,
            )?)
        } else {
            self.home.counters.epoll_ctls.incr();
            self.poll
                .borrow()
                .0
                .registry()
                .register(&mut SourceFd(&fd), token, interest)?;
            None
        };
        let io = Arc::new(ScheduledIo::new(level));
        entry.insert(Slot {
            io: Arc::clone(&io),
            generation,
        });
        self.counters.registered.incr();
        Ok((key, io))
    }

    /// Removes `fd` from the epoll set (unless a level-triggered registration has left it
    /// already) and its slot from the slab.
    pub(crate) fn deregister(&self, key: usize, fd: RawFd) {
        let mut slots = self.home.key();
        let in_set = slots.get(key).is_none_or(|slot| slot.io.in_epoll_set());
        if in_set {
            self.home.counters.epoll_ctls.incr();
            let result = self
                .poll
                .borrow()
                .0
                .registry()
                .deregister(&mut SourceFd(&fd));
            // It can only fail if the descriptor was closed before its registration was
            // dropped, breaking `Registration`'s invariant; the kernel has then dropped it from
            // the epoll set already, so there is nothing left to undo, and a drop cannot report
            // an error.
            debug_assert!(
                result.is_ok(),
                "deregistering fd {fd} failed (closed before its registration?): {result:?}"
            );
        }
        // Out of the set before the slot goes, under the key: a harvester's events name live
        // slots only. Bound so that the slot (and any wakers it holds) drops after the key.
        let slot = slots.try_remove(key);
        drop(slots);
        drop(slot);
    }
}

impl Drop for Reactor {
    fn drop(&mut self) {
        // Registrations that outlive it fail from now on instead of waiting for events.
        self.home.close();
    }
}

impl fmt::Debug for Reactor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reactor")
            .field("unparker", &self.unparker)
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_never_reach_the_reserved_ones() {
        let highest = token(KEY_MASK, usize::MAX);
        assert!(highest.0 < UNPARK_TOKEN.0);
        assert_eq!(highest.0 & KEY_MASK, KEY_MASK);
        assert_eq!(highest.0 >> KEY_BITS, GENERATION_MASK);
    }

    #[test]
    fn token_round_trips() {
        let t = token(42, 7);
        assert_eq!((t.0 & KEY_MASK, t.0 >> KEY_BITS), (42, 7));
    }
}
