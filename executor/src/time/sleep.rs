//! `Sleep`: a future that completes at a deadline.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tickless_timer::{Slack, TimerHandle};

use crate::context::{with_current, NO_RUNTIME};
use crate::runtime::MAX_SLACK;
use crate::time::instant::{now_ns, FAR_NS};
use crate::time::Instant;
use crate::worker::clock::Epoch;
use crate::worker::id::CoreKey;
use crate::worker::registry::remote_cancel;
use crate::worker::timers::NO_SPAN;

/// Waits until `duration` has elapsed: never less, counted from a clock reading taken after
/// this call.
///
/// On a core whose clock runs, the sleep reads no clock when it is made: the core's loop
/// reads its clock once for every sleep and timeout first polled since its last reading
/// (one read a turn of the loop at most, none for those dropped before it: a request answered
/// in the poll that armed its timeout), and each counts its duration from that reading. That
/// reading is later than the sleep's creation, so the sleep is never early; it is late by at
/// most the time from its creation to that reading: the rest of the turn it was first polled
/// in, or the next few turns of a core that stays busy without reading its clock (see
/// `docs/timers.md`). On paused time (and outside a runtime) the deadline is taken at once:
/// paused reads are free and exact.
///
/// `Duration::ZERO` completes at the first poll, registering nothing; `Duration::MAX` never
/// completes (its deadline is clamped about 30 years out: never an overflow panic).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use tickless::time::{sleep, Instant};
///
/// let rt = tickless::Runtime::new()?;
/// rt.block_on(async {
///     let start = Instant::now();
///     sleep(Duration::from_micros(200)).await;
///     assert!(start.elapsed() >= Duration::from_micros(200)); // never early
/// });
/// # std::io::Result::Ok(())
/// ```
///
/// # Panics
///
/// When polled outside a tickless runtime.
pub fn sleep(duration: Duration) -> Sleep {
    let mut sleep = sleep_for(duration);
    sleep.done = duration.is_zero();
    sleep
}

/// A sleep of `span` from now (the deadline clamped about 30 years out), `done` or not.
///
/// The deadline is in the nanoseconds of the cores' clocks, read from the current core's
/// clock (one read, no conversion through `std::time::Instant`), or from the system's
/// monotonic clock outside a runtime.
///
/// On a running core, the deadline is [`YOUNG`]: the loop's next reading gives it (see
/// [`sleep`]); on paused time, or outside a runtime, it is taken now.
///
/// Always inlined: it is the body of every `timeout` and `sleep`, and with a plain `#[inline]`
/// whether the caller's crate inlines it depends on how that crate's code happens to be split
/// (a benchmark binary that grew by unrelated code stopped inlining it: 249 -> 269
/// instructions a never-firing timeout).
#[inline(always)]
pub(crate) fn sleep_for(span: Duration) -> Sleep {
    let span = span_ns(span);
    // No overflow: a reading is at most the paused clock's limit (2^62), and `span` at most
    // 30 years (under 2^60).
    let deadline = match with_current(|core| core.timers().clock().paused_now()) {
        Some(None) => YOUNG,
        Some(Some(now)) => now + span,
        None => outside_now() + span,
    };
    Sleep {
        deadline,
        slack: None,
        span,
        entry: None,
        done: false,
    }
}

/// Now, outside a runtime (out of line: rare, and kept out of every `timeout`'s body).
#[cold]
#[inline(never)]
fn outside_now() -> u64 {
    Epoch::global().elapsed()
}

/// The deadline of a sleep whose clock reading is still to come (see [`sleep`]); never a
/// real one (deadlines are at most the paused clock's limit plus 30 years).
const YOUNG: u64 = u64::MAX;

/// `span` in nanoseconds, at most [`FAR_NS`] (30 years): a whole number of seconds, so that
/// a span of fewer seconds needs no overflow check (one comparison, where `nanos` and `min`
/// make three).
#[inline(always)]
fn span_ns(span: Duration) -> u64 {
    const FAR_SECS: u64 = FAR_NS / 1_000_000_000;
    const _WHOLE: () = assert!(FAR_SECS * 1_000_000_000 == FAR_NS);
    if span.as_secs() >= FAR_SECS {
        FAR_NS
    } else {
        span.as_secs() * 1_000_000_000 + u64::from(span.subsec_nanos())
    }
}

