//! Same-core pipe ping-pong: two tasks exchange a 4-byte counter over two pipes.
//!
//! ```text
//! cargo run --release -p tickless --example pingpong -- [--messages N] [--timeout] [--policy eager|onidle|lazy]
//! ```
//!
//! Prints round trips per second and the runtime's counters. With `--timeout` every read is
//! wrapped in a 1 s timeout that never fires: the workload the timer driver is built for.

use std::io;
use std::time::{Duration, Instant};

use futures_lite::{AsyncReadExt, AsyncWriteExt};
use tickless::io::{pipe, PipeReader};
use tickless::time::timeout;
use tickless::{Builder, RearmPolicy};

struct Args {
    messages: u32,
    with_timeout: bool,
    policy: RearmPolicy,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        messages: 200_000,
        with_timeout: false,
        policy: RearmPolicy::default(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--messages" => {
                let v = it.next().ok_or("--messages needs a number")?;
                args.messages = v.parse().map_err(|e| format!("--messages {v}: {e}"))?;
            }
            "--timeout" => args.with_timeout = true,
            "--policy" => {
                args.policy = match it.next().as_deref() {
                    Some("eager") => RearmPolicy::Eager,
                    Some("onidle") => RearmPolicy::OnIdle,
                    Some("lazy") => RearmPolicy::Lazy,
                    other => return Err(format!("--policy eager|onidle|lazy, not {other:?}")),
                }
            }
            "-h" | "--help" => {
                return Err(
                    "usage: pingpong [--messages N] [--timeout] [--policy eager|onidle|lazy]"
                        .into(),
                )
            }
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

fn main() -> io::Result<()> {
    let args = parse_args().unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2)
    });
    let rt = Builder::new().timer_policy(args.policy).build()?;
    let (n, t) = (args.messages, args.with_timeout);
    let elapsed = rt.block_on(async move {
        let (mut to_b, mut from_a) = pipe()?;
        let (mut to_a, mut from_b) = pipe()?;
        let b = tickless::spawn_local(async move {
            for _ in 0..n {
                let i = read_msg(&mut from_a, t).await?;
                to_a.write_all(&(i + 1).to_le_bytes()).await?;
            }
            io::Result::Ok(())
        });
        let start = Instant::now();
        for i in 0..n {
            to_b.write_all(&i.to_le_bytes()).await?;
            let reply = read_msg(&mut from_b, t).await?;
            assert_eq!(reply, i + 1, "wrong reply");
        }
        let elapsed = start.elapsed();
        b.await??;
        io::Result::Ok(elapsed)
    })?;
    let s = rt.stats().total;
    println!(
        "policy={:?} timeout={} messages={} rtt_per_s={:.0}",
        args.policy,
        t,
        n,
        f64::from(n) / elapsed.as_secs_f64()
    );
    println!(
        "polls={} parks={} timer_inserts={} timer_cancels={} timer_fires={} timerfd_rearms={} \
         timerfd_spurious={} clock_reads={} io_polls={}",
        s.polls,
        s.parks,
        s.timer_inserts,
        s.timer_cancels,
        s.timer_fires,
        s.timerfd_rearms,
        s.timerfd_spurious,
        s.clock_reads,
        s.io_polls
    );
    Ok(())
}
