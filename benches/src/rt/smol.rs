//! smol's pieces, as smol itself puts them together for a single thread: an
//! `async_executor::LocalExecutor` run inside `async_io::block_on` (which drives the async-io
//! reactor while the executor has nothing to do), `Async<PipeReader>` for the pipes,
//! `async_io::Timer` for sleeps and timeouts. Across cores, one such executor per pinned thread.

use std::future::Future;
use std::io::{self, PipeReader, PipeWriter};
use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::thread;
use std::time::Instant;

use async_executor::LocalExecutor;
use async_io::{Async, Timer};
use futures_lite::{future, AsyncReadExt, AsyncWriteExt};

use crate::sys;
use crate::workload::pingpong::{self, Clock, Mode, Plan, Run, TIMEOUT};
use crate::workload::timers::{self, ChurnPlan, IdlePlan, Probe, SleepPlan};
use crate::workload::{cpus, on_fresh_thread};

/// A sleep until `at`, as a `()` future.
fn sleep_until(at: Instant) -> impl Future<Output = ()> {
    let timer = Timer::at(at);
    async move {
        timer.await;
    }
}

/// Runs `f` on a fresh local executor, driven by `async_io::block_on`.
fn run<T>(f: impl FnOnce(&LocalExecutor<'static>) -> T) -> T {
    let ex = LocalExecutor::new();
    f(&ex)
}

/// Reads one message, within [`TIMEOUT`] if asked (smol's idiom: race the read against a
/// `Timer`).
async fn read_msg(r: &mut Async<PipeReader>, with_timeout: bool) -> io::Result<u32> {
    let mut buf = [0u8; 4];
    if with_timeout {
        future::or(r.read_exact(&mut buf), async {
            Timer::after(TIMEOUT).await;
            Err(pingpong::timed_out())
        })
        .await?;
    } else {
        r.read_exact(&mut buf).await?;
    }
    Ok(u32::from_le_bytes(buf))
}

/// Answers `n` messages with their successor.
async fn echo(r: OwnedFd, w: OwnedFd, n: u32, mode: Mode) -> io::Result<()> {
    let mut r = Async::new(PipeReader::from(r))?;
    let mut w = Async::new(PipeWriter::from(w))?;
    for i in 0..n {
        let m = read_msg(&mut r, mode.timed(i)).await?;
        w.write_all(&m.wrapping_add(1).to_le_bytes()).await?;
    }
    Ok(())
}

/// Sends `from..from + n` and checks the answers.
async fn ping(
    r: &mut Async<PipeReader>,
    w: &mut Async<PipeWriter>,
    from: u32,
    n: u32,
    mode: Mode,
) -> io::Result<()> {
    for i in from..from + n {
        w.write_all(&i.to_le_bytes()).await?;
        pingpong::check(i, read_msg(r, mode.timed(i)).await?)?;
    }
    Ok(())
}

/// The pinger: warm up, then time the round trips.
async fn pinger(r: OwnedFd, w: OwnedFd, plan: &Plan) -> io::Result<Clock> {
    let mut r = Async::new(PipeReader::from(r))?;
    let mut w = Async::new(PipeWriter::from(w))?;
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
/// Pinning, the pipes or the reactor failed.
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
                run(|ex| async_io::block_on(ex.run(echo(b_r, b_w, n, mode))))
            });
            let clock = on_fresh_thread(|| {
                sys::pin_current_thread(ping_cpu)?;
                run(|ex| async_io::block_on(ex.run(pinger(a_r, a_w, plan))))
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
            run(|ex| {
                async_io::block_on(ex.run(async {
                    let echo = ex.spawn(echo(b_r, b_w, n, mode));
                    let clock = pinger(a_r, a_w, plan).await?;
                    echo.await?;
                    Ok(clock)
                }))
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
/// Pinning failed.
pub fn sleeps(plan: &SleepPlan) -> io::Result<Vec<timers::Lateness>> {
    timers::sleep_precision(plan, |plan| {
        Ok(run(|ex| {
            async_io::block_on(ex.run(timers::sleep_series(sleep_until, plan)))
        }))
    })
}

/// `idle`.
///
/// # Errors
///
/// Pinning or reading `/proc` failed.
pub fn idle(plan: IdlePlan) -> io::Result<timers::IdleResult> {
    timers::idle(plan, |plan, probe: Arc<Probe>| {
        run(|ex| {
            async_io::block_on(ex.run(timers::idle_main(
                sleep_until,
                |s| ex.spawn(s).detach(),
                plan,
                &probe,
            )))
        });
        Ok(())
    })
}

/// `timer_churn`.
///
/// # Errors
///
/// Pinning, reading `/proc` or `getrusage` failed.
pub fn churn(plan: ChurnPlan) -> io::Result<timers::ChurnResult> {
    timers::churn(plan, |plan, probe: Arc<Probe>| {
        run(|ex| {
            async_io::block_on(ex.run(async {
                for i in 0..plan.tasks {
                    ex.spawn(timers::churn_task(i, sleep_until, plan, probe.clone()))
                        .detach();
                }
                timers::churn_main(sleep_until, plan, &probe).await;
            }))
        });
        Ok(())
    })
}
