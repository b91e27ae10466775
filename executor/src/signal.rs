//! Unix signals as futures: [`ctrl_c`] and [`signal`] (`SIGTERM` and the others), for graceful
//! shutdown.
//!
//! # Examples
//!
//! Stop a server on Ctrl-C or `SIGTERM`, whichever comes first:
//!
//! ```no_run
//! use std::future::poll_fn;
//! use std::task::Poll;
//! use tickless::signal::{signal, SignalKind};
//!
//! let rt = tickless::Runtime::new()?;
//! rt.block_on(async {
//!     let mut interrupt = signal(SignalKind::interrupt())?;
//!     let mut terminate = signal(SignalKind::terminate())?;
//!     poll_fn(|cx| match (interrupt.poll_recv(cx), terminate.poll_recv(cx)) {
//!         (Poll::Pending, Poll::Pending) => Poll::Pending,
//!         _ => Poll::Ready(()),
//!     })
//!     .await;
//!     println!("shutting down");
//!     std::io::Result::Ok(())
//! })?;
//! # std::io::Result::Ok(())
//! ```
//!
//! # Implementation
//!
//! A self-pipe, not a `signalfd`. A signalfd only receives signals that *every* thread of the
//! process blocks, and a library cannot block a signal in threads it did not create (the test
//! harness's, a logging thread, the other cores started before the first `ctrl_c()`); the
//! signal would then be delivered to one of those threads with its default action, which for
//! `SIGINT` and `SIGTERM` kills the process.
//!
//! So, as tokio does: the first [`signal`] for a signal number installs (with `sigaction`,
//! `SA_RESTART`) a process-wide handler that bumps that signal's delivery counter and writes one
//! byte to a non-blocking, close-on-exec pipe (both async-signal-safe). Every [`Signal`]
//! registers its own duplicate of the pipe's read end with the reactor of the core that polls it,
//! so one delivery wakes every core that listens (each epoll instance watching the pipe gets the
//! edge); a woken `Signal` drains the pipe and compares the counter with the value it last saw.
//! Deliveries that arrive between two polls coalesce into one `recv`, as with tokio: signals
//! are not queued. The handler stays installed for the life of the process, and the default
//! action (terminating the process, for `SIGINT` and `SIGTERM`) is not taken any more.

use std::fmt;
use std::fs::File;
use std::future::poll_fn;
use std::io::{self, Read};
use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::task::{ready, Context, Poll};

use tickless_io::{AsyncFd, Interest};

use crate::context::{with_current, NO_RUNTIME};

/// Signal numbers are below this on Linux (`SIGRTMAX` is 64).
const MAX_SIGNAL: usize = 65;

/// Deliveries of each signal since the process started, bumped by the handler.
static DELIVERIES: [AtomicU64; MAX_SIGNAL] = [const { AtomicU64::new(0) }; MAX_SIGNAL];

/// The write end of the self-pipe, for the handler; -1 until the pipe exists.
static PIPE_WRITE: AtomicI32 = AtomicI32::new(-1);

/// The read end of the self-pipe; every `Signal` registers a duplicate of it.
static PIPE_READ: OnceLock<OwnedFd> = OnceLock::new();

/// Which signals have our handler installed. Held while installing, so two threads asking for
/// the same signal install once.
static INSTALLED: Mutex<[bool; MAX_SIGNAL]> = Mutex::new([false; MAX_SIGNAL]);

/// A signal a [`Signal`] listens for.
///
/// # Examples
///
/// ```
/// use tickless::signal::SignalKind;
///
/// assert_eq!(SignalKind::terminate().as_raw_value(), libc::SIGTERM);
/// assert_eq!(SignalKind::from_raw(libc::SIGUSR1), SignalKind::user_defined1());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SignalKind(libc::c_int);

impl SignalKind {
    /// A signal by its number. Numbers that cannot be listened for are refused by [`signal`].
    pub const fn from_raw(signum: libc::c_int) -> SignalKind {
        SignalKind(signum)
    }

    /// The signal's number.
    pub const fn as_raw_value(&self) -> libc::c_int {
        self.0
    }

    /// `SIGINT`: Ctrl-C in a terminal.
    pub const fn interrupt() -> SignalKind {
        SignalKind(libc::SIGINT)
    }

