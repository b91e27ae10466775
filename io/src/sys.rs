//! Thin wrappers over the few libc calls the crate needs that std does not offer.
//!
//! Every `unsafe` block of the crate that is not about one specific device lives here, so the
//! I/O types above stay in safe code.

use std::cell::Cell;
use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Once;
use std::time::Duration;
use std::{mem, ptr};

/// Turns a libc return value into an `io::Result`, reading `errno` when it is negative.
pub(crate) fn cvt<T: PartialOrd + Default>(ret: T) -> io::Result<T> {
    if ret < T::default() {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// Takes ownership of a descriptor a libc call just returned.
///
/// # Safety
///
/// `fd` must be open and owned by nobody else.
unsafe fn own(fd: RawFd) -> OwnedFd {
    // SAFETY: the caller guarantees `fd` is open and unowned (this function's contract).
    unsafe { OwnedFd::from_raw_fd(fd) }
}

/// Ignores `SIGPIPE` for the whole process, once, unless someone installed a handler already.
///
/// A write to a pipe or socket whose reader is gone raises `SIGPIPE`, whose default action kills
/// the process. Rust binaries ignore it before `main`, but a library embedded in a C program, or
/// a binary built with `-Zon-broken-pipe`, may not: we want `EPIPE` (`BrokenPipe`) instead. A
/// handler that is not `SIG_DFL` is left alone: it belongs to the application, and it does not
/// kill the process.
pub(crate) fn ignore_sigpipe() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: `sigaction` is plain old data; all-zero is a valid value that the query below
        // overwrites.
        let mut old: libc::sigaction = unsafe { mem::zeroed() };
        // SAFETY: a null new action only queries the disposition; `old` is valid for writes.
        let rc = unsafe { libc::sigaction(libc::SIGPIPE, ptr::null(), &mut old) };
        if rc == 0 && old.sa_sigaction == libc::SIG_DFL {
            // SAFETY: `SIG_IGN` is a valid disposition for `SIGPIPE`; no memory is passed.
            unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
        }
    });
}

/// Puts a descriptor in non-blocking mode, keeping its other status flags.
pub(crate) fn set_nonblocking(fd: BorrowedFd<'_>) -> io::Result<()> {
    let raw = fd.as_raw_fd();
    // SAFETY: `fd` is borrowed, so open for the duration of the call; F_GETFL takes no pointer.
    let flags = cvt(unsafe { libc::fcntl(raw, libc::F_GETFL) })?;
    if flags & libc::O_NONBLOCK == 0 {
        // SAFETY: as above; F_SETFL takes an integer argument.
        cvt(unsafe { libc::fcntl(raw, libc::F_SETFL, flags | libc::O_NONBLOCK) })?;
    }
    Ok(())
}

/// Creates a pipe with both ends non-blocking and close-on-exec: `(read end, write end)`.
pub(crate) fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [-1 as RawFd; 2];
    // SAFETY: `fds` is valid for writes of two descriptors, which is what pipe2 writes.
    cvt(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) })?;
    // SAFETY: pipe2 succeeded, so both descriptors are open and owned by nobody else.
    Ok(unsafe { (own(fds[0]), own(fds[1])) })
}

// The calls a core makes for every message (read, write, send, the epoll wait) go through
// `syscall(2)` rather than glibc's wrappers of the same names. Those wrappers are cancellation
// points: in a process with more than one thread, each switches the thread to asynchronous
// cancellation around the call and back, two atomic read-modify-writes of the thread's
// cancellation word. On the machine of the README's figures that was about 23 ns a call, a
// tenth of a same-core pipe ping-pong's round trip of six calls, with a second thread alive,
// and nothing without one (`bash benches/scripts/c_loops.sh` measures it in C). Rust never
// cancels a thread, so nothing is lost.

/// A byte count a read or write call returned, or its `errno`.
fn count(ret: libc::c_long) -> io::Result<usize> {
    // Not negative once `cvt` passed it, and at most the length asked for: fits a `usize`.
    cvt(ret).map(|n| n as usize)
}

