//! The timers of one tickless core: a hierarchical timing wheel, the re-arm policy that decides
//! when the clock event device is re-programmed, and the hand-over through which other threads
//! give a core timers without waking it needlessly.
//!
//! Pure data: no file descriptors, no threads, no `unsafe`. The runtime plugs a `timerfd` in as
//! the [`ClockEventDevice`]; tests plug in a [`FakeDevice`] and a manual clock.
//!
//! - [`Wheel`]: 11 levels of 64 slots over integer ticks, occupancy bitmaps, O(1) insert, cancel
//!   and reset, handles that go stale safely.
//! - [`TimerQueue`]: the wheel in nanoseconds, with [`Slack`] and a [`RearmPolicy`].
//! - [`Handover`]: the per-core inbox and published sleep word.
//!
//! # Examples
//!
//! ```
//! use tickless_timer::{Config, FakeDevice, Slack, TimerQueue};
//!
//! let mut q = TimerQueue::new(FakeDevice::default(), Config::default());
//! q.insert(2_000, Slack::None, "b");
//! q.insert(1_000, Slack::None, "a");
//! q.on_idle();
//! assert_eq!(q.device().armed, Some(1_000));
//! q.advance(2_500);
//! assert_eq!(q.pop_expired().map(|(_, v)| v), Some("a"));
//! assert_eq!(q.pop_expired().map(|(_, v)| v), Some("b"));
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod device;
mod handover;
mod lead;
mod queue;
mod slab;
mod slack;
mod stats;
mod sync;
mod wheel;

pub use device::{ClockEventDevice, FakeDevice};
pub use handover::{Handover, Op, Wake, NO_DEADLINE};
pub use lead::{Lead, LEAD_QUANTILE_PERCENT, LEAD_STEP_NS, LEAD_UP_NS};
pub use queue::{Config, PreparedSlack, RearmPolicy, TimerQueue};
pub use slab::TimerHandle;
pub use slack::{nanos, Slack};
pub use stats::TimerStats;
pub use wheel::{Lane, Wheel, LEVELS, MAX_LANES};
