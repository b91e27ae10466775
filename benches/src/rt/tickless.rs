//! tickless: one core for same-core work (the thread that calls `block_on`), two pinned cores
//! for cross-core ping-pong (the echo on core 1 through `spawn_pinned`; the `_unpinned`
//! contenders leave the threads where the kernel puts them, the builder's default). `server_tokio_shape`:
//! N cores, unpinned, as a server's `main` builds them; the server written the tokio way, and
//! the same handler under `serve_per_core`.

use std::io;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_lite::{AsyncReadExt, AsyncWriteExt};
use tickless::io::{PipeReader, PipeWriter};
use tickless::{Builder, ClockDevice, CoreStats, RearmPolicy, Runtime};

use crate::sys;
use crate::workload::pingpong::{self, Clock, Mode, Plan, Run, TIMEOUT};
use crate::workload::server::{self, Db, Measured, Moves, Serving};
use crate::workload::timers::{self, ChurnPlan, IdlePlan, Probe, SleepPlan};
use crate::workload::{cpus, on_fresh_thread};

/// How a tickless runtime is set up; `None` leaves the builder's default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Config {
    /// Re-arm policy; `None`: the default.
    pub policy: Option<RearmPolicy>,
    /// `spin_before_park`; `None`: the default (no fixed window: the idle governor decides).
    pub spin: Option<Duration>,
    /// `idle_governor`; `None`: the default (on).
    pub governor: Option<bool>,
    /// The default slack; `None`: the builder's default (a share of each timer's length).
    pub slack: Option<Slack>,
    /// The clock event device; `None`: the builder's default.
    pub device: Option<ClockDevice>,
    /// `wakeup_lead_max`; `None`: the builder's default.
    pub lead_max: Option<Duration>,
    /// `steal_after`; `None`: the builder's default (`Some(None)`: no stealing).
    pub steal_after: Option<Option<Duration>>,
    /// Cross-core ping-pong with the builder's default placement (threads not pinned: the
    /// kernel decides where they run) instead of each core pinned to its CPU.
    pub unpinned: bool,
}

/// A default slack `compare` sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slack {
    /// `Builder::default_slack`: the same for every timer.
    Fixed(Duration),
    /// `Builder::default_slack_proportional(divisor, max)`.
    Proportional(u32, Duration),
    /// `Builder::default_slack_growing(knee, max)`.
    Growing(Duration, Duration),
}

impl Config {
    /// The builder's defaults throughout.
    pub const DEFAULT: Config = Config {
        policy: None,
        spin: None,
        governor: None,
        slack: None,
        device: None,
        lead_max: None,
        steal_after: None,
        unpinned: false,
    };

    fn builder(&self, cores: usize) -> Builder {
        let mut b = Builder::new();
        b.cores(cores);
        if let Some(p) = self.policy {
            b.timer_policy(p);
        }
        if let Some(s) = self.spin {
            b.spin_before_park(s);
        }
        if let Some(g) = self.governor {
            b.idle_governor(g);
        }
        if let Some(d) = self.device {
            b.clock_device(d);
        }
        if let Some(l) = self.lead_max {
            b.wakeup_lead_max(l);
        }
        if let Some(s) = self.steal_after {
            b.steal_after(s);
        }
        match self.slack {
            Some(Slack::Fixed(s)) => {
                b.default_slack(s);
            }
            Some(Slack::Proportional(divisor, max)) => {
                b.default_slack_proportional(divisor, max);
            }
            Some(Slack::Growing(knee, max)) => {
                b.default_slack_growing(knee, max);
            }
            None => {}
        }
        from_env(&mut b);
        b
    }
}

/// The environment variable whose settings every tickless runtime the benches build takes on
/// top of its own (see [`from_env`]).
pub const BUILDER_ENV: &str = "TICKLESS_BENCH_BUILDER";

