//! tokio's current-thread runtime, as a thread-per-core server would use it: one runtime per
//! pinned thread, `tokio::spawn` for tasks, `tokio::net::unix::pipe` for the pipes. Across
//! cores, two such runtimes on two pinned threads. `server_tokio_shape` alone runs the
//! multi-thread runtime, as a tokio server's `#[tokio::main]` does.

use std::cell::Cell;
use std::io;
use std::os::fd::OwnedFd;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Instant;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::unix::pipe::{Receiver, Sender};

use crate::sys;
use crate::workload::pingpong::{self, Clock, Mode, Plan, Run, TIMEOUT};
use crate::workload::server::{self, Db, Measured, Serving};
use crate::workload::timers::{self, ChurnPlan, IdlePlan, Probe, SleepPlan};
use crate::workload::{cpus, on_fresh_thread};

/// A current-thread runtime with I/O and time, as `#[tokio::main(flavor = "current_thread")]`.
fn runtime() -> io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
}

/// `tokio::time::sleep_until` on a `std` instant.
fn sleep_until(at: Instant) -> tokio::time::Sleep {
    tokio::time::sleep_until(tokio::time::Instant::from_std(at))
}

/// Reads one message, within [`TIMEOUT`] if asked.
async fn read_msg(r: &mut Receiver, with_timeout: bool) -> io::Result<u32> {
    let mut buf = [0u8; 4];
    if with_timeout {
        tokio::time::timeout(TIMEOUT, r.read_exact(&mut buf)).await??;
    } else {
        r.read_exact(&mut buf).await?;
    }
    Ok(u32::from_le_bytes(buf))
}

/// Answers `n` messages with their successor.
async fn echo(r: OwnedFd, w: OwnedFd, n: u32, mode: Mode) -> io::Result<()> {
    let (mut r, mut w) = (Receiver::from_owned_fd(r)?, Sender::from_owned_fd(w)?);
    for i in 0..n {
        let m = read_msg(&mut r, mode.timed(i)).await?;
        w.write_all(&m.wrapping_add(1).to_le_bytes()).await?;
    }
    Ok(())
}

/// Sends `from..from + n` and checks the answers.
async fn ping(r: &mut Receiver, w: &mut Sender, from: u32, n: u32, mode: Mode) -> io::Result<()> {
    for i in from..from + n {
        w.write_all(&i.to_le_bytes()).await?;
        pingpong::check(i, read_msg(r, mode.timed(i)).await?)?;
    }
    Ok(())
}

