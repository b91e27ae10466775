//! Serving with fewer cores while the CPUs are crowded (`Builder::yield_when_crowded`): the
//! stall detector's watchdog, at its checks, measures how long the runtime's core threads
//! waited for a CPU (the kernel's run-queue wait, `/proc/self/task/<tid>/schedstat`), and when
//! another process keeps them waiting, asks the highest core that still serves to step back
//! (`Shared::set_yielded`): it takes no new work, its `Send` tasks go to the cores that serve
//! (`Core::follow_yield`), and it parks but for its `spawn_local` tasks and its accept loop,
//! which places what it accepts on the others. When the machine's CPUs have room again (its
//! idle time, `/proc/stat`), the lowest core that stepped back serves again.
//!
//! # The rule
//!
//! Every [`EVALUATION`] (100 ms) of checks, over that window:
//!
//! - the **wait share**: of the time the serving cores' threads were runnable (running or
//!   waiting for a CPU), the share they waited. Above [`CROWDED`] (a fifth) in two windows in
//!   a row, whose work (task polls) differs by a fifth at most, with two cores or more
//!   serving, one steps back;
//! - with a core stepped back, it serves again when the machine has room for it: the serving
//!   cores are saturated (they ran [`SATURATED`] of the window or more, on average) and
//!   [`ROOM`] CPUs or more were idle (the machine's idle time, `/proc/stat`), or [`EMPTY`] CPUs
//!   or more were idle whatever the load (the other process is gone). One core that keeps up
//!   beside the other process stays alone: that is what serves best there.
//!
//! A step back must not cost work. The rule knows no requests, but it counts task polls (every
//! core's poll word): the polls per second before a step back (the most of the window that
//! decided it and the two before it in which every core served) are set against those of the
//! [`PROBE`] windows after it (the first window after the change left out). Below [`KEPT`] of the rate before, the step back cost more work than it saved waits
//! (a closed-loop client whose threads take the CPU a core gave up: each thread gets its
//! share of a crowded CPU, and two cores get two shares), and the core serves again at once;
//! no core steps back for a hold-off then, 2 s at first, twice as long after each such
//! probe (at most 64 s), back to 2 s after a step back that kept the work up. Open-loop load
//! (the same requests either way) keeps its step back, and so does a client that one core
//! serves as fast as two.
//!
//! A change holds for a dwell time, 1 s at first; a change that undoes the one before within
//! two dwell times doubles it (at most 16 s), so that interference that comes and goes costs a
//! few moves a minute at most. Each change is counted on its core (`CoreStats::yields` for a
//! step back). The checks run only while some core is busy (the watchdog's rule): an idle
//! runtime reads nothing.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::worker::shared::Shared;

/// How often the rule is applied (the watchdog checks more often).
const EVALUATION: Duration = Duration::from_millis(100);
/// The wait share above which a core steps back.
const CROWDED: f64 = 0.2;
/// The serving cores' run share at or above which they need another core.
const SATURATED: f64 = 0.8;
/// The idle CPUs at or above which a core that stepped back serves again, if the others are
/// saturated.
const ROOM: f64 = 0.75;
/// The idle CPUs at or above which a core that stepped back serves again whatever the load.
const EMPTY: f64 = 1.5;
/// The first dwell time.
const DWELL: Duration = Duration::from_secs(1);
/// The longest dwell time.
const DWELL_MAX: Duration = Duration::from_secs(16);
/// Windows after a step back (the first left out) whose work is set against the window's
/// before it.
const PROBE: u32 = 3;
/// The share of the work before a step back that the windows after it must keep.
const KEPT: f64 = 0.9;
/// The least ratio of two windows' work for a steady load, which a step back needs.
const STEADY: f64 = 0.8;
/// The first hold-off after a step back that cost work.
const HOLD_OFF: Duration = Duration::from_secs(2);
/// The longest hold-off.
const HOLD_OFF_MAX: Duration = Duration::from_secs(64);

/// The work test of a step back (see the module's doc).
#[derive(Debug, Clone, Copy)]
struct Probe {
    /// The core that stepped back (an index).
    core: usize,
    /// Polls per second in the window that decided it.
    before: f64,
    /// Windows seen since (the first is left out).
    windows: u32,
    /// Polls and seconds of the windows counted.
    polls: f64,
    /// Their length.
    secs: f64,
}

/// What one window measured (see [`Crowding::decide`]).
#[derive(Debug, Clone, Copy)]
struct Window {
    /// The serving cores' wait share.
    share: f64,
    /// Cores serving.
    serving: u32,
    /// The serving cores' run share.
    busy: f64,
    /// The machine's idle CPUs.
    idle_cpus: f64,
    /// Task polls of every core in the window.
    polls: u64,
    /// Its length.
    secs: f64,
}

