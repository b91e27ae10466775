//! A core's tokio context (`Builder::tokio_context`, feature `tokio-compat`): a tokio
//! current-thread runtime of the core's own, driven by the core's thread, so that what
//! libraries written for tokio do inside (`tokio::spawn`, `tokio::time`, `tokio::net`) runs on
//! the core that called them, with no thread in between and no wake across threads.
//!
//! # How the core drives it
//!
//! - **Entered** on the core's thread while the core runs (core 0: for each `block_on`), so
//!   that `tokio::spawn`, `tokio::time::sleep` and `tokio::net` find it.
//! - **The core parks inside it.** The core's epoll descriptor is registered with tokio's
//!   reactor (an `AsyncFd`, edge-triggered; an epoll descriptor is readable while events are
//!   ready in it). Where the core would block in `epoll_wait`, it runs tokio's `block_on` on a
//!   future that waits for that descriptor ([`CoreTokio::park`]): tokio runs its tasks, fires
//!   its timers and polls its sockets meanwhile, and parks in its own `epoll_wait`, which
//!   returns for tokio's events and for the core's (its I/O, its timerfd, its eventfd). The
//!   readiness is cleared before the core polls its own epoll without blocking, so an event
//!   that comes after that poll makes a new edge.
//! - **What tokio's tasks hand the core while it is parked.** A tokio task may wake a tickless
//!   task of this core (pushed to the core's queue on this thread), wake core 0's `block_on`
//!   future, or register a tickless timer earlier than the core's device. None of these
//!   writes a descriptor, so the core checks them in tokio's `on_thread_park` hook (tokio
//!   calls it before each park, on this thread) and wakes the idle future if there is any
//!   ([`CoreTokio::wake_idle`]); tokio then polls it instead of parking.
//! - **While the core is busy** it gives tokio a turn at each of its own fairness polls of
//!   I/O (and at each look for work of an idle spin): [`CoreTokio::turn`] runs tokio's queued
//!   tasks and polls its reactor and timers once, without blocking (one `epoll_wait` of
//!   tokio's).
//!
//! - **Watched as the core's polls.** What tokio runs on the core's thread holds the core as a
//!   task's poll does: from entering tokio's `block_on` (or its waking from its park, tokio's
//!   `on_thread_unpark` hook) to leaving it (or its parking, `on_thread_park`), the core's
//!   watch word says a poll of tokio's runs (`Watch::tokio_runs`, `Watch::tokio_rests`), so
//!   that the stall detector reports a `tokio::spawn` task that blocks the thread; its time
//!   parked in tokio is idle, as the core's in epoll.
//!
//! Core 0 is run only by a thread in `block_on`; while none is, its tokio runtime is driven by
//! a stand-in thread (`runtime::tokio_stand_in`), so that what was started on it keeps going.

#[cfg(feature = "tokio-compat")]
pub(crate) use with_tokio::CoreTokio;
#[cfg(not(feature = "tokio-compat"))]
pub(crate) use without_tokio::CoreTokio;

/// What tokio calls on a core's thread around its runtime's parks (the core's checks, given
/// from the loop's layer, which can look the core up).
#[derive(Debug, Clone, Copy)]
#[cfg_attr(not(feature = "tokio-compat"), allow(dead_code))]
pub(crate) struct ParkHooks {
    /// Before each park (tokio's `on_thread_park`).
    pub(crate) before_park: fn(),
    /// After each park (tokio's `on_thread_unpark`).
    pub(crate) after_unpark: fn(),
}

#[cfg(feature = "tokio-compat")]
mod with_tokio {
    use std::cell::{Cell, RefCell};
    use std::future::Future;
    use std::io;
    use std::os::fd::{AsRawFd, RawFd};
    use std::pin::Pin;
    use std::rc::Rc;
    use std::sync::Arc;
    use std::task::{Context, Poll, Waker};

    use tickless_io::internal::Reactor;
    use tokio::io::unix::AsyncFd;
    use tokio::io::Interest;

    use super::ParkHooks;
    use crate::worker::watch::Watch;

    /// The core's epoll descriptor, as tokio's reactor watches it: the reactor is held, so
    /// the descriptor (closed only when the reactor drops) stays open while this lives.
    struct EpollFd(Rc<Reactor>);