/// The pinger: warm up, then time the round trips.
async fn pinger(r: OwnedFd, w: OwnedFd, plan: &Plan) -> io::Result<Clock> {
    let (mut r, mut w) = (Receiver::from_owned_fd(r)?, Sender::from_owned_fd(w)?);
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
/// Building a runtime, pinning, or the pipes failed.
pub fn pingpong(plan: &Plan) -> io::Result<Run> {
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
                runtime()?.block_on(echo(b_r, b_w, n, mode))
            });
            let clock = on_fresh_thread(|| {
                sys::pin_current_thread(ping_cpu)?;
                runtime()?.block_on(pinger(a_r, a_w, plan))
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
            runtime()?.block_on(async {
                let echo = tokio::spawn(echo(b_r, b_w, n, mode));
                let clock = pinger(a_r, a_w, plan).await?;
                echo.await??;
                Ok(clock)
            })
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
pub fn sleeps(plan: &SleepPlan) -> io::Result<Vec<timers::Lateness>> {
    timers::sleep_precision(plan, |plan| {
        Ok(runtime()?.block_on(timers::sleep_series(sleep_until, plan)))
    })
}

/// `idle`.
///
/// # Errors
///
/// Building the runtime, pinning or reading `/proc` failed.
pub fn idle(plan: IdlePlan) -> io::Result<timers::IdleResult> {
    timers::idle(plan, |plan, probe: Arc<Probe>| {
        runtime()?.block_on(timers::idle_main(
            sleep_until,
            |s| drop(tokio::spawn(s)),
            plan,
            &probe,
        ));
        Ok(())
    })
}

/// `timer_churn`.
///
/// # Errors
///
/// Building the runtime, pinning, reading `/proc` or `getrusage` failed.
pub fn churn(plan: ChurnPlan) -> io::Result<timers::ChurnResult> {
    timers::churn(plan, |plan, probe: Arc<Probe>| {
        runtime()?.block_on(async {
            for i in 0..plan.tasks {
                drop(tokio::spawn(timers::churn_task(
                    i,
                    sleep_until,
                    plan,
                    probe.clone(),
                )));
            }
            timers::churn_main(sleep_until, plan, &probe).await;
        });
        Ok(())
    })
}

thread_local! {
    /// This thread's index among its runtime's workers (`usize::MAX` on any other thread),
    /// set by `on_thread_start`.
    static WORKER: Cell<usize> = const { Cell::new(usize::MAX) };
}

/// The worker thread running the caller: `server_tokio_shape`'s instrumentation.
fn worker() -> usize {
    WORKER.with(Cell::get)
}

/// `server_tokio_shape`'s server under tokio's imports: `workload/server/app.rs` as it is.
mod shape {
    use super::worker;
    use tokio::net::{TcpListener, TcpStream};
    use tokio::spawn;

    include!("../workload/server/app.rs");
}

/// `server_tokio_shape` on tokio's multi-thread runtime with `plan.cores` workers, as
/// `#[tokio::main]` runs a server: the accept loop in `block_on` (on the calling thread), each
/// connection a task on the workers. Requests are counted per worker thread; a task may move
/// between workers, so a connection counts where its handler started.
///
/// # Errors
///
/// Building the runtime, binding, the server or the client failed.
pub fn server_tokio_shape(
    plan: &server::Plan,
    client: impl FnOnce(&[String]) -> io::Result<Command> + Send,
) -> io::Result<Measured> {
    server::measure(plan, client, |serving: Serving| {
        let next = Arc::new(AtomicUsize::new(0));
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(plan.cores)
            .enable_all()
            .on_thread_start(move || WORKER.with(|w| w.set(next.fetch_add(1, Ordering::Relaxed))))
            .build()?;
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
            serving.listening(listener.local_addr()?);
            let Serving { seen, stop, .. } = serving;
            tokio::select! {
                served = shape::serve(listener, Db::default(), seen) => served,
                _ = stop => Ok(()),
            }
        })
    })
}

/// The latency workload's servers on tokio's multi-thread runtime with `cores` workers, each
/// serving until the process exits, the accept loop in `block_on` as `#[tokio::main]` runs it;
/// `listening` is called with the address once the server accepts.
pub mod serving {
    use std::io;
    use std::net::SocketAddr;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use hyper_util::rt::{TokioExecutor, TokioIo};
    use hyper_util::server::conn::auto;

    use super::{shape, WORKER};
    use crate::workload::hello::hello;
    use crate::workload::server::{Db, Placement};

    fn runtime(cores: usize) -> io::Result<tokio::runtime::Runtime> {
        let next = Arc::new(AtomicUsize::new(0));
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(cores)
            .enable_all()
            .on_thread_start(move || WORKER.with(|w| w.set(next.fetch_add(1, Ordering::Relaxed))))
            .build()
    }

    /// The hello service on hyper-util's `auto` server with the settings `axum::serve` uses
    /// (no timer, no header timeout), a task per connection.
    ///
    /// # Errors
    ///
    /// Building the runtime, binding or accepting failed.
    pub fn http_hello(cores: usize, listening: impl FnOnce(SocketAddr)) -> io::Result<()> {
        runtime(cores)?.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
            listening(listener.local_addr()?);
            let http = auto::Builder::new(TokioExecutor::new());
            loop {
                let (stream, _) = listener.accept().await?;
                stream.set_nodelay(true)?;
                let http = http.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(hello);
                    let _ordinary_end = http.serve_connection(TokioIo::new(stream), service).await;
                });
            }
        })
    }

    /// `server_tokio_shape`'s server, as `compare` runs it.
    ///
    /// # Errors
    ///
    /// Building the runtime, binding or accepting failed.
    pub fn kv_tokio_shape(cores: usize, listening: impl FnOnce(SocketAddr)) -> io::Result<()> {
        runtime(cores)?.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
            listening(listener.local_addr()?);
            shape::serve(listener, Db::default(), Arc::new(Placement::new(cores))).await
        })
    }
}