/// `read(2)` of up to `len` bytes into `buf`, which need not be initialised: returns how many
/// bytes it wrote at its start. Not a cancellation point (see above).
///
/// # Safety
///
/// `buf` must be valid for writes of `len` bytes for the duration of the call.
pub(crate) unsafe fn read_raw(fd: RawFd, buf: *mut u8, len: usize) -> io::Result<usize> {
    // What std caps a read at too: a longer count is not valid for `read(2)`'s `ssize_t`.
    let len = len.min(isize::MAX as usize);
    // SAFETY: the caller guarantees `buf` is valid for writes of `len` bytes; `read(2)` only
    // writes through it (never reads), so it needs no initialised contents. The descriptor is
    // only an integer to the kernel: a stale one fails with `EBADF`.
    count(unsafe { libc::syscall(libc::SYS_read, fd, buf, len) })
}

/// `read(2)` into `buf`. Not a cancellation point (see above).
pub(crate) fn read(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for writes of its whole length for the call.
    unsafe { read_raw(fd.as_raw_fd(), buf.as_mut_ptr(), buf.len()) }
}

/// `write(2)` of `buf`. Not a cancellation point (see above).
pub(crate) fn write(fd: BorrowedFd<'_>, buf: &[u8]) -> io::Result<usize> {
    let len = buf.len().min(isize::MAX as usize);
    // SAFETY: `buf` is valid for reads of `len` bytes and `fd` is open (borrowed), both for
    // the duration of the call.
    count(unsafe { libc::syscall(libc::SYS_write, fd.as_raw_fd(), buf.as_ptr(), len) })
}

/// `send(2)` with `MSG_NOSIGNAL`: a closed peer gives `BrokenPipe`, never `SIGPIPE`. Not a
/// cancellation point (see above): `sendto(2)` with no address, which is what `send` is.
pub(crate) fn send_nosignal(fd: BorrowedFd<'_>, buf: &[u8]) -> io::Result<usize> {
    let len = buf.len().min(isize::MAX as usize);
    // SAFETY: `buf` is valid for reads of `len` bytes and `fd` is open, both for the duration
    // of the call; a null address of length 0 is what `send(2)` passes.
    count(unsafe {
        libc::syscall(
            libc::SYS_sendto,
            fd.as_raw_fd(),
            buf.as_ptr(),
            len,
            libc::MSG_NOSIGNAL,
            ptr::null::<libc::sockaddr>(),
            0 as libc::socklen_t,
        )
    })
}

/// How [`reuseport_listener`] binds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Share {
    /// `SO_REUSEPORT` before the bind: shares the address with every socket of the same user
    /// that has it (this process's or another's).
    Join,
    /// `SO_REUSEPORT` after the bind: the bind fails with `EADDRINUSE` if any socket holds the
    /// address (with `SO_REUSEPORT` or not), and the sockets bound with [`Share::Join`] on it
    /// afterwards share it.
    First,
}

/// Creates a non-blocking TCP listener with `SO_REUSEADDR` and `SO_REUSEPORT` set, bound to
/// `addr` and listening.
///
/// `SO_REUSEPORT` is what lets every core bind its own listener to one port and have the kernel
/// spread incoming connections across them. Linux checks it at `bind(2)` (each socket already on
/// the address must have it, and the same user) and reads it live: so set after the bind
/// ([`Share::First`]), the bind is as exclusive as a plain one, and later binds join.
pub(crate) fn reuseport_listener(
    addr: SocketAddr,
    backlog: i32,
    share: Share,
) -> io::Result<OwnedFd> {
    let domain = match addr {
        SocketAddr::V4(_) => libc::AF_INET,
        SocketAddr::V6(_) => libc::AF_INET6,
    };
    let ty = libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC;
    // SAFETY: socket takes no pointers; the result is checked before use.
    let raw = cvt(unsafe { libc::socket(domain, ty, 0) })?;
    // SAFETY: socket succeeded, so `raw` is open and owned by nobody else.
    let fd = unsafe { own(raw) };
    set_flag(fd.as_raw_fd(), libc::SO_REUSEADDR)?;
    if share == Share::Join {
        set_flag(fd.as_raw_fd(), libc::SO_REUSEPORT)?;
    }
    bind(fd.as_raw_fd(), addr)?;
    if share == Share::First {
        set_flag(fd.as_raw_fd(), libc::SO_REUSEPORT)?;
    }
    // SAFETY: `fd` is an open socket; listen takes no pointers.
    cvt(unsafe { libc::listen(fd.as_raw_fd(), backlog) })?;
    Ok(fd)
}