/// The watchdog's side: what it read at the last evaluation.
pub(crate) struct Crowding {
    /// When the window began.
    since: Instant,
    /// Each core's thread's time running and waiting for a CPU at the window's start (its
    /// id, and ns), when read.
    waits: Vec<Option<(i32, Sched)>>,
    /// The machine's idle and total time at the window's start (clock ticks).
    machine: Option<(u64, u64)>,
    /// The last change, and whether it was a step back.
    changed: Option<(Instant, bool)>,
    /// How long a change holds.
    dwell: Duration,
    /// Every core's task polls so far, at the window's start.
    polls: u64,
    /// The work test of the last step back, while it runs.
    probe: Option<Probe>,
    /// No step back before this, and the next hold-off.
    hold: (Option<Instant>, Duration),
    /// Polls per second of the last two windows in which every core served.
    recent: [f64; 2],
    /// Whether the window before was crowded: a step back takes two in a row, so that the
    /// work before it is measured over a full window at least.
    was_crowded: bool,
}

impl Crowding {
    /// A monitor of `cores` cores.
    pub(crate) fn new(cores: usize) -> Crowding {
        Crowding {
            since: Instant::now(),
            waits: vec![None; cores],
            machine: None,
            changed: None,
            dwell: DWELL,
            polls: 0,
            probe: None,
            hold: (None, HOLD_OFF),
            recent: [0.0; 2],
            was_crowded: false,
        }
    }

    /// A watchdog check at `now`: applies the rule once a window has passed.
    pub(crate) fn check(&mut self, cores: &[Arc<Shared>], now: Instant) {
        let window = now.saturating_duration_since(self.since);
        if window < EVALUATION {
            return;
        }
        self.since = now;
        let (mut ran, mut waited, mut serving) = (0u64, 0u64, 0u32);
        for (shared, last) in cores.iter().zip(self.waits.iter_mut()) {
            let tid = shared.watch.tid();
            let read = (tid > 0).then(|| sched(tid)).flatten();
            let was = last.take();
            *last = read.map(|w| (tid, w));
            // (Core 0 while no thread is in `block_on` serves nothing either: its thread's
            // wait is not the runtime's, and the last core that serves never steps back.)
            if shared.is_yielded() || !shared.runs() {
                continue;
            }
            if let (Some(now), Some((was_tid, was))) = (read, was) {
                if was_tid == tid {
                    ran += now.run.saturating_sub(was.run);
                    waited += now.wait.saturating_sub(was.wait);
                    serving += 1;
                }
            }
        }
        let machine = machine_times();
        let idle_cpus = match (machine, self.machine) {
            (Some((idle, _)), Some((was_idle, _))) => {
                idle.saturating_sub(was_idle) as f64 / ticks_per_second() / window.as_secs_f64()
            }
            _ => 0.0,
        };
        self.machine = machine;
        let share = if ran + waited == 0 {
            0.0
        } else {
            waited as f64 / (ran + waited) as f64
        };
        let busy = if serving == 0 {
            0.0
        } else {
            ran as f64 / (window.as_nanos() as f64 * f64::from(serving))
        };
        let polls: u64 = cores.iter().map(|s| s.watch.polls()).sum();
        let window = Window {
            share,
            serving,
            busy,
            idle_cpus,
            polls: polls.saturating_sub(std::mem::replace(&mut self.polls, polls)),
            secs: window.as_secs_f64(),
        };
        self.decide(cores, now, window);
    }

