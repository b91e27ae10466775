//! Pipe ping-pong: two tasks exchange a 4-byte counter over two pipes, on one core or, with
//! `--cross-core`, one on each of two cores.
//!
//! ```text
//! cargo run --release -p tickless --example pingpong -- \
//!     [--messages N] [--timeout] [--policy eager|onidle|lazy] [--cross-core] [--spin <µs>] \
//!     [--no-governor] [--pin] [--every <µs>]
//! ```
//!
//! Prints round trips per second and the runtime's counters, in total and per core. With
//! `--timeout` every read is wrapped in a 1 s timeout that never fires: the workload the timer
//! driver is built for. `--spin` sets a fixed spin window in place of the idle
//! governor's learned one, `--no-governor` turns the governor off, `--pin` pins each core to its CPU.
//!
//! `--every` sends one message every so many microseconds instead of back to back (a sporadic
//! workload: the idle governor's hard case), and prints each round trip's latency percentiles
//! and the process's CPU time per round trip (from `/proc/self/task/*/schedstat`).

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
    governor: bool,
    pin: bool,
    every: Duration,
}

const USAGE: &str = "usage: pingpong [--messages N] [--timeout] [--policy eager|onidle|lazy] \
                     [--cross-core] [--spin <µs>] [--no-governor] [--pin] \
                     [--every <µs>]";

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        messages: 200_000,
        with_timeout: false,
        policy: RearmPolicy::default(),
        cross_core: false,
        spin: Duration::ZERO,
        governor: true,
        pin: false,
        every: Duration::ZERO,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--messages" => {
                let v = it.next().ok_or("--messages needs a number")?;
                args.messages = v.parse().map_err(|e| format!("--messages {v}: {e}"))?;
            }
            "--timeout" => args.with_timeout = true,
            "--no-governor" => args.governor = false,
            "--pin" => args.pin = true,
            "--every" => {
                let v = it.next().ok_or("--every needs microseconds")?;
                let us: u64 = v.parse().map_err(|e| format!("--every {v}: {e}"))?;
                args.every = Duration::from_micros(us);
            }
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

/// The measuring side: sends a counter, checks the answer, `every` apart (back to back if
/// zero). Returns the time taken and each round trip's.
async fn ping(
    mut w: PipeWriter,
    mut r: PipeReader,
    n: u32,
    t: bool,
    every: Duration,
) -> io::Result<(Duration, Vec<Duration>)> {
    let start = Instant::now();
    let mut rtts = Vec::with_capacity(if every.is_zero() { 0 } else { n as usize });
    for i in 0..n {
        if !every.is_zero() {
            tickless::time::sleep(every).await;
        }
        let sent = Instant::now();
        w.write_all(&i.to_le_bytes()).await?;
        let reply = read_msg(&mut r, t).await?;
        assert_eq!(reply, i + 1, "wrong reply");
        if !every.is_zero() {
            rtts.push(sent.elapsed());
        }
    }
    Ok((start.elapsed(), rtts))
}

/// CPU time of every thread of the process so far, ns (the first field of each thread's
/// `/proc/self/task/<tid>/schedstat`); threads that ended are not counted.
fn process_cpu_ns() -> u64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
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
        .idle_governor(args.governor)
        .pin(args.pin)
        .build()?;
    let (n, t) = (args.messages, args.with_timeout);
    let (to_b_r, to_b_w) = std_pipe()?;
    let (to_a_r, to_a_w) = std_pipe()?;
    let every = args.every;
    let cpu_before = process_cpu_ns();
    let (elapsed, mut rtts) = if args.cross_core {
        let b = rt.handle(1).spawn_pinned(move || async move {
            let r = PipeReader::from_owned_fd(to_b_r)?;
            let w = PipeWriter::from_owned_fd(to_a_w)?;
            echo(r, w, n, t).await
        });
        rt.block_on(async move {
            let w = PipeWriter::from_owned_fd(to_b_w)?;
            let r = PipeReader::from_owned_fd(to_a_r)?;
            let elapsed = ping(w, r, n, t, every).await?;
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
            let elapsed = ping(w, r, n, t, every).await?;
            b.await??;
            io::Result::Ok(elapsed)
        })?
    };
    let cpu_ns = process_cpu_ns().saturating_sub(cpu_before);
    let stats = rt.stats();
    if !rtts.is_empty() {
        rtts.sort();
        let at = |p: usize| rtts[(rtts.len() - 1) * p / 100].as_secs_f64() * 1e6;
        println!(
            "every_us={} governor={} pin={} spin_us={} rtt_p50_us={:.1} rtt_p90_us={:.1} \
             rtt_p99_us={:.1} cpu_us_per_rtt={:.1} governor_spins={} governor_caught={} \
             governor_crowded={}",
            every.as_micros(),
            args.governor,
            args.pin,
            args.spin.as_micros(),
            at(50),
            at(90),
            at(99),
            cpu_ns as f64 / 1e3 / f64::from(n),
            stats.total.governor_spins,
            stats.total.governor_caught,
            stats.total.governor_crowded,
        );
    }
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
             device_spurious={} clock_reads={} io_polls={} governor_spins={} \
             governor_caught={} governor_crowded={} governor_busy_looks={}",
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
            s.io_polls,
            s.governor_spins,
            s.governor_caught,
            s.governor_crowded,
            s.governor_busy_looks
        );
    }
    Ok(())
}
