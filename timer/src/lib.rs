//! The timers of one tickless core: a hierarchical timing wheel, the re-arm policy that decides
//! when the clock event device is re-programmed, and the hand-over through which other threads
//! give a core timers without waking it needlessly.
//!
//! Pure data: no file descriptors, no threads, no `unsafe`. The runtime plugs a `timerfd` in as
//! the [`ClockDevice`]; tests plug in a [`FakeDevice`] and a manual clock.
//!
//! - [`TimerQueue`]: a hierarchical wheel (11 levels of 64 slots over integer ticks, occupancy
//!   bitmaps, O(1) insert, cancel and reset, handles that go stale safely) in nanoseconds, with
//!   [`Slack`] and a [`RearmPolicy`], driving a [`ClockDevice`].
//! - [`TimerHandle`], [`TimerStats`], [`Config`]: a timer's name, the queue's counters, its
//!   settings.
//!
//! The wheel alone, the per-core inbox through which other threads hand a core timers and
//! wakes, and the wakeup lead are the runtime's building blocks, not public API.
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
mod inbox;
mod lead;
mod queue;
mod slab;
mod slack;
mod stats;
mod sync;
mod wheel;

// The timer queue, its settings and its device: what a program that drives its own clock
// event device uses (the `tickless` runtime re-exports `RearmPolicy`).
pub use device::{ClockDevice, FakeDevice};
pub use queue::{Config, PreparedSlack, RearmPolicy, TimerQueue};
pub use slab::TimerHandle;
pub use slack::{nanos, Slack};
pub use stats::TimerStats;

/// What the `tickless` runtime (and its loom models and tests) builds on beyond the queue: the
/// wheel itself, each core's inbox for other threads, the wakeup lead's estimator. Not for
/// users: no stability promise, and hidden from the docs.
#[doc(hidden)]
pub mod internal {
    pub use crate::inbox::{Inbox, Op, RemoteArming, RemoteDevice, Wake, NO_DEADLINE};
    pub use crate::lead::{Lead, LEAD_QUANTILE_PERCENT, LEAD_STEP_NS, LEAD_UP_NS};
    pub use crate::wheel::{Lane, Wheel, LEVELS, MAX_LANES};
}
