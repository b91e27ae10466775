//! The wakeup lead: how far ahead of the armed instant a [`TimerQueue`](crate::TimerQueue)
//! programs its clock event device, learned from how late the device's wakeups reach the core.
//!
//! A device programmed for T does not wake a sleeping core at T: the kernel's timer, the
//! hypervisor's delivery of it, the scheduler and the return from the wait all come first. On
//! the virtual machines this was measured on that takes 30 to 50 µs, on bare metal a few
//! (`bash benches/scripts/c_loops.sh` measures it with no runtime in the way). A core that
//! sleeps until the end of a timer's window therefore fires it that much past the window. KVM
//! meets the same problem for its guests' timers and solves it the same way
//! (`lapic_timer_advance_ns`, adaptive by default): program the device early by what the
//! wakeup is measured to take, and wait out the rest awake.

/// The share of wakeups, in percent, that the lead is meant to bring in before the armed
/// instant: the lead follows this quantile of the observed wakeup latency. The ones it does not
/// cover are late by what they exceed it by; the ones it covers come early, by at most the
/// lead, and the core waits out the rest awake.
pub const LEAD_QUANTILE_PERCENT: u64 = 95;

/// How far one observation below the lead moves it down, in nanoseconds; one above moves it up
/// by `(LEAD_QUANTILE_PERCENT / (100 - LEAD_QUANTILE_PERCENT))` times as much, so that it
/// settles where that share of observations is below it.
pub const LEAD_STEP_NS: u64 = 250;

/// How far one observation above the lead moves it up, in nanoseconds.
pub const LEAD_UP_NS: u64 = LEAD_STEP_NS * LEAD_QUANTILE_PERCENT / (100 - LEAD_QUANTILE_PERCENT);

/// A running estimate of a high quantile of the wakeup latency, capped.
///
/// It starts at the median of the first three observations, then runs as a frugal streaming
/// quantile estimator (one word of state, no samples kept): each observation above the
/// estimate raises it by a fixed step, each below lowers it by a step that much smaller, so it
/// settles where [`LEAD_QUANTILE_PERCENT`] of the observations are below it. A rare outlier
/// moves it by one step; a change of the machine's latency is followed within a few dozen
/// wakeups.
///
/// # Examples
///
/// ```
/// use tickless_timer::internal::Lead;
///
/// let mut lead = Lead::new(100_000); // at most 100 µs
/// for i in 0..1_000u64 {
///     lead.observe(30_000 + (i % 20) * 1_000); // wakeups 30 to 49 µs late
/// }
/// // About the 95th percentile (49 µs), within a step or two.
/// assert!((45_000..=54_000).contains(&lead.ns()), "{}", lead.ns());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lead {
    /// The estimate, in nanoseconds, at most `max_ns`.
    ns: u64,
    /// The cap.
    max_ns: u64,
    /// The first two observations, while there have been fewer than three (`seen`).
    first: [u64; 2],
    /// Observations so far, counted up to three.
    seen: u8,
}

impl Lead {
    /// A lead of zero that may grow up to `max_ns` (zero: never leads).
    pub const fn new(max_ns: u64) -> Lead {
        Lead {
            ns: 0,
            max_ns,
            first: [0; 2],
            seen: 0,
        }
    }

    /// The lead, in nanoseconds.
    pub fn ns(&self) -> u64 {
        self.ns
    }

    /// The cap, in nanoseconds.
    pub fn max_ns(&self) -> u64 {
        self.max_ns
    }

    /// A wakeup reached the core `late_ns` after the instant the device was programmed for.
    pub fn observe(&mut self, late_ns: u64) {
        if self.seen < 2 {
            self.first[usize::from(self.seen)] = late_ns;
            self.seen += 1;
            return;
        }
        if self.seen == 2 {
            // The median of three: one slow first wakeup (a cold start) does not set it.
            let [a, b] = self.first;
            self.ns = late_ns.clamp(a.min(b), a.max(b)).min(self.max_ns);
            self.seen = 3;
            return;
        }
        if late_ns > self.ns {
            self.ns = self.ns.saturating_add(LEAD_UP_NS).min(self.max_ns);
        } else if late_ns < self.ns {
            self.ns = self.ns.saturating_sub(LEAD_STEP_NS);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settles_at_the_quantile_of_what_it_sees() {
        let mut lead = Lead::new(1_000_000);
        // 100 distinct latencies, 0 to 99 µs, in a scrambled order that repeats: the quantile
        // is LEAD_QUANTILE_PERCENT µs.
        let sample = |i: u64| (i * 37 % 100) * 1_000;
        let quantile = LEAD_QUANTILE_PERCENT * 1_000;
        for i in 0..20_000 {
            lead.observe(sample(i));
        }
        // From there on it wanders within a few steps of it.
        for i in 0..1_000 {
            lead.observe(sample(i));
            assert!(
                (quantile - 4 * LEAD_UP_NS..=quantile + 2 * LEAD_UP_NS).contains(&lead.ns()),
                "{}",
                lead.ns()
            );
        }
    }

    #[test]
    fn starts_at_the_median_of_its_first_three_observations() {
        let mut lead = Lead::new(100_000);
        lead.observe(400_000); // a cold first wakeup
        lead.observe(30_000);
        assert_eq!(lead.ns(), 0, "nothing learned from two");
        lead.observe(35_000);
        assert_eq!(lead.ns(), 35_000);
        lead.observe(36_000);
        assert_eq!(lead.ns(), 35_000 + LEAD_UP_NS, "then step by step");
        let mut capped = Lead::new(20_000);
        for late in [50_000, 40_000, 60_000] {
            capped.observe(late);
        }
        assert_eq!(capped.ns(), 20_000);
    }

    #[test]
    fn never_passes_its_cap_and_a_cap_of_zero_never_leads() {
        let mut lead = Lead::new(10_000);
        for _ in 0..100 {
            lead.observe(u64::MAX);
        }
        assert_eq!((lead.ns(), lead.max_ns()), (10_000, 10_000));
        let mut none = Lead::new(0);
        none.observe(50_000);
        assert_eq!((none.ns(), none.max_ns()), (0, 0));
    }

    #[test]
    fn an_outlier_moves_it_one_step_and_it_follows_a_change() {
        let mut lead = Lead::new(1_000_000);
        for _ in 0..1_000 {
            lead.observe(20_000);
        }
        // A steady latency: the estimate sits on it, or a step below it.
        assert!(
            (19_750..=20_000 + LEAD_UP_NS).contains(&lead.ns()),
            "{}",
            lead.ns()
        );
        let before = lead.ns();
        lead.observe(900_000);
        assert_eq!(
            lead.ns(),
            before + LEAD_UP_NS,
            "one step up, whatever the size"
        );
        // The machine got faster: 5 µs wakeups. Down a step a wakeup until it is there.
        for _ in 0..200 {
            lead.observe(5_000);
        }
        assert!((4_750..=5_000).contains(&lead.ns()), "{}", lead.ns());
        // ... and slower again: up a big step a wakeup.
        for _ in 0..(50_000 / LEAD_UP_NS + 2) {
            lead.observe(50_000);
        }
        assert!(lead.ns() >= 50_000 - LEAD_STEP_NS, "{}", lead.ns());
    }
}
