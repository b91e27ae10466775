//! One measurement, in the child process `compare` starts for it:
//! `compare __child <size> <workload> <contender> [rtts=N] [cores=N]`.
//!
//! It prints one line per result, `label=value ... metric=number ...`, and exits 0; exits
//! [`EXIT_SKIP`] with a reason on stdout if the contender cannot run here; exits 1 on failure.
//!
//! `server_tokio_shape`'s child is the server; it starts its client as a child of its own,
//! `compare __child server_client <args>` (`workload::server::client`), which prints its
//! marks and result itself.

use std::io::{self, Write};
use std::process::ExitCode;

use super::plan::{Size, Workload, DEFAULT_CORES};
use super::runner::child_command;
use crate::rt::Contender;
use crate::workload::pingpong::{Mode, Plan, Run, PAIRED_BLOCK};
use crate::workload::server::{self, Measured};
use crate::workload::timers::Lateness;

/// The exit code of a measurement the contender cannot make here (io_uring unavailable).
pub const EXIT_SKIP: u8 = 3;

/// The size's name on the command line.
pub fn size_name(size: Size) -> &'static str {
    match size {
        Size::Full => "full",
        Size::Quick => "quick",
        Size::Smoke => "smoke",
    }
}

fn size_named(name: &str) -> Option<Size> {
    [Size::Full, Size::Quick, Size::Smoke]
        .into_iter()
        .find(|&s| size_name(s) == name)
}

/// Formats a metric: integers for large values, more digits for small ones, never lossy
/// enough to turn a small non-zero into zero.
pub fn fmt_num(v: f64) -> String {
    let a = v.abs();
    if v == 0.0 {
        "0".into()
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else if a >= 0.01 {
        format!("{v:.4}")
    } else {
        format!("{v:.2e}")
    }
}

/// Runs the child; `args` are those after `__child`.
pub fn main(args: &[String]) -> ExitCode {
    match run(args) {
        Ok(lines) => {
            let mut out = io::stdout().lock();
            for l in lines {
                let _ = writeln!(out, "{l}");
            }
            ExitCode::SUCCESS
        }
        Err(e) if e.kind() == io::ErrorKind::Unsupported => {
            println!("skip={e}");
            ExitCode::from(EXIT_SKIP)
        }
        Err(e) => {
            eprintln!("compare child {args:?}: {e}");
            ExitCode::FAILURE
        }
    }
}

fn usage() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        "usage: compare __child <full|quick|smoke> <workload> <contender> [rtts=N] [cores=N] \
         | probe <contender> | server_client <args>",
    )
}

fn run(args: &[String]) -> io::Result<Vec<String>> {
    if let [first, rest @ ..] = args {
        if first == CLIENT {
            server::client::main(rest)?;
            return Ok(Vec::new()); // it printed its lines as it went
        }
        if first == super::latency::SERVER {
            super::latency::serve_main(rest)?;
            return Ok(Vec::new());
        }
    }
    if let [probe, name] = args {
        if probe == "probe" {
            let c = Contender::named(name).ok_or_else(usage)?;
            return match c.available() {
                Ok(()) => Ok(vec!["available=1".into()]),
                Err(e) => Err(io::Error::new(io::ErrorKind::Unsupported, e.to_string())),
            };
        }
    }
    let [size, workload, contender, rest @ ..] = args else {
        return Err(usage());
    };
    let size = size_named(size).ok_or_else(usage)?;
    let workload = Workload::named(workload).ok_or_else(usage)?;
    let c = Contender::named(contender).ok_or_else(usage)?;
    let (mut rtts, mut cores) = (None, None);
    for a in rest {
        if let Some(n) = a.strip_prefix("rtts=") {
            rtts = Some(n.parse().map_err(|_| usage())?);
        } else if let Some(n) = a.strip_prefix("cores=") {
            cores = Some(
                n.parse::<usize>()
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or_else(usage)?,
            );
        } else {
            return Err(usage());
        }
    }
    let sizes = size.sizes();
    if let Some(mode) = workload.pingpong_mode() {
        let mut plan = sizes.pingpong(mode, rtts);
        if rtts.is_some() {
            // Traced runs of two lengths are subtracted: the same warm-up in both.
            plan.warmup = 10;
        }
        let cpu_before = crate::sys::process_cpu()?;
        let run = c.pingpong(&plan)?;
        let cpu = crate::sys::process_cpu()?.saturating_sub(cpu_before);
        let mut line = pingpong_line(&run, plan.rtts);
        // The process's CPU (every thread, warm-up and setup included) per timed round trip.
        line += &format!(
            " cpu_us_per_rtt={}",
            fmt_num(cpu.as_secs_f64() * 1e6 / f64::from(plan.rtts))
        );
        if mode == Mode::Timeout && rtts.is_none() {
            line += &paired(&c, plan.rtts)?;
        }
        return Ok(vec![line]);
    }
    Ok(match workload {
        Workload::SleepPrecision => {
            let late = c.sleeps(&sizes.sleeps)?;
            sizes
                .sleeps
                .series
                .iter()
                .zip(late)
                .map(|(&(d, _), l)| {
                    let label = if d.as_micros() % 1000 == 0 {
                        format!("{}ms", d.as_millis())
                    } else {
                        format!("{}us", d.as_micros())
                    };
                    format!("sleep={label} {}", lateness(&l))
                })
                .collect()
        }
        Workload::Idle => {
            let r = c.idle(sizes.idle)?;
            vec![format!(
                "wakeups_per_s={} threads={}",
                fmt_num(r.wakeups_per_s),
                r.threads
            )]
        }
        Workload::TimerChurn => {
            let r = c.churn(sizes.churn)?;
            vec![format!(
                "wakeups_per_s={} fires_per_s={} cpu_us_per_fire={} {}",
                fmt_num(r.wakeups_per_s),
                fmt_num(r.fires_per_s),
                fmt_num(r.cpu_us_per_fire),
                lateness(&r.late)
            )]
        }
        Workload::ServerTokioShape | Workload::ServerTokioShapeSkew => {
            let hot = workload.server_hot().unwrap_or(0);
            let plan = sizes.server.plan(cores.unwrap_or(DEFAULT_CORES), hot);
            let client = |args: &[String]| {
                let mut all = vec![CLIENT.to_string()];
                all.extend_from_slice(args);
                child_command(&[], &all)
            };
            let mut line = server_line(&c.server(&plan, client)?, c.is_tickless());
            if plan.hot > 0 {
                line += &format!(" hot_conns={}", plan.hot);
            }
            vec![line]
        }
        Workload::PingpongSame | Workload::PingpongCross | Workload::PingpongTimeout => {
            unreachable!("handled above")
        }
        Workload::Latency => return Err(usage()), // the parent runs it
    })
}