/// Waits until `deadline`.
///
/// A deadline the core's clock had passed at its last reading (the loop reads it once a turn,
/// for expiry) completes at the first poll, registering nothing: the first poll does not read
/// the clock. A deadline passed since then is registered, rounded up to the timer resolution
/// like every deadline (never early), and completes at the first loop turn whose clock reading
/// has reached that: the next turn, without arming the timerfd, for a deadline passed by at
/// least the resolution (1 µs by default); one passed by less may take the timerfd's wakeup.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use tickless::time::{sleep_until, Instant};
///
/// let rt = tickless::Runtime::new()?;
/// rt.block_on(async {
///     let deadline = Instant::now() + Duration::from_micros(100);
///     sleep_until(deadline).await;
///     assert!(Instant::now() >= deadline);
/// });
/// # std::io::Result::Ok(())
/// ```
#[inline]
pub fn sleep_until(deadline: Instant) -> Sleep {
    Sleep {
        deadline: deadline.ns(),
        slack: None,
        span: NO_SPAN,
        entry: None,
        done: false,
    }
}

/// Where a polled `Sleep` is registered.
#[derive(Debug, Clone, Copy)]
struct Entry {
    /// The core whose wheel holds it.
    core: CoreKey,
    /// Its timer there.
    handle: TimerHandle,
}

/// The future of [`sleep`] and [`sleep_until`].
///
/// It registers with the core that first polls it, and costs nothing if dropped unpolled. It is
/// `Send` and `Unpin`: dropped on another thread, its cancel travels to the owning core through
/// that core's inbox and wakes nobody.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use tickless::time::{sleep, Instant};
///
/// let rt = tickless::Builder::new().start_paused(true).build()?;
/// rt.block_on(async {
///     let start = Instant::now();
///     let mut nap = sleep(Duration::from_secs(5)).slack(Duration::from_millis(10));
///     (&mut nap).await;
///     assert!(nap.is_elapsed());
///     nap.reset(Instant::now() + Duration::from_secs(1)); // reuses its timer
///     nap.await;
///     assert!(start.elapsed() >= Duration::from_secs(6));
/// });
/// # std::io::Result::Ok(())
/// ```
#[derive(Debug)]
#[must_use = "futures do nothing unless awaited"]
pub struct Sleep {
    /// When it completes: nanoseconds since the process's epoch ([`Epoch::global`]), the
    /// unit of every core's timers.
    deadline: u64,
    /// How late it may complete; the runtime's default when `None`.
    slack: Option<Slack>,
    /// How long it was made for in nanoseconds, if known (`sleep`, `timeout`; else
    /// [`NO_SPAN`]): the runtime's default slack may depend on it, and need not read the clock
    /// to learn it.
    span: u64,
    /// Its timer, once polled.
    entry: Option<Entry>,
    /// It completed.
    done: bool,
}

impl Sleep {
    /// Lets the sleep complete up to `slack` after its deadline, so that the core can serve
    /// several timers with one wakeup, instead of the runtime's default (a share of its length:
    /// see [`Builder::default_slack_growing`](crate::Builder::default_slack_growing)).
    /// `Duration::ZERO` makes it exact: it fires at its deadline, rounded up to the
    /// resolution (a window narrower than the core's wakeup latency is reached by waking that
    /// much ahead and waiting the rest awake: see
    /// [`Builder::wakeup_lead_max`](crate::Builder::wakeup_lead_max)). Takes effect at the
    /// next registration. A slack above
    /// [`MAX_SLACK`](crate::runtime::MAX_SLACK) (one hour) is that much: a sleep that may be
    /// late without bound is [`deferrable`](Self::deferrable).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickless::time::{sleep, Instant};
    ///
    /// let rt = tickless::Builder::new().start_paused(true).build()?;
    /// rt.block_on(async {
    ///     let start = Instant::now();
    ///     sleep(Duration::from_secs(1)).slack(Duration::ZERO).await; // exact
    ///     assert_eq!(start.elapsed(), Duration::from_secs(1));
    ///     let start = Instant::now();
    ///     sleep(Duration::from_secs(1)).slack(Duration::from_millis(50)).await;
    ///     let late = start.elapsed() - Duration::from_secs(1);
    ///     assert!(late <= Duration::from_millis(50)); // within its slack
    /// });
    /// # std::io::Result::Ok(())
    /// ```
    pub fn slack(mut self, slack: Duration) -> Sleep {
        self.slack = Some(Slack::Bounded(slack.min(MAX_SLACK)));
        self
    }

