//! Pipe ping-pong: two tasks exchange a 4-byte counter over two pipes, the pinger timing
//! round trips. The workload of the 2013 hrtimer regression (pipe-test-1m).
//!
//! Every runtime runs it the same way: the pinger is the future the runtime blocks on, the echo
//! a task spawned beside it (or, across cores, on the other core's runtime). The pinger sends
//! `i`, the echo answers `i + 1`, the pinger checks the answer.

use std::io;
use std::time::Duration;

/// Where the two sides run, and whether reads carry a timeout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Both tasks on one core (one thread, pinned).
    Same,
    /// One side per core, each pinned to its own CPU.
    Cross,
    /// As `Same`, with every read wrapped in a [`TIMEOUT`] that never fires.
    Timeout,
    /// As `Same`, in blocks of [`PAIRED_BLOCK`] round trips, alternately without and with
    /// timeouts: the cost of the timeouts measured within one process, where the noise between
    /// processes (which is larger than that cost on a virtual machine) cancels out.
    Paired,
}

/// Round trips per block of [`Mode::Paired`].
pub const PAIRED_BLOCK: u32 = 1_000;

impl Mode {
    /// Whether the `i`-th message (counted from 0, warm-up included) carries a timeout, on
    /// both sides.
    pub fn timed(self, i: u32) -> bool {
        match self {
            Mode::Same | Mode::Cross => false,
            Mode::Timeout => true,
            Mode::Paired => (i / PAIRED_BLOCK) % 2 == 1,
        }
    }

    /// Whether the two sides run on different cores.
    pub fn cross(self) -> bool {
        self == Mode::Cross
    }
}

/// The timeout each read carries in [`Mode::Timeout`]: long enough never to fire.
pub const TIMEOUT: Duration = Duration::from_secs(1);

/// One measurement.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    /// Where the sides run.
    pub mode: Mode,
    /// Round trips before the clock starts (pipes and runtime warm, timers armed).
    pub warmup: u32,
    /// Round trips timed.
    pub rtts: u32,
}

impl Plan {
    /// Every round trip the echo side answers.
    pub fn total(&self) -> u32 {
        self.warmup + self.rtts
    }
}

impl Plan {
    /// The measured round trips as blocks `(first, count, with timeouts)`: one block, or the
    /// alternating blocks of [`Mode::Paired`].
    pub fn blocks(&self) -> Vec<(u32, u32, bool)> {
        let (start, end) = (self.warmup, self.total());
        if self.mode != Mode::Paired {
            return vec![(start, self.rtts, self.mode.timed(start))];
        }
        let mut blocks = Vec::new();
        let mut i = start;
        while i < end {
            let len = (PAIRED_BLOCK - i % PAIRED_BLOCK).min(end - i);
            blocks.push((i, len, self.mode.timed(i)));
            i += len;
        }
        blocks
    }
}

/// Wall time of the measured round trips, apart by whether they carried timeouts.
#[derive(Debug, Clone, Copy, Default)]
pub struct Clock {
    /// Round trips without timeouts, and their time.
    pub untimed: (u32, Duration),
    /// Round trips with timeouts, and their time.
    pub timed: (u32, Duration),
}

impl Clock {
    /// Adds a block.
    pub fn add(&mut self, count: u32, timed: bool, took: Duration) {
        let slot = if timed {
            &mut self.timed
        } else {
            &mut self.untimed
        };
        slot.0 += count;
        slot.1 += took;
    }

    /// All of it.
    pub fn elapsed(&self) -> Duration {
        self.untimed.1 + self.timed.1
    }
}

/// What a measurement found.
#[derive(Debug, Clone, Copy)]
pub struct Run {
    /// Wall time of the measured round trips.
    pub elapsed: Duration,
    /// The same, apart by timeouts (for [`Mode::Paired`]).
    pub clock: Clock,
    /// tickless only: what its cores counted over the timed round trips.
    pub tickless: Option<tickless::CoreStats>,
}

/// The pinger's check of an answer.
///
/// # Errors
///
/// `InvalidData` if the echo answered anything but `sent + 1`.
pub fn check(sent: u32, reply: u32) -> io::Result<()> {
    if reply == sent.wrapping_add(1) {
        Ok(())
    } else {
        Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("sent {sent}, got {reply} back"),
        ))
    }
}

/// The timed-out read's error, for runtimes whose timeout gives none of its own.
pub fn timed_out() -> io::Error {
    io::Error::new(io::ErrorKind::TimedOut, "a ping-pong read timed out")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paired_blocks_alternate_on_both_sides_schedule() {
        let plan = Plan {
            mode: Mode::Paired,
            warmup: 500,
            rtts: 2_000,
        };
        let blocks = plan.blocks();
        assert_eq!(
            blocks,
            [(500, 500, false), (1_000, 1_000, true), (2_000, 500, false)]
        );
        for (from, n, timed) in blocks {
            assert!((from..from + n).all(|i| Mode::Paired.timed(i) == timed));
        }
        let single = Plan {
            mode: Mode::Timeout,
            ..plan
        };
        assert_eq!(single.blocks(), [(500, 2_000, true)]);
    }
}