    /// Applies the rule to what a window measured.
    fn decide(&mut self, cores: &[Arc<Shared>], now: Instant, w: Window) {
        let rate = w.polls as f64 / w.secs.max(f64::MIN_POSITIVE);
        // The work before a step back: the most of this window and the two before it, so
        // that one window the load only partly filled (a client starting) sets no low bar.
        let before = rate.max(self.recent[0]).max(self.recent[1]);
        // And a steady load: this window's work within a fifth of the last one's (a load that
        // is still growing would make a step back look as if it kept the work up).
        let steady = rate.min(self.recent[0]) >= STEADY * rate.max(self.recent[0]);
        if !cores.iter().any(|s| s.is_yielded()) {
            self.recent = [rate, self.recent[0]];
        }
        let twice = std::mem::replace(&mut self.was_crowded, w.share > CROWDED)
            && w.share > CROWDED
            && steady;
        if let Some(probe) = self.probe.as_mut() {
            // The first window after the change is left out (the tasks were moving).
            if probe.windows > 0 {
                probe.polls += w.polls as f64;
                probe.secs += w.secs;
            }
            probe.windows += 1;
            if probe.windows > PROBE {
                let probe = self.probe.take().expect("matched above");
                let after = probe.polls / probe.secs.max(f64::MIN_POSITIVE);
                if after >= KEPT * probe.before {
                    self.hold.1 = HOLD_OFF;
                } else if cores.get(probe.core).is_some_and(|s| s.is_yielded()) {
                    // It cost work: serve again now, and hold the next step back off.
                    cores[probe.core].serve_again(cores);
                    self.changed = Some((now, false));
                    self.hold = (Some(now + self.hold.1), (self.hold.1 * 2).min(HOLD_OFF_MAX));
                    return;
                }
            }
        }
        if self.changed.is_some_and(|(at, _)| now - at < self.dwell) {
            return;
        }
        let any_yielded = cores.iter().any(|s| s.is_yielded());
        match verdict(w.share, w.serving, w.busy, w.idle_cpus, any_yielded) {
            // The highest core that serves, never core 0 (the caller's `block_on`); not while
            // a step back that cost work holds the next one off.
            Some(true) if twice && self.hold.0.is_none_or(|until| now >= until) => {
                let mut highest = cores.iter().enumerate().skip(1).rev();
                if let Some((index, _)) = highest.find(|(_, s)| !s.is_yielded()) {
                    self.change(cores, index, true, now);
                    self.probe = Some(Probe {
                        core: index,
                        before,
                        windows: 0,
                        polls: 0.0,
                        secs: 0.0,
                    });
                }
            }
            Some(true) => {}
            Some(false) => {
                self.probe = None;
                if let Some(index) = cores.iter().position(|s| s.is_yielded()) {
                    self.change(cores, index, false, now);
                }
            }
            None => {}
        }
    }

    /// Makes `core` step back (`yielded`) or serve again, and wakes it to follow.
    fn change(&mut self, cores: &[Arc<Shared>], index: usize, yielded: bool, now: Instant) {
        if let Some((at, was)) = self.changed {
            if was != yielded && now - at < self.dwell * 2 {
                self.dwell = (self.dwell * 2).min(DWELL_MAX);
            } else if now - at >= self.dwell * 4 {
                self.dwell = DWELL;
            }
        }
        self.changed = Some((now, yielded));
        if yielded {
            cores[index].step_back();
        } else {
            cores[index].serve_again(cores);
        }
    }
}

/// The rule, over one window (see the module's doc): `Some(true)`, a core steps back;
/// `Some(false)`, one serves again; `None`, nothing changes. `share`: the serving cores' wait
/// share; `busy`: their run share; `idle_cpus`: the machine's.
fn verdict(share: f64, serving: u32, busy: f64, idle_cpus: f64, any_yielded: bool) -> Option<bool> {
    if share > CROWDED && serving >= 2 {
        Some(true)
    } else if any_yielded && (idle_cpus >= EMPTY || (busy >= SATURATED && idle_cpus >= ROOM)) {
        Some(false)
    } else {
        None
    }
}

/// A thread's time running and waiting for a CPU so far (ns).
#[derive(Clone, Copy)]
struct Sched {
    /// Running.
    run: u64,
    /// Runnable, waiting for a CPU.
    wait: u64,
}

/// Thread `tid`'s time running and waiting so far (the first two fields of its `schedstat`).
fn sched(tid: i32) -> Option<Sched> {
    let text = std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat")).ok()?;
    let mut fields = text.split_whitespace();
    Some(Sched {
        run: fields.next()?.parse().ok()?,
        wait: fields.next()?.parse().ok()?,
    })
}

/// The machine's idle (idle and iowait) and total time so far, in clock ticks (`/proc/stat`).
fn machine_times() -> Option<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    let line = text.lines().next()?.strip_prefix("cpu ")?;
    let fields: Vec<u64> = line
        .split_whitespace()
        .filter_map(|f| f.parse().ok())
        .collect();
    let idle = fields.get(3)? + fields.get(4).copied().unwrap_or(0);
    Some((idle, fields.iter().sum()))
}