    /// `SIGTERM`: the polite request to stop (what `kill`, systemd and Kubernetes send).
    pub const fn terminate() -> SignalKind {
        SignalKind(libc::SIGTERM)
    }

    /// `SIGHUP`: the terminal went away; by convention, "reload the configuration".
    pub const fn hangup() -> SignalKind {
        SignalKind(libc::SIGHUP)
    }

    /// `SIGQUIT`: Ctrl-\ in a terminal.
    pub const fn quit() -> SignalKind {
        SignalKind(libc::SIGQUIT)
    }

    /// `SIGUSR1`.
    pub const fn user_defined1() -> SignalKind {
        SignalKind(libc::SIGUSR1)
    }

    /// `SIGUSR2`.
    pub const fn user_defined2() -> SignalKind {
        SignalKind(libc::SIGUSR2)
    }

    /// Signals whose handler must not return normally (faults) or that cannot be caught.
    fn is_forbidden(self) -> bool {
        matches!(
            self.0,
            libc::SIGILL
                | libc::SIGFPE
                | libc::SIGKILL
                | libc::SIGSEGV
                | libc::SIGBUS
                | libc::SIGSTOP
        )
    }

    /// Its delivery counter.
    fn deliveries(self) -> &'static AtomicU64 {
        &DELIVERIES[self.0 as usize]
    }
}

/// Completes at the next `SIGINT` (Ctrl-C) delivered to the process after the future's first
/// poll (where it starts listening, on the core that polls it).
///
/// The first poll installs the process-wide handler (see the [module docs](self)): from then on
/// Ctrl-C no longer kills the process, so a program that stops listening should exit by itself.
/// To listen from a given moment on, before awaiting, use [`signal`] with
/// [`SignalKind::interrupt`].
///
/// # Errors
///
/// Creating the self-pipe, installing the handler or registering with the core's reactor
/// failed (`EMFILE`, for instance).
///
/// # Panics
///
/// Outside a tickless runtime.
///
/// # Examples
///
/// ```no_run
/// let rt = tickless::Runtime::new()?;
/// rt.block_on(async {
///     tickless::signal::ctrl_c().await?;
///     println!("Ctrl-C: stopping");
///     std::io::Result::Ok(())
/// })?;
/// # std::io::Result::Ok(())
/// ```
pub async fn ctrl_c() -> io::Result<()> {
    let mut sigint = signal(SignalKind::interrupt())?;
    sigint.recv().await;
    Ok(())
}

/// Listens for `kind`: the returned [`Signal`] yields once per delivery (or burst of deliveries)
/// after this call.
///
/// Installs the handler for `kind` the first time, process-wide (see the [module docs](self)).
/// Registers with the reactor of the core that calls it, so the `Signal` belongs to that core,
/// as every I/O object does.
///
/// # Errors
///
/// `InvalidInput` for a signal that cannot be listened for (`SIGKILL`, `SIGSTOP`, the faults
/// `SIGSEGV`, `SIGBUS`, `SIGILL`, `SIGFPE`, and numbers out of range); otherwise creating the
/// self-pipe, installing the handler or registering with the reactor failed.
///
/// # Panics
///
/// Outside a tickless runtime.
///
/// # Examples
///
/// The process sends itself a signal, with `raise(3)`:
///
/// ```
/// use tickless::signal::{signal, SignalKind};
///
/// let rt = tickless::Builder::new().cores(1).build()?;
/// rt.block_on(async {
///     let mut usr1 = signal(SignalKind::user_defined1())?; // SIGUSR1 no longer kills us
///     // SAFETY: raise takes no pointers; the handler for SIGUSR1 is installed.
///     assert_eq!(unsafe { libc::raise(libc::SIGUSR1) }, 0);
///     usr1.recv().await; // the delivery since `signal`
///     let kill = signal(SignalKind::from_raw(libc::SIGKILL)).unwrap_err();
///     assert_eq!(kill.kind(), std::io::ErrorKind::InvalidInput); // cannot be caught
///     std::io::Result::Ok(())
/// })?;
/// # std::io::Result::Ok(())
/// ```
pub fn signal(kind: SignalKind) -> io::Result<Signal> {
    if kind.0 <= 0 || kind.0 as usize >= MAX_SIGNAL || kind.is_forbidden() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("signal {} cannot be listened for", kind.0),
        ));
    }
    with_current(|_| ()).expect(NO_RUNTIME);
    let read = self_pipe()?;
    install(kind)?;
    // Read the counter after the handler is installed: a delivery from now on is seen.
    let seen = kind.deliveries().load(Ordering::Acquire);
    let fd = AsyncFd::with_interest(File::from(read.try_clone()?), Interest::READABLE)?;
    Ok(Signal { kind, seen, fd })
}