/// The client's subcommand: `compare __child server_client <args>`.
const CLIENT: &str = "server_client";

/// A `server_tokio_shape` result. Where each connection ran is tickless's alone: a tokio task
/// moves between workers, so its requests' spread says all there is. tickless's counters add
/// what moved between its cores over the window, per request answered meanwhile (the server's
/// count): `placed_per_req`, `steals_per_req`, `rebinds_per_req` (`CoreStats`'s `tasks_placed`,
/// `steals`, `io_rebinds`, the difference of two readings at the window's ends). A skewed run
/// adds `hot_req_share`, the hot connections' share of the client's requests.
fn server_line(m: &Measured, tickless: bool) -> String {
    let mut line = format!(
        "rps={} p50_us={} p99_us={} cpu_us_per_req={} busiest_req_share={}",
        fmt_num(m.rps),
        fmt_num(m.p50_us),
        fmt_num(m.p99_us),
        fmt_num(m.cpu_us_per_req),
        fmt_num(m.busiest_req_share()),
    );
    if tickless {
        line += &format!(" busiest_conn_share={}", fmt_num(m.busiest_conn_share()));
        for (core, n) in m.conns.iter().enumerate() {
            line += &format!(" conns_core{core}={n}");
        }
    }
    if let Some(moves) = m.moves {
        let answered: u64 = m.requests.iter().sum();
        let per = |n: u64| fmt_num(n as f64 / answered.max(1) as f64);
        line += &format!(
            " placed_per_req={} steals_per_req={} rebinds_per_req={}",
            per(moves.placed),
            per(moves.steals),
            per(moves.rebinds)
        );
    }
    if m.hot_share > 0.0 {
        line += &format!(" hot_req_share={}", fmt_num(m.hot_share));
    }
    line
}

/// The timeouts' cost measured within this process: blocks of round trips alternately
/// without and with timeouts, as ` keep_paired=<timed rate / untimed rate>` (nothing for a
/// contender without timeouts).
fn paired(c: &Contender, rtts: u32) -> io::Result<String> {
    let pair = 2 * PAIRED_BLOCK;
    let plan = Plan {
        mode: Mode::Paired,
        warmup: pair,
        rtts: rtts.div_ceil(pair).max(1) * pair,
    };
    let clock = c.pingpong(&plan)?.clock;
    if clock.timed.0 == 0 || clock.untimed.0 == 0 {
        return Ok(String::new()); // the floor has no timeouts
    }
    let rate = |(n, took): (u32, std::time::Duration)| f64::from(n) / took.as_secs_f64();
    Ok(format!(
        " keep_paired={}",
        fmt_num(rate(clock.timed) / rate(clock.untimed))
    ))
}

fn lateness(l: &Lateness) -> String {
    format!(
        "late_p50_us={} late_p99_us={} late_max_us={}",
        fmt_num(l.p50_us),
        fmt_num(l.p99_us),
        fmt_num(l.max_us)
    )
}

/// A ping-pong result; tickless adds what its counters say per message (two per round trip).
fn pingpong_line(run: &Run, rtts: u32) -> String {
    let mut line = format!(
        "rtt_per_s={}",
        fmt_num(f64::from(rtts) / run.elapsed.as_secs_f64())
    );
    if let Some(s) = run.tickless {
        let msgs = 2.0 * f64::from(rtts);
        let per = |n: u64| fmt_num(n as f64 / msgs);
        line += &format!(
            " rearms_per_msg={} wakeups_per_msg={} spurious_per_msg={} spins_per_msg={}",
            per(s.timerfd_rearms),
            per(s.parks),
            per(s.device_spurious),
            per(s.spins)
        );
    }
    line
}
