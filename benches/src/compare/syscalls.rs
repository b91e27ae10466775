//! System calls per round trip, by name: the ping-pong child run under `strace -f -c` at two
//! lengths, the counts subtracted (which cancels what starting and stopping cost) and divided
//! by the difference in round trips.
//!
//! strace stops the traced threads at every system call, so it slows them down a great deal;
//! counts of calls that depend on timing (spinning polls, `EAGAIN` reads) shift under it.

use std::collections::BTreeMap;
use std::fs;
use std::process::Command;
use std::time::Duration;

use super::child::size_name;
use super::plan::{Size, Workload};
use super::runner::{child_command, run_child, Measurement, Outcome};

/// Whether strace runs here; if not and `install` is set, tries `apt-get install strace` (as
/// root only). Returns why not, if it cannot be had.
pub fn ensure_strace(install: bool) -> Result<(), String> {
    let works = || {
        Command::new("strace")
            .arg("-V")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if works() {
        return Ok(());
    }
    // SAFETY: geteuid takes no argument and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    if !install || !root {
        return Err("strace is not installed (apt-get install strace)".into());
    }
    eprintln!("# strace is missing: apt-get install -y strace");
    let apt = |args: &[&str]| {
        Command::new("apt-get")
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .status()
            .is_ok_and(|s| s.success())
    };
    if !apt(&["install", "-y", "-qq", "strace"]) {
        apt(&["update", "-qq"]);
        apt(&["install", "-y", "-qq", "strace"]);
    }
    if works() {
        Ok(())
    } else {
        Err("strace could not be installed".into())
    }
}

/// Parses `strace -c` output: calls by syscall name.
fn parse(summary: &str) -> BTreeMap<String, u64> {
    let mut calls = BTreeMap::new();
    for line in summary.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        // % time, seconds, usecs/call, calls, [errors,] syscall
        if f.len() < 5 || f[0].starts_with('%') || f[0].starts_with('-') {
            continue;
        }
        let name = f[f.len() - 1];
        if name == "total" {
            continue;
        }
        if let Ok(n) = f[3].parse::<u64>() {
            calls.insert(name.to_string(), n);
        }
    }
    calls
}

/// One traced run: the calls of a child doing `rtts` round trips.
fn traced(
    size: Size,
    w: Workload,
    contender: &str,
    rtts: u32,
) -> Result<BTreeMap<String, u64>, String> {
    let path = std::env::temp_dir().join(format!(
        "tickless-compare-strace-{}-{contender}-{rtts}.txt",
        std::process::id()
    ));
    let wrap: Vec<String> = ["strace", "-f", "-c", "-o"]
        .into_iter()
        .map(String::from)
        .chain([path.display().to_string(), "--".into()])
        .collect();
    let args = [
        size_name(size).to_string(),
        w.name().to_string(),
        contender.to_string(),
        format!("rtts={rtts}"),
    ];
    let cmd = child_command(&wrap, &args).map_err(|e| e.to_string())?;
    let outcome = run_child(cmd, Duration::from_secs(120));
    let summary = fs::read_to_string(&path);
    let _ = fs::remove_file(&path);
    match outcome {
        Outcome::Done(_) => Ok(parse(&summary.map_err(|e| format!("strace output: {e}"))?)),
        Outcome::Skipped(why) => Err(format!("skipped: {why}")),
        Outcome::Failed(why) => Err(why),
    }
}

/// Calls per round trip of `contender` on ping-pong workload `w`, as a result line
/// (`of=<workload> total=... <syscall>=...`, largest first).
pub fn per_round_trip(
    size: Size,
    w: Workload,
    contender: &str,
    (short, long): (u32, u32),
) -> Result<Measurement, String> {
    let a = traced(size, w, contender, short)?;
    let b = traced(size, w, contender, long)?;
    let span = f64::from(long - short);
    let mut per: Vec<(String, f64)> = b
        .iter()
        .map(|(name, &n)| {
            let before = a.get(name).copied().unwrap_or(0);
            (name.clone(), (n as f64 - before as f64) / span)
        })
        .filter(|(_, v)| *v >= 0.01)
        .collect();
    per.sort_by(|x, y| y.1.total_cmp(&x.1).then_with(|| x.0.cmp(&y.0)));
    let total = per.iter().map(|(_, v)| v).sum();
    let mut metrics = vec![("total".to_string(), total)];
    metrics.extend(per);
    Ok(Measurement {
        labels: vec![("of".into(), w.name().into())],
        metrics,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_strace_summary() {
        let out = "\
% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
 55.00    0.000550           5       100        40 read
 45.00    0.000450           4       100           write
------ ----------- ----------- --------- --------- ----------------
100.00    0.001000           5       200        40 total
";
        let calls = parse(out);
        assert_eq!(calls.get("read"), Some(&100));
        assert_eq!(calls.get("write"), Some(&100));
        assert_eq!(calls.len(), 2);
    }
}