/// Sets a boolean `SOL_SOCKET` option to 1.
fn set_flag(fd: RawFd, option: libc::c_int) -> io::Result<()> {
    let one: libc::c_int = 1;
    // SAFETY: `one` is a valid c_int for reads of the size passed; `fd` is an open socket owned
    // by the caller for the duration of the call.
    cvt(unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            option,
            ptr::from_ref(&one).cast(),
            mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    })?;
    Ok(())
}

/// Sets `SO_LINGER`: `None` turns it off (close returns at once, the kernel sends what is
/// left in the background), `Some(d)` makes close wait up to `d` (whole seconds, rounded up)
/// for unsent data, and `Some(ZERO)` resets the connection on close.
pub(crate) fn set_linger(
    fd: BorrowedFd<'_>,
    linger: Option<std::time::Duration>,
) -> io::Result<()> {
    let value = libc::linger {
        l_onoff: linger.is_some().into(),
        l_linger: linger.map_or(0, |d| {
            let secs = d.as_secs() + u64::from(d.subsec_nanos() > 0);
            libc::c_int::try_from(secs).unwrap_or(libc::c_int::MAX)
        }),
    };
    // SAFETY: `value` is a valid `linger` for reads of the size passed; `fd` is an open socket
    // borrowed for the duration of the call.
    cvt(unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            ptr::from_ref(&value).cast(),
            mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    })?;
    Ok(())
}

/// Reads `SO_LINGER`, as [`set_linger`] takes it.
pub(crate) fn linger(fd: BorrowedFd<'_>) -> io::Result<Option<std::time::Duration>> {
    let mut value = libc::linger {
        l_onoff: 0,
        l_linger: 0,
    };
    let mut len = mem::size_of::<libc::linger>() as libc::socklen_t;
    // SAFETY: `value` and `len` are valid for writes of the sizes passed; `fd` is an open socket
    // borrowed for the duration of the call.
    cvt(unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            ptr::from_mut(&mut value).cast(),
            &mut len,
        )
    })?;
    Ok((value.l_onoff != 0)
        .then(|| std::time::Duration::from_secs(u64::try_from(value.l_linger).unwrap_or(0))))
}

/// Binds a socket to an IPv4 or IPv6 address.
fn bind(fd: RawFd, addr: SocketAddr) -> io::Result<()> {
    let rc = match addr {
        SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(a.ip().octets()),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: `sin` is a fully initialised sockaddr_in and the length passed is its size;
            // `fd` is an open socket owned by the caller.
            unsafe {
                libc::bind(
                    fd,
                    ptr::from_ref(&sin).cast(),
                    mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
                )
            }
        }
        SocketAddr::V6(a) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo(),
                sin6_addr: libc::in6_addr {
                    s6_addr: a.ip().octets(),
                },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: `sin6` is a fully initialised sockaddr_in6 and the length passed is its
            // size; `fd` is an open socket owned by the caller.
            unsafe {
                libc::bind(
                    fd,
                    ptr::from_ref(&sin6).cast(),
                    mem::size_of::<libc::sockaddr_in6>() as libc::socklen_t,
                )
            }
        }
    };
    cvt(rc)?;
    Ok(())
}

