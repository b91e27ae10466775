//! monoio, with its legacy (epoll) driver or its io_uring driver, timers enabled.
//!
//! monoio 0.2 has no pipe reads or writes (its `Pipe` only splices), so each pipe end goes into
//! monoio's `UnixStream` and is used through `readv`/`writev`, which monoio issues as the
//! `readv`/`writev` system calls (legacy) or `IORING_OP_READV`/`WRITEV` (io_uring), both fine
//! on pipes. As monoio's own `new_pipe` does, the ends are non-blocking for the legacy driver
//! and blocking for io_uring (io_uring would return `EAGAIN` on a non-blocking one instead of
//! waiting for it).

use std::future::Future;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream as StdUnixStream;
use std::sync::Arc;
use std::thread;
use std::time::Instant;

use monoio::buf::{IoVecBuf, IoVecBufMut};
use monoio::io::{AsyncReadRent, AsyncWriteRent};
use monoio::net::UnixStream;
use monoio::time::TimeDriver;
use monoio::{IoUringDriver, LegacyDriver, RuntimeBuilder};

use crate::sys;
use crate::workload::pingpong::{self, Clock, Mode, Plan, Run, TIMEOUT};
use crate::workload::timers::{self, ChurnPlan, IdlePlan, Probe, SleepPlan};
use crate::workload::{cpus, on_fresh_thread};

/// Which monoio driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Driver {
    /// `LegacyDriver`: epoll through mio.
    Legacy,
    /// `IoUringDriver`.
    Uring,
}

/// Builds a runtime with `driver` and blocks on the future `make` returns. Generic over the
/// driver type, so both drivers run the same code.
fn block_on<T, F>(driver: Driver, make: impl FnOnce() -> F) -> io::Result<T>
where
    F: Future<Output = T>,
{
    match driver {
        Driver::Legacy => {
            let mut rt: monoio::Runtime<TimeDriver<LegacyDriver>> =
                RuntimeBuilder::<LegacyDriver>::new()
                    .enable_timer()
                    .build()?;
            Ok(rt.block_on(make()))
        }
        Driver::Uring => {
            let mut rt: monoio::Runtime<TimeDriver<IoUringDriver>> =
                RuntimeBuilder::<IoUringDriver>::new()
                    .enable_timer()
                    .build()?;
            Ok(rt.block_on(make()))
        }
    }
}

/// Whether this driver can be built here (io_uring may be disabled or filtered by seccomp).
///
/// # Errors
///
/// The reason it cannot.
pub fn available(driver: Driver) -> io::Result<()> {
    block_on(driver, || async {})
}

/// `monoio::time::sleep_until` on a `std` instant.
fn sleep_until(at: Instant) -> monoio::time::Sleep {
    monoio::time::sleep_until(monoio::time::Instant::from_std(at))
}

/// A pipe end as a monoio stream, flagged as the driver wants. Must run inside the runtime.
fn stream(fd: OwnedFd, driver: Driver) -> io::Result<UnixStream> {
    if driver == Driver::Legacy {
        sys::set_nonblocking(fd.as_fd())?;
    }
    UnixStream::from_std(StdUnixStream::from(fd))
}

/// One message's bytes and the `iovec` that describes them, boxed together: monoio requires
/// the `iovec` (and the bytes) to stay put while it owns the buffer, and this way a message
/// costs no allocation (monoio's own `VecBuf` allocates its `iovec` array on every conversion).
struct MsgBuf(Box<MsgInner>);

/// The boxed part of a [`MsgBuf`].
struct MsgInner {
    /// Describes `bytes`; its base is re-derived whenever the buffer is handed over.
    iov: libc::iovec,
    /// The message.
    bytes: [u8; 4],
}

impl MsgBuf {
    fn new() -> MsgBuf {
        let mut b = MsgBuf(Box::new(MsgInner {
            iov: libc::iovec {
                iov_base: std::ptr::null_mut(),
                iov_len: 4,
            },
            bytes: [0; 4],
        }));
        b.refresh();
        b
    }

    /// Points the `iovec` at the bytes (after any Rust access to them).
    fn refresh(&mut self) {
        let inner = &mut *self.0;
        inner.iov.iov_base = inner.bytes.as_mut_ptr().cast();
    }

    fn get(&self) -> u32 {
        u32::from_le_bytes(self.0.bytes)
    }

    fn set(&mut self, m: u32) {
        self.0.bytes = m.to_le_bytes();
        self.refresh();
    }
}

// SAFETY: the pointer is to the boxed `iovec`, which does not move while the box lives (moving
// a `MsgBuf` moves only the box pointer); it describes the 4 boxed bytes, and there is one.
unsafe impl IoVecBuf for MsgBuf {
    fn read_iovec_ptr(&self) -> *const libc::iovec {
        &self.0.iov
    }

    fn read_iovec_len(&self) -> usize {
        1
    }
}

// SAFETY: as for `IoVecBuf`; the `iovec` is refreshed from a `&mut` to the bytes before it is
// handed out, so the kernel writes through a pointer derived last. `set_init` has nothing to
// track: the bytes are always initialized.
unsafe impl IoVecBufMut for MsgBuf {
    fn write_iovec_ptr(&mut self) -> *mut libc::iovec {
        self.refresh();
        &mut self.0.iov
    }

    fn write_iovec_len(&mut self) -> usize {
        1
    }

    unsafe fn set_init(&mut self, _pos: usize) {}
}