/// Applies the comma-separated settings of [`BUILDER_ENV`] to `b`, so that one binary measures
/// the runtime with and without an observer (`timeout_cost.py --builder`): `stall=off` (no
/// stall detector), `stall=<ms>` (its threshold), `poll_time_histogram` (tokio's, on),
/// `loop_histograms` (`enable_metrics_loop_histograms`), `governor=off` (`idle_governor(false)`:
/// park at once), `park_when_busy` (`park_when_busy(true)`: a busy core's spins cut to a look),
/// `crowded=yield` (`yield_when_crowded(true)`), `harvest=off` (`harvest_after(None)`).
///
/// # Panics
///
/// On a setting it does not know: a measurement of the wrong build must not pass for one of
/// the right build.
pub fn from_env(b: &mut Builder) {
    let Ok(settings) = std::env::var(BUILDER_ENV) else {
        return;
    };
    for setting in settings.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        if setting == "poll_time_histogram" {
            b.enable_metrics_poll_time_histogram();
            continue;
        }
        if setting == "park_when_busy" {
            b.park_when_busy(true);
            continue;
        }
        if setting == "loop_histograms" {
            b.enable_metrics_loop_histograms();
            continue;
        }
        match setting.split_once('=') {
            Some(("stall", "off")) => {
                b.stall_threshold(None);
            }
            Some(("governor", "off")) => {
                b.idle_governor(false);
            }
            Some(("crowded", "yield")) => {
                b.yield_when_crowded(true);
            }
            Some(("crowded", "stay")) => {
                b.yield_when_crowded(false);
            }
            Some(("harvest", "off")) => {
                b.harvest_after(None);
            }
            Some(("stall", ms)) => {
                let ms = ms
                    .parse()
                    .unwrap_or_else(|_| panic!("{BUILDER_ENV}: {setting}"));
                b.stall_threshold(Some(Duration::from_millis(ms)));
            }
            _ => panic!(
                "{BUILDER_ENV}: unknown setting {setting:?} \
                 (stall=off|<ms>, governor=off, crowded=yield|stay, harvest=off, park_when_busy, \
                 poll_time_histogram, loop_histograms)"
            ),
        }
    }
}

/// `tickless::time::sleep_until` on a `std` instant.
fn sleep_until(at: Instant) -> tickless::time::Sleep {
    tickless::time::sleep_until(tickless::time::Instant::from_std(at))
}

/// Reads one message, within [`TIMEOUT`] if asked.
async fn read_msg(r: &mut PipeReader, with_timeout: bool) -> io::Result<u32> {
    let mut buf = [0u8; 4];
    if with_timeout {
        tickless::time::timeout(TIMEOUT, r.read_exact(&mut buf)).await??;
    } else {
        r.read_exact(&mut buf).await?;
    }
    Ok(u32::from_le_bytes(buf))
}

/// Answers `n` messages with their successor.
async fn echo(mut r: PipeReader, mut w: PipeWriter, n: u32, mode: Mode) -> io::Result<()> {
    for i in 0..n {
        let m = read_msg(&mut r, mode.timed(i)).await?;
        w.write_all(&m.wrapping_add(1).to_le_bytes()).await?;
    }
    Ok(())
}

