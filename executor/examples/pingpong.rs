//! Pipe ping-pong: two tasks exchange a 4-byte counter over two pipes, on one core or, with
//! `--cross-core`, one on each of two cores.
//!
//! ```text
//! cargo run --release -p tickless --example pingpong -- \
//!     [--messages N] [--timeout] [--policy eager|onidle|lazy] [--cross-core] [--spin <µs>]
//! ```
//!
//! Prints round trips per second and the runtime's counters, in total and per core. With
//! `--timeout` every read is wrapped in a 1 s timeout that never fires: the workload the timer
//! driver is built for. `--spin` sets the idle governor's spin window.

use std::io;
use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

use futures_lite::{AsyncReadExt, AsyncWriteExt};
use tickless::io::{PipeReader, PipeWriter};
use tickless::time::timeout;
use tickless::{Builder, RearmPolicy};

struct Args {
    messages: u32,
    with_timeout: bool,
    policy: RearmPolicy,
    cross_core: bool,
    spin: Duration,
}

const USAGE: &str = "usage: pingpong [--messages N] [--timeout] [--policy eager|onidle|lazy] \
                     [--cross-core] [--spin <µs>]";

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        messages: 200_000,
        with_timeout: false,
        policy: RearmPolicy::default(),
        cross_core: false,
        spin: Duration::ZERO,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--messages" => {
                let v = it.next().ok_or("--messages needs a number")?;
                args.messages = v.parse().map_err(|e| format!("--messages {v}: {e}"))?;
            }
            "--timeout" => args.with_timeout = true,
            "--cross-core" => args.cross_core = true,
            "--spin" => {
                let v = it.next().ok_or("--spin needs microseconds")?;
                let us: u64 = v.parse().map_err(|e| format!("--spin {v}: {e}"))?;
                args.spin = Duration::from_micros(us);
            }
            "--policy" => {
                args.policy = match it.next().as_deref() {
                    Some("eager") => RearmPolicy::Eager,
                    Some("onidle") => RearmPolicy::OnIdle,
                    Some("lazy") => RearmPolicy::Lazy,
                    other => return Err(format!("--policy eager|onidle|lazy, not {other:?}")),
                }
            }
            "-h" | "--help" => return Err(USAGE.into()),
            other => return Err(format!("unknown argument {other:?} (try --help)")),
        }
    }
    Ok(args)
}

/// Reads one message, with a 1 s timeout if asked.
async fn read_msg(r: &mut PipeReader, with_timeout: bool) -> io::Result<u32> {
    let mut buf = [0u8; 4];
    if with_timeout {
        timeout(Duration::from_secs(1), r.read_exact(&mut buf)).await??;
    } else {
        r.read_exact(&mut buf).await?;
    }
    Ok(u32::from_le_bytes(buf))
}

/// The echoing side: reads a counter, answers counter + 1.
async fn echo(mut r: PipeReader, mut w: PipeWriter, n: u32, t: bool) -> io::Result<()> {
    for _ in 0..n {
        let i = read_msg(&mut r, t).await?;
        w.write_all(&(i + 1).to_le_bytes()).await?;
    }
    Ok(())
}

/// The measuring side: sends a counter, checks the answer. Returns the time taken.
async fn ping(mut w: PipeWriter, mut r: PipeReader, n: u32, t: bool) -> io::Result<Duration> {
    let start = Instant::now();
    for i in 0..n {
        w.write_all(&i.to_le_bytes()).await?;
        let reply = read_msg(&mut r, t).await?;
        assert_eq!(reply, i + 1, "wrong reply");
    }
    Ok(start.elapsed())
}

fn std_pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let (r, w) = std::io::pipe()?;
    Ok((r.into(), w.into()))
}

fn main() -> io::Result<()> {
    let args = parse_args().unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2)
    });
    let rt = Builder::new()
        .cores(if args.cross_core { 2 } else { 1 })
        .timer_policy(args.policy)
        .spin_before_park(args.spin)
        .build()?;
    let (n, t) = (args.messages, args.with_timeout);
    let (to_b_r, to_b_w) = std_pipe()?;
    let (to_a_r, to_a_w) = std_pipe()?;
    let elapsed = if args.cross_core {
        let b = rt.handle(1).spawn_pinned(move || async move {
            let r = PipeReader::from_owned_fd(to_b_r)?;
            let w = PipeWriter::from_owned_fd(to_a_w)?;
            echo(r, w, n, t).await
        });
        rt.block_on(async move {
            let w = PipeWriter::from_owned_fd(to_b_w)?;
            let r = PipeReader::from_owned_fd(to_a_r)?;
            let elapsed = ping(w, r, n, t).await?;
            b.await??;
            io::Result::Ok(elapsed)
        })?
    } else {
        rt.block_on(async move {
            let r = PipeReader::from_owned_fd(to_b_r)?;
            let w = PipeWriter::from_owned_fd(to_a_w)?;
            let b = tickless::spawn_local(echo(r, w, n, t));
            let w = PipeWriter::from_owned_fd(to_b_w)?;
            let r = PipeReader::from_owned_fd(to_a_r)?;
            let elapsed = ping(w, r, n, t).await?;
            b.await??;
            io::Result::Ok(elapsed)
        })?
    };
    let stats = rt.stats();
    println!(
        "policy={:?} timeout={} cross_core={} spin_us={} messages={} rtt_per_s={:.0}",
        args.policy,
        t,
        args.cross_core,
        args.spin.as_micros(),
        n,
        f64::from(n) / elapsed.as_secs_f64()
    );
    for (name, s) in stats
        .cores
        .iter()
        .enumerate()
        .map(|(i, s)| (format!("core{i}"), s))
        .chain([("total".to_string(), &stats.total)])
    {
        println!(
            "{name}: polls={} parks={} spins={} remote_wakes_sent={} remote_wakes_avoided={} \
             timer_inserts={} timer_cancels={} timer_fires={} timerfd_rearms={} \
             device_spurious={} clock_reads={} io_polls={}",
            s.polls,
            s.parks,
            s.spins,
            s.remote_wakes_sent,
            s.remote_wakes_avoided,
            s.timer_inserts,
            s.timer_cancels,
            s.timer_fires,
            s.timerfd_rearms,
            s.device_spurious,
            s.clock_reads,
            s.io_polls
        );
    }
    Ok(())
}