/// Clock ticks a second in `/proc/stat` (`USER_HZ`, which Linux fixes at 100 for user space
/// whatever its internal tick).
fn ticks_per_second() -> f64 {
    100.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::worker::id::CoreId;

    #[test]
    fn a_core_steps_back_when_the_serving_threads_wait_and_serves_again_when_cpus_idle() {
        // Crowded, two serving: one steps back; one serving: never the last.
        assert_eq!(verdict(0.3, 2, 0.5, 0.0, false), Some(true));
        assert_eq!(verdict(0.9, 1, 1.0, 0.0, true), None);
        // Not crowded enough.
        assert_eq!(verdict(0.15, 2, 0.5, 0.0, false), None);
        // One core keeping up beside the other process, a CPU nearly idle: stays alone.
        assert_eq!(verdict(0.0, 1, 0.4, 1.0, true), None);
        // Saturated with room beside it, or the other process gone: serves again.
        assert_eq!(verdict(0.0, 1, 0.9, 0.8, true), Some(false));
        assert_eq!(verdict(0.0, 1, 0.3, 1.6, true), Some(false));
        // None stepped back: nothing to bring back.
        assert_eq!(verdict(0.0, 2, 0.9, 1.6, false), None);
    }

    #[test]
    fn a_change_that_undoes_the_last_one_soon_doubles_the_dwell() {
        let reactor = tickless_io::internal::Reactor::new().expect("a reactor");
        let runtime = CoreId::new_runtime();
        let core = |index| {
            Arc::new(Shared::with_unparker(
                CoreId { runtime, index },
                reactor.unparker(),
                false,
            ))
        };
        let cores = [core(0), core(1)];
        let mut c = Crowding::new(2);
        let t0 = Instant::now();
        c.change(&cores, 1, true, t0);
        assert!(cores[1].is_yielded());
        assert_eq!(c.dwell, DWELL);
        c.change(&cores, 1, false, t0 + DWELL);
        assert!(!cores[1].is_yielded());
        assert_eq!(c.dwell, DWELL * 2, "undone within two dwells: doubled");
        c.change(&cores, 1, true, t0 + DWELL * 3);
        assert_eq!(c.dwell, DWELL * 4);
        // Quiet for a long while: back to the first dwell.
        c.change(&cores, 1, false, t0 + DWELL * 40);
        assert_eq!(c.dwell, DWELL);
    }

    #[test]
    fn a_step_back_that_costs_work_is_undone_at_once_and_holds_the_next_off() {
        let reactor = tickless_io::internal::Reactor::new().expect("a reactor");
        let runtime = CoreId::new_runtime();
        let core = |index| {
            Arc::new(Shared::with_unparker(
                CoreId { runtime, index },
                reactor.unparker(),
                false,
            ))
        };
        let cores = [core(0), core(1)];
        let window = |share, polls| Window {
            share,
            serving: 2,
            busy: 0.9,
            idle_cpus: 0.0,
            polls,
            secs: 0.1,
        };
        let tick = Duration::from_millis(100);
        let mut c = Crowding::new(2);
        let mut now = Instant::now();
        // Crowded twice at a steady load: core 1 steps back. The work before it is the most of
        // the last windows: 1,000 polls a window.
        c.decide(&cores, now, window(0.3, 400));
        assert!(!cores[1].is_yielded(), "one crowded window is not enough");
        now += tick;
        c.decide(&cores, now, window(0.3, 1_000));
        assert!(!cores[1].is_yielded(), "a growing load is not steady");
        now += tick;
        c.decide(&cores, now, window(0.3, 850));
        assert!(cores[1].is_yielded());
        // The first window after is left out; then three at half the work: served again
        // after the third, before the dwell ends.
        for (i, polls) in [100, 500, 500, 500].into_iter().enumerate() {
            assert!(cores[1].is_yielded(), "window {i}");
            now += tick;
            c.decide(&cores, now, window(0.3, polls));
        }
        assert!(!cores[1].is_yielded(), "half the work: serves again");
        // The next hold-off doubles. Still crowded, and past the dwell: held off for 2 s.
        assert_eq!(c.hold.1, HOLD_OFF * 2);
        now += DWELL + tick;
        c.decide(&cores, now, window(0.3, 1_000));
        assert!(!cores[1].is_yielded(), "held off");
        now += HOLD_OFF - DWELL;
        c.decide(&cores, now, window(0.3, 1_000));
        assert!(
            cores[1].is_yielded(),
            "the hold-off over: a step back again"
        );
        // This time the work is kept (a tenth less at most): it stays, and the next hold-off
        // is the first again.
        for polls in [0, 950, 900, 1_000, 900] {
            now += tick;
            c.decide(&cores, now, window(0.3, polls));
        }
        assert!(cores[1].is_yielded(), "the work kept: stays stepped back");
        assert_eq!(c.hold.1, HOLD_OFF);
        assert!(c.probe.is_none());
    }

    #[test]
    fn this_thread_s_wait_and_the_machine_s_times_read() {
        // The main thread's id is the process's.
        let tid = i32::try_from(std::process::id()).expect("a pid fits");
        assert!(sched(tid).is_some());
        let (idle, total) = machine_times().expect("/proc/stat");
        assert!(idle <= total);
        assert!(ticks_per_second() >= 1.0);
    }
}
