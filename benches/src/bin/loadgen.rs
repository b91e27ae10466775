//! The open-loop load generator on its own, for checks against other tools
//! (`benches/scripts/latency_vs_oha.sh`), and the latency workload's servers.
//!
//! ```text
//! loadgen --url http://127.0.0.1:PORT/PATH --rate R [--duration 5s] [--warmup 1s]
//!         [--conns 64] [--arrivals poisson|uniform] [--kv] [--closed] [--spin-us 50]
//!         [--timeline FILE]
//! loadgen serve <http_hello|kv_tokio_shape|kv_per_core> <tickless|tokio> cores=N [cpu=K]
//! ```
//!
//! The first form loads the server at `R` requests per second (HTTP/1.1 keep-alive `GET`s,
//! or with `--kv` the key-value protocol) for the warm-up and then the recorded duration, and
//! prints one line: `rate= offered_rps= achieved_rps= p50_us= p75_us= p90_us= p99_us= p999_us= max_us=
//! answered= unanswered= late_share= send_late_p99_us=`, latency timed from each request's
//! scheduled send. `--closed` measures the closed-loop maximum instead. `--timeline FILE` writes,
//! for each millisecond of the window, the worst latency of the requests scheduled in it and
//! the longest the generator held one of them after it was ready, and how many waited over
//! 1 ms (`ms worst_us late_us slow` lines under a `# window_mono_ns=` header giving the window's start on
//! `CLOCK_MONOTONIC`, perf's `-k mono` clock): `tail_probe.py --trace` lines it up with the
//! server's scheduling. The second form serves
//! until its standard input closes, after printing `listening=<addr>`; each `histograms` line
//! it reads gets one line back, a tickless server's loop histograms so far
//! (`TICKLESS_BENCH_BUILDER=loop_histograms`; `loop_histograms off` without), and each `stats`
//! line its counters (`CoreStats`, summed over the cores; `stats off` for tokio).

use std::process::ExitCode;
use std::time::Duration;

use tickless_benches::compare::latency;
use tickless_benches::load::gen::{self, Pacing};
use tickless_benches::load::proto::Protocol;
use tickless_benches::load::schedule::Arrivals;

fn duration(v: &str) -> Result<Duration, String> {
    let bad = || format!("bad duration {v:?} (say 500ms or 5s)");
    if let Some(ms) = v.strip_suffix("ms") {
        return ms.parse().map(Duration::from_millis).map_err(|_| bad());
    }
    let s = v.strip_suffix('s').unwrap_or(v);
    s.parse::<f64>()
        .ok()
        .filter(|s| *s >= 0.0)
        .map(Duration::from_secs_f64)
        .ok_or_else(bad)
}

fn parse(args: &[String]) -> Result<(gen::Config, Option<String>), String> {
    let (mut url, mut rate, mut closed, mut kv) = (None, None, false, false);
    let mut timeline = None;
    let mut cfg = gen::Config {
        addr: ([127, 0, 0, 1], 0).into(),
        protocol: Protocol::KeyValue,
        conns: 64,
        pacing: Pacing::Closed,
        warmup: Duration::from_secs(1),
        window: Duration::from_secs(5),
        seed: 1,
        spin: Duration::from_micros(50),
        drain: Duration::from_secs(2),
    };
    let mut arrivals = Arrivals::Poisson;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = || it.next().cloned().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--url" => url = Some(val()?),
            "--rate" => rate = Some(val()?.parse::<f64>().map_err(|e| e.to_string())?),
            "--duration" => cfg.window = duration(&val()?)?,
            "--warmup" => cfg.warmup = duration(&val()?)?,
            "--conns" => cfg.conns = val()?.parse().map_err(|_| "bad --conns")?,
            "--seed" => cfg.seed = val()?.parse().map_err(|_| "bad --seed")?,
            "--spin-us" => {
                cfg.spin = Duration::from_micros(val()?.parse().map_err(|_| "bad --spin-us")?)
            }
            "--arrivals" => {
                let v = val()?;
                arrivals = Arrivals::named(&v).ok_or(format!("no arrivals {v:?}"))?;
            }
            "--kv" => kv = true,
            "--timeline" => timeline = Some(val()?),
            "--closed" => closed = true,
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    let url = url.ok_or("--url is needed")?;
    let rest = url.strip_prefix("http://").ok_or("an http:// URL")?;
    let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    cfg.addr = host
        .parse()
        .map_err(|_| format!("{host:?} is not IP:PORT (loopback only)"))?;
    cfg.protocol = if kv {
        Protocol::KeyValue
    } else {
        Protocol::Http {
            path: if path.is_empty() {
                "/".into()
            } else {
                path.into()
            },
        }
    };
    cfg.pacing = match (closed, rate) {
        (true, _) => Pacing::Closed,
        (false, Some(rate)) => Pacing::Open { rate, arrivals },
        (false, None) => return Err("--rate or --closed".into()),
    };
    Ok((cfg, timeline))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("serve") {
        return match latency::serve_main(&args[1..]) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("loadgen serve: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let (cfg, timeline) = match parse(&args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("loadgen: {e}\n(see the top of benches/src/bin/loadgen.rs)");
            return ExitCode::from(2);
        }
    };
    match gen::run(&cfg, &mut |_| {}) {
        Ok(o) => {
            if let Some(path) = timeline {
                let mut text = format!("# window_mono_ns={}\n", o.window_mono_ns);
                for (ms, worst) in o.timeline.iter().enumerate() {
                    let late = o.timeline_late.get(ms).copied().unwrap_or(0);
                    let slow = o.timeline_slow.get(ms).copied().unwrap_or(0);
                    text += &format!(
                        "{ms} {:.1} {:.1} {slow}\n",
                        *worst as f64 / 1_000.0,
                        late as f64 / 1_000.0
                    );
                }
                if let Err(e) = std::fs::write(&path, text) {
                    eprintln!("loadgen: {path}: {e}");
                    return ExitCode::FAILURE;
                }
            }
            let us = |q| o.latency_us(q);
            let rate = match cfg.pacing {
                Pacing::Open { rate, .. } => rate.to_string(),
                Pacing::Closed => "closed".into(),
            };
            println!(
                "rate={rate} offered_rps={:.0} achieved_rps={:.0} p50_us={:.1} p75_us={:.1} p90_us={:.1} \
                 p99_us={:.1} p999_us={:.1} max_us={:.1} answered={} unanswered={} \
                 late_share={:.4} send_late_p99_us={:.1}",
                o.offered_rps,
                o.achieved_rps,
                us(0.5),
                us(0.75),
                us(0.9),
                us(0.99),
                us(0.999),
                o.latency.max() as f64 / 1_000.0,
                o.answered,
                o.unanswered,
                o.late_share(),
                o.send_late.value_at_quantile(0.99) as f64 / 1_000.0
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("loadgen: {e}");
            ExitCode::FAILURE
        }
    }
}