/// Calls `f` with each address `addr` resolves to, returning the first success or the last
/// error.
///
/// Resolution of a host name blocks the calling thread (it is `std`'s resolver); pass a
/// `SocketAddr` on a core thread.
pub(crate) fn each_addr<A, T>(
    addr: A,
    mut f: impl FnMut(SocketAddr) -> io::Result<T>,
) -> io::Result<T>
where
    A: std::net::ToSocketAddrs,
{
    let mut last = None;
    for a in addr.to_socket_addrs()? {
        match f(a) {
            Ok(t) => return Ok(t),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(no_addresses))
}

/// The error for an address that resolved to nothing.
pub(crate) fn no_addresses() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        "could not resolve to any address",
    )
}

/// An empty epoll event, to size a wait's buffer with.
pub(crate) const NO_EVENT: libc::epoll_event = libc::epoll_event { events: 0, u64: 0 };

/// The kernel's `struct __kernel_timespec`, which `epoll_pwait2` reads: two 64-bit fields on
/// every architecture. `libc::timespec` is the C library's, whose `tv_sec` is a 32-bit
/// `time_t` on 32-bit targets built without 64-bit time: the kernel would read its second
/// field as the high half of the seconds.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct KernelTimespec {
    /// Whole seconds, not negative.
    pub(crate) tv_sec: i64,
    /// Nanoseconds, below 1,000,000,000.
    pub(crate) tv_nsec: i64,
}

impl KernelTimespec {
    /// `d`, its seconds saturated at `i64::MAX` (about 292 billion years: the kernel saturates
    /// a deadline that far anyway).
    pub(crate) fn from_duration(d: Duration) -> KernelTimespec {
        KernelTimespec {
            tv_sec: i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
            tv_nsec: i64::from(d.subsec_nanos()),
        }
    }
}

/// The most the kernel pads a wait's timeout by (`MAX_SLACK` in `fs/select.c`): 100 ms.
pub(crate) const MAX_WAIT_SLACK_NS: u64 = 100_000_000;

/// How the kernel pads the timeout of a poll, select or epoll wait of one thread
/// (`select_estimate_accuracy` in `fs/select.c`): the wait ends anywhere from its timeout to
/// the end of a window after it, as long as the larger of the thread's timer slack
/// (`PR_SET_TIMERSLACK`, which the thread sets) and a share of the time left (a thousandth; a
/// two-hundredth for a thread whose nice value is above zero), at most 100 ms; a real-time
/// thread gets no window. The kernel's timer fires at the end of the window unless another
/// interrupt on that CPU comes within it: on an idle machine a 1 s wait ends a millisecond
/// late, whatever the timer slack. This is the share.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct WaitSlack {
    /// The share of the time left: 1,000, or 200 for a niced thread; 0 for a real-time
    /// thread, which gets no window at all.
    pub(crate) divisor: u64,
}

impl WaitSlack {
    /// The share the kernel adds to a wait of `left_ns` nanoseconds (the window, unless the
    /// thread's timer slack is larger).
    pub(crate) fn share_ns(self, left_ns: u128) -> u128 {
        match self.divisor {
            0 => 0,
            div => (left_ns / u128::from(div)).min(u128::from(MAX_WAIT_SLACK_NS)),
        }
    }

    /// The timeout to give the kernel for a wait that must end by `timeout`: the longest whose
    /// share ends by it (to within 3 ns). The timer slack is left alone: it is the thread's
    /// own setting, which a precise wait lowers to 1 ns, and making up for a larger one would
    /// turn every wait shorter than it into a poll that does not block.
    pub(crate) fn shorten(self, timeout: Duration) -> Duration {
        let t = timeout.as_nanos();
        let div = u128::from(self.divisor);
        // The share is none, a part of the time left or the cap; the longest timeout that fits
        // in each case, and the longest of those that fits is the answer (`x + share(x)`
        // never decreases as `x` grows).
        let candidates = [
            t,
            t * div / (div + 1),
            t.saturating_sub(u128::from(MAX_WAIT_SLACK_NS)),
        ];
        let best = candidates
            .into_iter()
            .filter(|&x| x + self.share_ns(x) <= t)
            .max()
            .unwrap_or(0);
        // At most `timeout`: its seconds fit a u64.
        Duration::new((best / 1_000_000_000) as u64, (best % 1_000_000_000) as u32)
    }