    /// Makes the sleep deferrable: it never wakes the core by itself, and completes at the
    /// first wakeup after its deadline, however late.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickless::time::{sleep, Instant};
    ///
    /// let rt = tickless::Builder::new().start_paused(true).build()?;
    /// rt.block_on(async {
    ///     let start = Instant::now();
    ///     let housekeeping = tickless::spawn(async move {
    ///         sleep(Duration::from_secs(1)).deferrable().await; // due at 1 s...
    ///         start.elapsed()
    ///     });
    ///     sleep(Duration::from_secs(5)).slack(Duration::ZERO).await; // the core wakes at 5 s
    ///     assert_eq!(housekeeping.await.unwrap(), Duration::from_secs(5)); // ...run then
    /// });
    /// # std::io::Result::Ok(())
    /// ```
    pub fn deferrable(mut self) -> Sleep {
        self.slack = Some(Slack::Unbounded);
        self
    }

    /// The deadline. (The sleep keeps it in the cores' nanoseconds since the process's epoch,
    /// so an instant given before the epoch, long past, reads as the epoch.)
    ///
    /// A [`sleep`] on a running clock takes its deadline from the core's next clock reading
    /// after it was first polled (see [`sleep`]): asked before, the deadline is the duration
    /// from now (the core then reads its clock for every such timer it holds, and this one
    /// keeps what it got; one not yet polled may still get a later one, never an earlier).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickless::time::{sleep, sleep_until, Instant};
    ///
    /// let rt = tickless::Builder::new().start_paused(true).build()?;
    /// rt.block_on(async {
    ///     let at = Instant::now() + Duration::from_secs(3);
    ///     assert_eq!(sleep_until(at).deadline(), at);
    ///     assert_eq!(sleep(Duration::from_secs(3)).deadline(), at); // paused: `now` stands still
    /// });
    /// # std::io::Result::Ok(())
    /// ```
    pub fn deadline(&self) -> Instant {
        if self.deadline != YOUNG {
            return Instant::from_ns(self.deadline);
        }
        // Its reading is still to come (see `sleep`). Registered on this core: the core reads
        // its clock now for every such timer, and says what this one got. Else: the reading it
        // will get is no earlier than one taken now.
        let settled = self.entry.and_then(|entry| {
            with_current(|core| {
                (core.key() == entry.core)
                    .then(|| core.timers().deadline_of(entry.handle))
                    .flatten()
            })
            .flatten()
        });
        Instant::from_ns(settled.unwrap_or_else(|| now_ns().saturating_add(self.span)))
    }

    /// Whether it has completed. A sleep of zero (or one whose deadline has passed when it is
    /// made) counts as completed from the start, before its first poll.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickless::time::sleep;
    ///
    /// let rt = tickless::Runtime::new()?;
    /// rt.block_on(async {
    ///     let mut nap = sleep(Duration::from_micros(100));
    ///     assert!(!nap.is_elapsed());
    ///     (&mut nap).await; // `Sleep` is `Unpin`: awaited by reference, kept
    ///     assert!(nap.is_elapsed());
    /// });
    /// # std::io::Result::Ok(())
    /// ```
    pub fn is_elapsed(&self) -> bool {
        self.done
    }