/// Sends `from..from + n` and checks the answers.
async fn ping(
    r: &mut PipeReader,
    w: &mut PipeWriter,
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

/// The pinger, on a runtime's core 0: warm up, then time the round trips, counting what the
/// runtime's cores did meanwhile.
async fn pinger(
    rt: &Runtime,
    r: &mut PipeReader,
    w: &mut PipeWriter,
    plan: &Plan,
) -> io::Result<(Clock, CoreStats)> {
    ping(r, w, 0, plan.warmup, plan.mode).await?;
    let s0 = rt.stats().total;
    let mut clock = Clock::default();
    for (from, n, timed) in plan.blocks() {
        let start = Instant::now();
        ping(r, w, from, n, plan.mode).await?;
        clock.add(n, timed, start.elapsed());
    }
    Ok((clock, rt.stats().total - s0))
}

/// Pipe ping-pong.
///
/// # Errors
///
/// Building the runtime, pinning, or the pipes failed.
pub fn pingpong(cfg: &Config, plan: &Plan) -> io::Result<Run> {
    on_fresh_thread(|| match plan.mode {
        Mode::Same | Mode::Timeout | Mode::Paired => same_core(cfg, plan),
        Mode::Cross => cross_core(cfg, plan),
    })
}

fn same_core(cfg: &Config, plan: &Plan) -> io::Result<Run> {
    sys::pin_current_thread(cpus(1)?[0])?;
    let rt = cfg.builder(1).build()?;
    rt.block_on(async {
        let (mut to_b, from_a) = tickless::io::pipe()?;
        let (to_a, mut from_b) = tickless::io::pipe()?;
        let echo = tickless::spawn_local(echo(from_a, to_a, plan.total(), plan.mode));
        let (clock, stats) = pinger(&rt, &mut from_b, &mut to_b, plan).await?;
        echo.await.map_err(io::Error::other)??;
        Ok(Run {
            elapsed: clock.elapsed(),
            clock,
            tickless: Some(stats),
        })
    })
}

fn cross_core(cfg: &Config, plan: &Plan) -> io::Result<Run> {
    cpus(2)?;
    let rt = cfg.builder(2).pin(!cfg.unpinned).build()?;
    let (a_r, b_w) = sys::pipe()?; // core 1 -> core 0
    let (b_r, a_w) = sys::pipe()?; // core 0 -> core 1
    let (n, mode) = (plan.total(), plan.mode);
    let echo = rt.handle(1).spawn_pinned(move || async move {
        let (r, w) = (
            PipeReader::from_owned_fd(b_r)?,
            PipeWriter::from_owned_fd(b_w)?,
        );
        echo(r, w, n, mode).await
    });
    rt.block_on(async {
        let mut r = PipeReader::from_owned_fd(a_r)?;
        let mut w = PipeWriter::from_owned_fd(a_w)?;
        let (clock, stats) = pinger(&rt, &mut r, &mut w, plan).await?;
        echo.await.map_err(io::Error::other)??;
        Ok(Run {
            elapsed: clock.elapsed(),
            clock,
            tickless: Some(stats),
        })
    })
}

/// `sleep_precision`.
///
/// # Errors
///
/// Building the runtime or pinning failed.
pub fn sleeps(cfg: &Config, plan: &SleepPlan) -> io::Result<Vec<timers::Lateness>> {
    timers::sleep_precision(plan, |plan| {
        let rt = cfg.builder(1).build()?;
        Ok(rt.block_on(timers::sleep_series(sleep_until, plan)))
    })
}

/// `idle`.
///
/// # Errors
///
/// Building the runtime, pinning or reading `/proc` failed.
pub fn idle(cfg: &Config, plan: IdlePlan) -> io::Result<timers::IdleResult> {
    timers::idle(plan, |plan, probe: Arc<Probe>| {
        let rt = cfg.builder(1).build()?;
        rt.block_on(timers::idle_main(
            sleep_until,
            |s| drop(tickless::spawn_local(s)),
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
pub fn churn(cfg: &Config, plan: ChurnPlan) -> io::Result<timers::ChurnResult> {
    timers::churn(plan, |plan, probe: Arc<Probe>| {
        let rt = cfg.builder(1).build()?;
        rt.block_on(async {
            for i in 0..plan.tasks {
                // Dropping the handle detaches the task.
                drop(tickless::spawn_local(timers::churn_task(
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

/// `server_tokio_shape`'s server under tickless's imports: `workload/server/app.rs` as it is.
mod shape {
    use tickless::core_id as worker;
    use tickless::net::{TcpListener, TcpStream};
    use tickless::spawn;

    include!("../workload/server/app.rs");
}

/// Registers `rt`'s counters with `serving`: the moves of its work between cores, read from the
/// measuring thread (`Runtime::stats`: exact for a core that is parked, as of its last park for
/// one that is running). The probe holds the runtime weakly: the server's thread keeps it and
/// drops it.
fn count_moves(rt: &Arc<Runtime>, serving: &Serving) {
    let rt = Arc::downgrade(rt);
    serving.count_moves(move || {
        let total = rt.upgrade()?.stats().total;
        Some(Moves {
            placed: total.tasks_placed,
            steals: total.steals,
            rebinds: total.io_rebinds,
        })
    });
}

/// `server_tokio_shape`, the tokio way on tickless: `plan.cores` cores, one listener bound in
/// `block_on` (on core 0), the accept loop there, a task spawned per connection.
///
/// # Errors
///
/// Building the runtime, binding, the server or the client failed.
pub fn server_tokio_shape(
    cfg: &Config,
    plan: &server::Plan,
    client: impl FnOnce(&[String]) -> io::Result<Command> + Send,
) -> io::Result<Measured> {
    server::measure(plan, client, |serving: Serving| {
        let rt = Arc::new(cfg.builder(plan.cores).build()?);
        count_moves(&rt, &serving);
        rt.block_on(async move {
            let listener = tickless::net::TcpListener::bind("127.0.0.1:0").await?;
            serving.listening(listener.local_addr()?);
            let Serving { seen, stop, .. } = serving;
            let stop = async {
                let _ = stop.await;
                Ok(())
            };
            futures_lite::future::or(shape::serve(listener, Db::default(), seen), stop).await
        })
    })
}

/// The same service on tickless's own shape: `serve_per_core` (a `SO_REUSEPORT` listener and an
/// accept loop per core), each connection served by the same handler as the tokio shape's.
///
/// # Errors
///
/// Building the runtime, binding, the server or the client failed.
pub fn server_per_core(
    plan: &server::Plan,
    client: impl FnOnce(&[String]) -> io::Result<Command> + Send,
) -> io::Result<Measured> {
    server::measure(plan, client, |serving: Serving| {
        let rt = Arc::new(Config::DEFAULT.builder(plan.cores).build()?);
        count_moves(&rt, &serving);
        let (db, seen) = (Db::default(), serving.seen.clone());
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
        let per_core = tickless::net::serve_per_core(&rt, addr, move |stream, _conn| {
            let (db, seen) = (db.clone(), seen.clone());
            async move {
                let _ = shape::connection(stream, db, seen).await;
            }
        })?;
        serving.listening(per_core.local_addr());
        rt.block_on(async move {
            let _ = serving.stop.await;
            // The client has exited: every connection is closed already.
            per_core.shutdown(Duration::from_secs(1)).await.map(drop)
        })
    })
}

/// The latency workload's servers on tickless, each serving until the process exits: `cores`
/// cores, unpinned (the caller's CPU mask, inherited, decides where they run); `listening` is
/// called with the address once the server accepts.
pub mod serving {
    use std::io;
    use std::net::SocketAddr;
    use std::sync::OnceLock;

    use tickless::runtime::RuntimeMetrics;

    use super::{shape, Config};
    use crate::workload::hello::Hello;
    use crate::workload::server::{Db, Placement};

    fn localhost() -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], 0))
    }

    /// The serving runtime's metrics, once it is built.
    static SERVED: OnceLock<RuntimeMetrics> = OnceLock::new();

    /// The runtime a server runs on, its metrics kept for [`loop_histograms`].
    fn runtime(cores: usize) -> io::Result<tickless::Runtime> {
        let rt = Config::DEFAULT.builder(cores).build()?;
        let _ = SERVED.set(rt.metrics());
        Ok(rt)
    }

    /// The serving runtime's counters so far, summed over its cores, as one line:
    /// `stats <name>=<count> ...` (`CoreStats::fields`), or `None` when no tickless server
    /// runs.
    pub fn stats() -> Option<String> {
        let m = SERVED.get()?;
        let total = (0..m.num_workers())
            .map(|w| m.worker_stats(w))
            .fold(tickless::CoreStats::default(), |a, b| a + b);
        let fields: Vec<String> = total
            .fields()
            .iter()
            .map(|(name, count)| format!("{name}={count}"))
            .collect();
        Some(format!("stats {}", fields.join(" ")))
    }

    /// The serving runtime's loop histograms so far, summed over its cores, as one line:
    /// `loop_histograms spacing=<count>,... drain=... tasks=...` (each bucket's count in
    /// order; the layouts are `enable_metrics_loop_histograms`'s), or `None` when they are off
    /// or no tickless server runs.
    pub fn loop_histograms() -> Option<String> {
        let m = SERVED.get().filter(|m| m.loop_histograms_enabled())?;
        let sum = |n: usize, count: &dyn Fn(usize, usize) -> u64| {
            (0..n)
                .map(|b| {
                    let total: u64 = (0..m.num_workers()).map(|w| count(w, b)).sum();
                    total.to_string()
                })
                .collect::<Vec<_>>()
                .join(",")
        };
        Some(format!(
            "loop_histograms spacing={} drain={} tasks={}",
            sum(m.io_poll_spacing_histogram_num_buckets(), &|w, b| {
                m.io_poll_spacing_histogram_bucket_count(w, b)
            }),
            sum(m.io_batch_drain_histogram_num_buckets(), &|w, b| {
                m.io_batch_drain_histogram_bucket_count(w, b)
            }),
            sum(m.tasks_between_io_polls_histogram_num_buckets(), &|w, b| {
                m.tasks_between_io_polls_histogram_bucket_count(w, b)
            }),
        ))
    }

    /// The hello service through `tickless_http::serve` with its defaults (as `axum::serve`'s).
    ///
    /// # Errors
    ///
    /// Building the runtime or binding failed.
    pub fn http_hello(cores: usize, listening: impl FnOnce(SocketAddr)) -> io::Result<()> {
        let rt = runtime(cores)?;
        let server = tickless_http::serve(&rt, localhost(), Hello)?;
        listening(server.local_addr());
        rt.block_on(std::future::pending::<()>());
        Ok(())
    }

    /// `server_tokio_shape`'s server the tokio way: one listener, a task per connection.
    ///
    /// # Errors
    ///
    /// Building the runtime, binding or accepting failed.
    pub fn kv_tokio_shape(cores: usize, listening: impl FnOnce(SocketAddr)) -> io::Result<()> {
        let rt = runtime(cores)?;
        rt.block_on(async move {
            let listener = tickless::net::TcpListener::bind(localhost()).await?;
            listening(listener.local_addr()?);
            let seen = std::sync::Arc::new(Placement::new(cores));
            shape::serve(listener, Db::default(), seen).await
        })
    }

    /// The same handler under `serve_per_core`.
    ///
    /// # Errors
    ///
    /// Building the runtime or binding failed.
    pub fn kv_per_core(cores: usize, listening: impl FnOnce(SocketAddr)) -> io::Result<()> {
        let rt = runtime(cores)?;
        let (db, seen) = (Db::default(), std::sync::Arc::new(Placement::new(cores)));
        let per_core = tickless::net::serve_per_core(&rt, localhost(), move |stream, _conn| {
            let (db, seen) = (db.clone(), seen.clone());
            async move {
                let _ = shape::connection(stream, db, seen).await;
            }
        })?;
        listening(per_core.local_addr());
        rt.block_on(std::future::pending::<()>());
        Ok(())
    }
}
