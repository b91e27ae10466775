//! One core's accept loop: accept, spawn, survive descriptor exhaustion, drain on stop.

use std::future::{poll_fn, Future};
use std::io;
use std::net::SocketAddr;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use crate::net::TcpStream;
use crate::time::{self, Instant};
use crate::worker::shared::Shared;

use super::conns::{ConnInfo, Conns};
use super::stats::Counters;
use super::stop::{Listed, Stop};

/// The accept-error hook's type.
pub(super) type ErrorHook = Arc<dyn Fn(usize, &io::Error) + Send + Sync>;

/// A [`Serve`]'s settings, shared by its cores.
pub(super) struct Config {
    /// First back-off after a failed `accept`.
    pub(super) backoff: Duration,
    /// Largest back-off.
    pub(super) max_backoff: Duration,
    /// Set `TCP_NODELAY` on accepted streams.
    pub(super) nodelay: bool,
    /// Called with the core and the error at the first failure of each run.
    pub(super) on_error: ErrorHook,
    /// How connections' tasks are spawned (their name).
    pub(super) task: crate::task::Builder,
}

/// What one core's loop reports when it ends.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct CoreReport {
    /// Connections open at the stop that ended by themselves in time.
    pub(super) drained: usize,
    /// Connections aborted at the deadline.
    pub(super) aborted: usize,
}

/// Accepts in a row before the loop yields to the core's other tasks.
const ACCEPT_BURST: u32 = 64;

/// What an `accept` error says about what to do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Failure {
    /// One connection's problem (`ECONNABORTED`, and the network errors `accept(2)` says to
    /// treat like `EAGAIN`): it has left the queue, so retrying at once cannot spin.
    Connection,
    /// Out of descriptors or kernel memory (`EMFILE`, `ENFILE`, `ENOBUFS`, `ENOMEM`, and
    /// `ENOSPC` from registering the new socket with epoll). The connection stays queued and
    /// the listener readable: retrying at once would fail at once, forever. Back off.
    Resources,
    /// Anything else: unexpected, so treated as `Resources` (reported, backed off), never
    /// fatal.
    Other,
}

/// Classifies an `accept` error.
pub(super) fn classify(e: &io::Error) -> Failure {
    match e.raw_os_error() {
        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM | libc::ENOSPC) => {
            Failure::Resources
        }
        Some(
            libc::ECONNABORTED
            | libc::ECONNRESET
            | libc::EPROTO
            | libc::EPERM
            | libc::ETIMEDOUT
            | libc::ENETDOWN
            | libc::ENETUNREACH
            | libc::ENOPROTOOPT
            | libc::EHOSTDOWN
            | libc::EHOSTUNREACH
            | libc::ENONET
            | libc::EOPNOTSUPP,
        ) => Failure::Connection,
        _ => match e.kind() {
            io::ErrorKind::ConnectionAborted | io::ErrorKind::ConnectionReset => {
                Failure::Connection
            }
            _ => Failure::Other,
        },
    }
}

/// What the loop waits for next.
enum Next<T> {
    /// The server is shutting down.
    Stop,
    /// What it was waiting for.
    Got(T),
}

/// Waits for `future` unless the stop comes first (the stop is checked first).
async fn unless_stopped<F: Future>(stop: &Stop, core: usize, future: F) -> Next<F::Output> {
    let mut future = std::pin::pin!(future);
    poll_fn(|cx| {
        if stop.poll(core, cx).is_ready() {
            return Poll::Ready(Next::Stop);
        }
        future.as_mut().poll(cx).map(Next::Got)
    })
    .await
}

/// Another core's listener, as this core's loop holds it (a duplicate descriptor of the same
/// socket), served here while its own core cannot serve it: core 0's (in core 1's loop) while
/// no thread is in `block_on`, when core 0 runs nothing; another core's (in core 0's loop)
/// while that core has stepped back from crowded CPUs (`Builder::yield_when_crowded`), when
/// its own loop accepts nothing. Otherwise the connections the kernel gives that listener
/// would wait, unaccepted, or be served by a thread that waits for a CPU.
pub(super) struct Adopt {
    /// The duplicate.
    pub(super) listener: std::net::TcpListener,
    /// The core whose listener it is, watched (`Shared::serve_watch`).
    pub(super) owner: Arc<Shared>,
    /// When its owner cannot serve it.
    pub(super) when: Unserved,
}