    /// Moves the deadline, keeping the registration (no allocation, no re-registration).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickless::time::{sleep, Instant};
    ///
    /// let rt = tickless::Builder::new().start_paused(true).build()?;
    /// rt.block_on(async {
    ///     let start = Instant::now();
    ///     let mut nap = sleep(Duration::from_secs(10)).slack(Duration::ZERO);
    ///     nap.reset(start + Duration::from_secs(2)); // sooner
    ///     nap.await;
    ///     assert_eq!(start.elapsed(), Duration::from_secs(2));
    /// });
    /// # std::io::Result::Ok(())
    /// ```
    pub fn reset(&mut self, deadline: Instant) {
        let deadline = deadline.ns();
        self.deadline = deadline;
        self.span = NO_SPAN;
        self.done = false;
        if let Some(entry) = self.entry {
            let moved = with_current(|core| {
                core.key() == entry.core && core.timers().reset(entry.handle, deadline, self.slack)
            });
            if moved != Some(true) {
                self.cancel();
            }
        }
    }

    /// Cancels the registration, wherever it is: on this core directly, from elsewhere
    /// through the owning core's inbox.
    #[inline]
    fn cancel(&mut self) {
        let Some(entry) = self.entry.take() else {
            return;
        };
        let local = with_current(|core| {
            if core.key() != entry.core {
                return false;
            }
            core.timers().cancel_sleep(entry.handle);
            true
        });
        if local != Some(true) {
            cancel_elsewhere(entry);
        }
    }

    #[inline(never)]
    pub(crate) fn poll_sleep(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        if self.done {
            return Poll::Ready(());
        }
        let ready = with_current(|core| {
            let timers = core.timers();
            if let Some(entry) = self.entry {
                if entry.core == core.key() {
                    if self.deadline == YOUNG {
                        // Settled since (or `YOUNG` still): kept, for a move to another core.
                        self.deadline = timers.settled_deadline(entry.handle).unwrap_or(YOUNG);
                    }
                    let fired = timers.poll_registered(entry.handle, cx.waker());
                    if fired && self.deadline == YOUNG {
                        // Fired before anything kept its deadline: the reading that expired it
                        // is no earlier, and already past.
                        self.deadline = timers.last_now();
                    }
                    return fired;
                }
                // First poll on this core: move the registration here.
                self.cancel();
            }
            let registered = if self.deadline == YOUNG {
                timers.register_young(self.span, self.slack, cx.waker())
            } else {
                timers.register(self.deadline, self.slack, self.span, cx.waker())
            };
            match registered {
                None => true,
                Some(handle) => {
                    self.entry = Some(Entry {
                        core: core.key(),
                        handle,
                    });
                    false
                }
            }
        })
        .expect(NO_RUNTIME);
        if ready {
            self.entry = None;
            self.done = true;
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

/// A registration cancelled off its core: through that core's inbox (out of line: rare).
#[cold]
#[inline(never)]
fn cancel_elsewhere(entry: Entry) {
    remote_cancel(entry.core.id(), entry.handle);
}

impl Future for Sleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.poll_sleep(cx)
    }
}

impl Drop for Sleep {
    #[inline]
    fn drop(&mut self) {
        self.cancel();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_span_is_its_nanoseconds_clamped_at_far_ns() {
        let far_secs = FAR_NS / 1_000_000_000;
        for span in [
            Duration::ZERO,
            Duration::from_nanos(1),
            Duration::from_secs(1),
            Duration::new(far_secs - 1, 999_999_999),
            Duration::from_secs(far_secs),
            Duration::new(far_secs, 1),
            Duration::from_secs(u64::MAX / 1_000_000_000 + 1),
            Duration::MAX,
        ] {
            let expected = crate::worker::clock::nanos(span).min(FAR_NS);
            assert_eq!(span_ns(span), expected, "{span:?}");
        }
        assert_eq!(
            span_ns(Duration::new(far_secs - 1, 999_999_999)),
            FAR_NS - 1
        );
    }
}