    impl AsRawFd for EpollFd {
        fn as_raw_fd(&self) -> RawFd {
            self.0.epoll_fd()
        }
    }

    /// A core's tokio runtime, and how the core parks in it.
    pub(crate) struct CoreTokio {
        /// The core's epoll descriptor in tokio's reactor (always `Some` but in `drop`, which
        /// takes it out of tokio's reactor before the runtime stops).
        epoll: Option<AsyncFd<EpollFd>>,
        /// A current-thread runtime, I/O and timers enabled; shared with the stand-in thread
        /// that drives core 0's while no thread is in `block_on`. Always `Some` but in `drop`.
        runtime: Option<Arc<tokio::runtime::Runtime>>,
        /// The idle future's waker while the core is parked in tokio.
        idle: RefCell<Option<Waker>>,
        /// While the core is parked in tokio (inside [`park`](Self::park)): the instant its
        /// device is programmed for (`None`: no timer), which a tickless timer registered
        /// meanwhile is compared with. `None` while it is not parked.
        parked: Cell<Option<Option<u64>>>,
        /// The core's thread is inside tokio's `block_on` (a park or a [`turn`](Self::turn)):
        /// what tokio's tasks wake there, the core's loop looks at only afterwards.
        inside: Cell<bool>,
        /// Set by [`wake_idle`](Self::wake_idle): the idle future returns at its next poll.
        wake: Cell<bool>,
    }

    impl CoreTokio {
        /// A tokio runtime for the core whose reactor is `reactor`, calling `hooks` on the
        /// core's thread around each of its parks.
        ///
        /// # Errors
        ///
        /// Creating tokio's runtime (its epoll instance, its eventfd) or registering the
        /// core's epoll descriptor with it failed.
        pub(crate) fn new(reactor: &Rc<Reactor>, hooks: ParkHooks) -> io::Result<CoreTokio> {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .on_thread_park(hooks.before_park)
                .on_thread_unpark(hooks.after_unpark)
                .build()?;
            let epoll = {
                let _in = runtime.enter();
                // SAFETY: `EpollFd` holds the reactor, whose epoll descriptor is open, and
                // always the same one, until the reactor drops: so for as long as the
                // `AsyncFd` that owns the `EpollFd`.
                unsafe {
                    AsyncFd::register_with_interest(EpollFd(reactor.clone()), Interest::READABLE)
                }
                .map_err(|e| e.into_parts().1)?
            };
            Ok(CoreTokio {
                epoll: Some(epoll),
                runtime: Some(Arc::new(runtime)),
                idle: RefCell::new(None),
                parked: Cell::new(None),
                inside: Cell::new(false),
                wake: Cell::new(false),
            })
        }

        /// Makes the runtime current on this thread until the guard drops (`tokio::spawn`,
        /// `tokio::time` and `tokio::net` find it).
        pub(crate) fn enter(&self) -> tokio::runtime::EnterGuard<'_> {
            self.runtime().enter()
        }

        /// The runtime, for the thread that drives core 0's while no thread is in `block_on`.
        pub(crate) fn runtime(&self) -> &Arc<tokio::runtime::Runtime> {
            self.runtime
                .as_ref()
                .expect("a core's tokio runtime is there until it drops")
        }

        /// Parks the core in tokio's runtime until the core's epoll descriptor is readable, or
        /// [`wake_idle`](Self::wake_idle) is called; tokio's tasks, timers and I/O run
        /// meanwhile. `until`: the instant the core's device is programmed for. Returns whether
        /// the core's descriptor was readable (its epoll has events to take).
        pub(crate) fn park(&self, until: Option<u64>, watch: &Watch) -> bool {
            self.parked.set(Some(until));
            let ready = self.inside(watch, || self.runtime().block_on(Idle(self)));
            self.parked.set(None);
            self.wake.set(false);
            ready
        }

        /// Whether the core is parked in tokio, and the instant its device is programmed for
        /// (`Some(None)`: parked, no timer).
        pub(crate) fn parked_until(&self) -> Option<Option<u64>> {
            self.parked.get()
        }

        /// Ends the park at the idle future's next poll (called on the core's thread, from
        /// tokio's `on_thread_park` hook or a tokio task: no descriptor is written).
        pub(crate) fn wake_idle(&self) {
            if self.parked.get().is_some() && !self.wake.replace(true) {
                if let Some(waker) = self.idle.borrow().as_ref() {
                    waker.wake_by_ref();
                }
            }
        }