    /// The calling thread's, asked of the kernel (two system calls).
    fn of_thread() -> WaitSlack {
        // SAFETY: sched_getscheduler takes no pointers; 0 is the calling thread. The policy
        // comes with SCHED_RESET_ON_FORK or'ed in where that is set.
        let policy = unsafe { libc::sched_getscheduler(0) } & !libc::SCHED_RESET_ON_FORK;
        // The raw system call returns 20 - nice (1 to 40), never negative on success, where
        // glibc's wrapper returns the nice value and -1 for both -1 and an error. Linux's
        // PRIO_PROCESS with 0 is the calling thread.
        // SAFETY: getpriority takes no pointers.
        let raw = unsafe { libc::syscall(libc::SYS_getpriority, libc::PRIO_PROCESS, 0) };
        let real_time = matches!(
            policy,
            libc::SCHED_FIFO | libc::SCHED_RR | libc::SCHED_DEADLINE
        );
        let niced = (0..20).contains(&raw);
        WaitSlack {
            divisor: if real_time {
                0
            } else if niced {
                200
            } else {
                1_000
            },
        }
    }
}

thread_local! {
    /// The calling thread's [`WaitSlack`], asked of the kernel at its first precise wait and
    /// again whenever its timer slack is set here ([`set_timer_slack`]).
    static WAIT_SLACK: Cell<Option<WaitSlack>> = const { Cell::new(None) };
}

/// The calling thread's [`WaitSlack`], as last asked of the kernel.
pub(crate) fn wait_slack() -> WaitSlack {
    WAIT_SLACK.with(|cell| {
        cell.get().unwrap_or_else(|| {
            let slack = WaitSlack::of_thread();
            cell.set(Some(slack));
            slack
        })
    })
}

/// How long one epoll wait may block.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Wait {
    /// `epoll_wait`'s milliseconds (-1: no limit, 0: do not block).
    Millis(libc::c_int),
    /// `epoll_pwait2`'s nanoseconds.
    Nanos(KernelTimespec),
}

/// Whether `epoll_pwait2` failing with `errno` means the thread cannot use it, so that the
/// caller should fall back to the timerfd: `ENOSYS` before Linux 5.11, and `EPERM` from a
/// seccomp filter older than the call that denies what it does not list with `EPERM`; the
/// kernel's own `epoll_pwait2` never fails with `EPERM`.
pub(crate) fn pwait2_unavailable(errno: i32) -> bool {
    matches!(errno, libc::ENOSYS | libc::EPERM)
}

/// One `epoll_wait` or `epoll_pwait2` on `epfd` (a reactor's epoll instance, which it keeps
/// open) into `events`; the number of events written at its front. An `epoll_pwait2` the
/// thread cannot use ([`pwait2_unavailable`]) fails with
/// [`Unsupported`](io::ErrorKind::Unsupported); a bad `epfd` fails with `EBADF`, it is never
/// unsound.
#[inline]
pub(crate) fn epoll_wait(
    epfd: RawFd,
    events: &mut [libc::epoll_event],
    wait: Wait,
) -> io::Result<usize> {
    // At most `c_int::MAX` events: the buffer is the reactor's fixed-size one.
    let max = libc::c_int::try_from(events.len()).unwrap_or(libc::c_int::MAX);
    let n = match wait {
        // SAFETY: `events` is valid for writes of `max` epoll_events for the call (the kernel
        // writes no more); the descriptor is only an integer to the kernel; a null signal mask
        // makes `epoll_pwait` the `epoll_wait` of every architecture (not a cancellation
        // point: see above).
        Wait::Millis(ms) => unsafe {
            libc::syscall(
                libc::SYS_epoll_pwait,
                epfd,
                events.as_mut_ptr(),
                max,
                ms,
                ptr::null::<libc::sigset_t>(),
                0usize,
            ) as libc::c_int
        },
        // SAFETY: as above, and `ts` is valid for reads during the call, in the layout the
        // kernel reads (`struct __kernel_timespec`, two 64-bit fields: see `KernelTimespec`);
        // a null signal mask leaves the mask alone (its size argument is then ignored).
        Wait::Nanos(ts) => unsafe {
            libc::syscall(
                libc::SYS_epoll_pwait2,
                epfd,
                events.as_mut_ptr(),
                max,
                ptr::from_ref(&ts),
                ptr::null::<libc::sigset_t>(),
                0usize,
            ) as libc::c_int
        },
    };
    match cvt(n) {
        // Never more than `max`, and not negative once `cvt` passed it.
        Ok(n) => Ok(n as usize),
        Err(e) => Err(wait_error(e, &wait)),
    }
}