/// A stream of deliveries of one signal, from [`signal`]; it belongs to the core that made it.
///
/// Like the I/O types it is `Send`, so it may be held in a `Send` future, but it must be
/// polled on its core: anywhere else [`recv`](Self::recv) panics, saying so. See the
/// examples on [`signal`] and [`recv`](Self::recv).
pub struct Signal {
    /// Which signal.
    kind: SignalKind,
    /// The delivery counter as of the last delivery this `Signal` reported (or its creation).
    seen: u64,
    /// This listener's duplicate of the self-pipe's read end, registered with its core.
    fd: AsyncFd<File>,
}

impl Signal {
    /// The signal it listens for.
    ///
    /// # Examples
    ///
    /// ```
    /// use tickless::signal::{signal, SignalKind};
    ///
    /// let rt = tickless::Builder::new().cores(1).build()?;
    /// rt.block_on(async {
    ///     let hangup = signal(SignalKind::hangup())?;
    ///     assert_eq!(hangup.kind(), SignalKind::hangup());
    ///     assert_eq!(hangup.kind().as_raw_value(), libc::SIGHUP);
    ///     std::io::Result::Ok(())
    /// })?;
    /// # std::io::Result::Ok(())
    /// ```
    pub fn kind(&self) -> SignalKind {
        self.kind
    }

    /// Waits for the next delivery. Deliveries since the last `recv` (or since the `Signal` was
    /// made) that nobody waited for complete it at once, all of them together. Always `Some`:
    /// the `Option` is tokio's signature, where `None` means the driver is gone.
    ///
    /// # Examples
    ///
    /// Two deliveries before a `recv` count as one:
    ///
    /// ```
    /// use futures_lite::future::poll_once;
    /// use tickless::signal::{signal, SignalKind};
    ///
    /// let rt = tickless::Builder::new().cores(1).build()?;
    /// rt.block_on(async {
    ///     let mut usr2 = signal(SignalKind::user_defined2())?;
    ///     for _ in 0..2 {
    ///         // SAFETY: raise takes no pointers; the handler for SIGUSR2 is installed.
    ///         assert_eq!(unsafe { libc::raise(libc::SIGUSR2) }, 0);
    ///     }
    ///     assert_eq!(usr2.recv().await, Some(())); // both
    ///     assert!(poll_once(usr2.recv()).await.is_none()); // nothing more: it would wait
    ///     std::io::Result::Ok(())
    /// })?;
    /// # std::io::Result::Ok(())
    /// ```
    pub async fn recv(&mut self) -> Option<()> {
        poll_fn(|cx| self.poll_recv(cx)).await
    }