/// Reads one message into `buf` (returned for reuse), within [`TIMEOUT`] if asked. A 4-byte
/// pipe write is atomic and the ping-pong strictly alternates, so a read returns the whole
/// message; anything shorter is reported, not stitched.
async fn read_msg(s: &mut UnixStream, buf: MsgBuf, t: bool) -> io::Result<(u32, MsgBuf)> {
    let (res, buf) = if t {
        monoio::time::timeout(TIMEOUT, s.readv(buf))
            .await
            .map_err(|_| pingpong::timed_out())?
    } else {
        s.readv(buf).await
    };
    match res? {
        4 => Ok((buf.get(), buf)),
        n => Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!("read {n} bytes"),
        )),
    }
}

/// Writes one message from `buf` (returned for reuse).
async fn write_msg(s: &mut UnixStream, m: u32, mut buf: MsgBuf) -> io::Result<MsgBuf> {
    buf.set(m);
    let (res, buf) = s.writev(buf).await;
    match res? {
        4 => Ok(buf),
        n => Err(io::Error::new(
            io::ErrorKind::WriteZero,
            format!("wrote {n} bytes"),
        )),
    }
}

/// Answers `n` messages with their successor.
async fn echo(r: OwnedFd, w: OwnedFd, n: u32, mode: Mode, driver: Driver) -> io::Result<()> {
    let (mut r, mut w) = (stream(r, driver)?, stream(w, driver)?);
    let (mut rbuf, mut wbuf) = (MsgBuf::new(), MsgBuf::new());
    for i in 0..n {
        let (m, b) = read_msg(&mut r, rbuf, mode.timed(i)).await?;
        rbuf = b;
        wbuf = write_msg(&mut w, m.wrapping_add(1), wbuf).await?;
    }
    Ok(())
}

/// Sends `from..from + n` and checks the answers.
async fn ping(
    r: &mut UnixStream,
    w: &mut UnixStream,
    from: u32,
    n: u32,
    mode: Mode,
) -> io::Result<()> {
    let (mut rbuf, mut wbuf) = (MsgBuf::new(), MsgBuf::new());
    for i in from..from + n {
        wbuf = write_msg(w, i, wbuf).await?;
        let (m, b) = read_msg(r, rbuf, mode.timed(i)).await?;
        rbuf = b;
        pingpong::check(i, m)?;
    }
    Ok(())
}

/// The pinger: warm up, then time the round trips.
async fn pinger(r: OwnedFd, w: OwnedFd, plan: &Plan, driver: Driver) -> io::Result<Clock> {
    let (mut r, mut w) = (stream(r, driver)?, stream(w, driver)?);
    ping(&mut r, &mut w, 0, plan.warmup, plan.mode).await?;
    let mut clock = Clock::default();
    for (from, n, timed) in plan.blocks() {
        let start = Instant::now();
        ping(&mut r, &mut w, from, n, plan.mode).await?;
        clock.add(n, timed, start.elapsed());
    }
    Ok(clock)
}

/// Pipe ping-pong.
///
/// # Errors
///
/// Building a runtime (io_uring unavailable, say), pinning, or the pipes failed.
pub fn pingpong(driver: Driver, plan: &Plan) -> io::Result<Run> {
    let (a_r, b_w) = sys::pipe()?; // echo -> pinger
    let (b_r, a_w) = sys::pipe()?; // pinger -> echo
    let (n, mode) = (plan.total(), plan.mode);
    let clock = if plan.mode.cross() {
        let (ping_cpu, echo_cpu) = {
            let c = cpus(2)?;
            (c[0], c[1])
        };
        thread::scope(|s| {
            let echo_side = s.spawn(move || {
                sys::pin_current_thread(echo_cpu)?;
                block_on(driver, || echo(b_r, b_w, n, mode, driver))?
            });
            let clock = on_fresh_thread(|| {
                sys::pin_current_thread(ping_cpu)?;
                block_on(driver, || pinger(a_r, a_w, plan, driver))?
            });
            let echoed = echo_side
                .join()
                .unwrap_or_else(|p| std::panic::resume_unwind(p));
            let clock = clock?;
            echoed.map(|()| clock)
        })?
    } else {
        on_fresh_thread(|| {
            sys::pin_current_thread(cpus(1)?[0])?;
            block_on(driver, || async {
                let echo = monoio::spawn(echo(b_r, b_w, n, mode, driver));
                let clock = pinger(a_r, a_w, plan, driver).await?;
                echo.await?;
                Ok(clock)
            })?
        })?
    };
    Ok(Run {
        elapsed: clock.elapsed(),
        clock,
        tickless: None,
    })
}

/// `sleep_precision`.
///
/// # Errors
///
/// Building the runtime or pinning failed.
pub fn sleeps(driver: Driver, plan: &SleepPlan) -> io::Result<Vec<timers::Lateness>> {
    timers::sleep_precision(plan, |plan| {
        block_on(driver, || timers::sleep_series(sleep_until, plan))
    })
}

/// `idle`.
///
/// # Errors
///
/// Building the runtime, pinning or reading `/proc` failed.
pub fn idle(driver: Driver, plan: IdlePlan) -> io::Result<timers::IdleResult> {
    timers::idle(plan, |plan, probe: Arc<Probe>| {
        block_on(driver, || async move {
            timers::idle_main(sleep_until, |s| drop(monoio::spawn(s)), plan, &probe).await;
        })
    })
}

/// `timer_churn`.
///
/// # Errors
///
/// Building the runtime, pinning, reading `/proc` or `getrusage` failed.
pub fn churn(driver: Driver, plan: ChurnPlan) -> io::Result<timers::ChurnResult> {
    timers::churn(plan, |plan, probe: Arc<Probe>| {
        block_on(driver, || async move {
            for i in 0..plan.tasks {
                drop(monoio::spawn(timers::churn_task(
                    i,
                    sleep_until,
                    plan,
                    probe.clone(),
                )));
            }
            timers::churn_main(sleep_until, plan, &probe).await;
        })
    })
}
