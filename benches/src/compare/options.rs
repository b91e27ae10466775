//! `compare`'s command line: the options, their usage text and parsing, and the patience they
//! set for a busy machine.

use std::time::Duration;

use super::plan::{self, Size, Workload};

/// The command line of the parent.
#[derive(Debug, Clone)]
pub(super) struct Options {
    /// Run length.
    pub(super) size: Size,
    /// Workloads to run (all if empty).
    pub(super) only: Vec<Workload>,
    /// Contenders to run (all if empty).
    pub(super) runtimes: Vec<String>,
    /// `server_tokio_shape`'s core counts, each measured apart.
    pub(super) cores: Vec<usize>,
    /// Count system calls.
    pub(super) syscalls: bool,
    /// Also run the `http_hello` workload (hyper under wrk, through `scripts/http_load.sh`).
    pub(super) http: bool,
    /// How long to spend on other processes' account (`--patience`); `None`: the size's.
    patience: Option<Duration>,
}

const USAGE: &str = "usage: compare [--quick | --smoke] [--only WORKLOAD,...] \
[--runtimes NAME,...] [--cores N,...] [--no-syscalls] [--http] [--patience SECONDS]
  --quick      about 1.5 minutes (up to 2 more waiting on a busy machine): smaller counts,
               fewer repetitions
  --smoke      a few seconds, tiny counts: checks every path runs, measures nothing
  --only       workloads: pingpong_same,pingpong_cross,pingpong_timeout,sleep_precision,idle,
               timer_churn,server_tokio_shape,server_tokio_shape_skew (2 connections carry
               half the requests),latency (open-loop latency against load: see
               benches/README.md; charts in benches/results/latency_*.svg)
  --runtimes   contenders: tickless,tickless_spin50us,tickless_slack1ms,tickless_slack0,
               tickless_slack10us,tickless_slack100us,tickless_prop4,tickless_prop16,
               tickless_prop64,tickless_knee8ms,
               tickless_eager,tickless_onidle,tickless_lazy,tickless_epoll,
               tickless_epoll_onidle,tickless_nolead,tickless_per_core,tickless_nosteal,
               tickless_unpinned,tickless_unpinned_nogov,tickless_unpinned_spin50us,tokio,smol,
               monoio_legacy,monoio_uring,threads,floor
  --cores      server_tokio_shape's cores (tickless) and workers (tokio), each count measured
               apart: 1,2,4,8,16 for a scaling curve (default 2)
  --no-syscalls  skip the strace count
  --http       also run http_hello: tickless's and tokio's hyper servers under wrk
               (benches/scripts/http_load.sh; builds the examples, installs wrk if missing)
  --patience   seconds to spend, in all, waiting for a quiet machine and re-running disturbed
               measurements (default 120 with --quick, 300 without); 0 measures at once, the
               disturbed measurements noted as such (to see what other load does)";

pub(super) fn parse_options(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        size: Size::Full,
        only: Vec::new(),
        runtimes: Vec::new(),
        cores: Vec::new(),
        syscalls: true,
        http: false,
        patience: None,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--quick" => o.size = Size::Quick,
            "--smoke" => o.size = Size::Smoke,
            "--no-syscalls" => o.syscalls = false,
            "--http" => o.http = true,
            "--only" => {
                let v = it.next().ok_or("--only needs a list")?;
                for name in v.split(',') {
                    o.only
                        .push(Workload::named(name).ok_or(format!("no workload {name:?}"))?);
                }
            }
            "--runtimes" => {
                let v = it.next().ok_or("--runtimes needs a list")?;
                for name in v.split(',') {
                    crate::rt::Contender::named(name).ok_or(format!("no contender {name:?}"))?;
                    o.runtimes.push(name.to_string());
                }
            }
            "--cores" => {
                let v = it.next().ok_or("--cores needs a list")?;
                for n in v.split(',') {
                    let cores = n
                        .parse::<usize>()
                        .ok()
                        .filter(|&c| (1..=1024).contains(&c))
                        .ok_or(format!("--cores: {n:?} is not a core count from 1 to 1024"))?;
                    if !o.cores.contains(&cores) {
                        o.cores.push(cores);
                    }
                }
            }
            "--patience" => {
                let v = it.next().ok_or("--patience needs seconds")?;
                let s = v
                    .parse::<u64>()
                    .map_err(|e| format!("--patience {v:?}: {e}"))?;
                o.patience = Some(Duration::from_secs(s));
            }
            "-h" | "--help" => return Err(USAGE.into()),
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    if o.cores.is_empty() {
        o.cores.push(plan::DEFAULT_CORES);
    }
    Ok(o)
}

/// How long, in all, `compare` may spend on account of other processes: waiting for them to
/// leave the machine alone, and re-running the measurements they disturbed.
pub(super) fn quiet_budget(opts: &Options) -> Duration {
    if let Some(p) = opts.patience {
        return p;
    }
    match opts.size {
        Size::Full => Duration::from_secs(300),
        Size::Quick => Duration::from_secs(120),
        Size::Smoke => Duration::ZERO,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cores_are_parsed_deduplicated_and_checked() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let o = parse_options(&args(&[])).unwrap();
        assert_eq!(o.cores, [plan::DEFAULT_CORES]);
        let o = parse_options(&args(&["--cores", "1,2,4,2,16"])).unwrap();
        assert_eq!(o.cores, [1, 2, 4, 16]);
        for bad in ["0", "two", "1,,2", "2000"] {
            let e = parse_options(&args(&["--cores", bad])).unwrap_err();
            assert!(e.contains("--cores"), "{bad}: {e}");
        }
        assert!(parse_options(&args(&["--cores"])).is_err());
    }

    #[test]
    fn patience_overrides_the_sizes_budget() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let o = parse_options(&args(&["--quick"])).unwrap();
        assert_eq!(quiet_budget(&o), Duration::from_secs(120));
        let o = parse_options(&args(&["--quick", "--patience", "0"])).unwrap();
        assert_eq!(quiet_budget(&o), Duration::ZERO);
        assert!(parse_options(&args(&["--patience", "soon"])).is_err());
        assert!(parse_options(&args(&["--patience"])).is_err());
    }
}