/// The error of a failed [`epoll_wait`]: an `epoll_pwait2` the thread cannot use becomes
/// [`Unsupported`](io::ErrorKind::Unsupported). Out of line, so that the wait itself inlines
/// into the reactor's loop (it runs on every idle transition).
#[cold]
#[inline(never)]
fn wait_error(e: io::Error, wait: &Wait) -> io::Error {
    if matches!(wait, Wait::Nanos(_)) && e.raw_os_error().is_some_and(pwait2_unavailable) {
        io::Error::new(
            io::ErrorKind::Unsupported,
            format!("epoll_pwait2 is not available: {e}"),
        )
    } else {
        e
    }
}

/// Sets the calling thread's kernel timer slack (`PR_SET_TIMERSLACK`) and returns the one it
/// had: an `epoll_pwait2` timeout may otherwise end up to that slack (50 µs by default) late.
/// Asks the kernel for the thread's [`WaitSlack`] afresh (the runtime calls this as a core's
/// loop starts and ends).
pub(crate) fn set_timer_slack(ns: u64) -> u64 {
    // SAFETY: prctl with PR_GET_TIMERSLACK / PR_SET_TIMERSLACK takes no pointers.
    let old = unsafe { libc::prctl(libc::PR_GET_TIMERSLACK, 0, 0, 0, 0) };
    // SAFETY: as above; the value is an unsigned long.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong, 0, 0, 0) };
    WAIT_SLACK.with(|cell| cell.set(Some(WaitSlack::of_thread())));
    u64::try_from(old).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epoll_pwait2_refused_by_the_kernel_or_a_seccomp_filter_falls_back() {
        for errno in [libc::ENOSYS, libc::EPERM] {
            assert!(pwait2_unavailable(errno), "errno {errno}");
        }
        // The failures of a usable epoll_pwait2 are not a reason to use another device.
        for errno in [
            libc::EINTR,
            libc::EBADF,
            libc::EINVAL,
            libc::EFAULT,
            libc::ENOMEM,
        ] {
            assert!(!pwait2_unavailable(errno), "errno {errno}");
        }
    }

    #[test]
    fn the_timespec_is_the_kernels_two_64_bit_fields_whatever_time_t_is() {
        assert_eq!(mem::size_of::<KernelTimespec>(), 16);
        assert_eq!(mem::offset_of!(KernelTimespec, tv_nsec), 8);
        // Past a 32-bit time_t's 2038: seconds above u32::MAX, kept whole.
        let far = KernelTimespec::from_duration(Duration::new(5_000_000_007, 999_999_999));
        assert_eq!((far.tv_sec, far.tv_nsec), (5_000_000_007, 999_999_999));
        // More seconds than an i64 holds: saturated, never negative (the kernel's EINVAL).
        let max = KernelTimespec::from_duration(Duration::MAX);
        assert_eq!((max.tv_sec, max.tv_nsec), (i64::MAX, 999_999_999));
        let zero = KernelTimespec::from_duration(Duration::ZERO);
        assert_eq!((zero.tv_sec, zero.tv_nsec), (0, 0));
    }

    /// Timeouts around every boundary of the kernel's share: tiny ones, the divisor, where the
    /// cap starts (100 ms x (divisor + 1)), and huge ones.
    fn timeouts() -> Vec<Duration> {
        let mut ns: Vec<u64> = vec![0, 1, 2, 3, 199, 200, 201, 999, 1_000, 1_001, 1_002];
        for base in [1_000u64, 1_000_000, 100_000_000, 1_000_000_000] {
            for k in [1u64, 3, 7, 10, 99, 100, 101, 999, 1_000] {
                ns.push(base.saturating_mul(k));
                ns.push(base.saturating_mul(k) + 1);
                ns.push(base.saturating_mul(k) - 1);
            }
        }
        for div in [200u64, 1_000] {
            let cap_from = MAX_WAIT_SLACK_NS * (div + 1);
            ns.extend([cap_from - 1, cap_from, cap_from + 1, cap_from + 1_000]);
        }
        let mut d: Vec<Duration> = ns.into_iter().map(Duration::from_nanos).collect();
        d.extend([Duration::from_secs(u64::MAX / 4), Duration::MAX]);
        d
    }

    #[test]
    fn the_timeout_given_to_the_kernel_ends_its_window_by_the_deadline() {
        for divisor in [1_000, 200, 0] {
            let slack = WaitSlack { divisor };
            for timeout in timeouts() {
                let t = timeout.as_nanos();
                let x = slack.shorten(timeout).as_nanos();
                let end = x + slack.share_ns(x);
                assert!(
                    end <= t,
                    "1/{divisor}: {timeout:?} given as {x} ns ends at {end} ns"
                );
                // And no earlier than it must: a timeout 4 ns longer would end past it.
                if x < t {
                    let longer = x + 4;
                    assert!(
                        longer + slack.share_ns(longer) > t,
                        "1/{divisor}: {timeout:?} given as {x} ns, {longer} would fit"
                    );
                }
            }
        }
    }

    #[test]
    fn the_kernels_share_is_a_thousandth_a_two_hundredth_niced_at_most_100_ms() {
        let normal = WaitSlack { divisor: 1_000 };
        let ns = |d: Duration| normal.shorten(d).as_nanos();
        assert_eq!(ns(Duration::from_secs(1)), 999_000_999);
        assert_eq!(ns(Duration::from_millis(100)), 99_900_099);
        // From 100.1 s on the share is its cap.
        assert_eq!(ns(Duration::from_secs(200)), 199_900_000_000);
        let niced = WaitSlack { divisor: 200 };
        assert_eq!(
            niced.shorten(Duration::from_secs(1)).as_nanos(),
            995_024_875
        );
        // A real-time thread gets no window: its timeout is the deadline.
        let rt = WaitSlack { divisor: 0 };
        assert_eq!(rt.shorten(Duration::from_secs(1)), Duration::from_secs(1));
    }

    #[test]
    fn a_niced_thread_is_given_the_larger_share() {
        std::thread::spawn(|| {
            // SAFETY: getpriority takes no pointers; 0 is the calling thread.
            let raw = unsafe { libc::syscall(libc::SYS_getpriority, libc::PRIO_PROCESS, 0) };
            if raw == 20 {
                // Nice 0, as a test usually runs.
                assert_eq!(WaitSlack::of_thread().divisor, 1_000);
            }
            // SAFETY: gettid takes no arguments.
            let tid = unsafe { libc::syscall(libc::SYS_gettid) };
            // Raising one's own nice value needs no privilege (19 is the most); PRIO_PROCESS
            // with a thread id is that thread (Linux).
            // SAFETY: setpriority takes no pointers.
            let rc = unsafe { libc::syscall(libc::SYS_setpriority, libc::PRIO_PROCESS, tid, 19) };
            assert_eq!(rc, 0, "{}", io::Error::last_os_error());
            assert_eq!(WaitSlack::of_thread().divisor, 200);
            // The cached share is the one asked for at the last slack change.
            let old = set_timer_slack(1);
            assert_eq!(wait_slack().divisor, 200);
            set_timer_slack(old);
        })
        .join()
        .expect("the niced thread's assertions hold");
    }
}
