//! The baselines without a runtime.
//!
//! - `threads`: two blocking threads over two pipes, the scheduler people's pipe-test
//!   (pipe-test-1m): every message is a blocking `read` woken by the other thread's `write`.
//!   Same-core, both threads are pinned to one CPU; cross-core, one to each. With a timeout,
//!   each read is preceded by `poll(2)` with a 1 s timeout: the blocking way of bounding a read.
//! - `floor`: one thread doing the four system calls of a round trip back to back (write and
//!   read one pipe, write and read the other). No wakeup, no scheduler: what the round trip's
//!   system calls alone cost; no runtime can beat it by much.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::AsFd;
use std::thread;
use std::time::Instant;

use crate::sys;
use crate::workload::pingpong::{self, Clock, Mode, Plan, Run, TIMEOUT};
use crate::workload::timers::{self, SleepPlan};
use crate::workload::{cpus, on_fresh_thread};

/// Reads one message, after `poll` with [`TIMEOUT`] if asked.
fn read_msg(r: &mut File, with_timeout: bool) -> io::Result<u32> {
    if with_timeout && !sys::poll_readable(r.as_fd(), TIMEOUT)? {
        return Err(pingpong::timed_out());
    }
    let mut buf = [0u8; 4];
    r.read_exact(&mut buf)?;
    Ok(u32::from_le_bytes(buf))
}

/// Sends `from..from + n` and checks the answers.
fn ping(r: &mut File, w: &mut File, from: u32, n: u32, mode: Mode) -> io::Result<()> {
    for i in from..from + n {
        w.write_all(&i.to_le_bytes())?;
        pingpong::check(i, read_msg(r, mode.timed(i))?)?;
    }
    Ok(())
}

/// Two blocking threads.
///
/// # Errors
///
/// Pinning or the pipes failed.
pub fn threads(plan: &Plan) -> io::Result<Run> {
    let (a_r, b_w) = sys::pipe()?; // echo -> pinger
    let (b_r, a_w) = sys::pipe()?; // pinger -> echo
    let cpus = cpus(if plan.mode.cross() { 2 } else { 1 })?;
    let (ping_cpu, echo_cpu) = if plan.mode.cross() {
        (cpus[0], cpus[1])
    } else {
        (cpus[0], cpus[0])
    };
    let (n, mode) = (plan.total(), plan.mode);
    let clock = thread::scope(|s| {
        let echo = s.spawn(move || {
            sys::pin_current_thread(echo_cpu)?;
            let (mut r, mut w) = (File::from(b_r), File::from(b_w));
            for i in 0..n {
                let m = read_msg(&mut r, mode.timed(i))?;
                w.write_all(&m.wrapping_add(1).to_le_bytes())?;
            }
            io::Result::Ok(())
        });
        let clock = on_fresh_thread(|| {
            sys::pin_current_thread(ping_cpu)?;
            let (mut r, mut w) = (File::from(a_r), File::from(a_w));
            ping(&mut r, &mut w, 0, plan.warmup, mode)?;
            let mut clock = Clock::default();
            for (from, n, timed) in plan.blocks() {
                let start = Instant::now();
                ping(&mut r, &mut w, from, n, mode)?;
                clock.add(n, timed, start.elapsed());
            }
            Ok(clock)
        });
        let echoed = echo.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
        let clock = clock?;
        echoed.map(|()| clock)
    })?;
    Ok(Run {
        elapsed: clock.elapsed(),
        clock,
        tickless: None,
    })
}

/// One thread, the four system calls of a round trip back to back.
///
/// # Errors
///
/// Pinning or the pipes failed.
pub fn floor(plan: &Plan) -> io::Result<Run> {
    on_fresh_thread(|| {
        sys::pin_current_thread(cpus(1)?[0])?;
        let (a_r, a_w) = sys::pipe()?;
        let (b_r, b_w) = sys::pipe()?;
        let (mut a_r, mut a_w, mut b_r, mut b_w) = (
            File::from(a_r),
            File::from(a_w),
            File::from(b_r),
            File::from(b_w),
        );
        let mut round_trip = |i: u32| -> io::Result<()> {
            let mut buf = [0u8; 4];
            a_w.write_all(&i.to_le_bytes())?;
            a_r.read_exact(&mut buf)?;
            let m = u32::from_le_bytes(buf);
            b_w.write_all(&m.wrapping_add(1).to_le_bytes())?;
            b_r.read_exact(&mut buf)?;
            pingpong::check(i, u32::from_le_bytes(buf))
        };
        for i in 0..plan.warmup {
            round_trip(i)?;
        }
        let start = Instant::now();
        for i in plan.warmup..plan.total() {
            round_trip(i)?;
        }
        let mut clock = Clock::default();
        clock.add(plan.rtts, false, start.elapsed());
        Ok(Run {
            elapsed: clock.elapsed(),
            clock,
            tickless: None,
        })
    })
}

/// `sleep_precision` with `std::thread::sleep` (`clock_nanosleep`; subject to the thread's
/// timer slack, 50 µs by default).
///
/// # Errors
///
/// Pinning failed.
pub fn sleeps(plan: &SleepPlan) -> io::Result<Vec<timers::Lateness>> {
    timers::sleep_precision(plan, |plan| {
        let mut out = Vec::new();
        for &(length, count) in &plan.series {
            let mut late = Vec::with_capacity(count as usize);
            for _ in 0..count {
                let deadline = Instant::now() + length;
                let mut left = length;
                while !left.is_zero() {
                    thread::sleep(left);
                    left = deadline.saturating_duration_since(Instant::now());
                }
                late.push(u64::try_from(deadline.elapsed().as_nanos()).unwrap_or(u64::MAX));
            }
            out.push(late);
        }
        Ok(out)
    })
}