/// When a listener's own core cannot serve it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Unserved {
    /// Core 0, while no thread drives it.
    Left,
    /// Another core, while it has stepped back.
    SteppedBack,
}

impl Unserved {
    /// Whether `owner` cannot serve its listener now; `waker` is woken when that changes.
    fn now(self, owner: &Shared, waker: &Waker) -> bool {
        match self {
            Unserved::Left => !owner.driven_watching(waker),
            Unserved::SteppedBack => owner.yielded_watching(waker),
        }
    }
}

/// An [`Adopt`] in use: the duplicate, registered with this core the first time it is needed,
/// and polled only while it is (a listener whose core always serves is never registered here;
/// once registered, its connections may wake this core too, which then leaves them to their
/// own core while it serves).
enum Adopted {
    /// Not registered yet.
    Idle(Adopt),
    /// Registered here.
    Active(crate::net::TcpListener, Arc<Shared>, Unserved),
    /// Registering failed: its own core serves it when it can.
    Failed,
}

impl Adopted {
    /// A connection from the adopted listener, if its core cannot serve it and one is waiting;
    /// otherwise `Pending`, with the task woken when that changes or a connection arrives.
    fn poll_accept(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<(TcpStream, SocketAddr)>> {
        let unserved = match self {
            Adopted::Idle(a) => a.when.now(&a.owner, cx.waker()),
            Adopted::Active(_, owner, when) => when.now(owner, cx.waker()),
            Adopted::Failed => return Poll::Pending,
        };
        if !unserved {
            return Poll::Pending;
        }
        if let Adopted::Idle(_) = self {
            let Adopted::Idle(a) = std::mem::replace(self, Adopted::Failed) else {
                unreachable!("matched above")
            };
            if let Ok(l) = crate::net::TcpListener::from_std(a.listener) {
                *self = Adopted::Active(l, a.owner, a.when);
            }
        }
        match self {
            Adopted::Active(l, _, _) => l.poll_accept(cx),
            _ => Poll::Pending,
        }
    }

    /// The duplicate's descriptor, if it has one.
    fn fd(&self) -> Option<std::os::fd::RawFd> {
        use std::os::fd::AsRawFd;
        match self {
            Adopted::Idle(a) => Some(a.listener.as_raw_fd()),
            Adopted::Active(l, _, _) => Some(l.as_raw_fd()),
            Adopted::Failed => None,
        }
    }

    /// Stops watching its owner (the loop ends).
    fn forget(&self, waker: &Waker) {
        match self {
            Adopted::Idle(Adopt { owner, .. }) | Adopted::Active(_, owner, _) => {
                owner.serve_watch.forget(waker);
            }
            Adopted::Failed => {}
        }
    }
}

/// Everything one core's loop needs.
pub(super) struct Loop<H> {
    /// This core's index.
    pub(super) core: usize,
    /// The listener, bound on the calling thread, listed with the stop; registered here.
    pub(super) listener: Listed,
    /// Other cores' listeners, served here while their cores cannot (see [`Adopt`]).
    pub(super) adopt: Vec<Adopt>,
    /// This core, and core 0: a core other than 0 that stepped back accepts nothing on its
    /// own listener while core 0 is driven (core 0's loop adopts it then).
    pub(super) cores: (Arc<Shared>, Arc<Shared>),
    /// Makes each connection's future.
    pub(super) handler: H,
    /// The server's settings.
    pub(super) config: Arc<Config>,
    /// The server's stop request.
    pub(super) stop: Arc<Stop>,
    /// This core's counters.
    pub(super) counters: Arc<Counters>,
}

impl<H, F> Loop<H>
where
    H: Fn(TcpStream, ConnInfo) -> F,
    F: Future<Output = ()> + 'static,
{
    /// Accepts until stopped, then drains: the future of the core's accept-loop task.
    pub(super) async fn run(self) -> io::Result<CoreReport> {
        let Loop {
            core,
            mut listener,
            adopt,
            cores: (own, zero),
            handler,
            config,
            stop,
            counters,
        } = self;
        let mut adopted: Vec<Adopted> = adopt.into_iter().map(Adopted::Idle).collect();
        let registered = match listener.registered() {
            Ok(l) => l,
            Err(e) => {
                Counters::bump(&counters.error_reports);
                (config.on_error)(core, &e);
                return Err(e);
            }
        };
        // Declared after the listener, so dropped before it closes; the duplicates likewise.
        let _shut_if_leaked = ShutIfLeaked::register(registered);
        let shut_duplicates: Vec<ShutIfLeaked> = adopted
            .iter()
            .filter_map(Adopted::fd)
            .map(ShutIfLeaked::register_fd)
            .collect();
        let conns = Conns::new(Arc::clone(&counters));
        let mut backoff = config.backoff;
        // Whether the current run of failures has been reported.
        let mut reported = false;
        // Turns of the loop since it last yielded.
        let mut streak = 0;
        loop {
            // While connections keep arriving, `accept` never waits: yield now and then, so a
            // burst of connections cannot keep the core from serving the ones it has.
            streak += 1;
            if streak > ACCEPT_BURST {
                streak = 0;
                crate::yield_now().await;
            }
            let either = poll_fn(|cx| {
                // A core that stepped back leaves its listener to core 0's loop while core 0
                // is driven (both looks register the task to be woken at a change).
                let stepped_back = core != 0
                    && own.yielded_watching(cx.waker())
                    && zero.driven_watching(cx.waker());
                if !stepped_back {
                    if let Poll::Ready(got) = registered.poll_accept(cx) {
                        return Poll::Ready((got, false));
                    }
                }
                for a in &mut adopted {
                    if let Poll::Ready(got) = a.poll_accept(cx) {
                        return Poll::Ready((got, true));
                    }
                }
                Poll::Pending
            });
            let (accepted, from_another) = match unless_stopped(&stop, core, either).await {
                Next::Stop => break,
                Next::Got(result) => result,
            };
            let e = match accepted {
                Ok((stream, peer)) => {
                    reported = false;
                    backoff = config.backoff;
                    Counters::bump(&counters.accepted);
                    if from_another {
                        Counters::bump(&counters.adopted);
                    }
                    spawn_connection(&conns, &handler, &config, stream, peer, core);
                    continue;
                }
                // The stop shut the listener down (on another thread) since it was checked.
                Err(_) if stop.is_requested() => break,
                Err(e) => e,
            };
            Counters::bump(&counters.accept_errors);
            let failure = classify(&e);
            if failure == Failure::Connection {
                continue;
            }
            if failure == Failure::Resources {
                Counters::bump(&counters.resource_errors);
            }
            if !reported {
                reported = true;
                Counters::bump(&counters.error_reports);
                (config.on_error)(core, &e);
            }
            // The one wait between two failing attempts: a timer, so the loop never spins.
            match unless_stopped(&stop, core, time::sleep(backoff)).await {
                Next::Stop => break,
                Next::Got(()) => Counters::bump(&counters.backoffs),
            }
            backoff = next_backoff(backoff, config.max_backoff);
        }
        // Stop accepting first (the stop has shut every core's listener down already; this
        // closes the descriptors): the duplicate of core 0's too, so that nothing listens
        // while the connections drain.
        drop(_shut_if_leaked);
        listener.close();
        // Watched no more (the wakers of a loop that ended would wait for the next change).
        let waker = poll_fn(|cx| Poll::Ready(cx.waker().clone())).await;
        for a in &adopted {
            a.forget(&waker);
        }
        own.serve_watch.forget(&waker);
        zero.serve_watch.forget(&waker);
        drop(shut_duplicates);
        drop(adopted);
        Ok(drain(&conns, &stop, &counters).await)
    }
}

/// Spawns a connection's task on this core.
fn spawn_connection<H, F>(
    conns: &std::rc::Rc<Conns>,
    handler: &H,
    config: &Config,
    stream: TcpStream,
    peer: SocketAddr,
    core: usize,
) where
    H: Fn(TcpStream, ConnInfo) -> F,
    F: Future<Output = ()> + 'static,
{
    if config.nodelay {
        // Best effort: a connection already reset fails here and again, visibly, in its
        // handler's first read or write.
        let _reset = stream.set_nodelay(true);
    }
    // A handler that panics while making the connection's future loses that connection (the
    // panic hook has said why), not the core's accept loop.
    let made = std::panic::catch_unwind(AssertUnwindSafe(|| {
        conns.track(|info| handler(stream, info), peer, core)
    }));
    if let Ok(task) = made {
        // Detached: the connection set is what shutdown uses to reach it. (A spawn on the
        // current core's thread, inside the accept loop's poll: it cannot fail.)
        drop(config.task.spawn_local(task));
    }
}

/// Tells the handlers, waits for them until the deadline, then aborts the rest.
async fn drain(conns: &Conns, stop: &Stop, counters: &Counters) -> CoreReport {
    let open = conns.len();
    conns.start_draining();
    let deadline = stop.deadline().map_or_else(Instant::now, Instant::from_std);
    let mut aborted = 0;
    if time::timeout_at(deadline, conns.all_closed())
        .await
        .is_err()
    {
        aborted = conns.abort_all();
        for _ in 0..aborted {
            Counters::bump(&counters.aborted);
        }
        // Aborted tasks end at their next poll, which their wake just queued.
        conns.all_closed().await;
    }
    CoreReport {
        drained: open - aborted,
        aborted,
    }
}

/// Doubles a back-off, up to `max`.
fn next_backoff(backoff: Duration, max: Duration) -> Duration {
    backoff.saturating_mul(2).min(max)
}

/// Registers an accept loop's listener with its core while the loop runs, so that a shutdown
/// that leaks the loop (core 0's, shut down on another thread than the one that runs its
/// thread-bound tasks) can shut the listener down (`Shared::shut_leaked_listeners`).
struct ShutIfLeaked(Option<(Arc<crate::worker::shared::Shared>, std::os::fd::RawFd)>);

impl ShutIfLeaked {
    /// Registers `listener` with the current core.
    fn register(listener: &crate::net::TcpListener) -> ShutIfLeaked {
        use std::os::fd::AsRawFd;
        ShutIfLeaked::register_fd(listener.as_raw_fd())
    }

