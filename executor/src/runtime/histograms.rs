//! The builder's settings of the metrics' histograms: tokio's poll-time histogram
//! (`enable_metrics_poll_time_histogram`, `metrics_poll_time_histogram_configuration`),
//! tickless's timer-lateness histogram (`metrics_timer_lateness_histogram_configuration`) and
//! its loop histograms (`enable_metrics_loop_histograms`).

use crate::histogram::HistogramConfiguration;
use crate::runtime::Builder;

impl Builder {
    /// Times every task poll and counts it in a histogram per core, as tokio's
    /// `Builder::enable_metrics_poll_time_histogram`: read through
    /// [`RuntimeMetrics::poll_time_histogram_bucket_count`](crate::runtime::RuntimeMetrics::poll_time_histogram_bucket_count),
    /// published by the metrics-rs reporter as `tokio_poll_time_histogram`. Off by default.
    ///
    /// The buckets are tokio's default, 10 of 100 µs each (the last one open), unless
    /// [`metrics_poll_time_histogram_configuration`](Self::metrics_poll_time_histogram_configuration)
    /// says otherwise. A task's poll is timed by two readings of the core's clock, around the
    /// poll; the `block_on` future's polls are not counted (it is no task). With paused time
    /// (`time::pause`, [`start_paused`](Self::start_paused)), a poll lasts as long as the time
    /// [`time::advance`](crate::time::advance) moved during it.
    ///
    /// # Costs
    ///
    /// Off, nothing a poll: the core picks its task loop once per turn. On, two clock reads
    /// (a `clock_gettime` each, through the vDSO) and a count a task poll.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let rt = tickless::Builder::new()
    ///     .cores(1)
    ///     .start_paused(true)
    ///     .enable_metrics_poll_time_histogram()
    ///     .build()?;
    /// rt.block_on(async {
    ///     // One poll of 250 µs (of paused time), then one of none.
    ///     tickless::spawn(tickless::time::advance(Duration::from_micros(250)))
    ///         .await
    ///         .unwrap();
    /// });
    /// let m = rt.metrics();
    /// assert!(m.poll_time_histogram_enabled());
    /// assert_eq!(m.poll_time_histogram_num_buckets(), 10);
    /// let us = Duration::from_micros;
    /// assert_eq!(m.poll_time_histogram_bucket_range(2), us(200)..us(300));
    /// assert_eq!(m.poll_time_histogram_bucket_count(0, 2), 1);
    /// assert_eq!(m.poll_time_histogram_bucket_count(0, 0), 1);
    /// # std::io::Result::Ok(())
    /// ```
    pub fn enable_metrics_poll_time_histogram(&mut self) -> &mut Self {
        self.core.poll_times_on = true;
        self
    }