    /// Polls for the next delivery; see [`recv`](Self::recv).
    ///
    /// # Examples
    ///
    /// Waiting for whichever of two signals comes first:
    ///
    /// ```
    /// use std::future::poll_fn;
    /// use std::task::Poll;
    /// use tickless::signal::{signal, SignalKind};
    ///
    /// let rt = tickless::Builder::new().cores(1).build()?;
    /// rt.block_on(async {
    ///     let mut usr1 = signal(SignalKind::user_defined1())?;
    ///     let mut usr2 = signal(SignalKind::user_defined2())?;
    ///     // SAFETY: raise takes no pointers; the handler for SIGUSR2 is installed.
    ///     assert_eq!(unsafe { libc::raise(libc::SIGUSR2) }, 0);
    ///     let first = poll_fn(|cx| {
    ///         if usr1.poll_recv(cx).is_ready() {
    ///             return Poll::Ready(SignalKind::user_defined1());
    ///         }
    ///         usr2.poll_recv(cx).map(|_| SignalKind::user_defined2())
    ///     })
    ///     .await;
    ///     assert_eq!(first, SignalKind::user_defined2());
    ///     std::io::Result::Ok(())
    /// })?;
    /// # std::io::Result::Ok(())
    /// ```
    pub fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<()>> {
        loop {
            let now = self.kind.deliveries().load(Ordering::Acquire);
            if now != self.seen {
                self.seen = now;
                return Poll::Ready(Some(()));
            }
            // The handler bumps the counter before it writes the pipe, so a delivery after the
            // load above makes an edge: we get polled again.
            // An error: its core is gone (or none runs here), which is tokio's `None`.
            let Ok(event) = ready!(self.fd.registration().poll_read_ready(cx)) else {
                return Poll::Ready(None);
            };
            let mut buf = [0u8; 64];
            let mut pipe: &File = self.fd.get_ref();
            loop {
                match pipe.read(&mut buf) {
                    Ok(n) if n > 0 => continue,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    // Drained (possibly by another core's `Signal`: every registered duplicate
                    // got the edge anyway). End of file cannot happen: the write end is never
                    // closed. Any other error would be a broken invariant of the pipe, and only
                    // costs a spurious wakeup: the counter is what decides.
                    _ => break,
                }
            }
            self.fd.registration().clear_readiness(event);
        }
    }
}

impl fmt::Debug for Signal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Signal")
            .field("kind", &self.kind)
            .field("seen", &self.seen)
            .finish_non_exhaustive()
    }
}

/// The self-pipe's read end, creating the pipe the first time.
fn self_pipe() -> io::Result<&'static OwnedFd> {
    if let Some(read) = PIPE_READ.get() {
        return Ok(read);
    }
    let _installing = INSTALLED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(read) = PIPE_READ.get() {
        return Ok(read);
    }
    let mut fds = [-1 as libc::c_int; 2];
    // SAFETY: `fds` is valid for writes of the two descriptors pipe2 writes.
    let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: pipe2 succeeded, so `fds[0]` is open and owned by nobody else.
    let read = unsafe { OwnedFd::from_raw_fd(fds[0]) };
    // The write end lives as long as the process: the handler may run at any time.
    PIPE_WRITE.store(fds[1], Ordering::Release);
    Ok(PIPE_READ.get_or_init(|| read))
}

/// Installs the handler for `kind`, once per process.
fn install(kind: SignalKind) -> io::Result<()> {
    let mut installed = INSTALLED.lock().unwrap_or_else(|e| e.into_inner());
    if installed[kind.0 as usize] {
        return Ok(());
    }
    // SAFETY: `sigaction` is plain old data; all-zero is a valid value (empty mask, no flags)
    // that the fields below complete.
    let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
    action.sa_sigaction = handler as extern "C" fn(libc::c_int) as libc::sighandler_t;
    action.sa_flags = libc::SA_RESTART;
    // SAFETY: `action.sa_mask` is a valid, writable sigset_t.
    unsafe { libc::sigemptyset(&mut action.sa_mask) };
    // SAFETY: `action` is fully initialised and valid for reads; a null old action is allowed.
    // The handler only does async-signal-safe things (an atomic add, write(2), errno).
    let rc = unsafe { libc::sigaction(kind.0, &action, std::ptr::null_mut()) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    installed[kind.0 as usize] = true;
    Ok(())
}

/// The process-wide handler: count the delivery, then poke the self-pipe.
///
/// Async-signal-safe: an atomic add, an atomic load, `write(2)` on a non-blocking pipe (a full
/// pipe means wakeups are pending already), and errno saved and restored around it so that the
/// interrupted code sees its own.
extern "C" fn handler(signum: libc::c_int) {
    if let Some(counter) = DELIVERIES.get(signum as usize) {
        counter.fetch_add(1, Ordering::AcqRel);
    }
    let fd = PIPE_WRITE.load(Ordering::Acquire);
    if fd >= 0 {
        // SAFETY: __errno_location returns this thread's errno slot, valid for reads and writes.
        let errno = unsafe { *libc::__errno_location() };
        let byte = 1u8;
        // SAFETY: `byte` is valid for a one-byte read; `fd` is the pipe's write end, never closed.
        let _full_or_written = unsafe { libc::write(fd, std::ptr::from_ref(&byte).cast(), 1) };
        // SAFETY: as above.
        unsafe { *libc::__errno_location() = errno };
    }
}