    /// Registers the listening descriptor `fd` (an adopted duplicate) with the current core.
    fn register_fd(fd: std::os::fd::RawFd) -> ShutIfLeaked {
        ShutIfLeaked(crate::context::with_current(|core| {
            core.shared().register_listener(fd);
            (Arc::clone(core.shared()), fd)
        }))
    }
}

impl Drop for ShutIfLeaked {
    fn drop(&mut self) {
        if let Some((shared, fd)) = &self.0 {
            shared.unregister_listener(*fd);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptor_exhaustion_backs_off_and_connection_errors_do_not() {
        let e = |n| io::Error::from_raw_os_error(n);
        for n in [libc::EMFILE, libc::ENFILE, libc::ENOBUFS, libc::ENOMEM] {
            assert_eq!(classify(&e(n)), Failure::Resources, "errno {n}");
        }
        for n in [libc::ECONNABORTED, libc::EPROTO, libc::ENETDOWN] {
            assert_eq!(classify(&e(n)), Failure::Connection, "errno {n}");
        }
        assert_eq!(classify(&e(libc::EINVAL)), Failure::Other);
        assert_eq!(
            classify(&io::ErrorKind::ConnectionAborted.into()),
            Failure::Connection
        );
    }

    #[test]
    fn backoff_doubles_up_to_its_cap() {
        let max = Duration::from_millis(300);
        let mut b = Duration::from_millis(100);
        b = next_backoff(b, max);
        assert_eq!(b, Duration::from_millis(200));
        b = next_backoff(b, max);
        assert_eq!(b, max);
        assert_eq!(next_backoff(b, max), max);
        // A huge back-off saturates instead of overflowing.
        assert_eq!(next_backoff(Duration::MAX, Duration::MAX), Duration::MAX);
    }
}