    /// Keeps three histograms per core of the loop's own timing, for explaining a latency
    /// tail from inside the loop (tickless's; tokio has none). Read through
    /// [`RuntimeMetrics::io_poll_spacing_histogram_bucket_count`](crate::runtime::RuntimeMetrics::io_poll_spacing_histogram_bucket_count)
    /// and its siblings, published by the metrics-rs reporter as
    /// `tickless_io_poll_spacing_histogram`, `tickless_io_batch_drain_histogram` and
    /// `tickless_tasks_between_io_polls_histogram`. Off by default.
    ///
    /// An *I/O poll* is any look of a core at its epoll instance: a fairness poll while busy
    /// (after each turn of up to 128 task polls, once 61 have run since the last), a look of
    /// an idle spin, or a park.
    ///
    /// - **I/O poll spacing**: from one I/O poll's return to the next one's start. Readiness
    ///   that arrives meanwhile waits at most this long before the core can see it.
    /// - **I/O batch drain**: from the return of an I/O poll that woke tasks of the core to
    ///   the start of the poll of the last task queued by then: the longest one of the tasks
    ///   it woke waited for its first poll, the tasks queued before them included. While one
    ///   batch drains, later polls start none; counted in task polls, so approximate where
    ///   tasks move between cores meanwhile.
    /// - **Tasks between I/O polls**: the task polls from one I/O poll to the next (the
    ///   `block_on` future's not counted).
    ///
    /// The durations are read on the core's clock, so with paused time
    /// ([`start_paused`](Self::start_paused)) they are the time
    /// [`time::advance`](crate::time::advance) moved. Buckets: the durations 24 doubling from
    /// 1 µs (0 to 1 µs, ..., 4.19 s on), the task counts 16 (0, 1, 2-3, 4-7, ..., 16,384 on).
    ///
    /// # Costs
    ///
    /// Off, a branch an I/O poll and none a task poll (the core picks its task loop once per
    /// turn). On, two clock reads an I/O poll (an idle spin makes many) and a count a task
    /// poll.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let rt = tickless::Builder::new()
    ///     .cores(1)
    ///     .start_paused(true)
    ///     .enable_metrics_loop_histograms()
    ///     .build()?;
    /// rt.block_on(async {
    ///     tickless::spawn(async {
    ///         // A busy core looks at I/O after each turn of 128 task polls; in the second
    ///         // turn, this task keeps it away for 300 µs (of paused time).
    ///         for i in 0..300 {
    ///             if i == 200 {
    ///                 tickless::time::advance(Duration::from_micros(300)).await;
    ///             }
    ///             tickless::task::yield_now().await;
    ///         }
    ///     })
    ///     .await
    ///     .unwrap();
    /// });
    /// let m = rt.metrics();
    /// assert!(m.loop_histograms_enabled());
    /// let us = Duration::from_micros;
    /// assert_eq!(m.io_poll_spacing_histogram_bucket_range(9), us(256)..us(512));
    /// assert_eq!(m.io_poll_spacing_histogram_bucket_count(0, 9), 1);
    /// # std::io::Result::Ok(())
    /// ```
    pub fn enable_metrics_loop_histograms(&mut self) -> &mut Self {
        self.core.loop_histograms = true;
        self
    }

    /// The buckets of the poll-time histogram, as tokio's
    /// `Builder::metrics_poll_time_histogram_configuration`; it still takes
    /// [`enable_metrics_poll_time_histogram`](Self::enable_metrics_poll_time_histogram) to
    /// turn it on (in either order).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickless::runtime::HistogramConfiguration;
    ///
    /// let rt = tickless::Builder::new()
    ///     .cores(1)
    ///     .metrics_poll_time_histogram_configuration(HistogramConfiguration::log2(
    ///         Duration::from_micros(10),
    ///         12,
    ///     ))
    ///     .enable_metrics_poll_time_histogram()
    ///     .build()?;
    /// let m = rt.metrics();
    /// assert_eq!(m.poll_time_histogram_num_buckets(), 12);
    /// let us = Duration::from_micros;
    /// assert_eq!(m.poll_time_histogram_bucket_range(3), us(40)..us(80));
    /// # std::io::Result::Ok(())
    /// ```
    pub fn metrics_poll_time_histogram_configuration(
        &mut self,
        configuration: HistogramConfiguration,
    ) -> &mut Self {
        self.core.poll_times = configuration;
        self
    }

    /// The buckets of the timer-lateness histogram: how late each timer fired, the clock
    /// reading it was expired by less its deadline (to the timer resolution). Always on: a
    /// fire counts into it at the cost of a subtraction, a division and a count. Default:
    /// `HistogramConfiguration::log2(1 µs, 24)`, doubling buckets from 1 µs to 4.19 s and on.
    /// Read through
    /// [`RuntimeMetrics::timer_lateness_histogram_bucket_count`](crate::runtime::RuntimeMetrics::timer_lateness_histogram_bucket_count).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickless::runtime::HistogramConfiguration;
    ///
    /// let rt = tickless::Builder::new()
    ///     .cores(1)
    ///     .metrics_timer_lateness_histogram_configuration(HistogramConfiguration::linear(
    ///         Duration::from_micros(50),
    ///         20,
    ///     ))
    ///     .build()?;
    /// assert_eq!(rt.metrics().timer_lateness_histogram_num_buckets(), 20);
    /// # std::io::Result::Ok(())
    /// ```
    pub fn metrics_timer_lateness_histogram_configuration(
        &mut self,
        configuration: HistogramConfiguration,
    ) -> &mut Self {
        self.core.lateness = configuration;
        self
    }
}