        /// A turn of tokio's runtime without blocking: its queued tasks run (a budget's
        /// worth), its timers fire and its reactor is polled once.
        pub(crate) fn turn(&self, watch: &Watch) {
            self.inside(watch, || self.runtime().block_on(YieldOnce(false)));
        }

        /// Whether the core's thread is inside tokio's `block_on` (parked, or taking a turn):
        /// a wake of core 0's `block_on` future made there must tell the core through its
        /// inbox, whose DIRTY bit the idle path and the spins look at.
        pub(crate) fn is_inside(&self) -> bool {
            self.inside.get()
        }

        /// Runs `f` marked as inside tokio's `block_on`, and as a poll of tokio's in the
        /// core's `watch` (both cleared on unwind too).
        fn inside<R>(&self, watch: &Watch, f: impl FnOnce() -> R) -> R {
            struct Outside<'a>(&'a Cell<bool>, &'a Watch);
            impl Drop for Outside<'_> {
                fn drop(&mut self) {
                    self.1.tokio_rests();
                    self.0.set(false);
                }
            }
            self.inside.set(true);
            watch.tokio_runs();
            let _outside = Outside(&self.inside, watch);
            f()
        }
    }

    impl Drop for CoreTokio {
        /// Stops the runtime: its tasks are dropped here, its blocking threads are not waited
        /// for (as tokio's `shutdown_background`; a plain drop would wait for them). Core 0's
        /// stand-in thread has ended before, so this is the last owner.
        fn drop(&mut self) {
            drop(self.epoll.take());
            if let Some(Ok(runtime)) = self.runtime.take().map(Arc::try_unwrap) {
                runtime.shutdown_background();
            }
        }
    }

    /// The idle future: ready when the core's epoll descriptor is readable (`true`, its
    /// readiness cleared), or when the park is ended by [`CoreTokio::wake_idle`] (`false`).
    struct Idle<'a>(&'a CoreTokio);

    impl Future for Idle<'_> {
        type Output = bool;

        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<bool> {
            let tokio = self.0;
            if tokio.wake.get() {
                return Poll::Ready(false);
            }
            let epoll = tokio.epoll.as_ref().expect("taken only in drop");
            match epoll.poll_read_ready(cx) {
                Poll::Ready(Ok(mut ready)) => {
                    // Before the core's own poll: an event after it makes a new edge.
                    ready.clear_ready();
                    Poll::Ready(true)
                }
                // tokio's reactor is gone while its runtime runs: a broken invariant.
                Poll::Ready(Err(e)) => panic!("tickless: the core's tokio reactor failed: {e}"),
                Poll::Pending => {
                    let mut idle = tokio.idle.borrow_mut();
                    if !idle.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                        *idle = Some(cx.waker().clone());
                    }
                    Poll::Pending
                }
            }
        }
    }

    /// Pending once (having woken itself), then ready: tokio's `block_on` runs its queued
    /// tasks and polls its driver once without blocking in between.
    struct YieldOnce(bool);

    impl Future for YieldOnce {
        type Output = ();

        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            if std::mem::replace(&mut self.0, true) {
                return Poll::Ready(());
            }
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
}

#[cfg(not(feature = "tokio-compat"))]
mod without_tokio {
    use std::io;
    use std::rc::Rc;

    use tickless_io::internal::Reactor;

    use super::ParkHooks;
    use crate::worker::watch::Watch;

    /// Without the `tokio-compat` feature a core has no tokio runtime: this is never made.
    pub(crate) enum CoreTokio {}

    impl CoreTokio {
        /// Never called without the feature (the builder cannot ask for a tokio context).
        pub(crate) fn new(_reactor: &Rc<Reactor>, _hooks: ParkHooks) -> io::Result<CoreTokio> {
            Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "the tokio context needs tickless's `tokio-compat` feature",
            ))
        }

        /// See the feature's version.
        pub(crate) fn park(&self, _until: Option<u64>, _watch: &Watch) -> bool {
            match *self {}
        }

        /// See the feature's version.
        pub(crate) fn turn(&self, _watch: &Watch) {
            match *self {}
        }

        /// See the feature's version.
        pub(crate) fn is_inside(&self) -> bool {
            match *self {}
        }
    }
}
