//! The builder's settings of the metrics' histograms: tokio's poll-time histogram
//! (`enable_metrics_poll_time_histogram`, `metrics_poll_time_histogram_configuration`) and
//! tickless's timer-lateness histogram (`metrics_timer_lateness_histogram_configuration`).

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
