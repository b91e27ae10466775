//! The generator's bookkeeping, apart from sockets and clocks: which connection sends which
//! request when, and each request's latency from its *scheduled* send time.
//!
//! # Accounting
//!
//! Request `i` of the schedule is due at `schedule[i]` and belongs to connection
//! `i % connections` (each connection gets every n-th request, as wrk2's). A connection has at
//! most one request outstanding (no pipelining); a request that falls due while its connection
//! waits for an answer waits too, in the connection's queue, and is sent the moment the answer
//! comes. Every request's latency runs from its scheduled instant to its answer, so a server
//! that stalls for 10 ms is charged for every request due in those 10 ms (coordinated
//! omission corrected at the source, not estimated afterwards).
//!
//! Only requests scheduled inside the window `[window.0, window.1)` are recorded. A request
//! still unanswered when the generator gives up is recorded at the give-up instant (a lower
//! bound of its latency) and counted as unanswered.
//!
//! The generator's own lateness is kept apart: a request *ready* to go (due, and its
//! connection free) but sent later than that was held up by the generator, not the server;
//! `send_late` records that delay, and `late_sends` counts those held more than 1 ms.

use std::collections::VecDeque;

use hdrhistogram::Histogram;

/// A request sent and not yet answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Inflight {
    /// Its scheduled send time, ns.
    due: u64,
}

/// One connection's state.
#[derive(Debug, Default, Clone)]
struct Lane {
    /// Due requests waiting for the one in flight to be answered: their scheduled times.
    queue: VecDeque<u64>,
    /// The request in flight.
    inflight: Option<Inflight>,
    /// When the lane became free of its last answer (0: never busy).
    free_since: u64,
}

/// A generator's lateness beyond which a send counts as late, ns.
pub const LATE_NS: u64 = 1_000_000;

/// The open-loop bookkeeping of one run. Times are nanoseconds from the run's start.
#[derive(Debug)]
pub struct Pacer {
    schedule: Vec<u64>,
    /// The next request of the schedule not yet released to its lane.
    next: usize,
    lanes: Vec<Lane>,
    window: (u64, u64),
    /// Latency of the window's requests from their scheduled send time, ns.
    pub latency: Histogram<u64>,
    /// How long after it was ready each window request was sent, ns.
    pub send_late: Histogram<u64>,
    /// Window requests sent more than [`LATE_NS`] after they were ready.
    pub late_sends: u64,
    /// Window requests answered.
    pub answered: u64,
    /// Window requests given up on.
    pub unanswered: u64,
    /// Requests sent, window or not.
    pub sent: u64,
    /// Per millisecond of the window, by scheduled send time: the worst latency of the
    /// requests due in it, ns (0: none due, or none answered or given up on yet), for lining
    /// up a run's slow requests with what the machine did then.
    pub timeline: Vec<u64>,
    /// Per millisecond of the window likewise: the longest the generator held a request due in
    /// it after it was ready (`send_late`), ns.
    pub timeline_late: Vec<u64>,
    /// Per millisecond of the window likewise: how many of its requests waited over 1 ms (a
    /// stall of the server delays every request, a connection's own delay only its own).
    pub timeline_slow: Vec<u64>,
}

/// A latency past which a request counts in [`Pacer::timeline_slow`], ns.
const SLOW_NS: u64 = 1_000_000;

/// `timeline`'s entry for the millisecond holding `at` (ns from the window's start), grown to
/// it; kept for a window's first 4 million ms (70 minutes).
fn slot(timeline: &mut Vec<u64>, at: u64) -> &mut u64 {
    let ms = (at / 1_000_000).min(1 << 22) as usize;
    if ms >= timeline.len() {
        timeline.resize(ms + 1, 0);
    }
    &mut timeline[ms]
}

/// Raises `timeline`'s entry for the millisecond holding `at` to `value`.
fn worst(timeline: &mut Vec<u64>, at: u64, value: u64) {
    let entry = slot(timeline, at);
    *entry = (*entry).max(value);
}

/// A histogram of nanoseconds from 1 ns to 100 s, 3 significant digits.
pub fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 100_000_000_000, 3).expect("valid bounds")
}

impl Pacer {
    /// Bookkeeping for `schedule` (increasing send times) over `connections` connections,
    /// recording the requests scheduled in `window`.
    pub fn new(schedule: Vec<u64>, connections: usize, window: (u64, u64)) -> Pacer {
        assert!(connections > 0, "a connection at least");
        Pacer {
            schedule,
            next: 0,
            lanes: vec![Lane::default(); connections],
            window,
            latency: histogram(),
            send_late: histogram(),
            late_sends: 0,
            answered: 0,
            unanswered: 0,
            sent: 0,
            timeline: Vec::new(),
            timeline_late: Vec::new(),
            timeline_slow: Vec::new(),
        }
    }

    /// Records a window request due at `due` answered (or given up on) `latency` ns later.
    fn record(&mut self, due: u64, latency: u64) {
        self.latency.saturating_record(latency.max(1));
        worst(&mut self.timeline, due - self.window.0, latency);
        if latency > SLOW_NS {
            *slot(&mut self.timeline_slow, due - self.window.0) += 1;
        }
    }

    /// Requests scheduled in the window.
    pub fn in_window(&self) -> u64 {
        self.schedule.iter().filter(|&&t| self.counts(t)).count() as u64
    }

    fn counts(&self, due: u64) -> bool {
        due >= self.window.0 && due < self.window.1
    }

    /// The next scheduled instant not yet released, if any.
    pub fn next_due(&self) -> Option<u64> {
        self.schedule.get(self.next).copied()
    }

    /// Releases every request due by `now`; pushes onto `send` the connections that must send
    /// a request now (each is then in flight).
    pub fn release(&mut self, now: u64, send: &mut Vec<usize>) {
        let n = self.lanes.len();
        while let Some(&due) = self.schedule.get(self.next) {
            if due > now {
                break;
            }
            let conn = self.next % n;
            self.next += 1;
            let lane = &mut self.lanes[conn];
            if lane.inflight.is_none() && lane.queue.is_empty() {
                lane.inflight = Some(Inflight { due });
                // Ready at its due time, or when its lane became free if that was later.
                let ready = due.max(lane.free_since);
                self.record_send(due, ready, now);
                send.push(conn);
            } else {
                lane.queue.push_back(due);
            }
        }
    }

    /// A request due at `due`, ready to go at `ready`, is sent at `now`.
    fn record_send(&mut self, due: u64, ready: u64, now: u64) {
        self.sent += 1;
        if self.counts(due) {
            let late = now.saturating_sub(ready);
            self.send_late.saturating_record(late.max(1));
            worst(&mut self.timeline_late, due - self.window.0, late);
            if late > LATE_NS {
                self.late_sends += 1;
            }
        }
    }

    /// Connection `conn`'s request was answered at `now`. Returns whether the connection must
    /// send its next request now (one was waiting).
    ///
    /// # Panics
    ///
    /// The connection had no request in flight (an answer nobody asked for).
    pub fn answered(&mut self, conn: usize, now: u64) -> bool {
        let done = self.lanes[conn]
            .inflight
            .take()
            .expect("an answer to a request in flight");
        if done.due >= self.window.0 && done.due < self.window.1 {
            self.record(done.due, now.saturating_sub(done.due));
            self.answered += 1;
        }
        let lane = &mut self.lanes[conn];
        lane.free_since = now;
        let next = lane.queue.pop_front();
        let Some(due) = next else {
            return false;
        };
        lane.inflight = Some(Inflight { due });
        // Ready when the answer came: the wait before it is the server's.
        self.record_send(due, now, now);
        true
    }

    /// Whether every request has been released and answered.
    pub fn done(&self) -> bool {
        self.next == self.schedule.len()
            && self
                .lanes
                .iter()
                .all(|l| l.inflight.is_none() && l.queue.is_empty())
    }

    /// Gives up at `now`: every window request released and not answered is recorded at `now`
    /// and counted unanswered; those not yet released are counted unanswered too.
    pub fn give_up(&mut self, now: u64) {
        let window = self.window;
        let counts = |due: u64| due >= window.0 && due < window.1;
        let mut pending = Vec::new();
        for lane in &mut self.lanes {
            pending.extend(lane.inflight.take().map(|i| i.due));
            pending.extend(lane.queue.drain(..));
        }
        for due in pending.into_iter().filter(|&d| counts(d)) {
            self.record(due, now.saturating_sub(due));
            self.unanswered += 1;
        }
        for &due in &self.schedule[self.next..] {
            if counts(due) {
                self.unanswered += 1;
            }
        }
        self.next = self.schedule.len();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const US: u64 = 1_000;
    const MS: u64 = 1_000_000;

    /// Requests every 100 µs on 2 connections, all in the window.
    fn pacer(n: u64) -> Pacer {
        Pacer::new((0..n).map(|i| i * 100 * US).collect(), 2, (0, u64::MAX))
    }

    #[test]
    fn a_prompt_server_costs_each_request_its_service_time() {
        let mut p = pacer(10);
        let mut send = Vec::new();
        for i in 0..10 {
            let now = i * 100 * US;
            send.clear();
            p.release(now, &mut send);
            assert_eq!(send, [(i % 2) as usize], "request {i} sent at once");
            assert!(!p.answered((i % 2) as usize, now + 20 * US));
        }
        assert!(p.done());
        assert_eq!(p.answered, 10);
        assert!(
            p.latency.equivalent(p.latency.min(), p.latency.max()),
            "all the same"
        );
        assert!(p
            .latency
            .equivalent(p.latency.value_at_quantile(1.0), 20 * US));
        assert_eq!(p.late_sends, 0);
    }

    #[test]
    fn a_stall_counts_against_every_request_it_delayed() {
        // Requests every 100 µs on 4 connections; the server answers 1 µs after a request
        // arrives, except that it stalls from 1 ms to 11 ms: the requests due at 1.0, 1.1, ...,
        // 10.9 ms (100 of them) all wait for the stall's end. The clock is a counter.
        let mut p = Pacer::new((0..200).map(|i| i * 100 * US).collect(), 4, (0, u64::MAX));
        let (stall, resume) = (MS, 11 * MS);
        let answer_at = |sent: u64| {
            if sent + US > stall && sent < resume {
                resume
            } else {
                sent + US
            }
        };
        let mut send = Vec::new();
        let mut inflight: Vec<(usize, u64)> = Vec::new(); // (connection, when it is answered)
        let mut now = 0;
        while !p.done() {
            send.clear();
            p.release(now, &mut send);
            inflight.extend(send.iter().map(|&c| (c, answer_at(now))));
            let (due, waiting): (Vec<_>, Vec<_>) = inflight.iter().partition(|a| a.1 <= now);
            inflight = waiting;
            for (c, _) in due {
                if p.answered(c, now) {
                    inflight.push((c, answer_at(now)));
                }
            }
            now += US;
        }
        assert_eq!(p.answered, 200);
        assert_eq!(p.unanswered, 0);
        // Each of the 100 delayed requests is recorded with at least 11 ms less its due time
        // (0.1 ms for the last); the others, before the stall or after the backlog drained,
        // within tens of µs. A closed-loop client would have recorded one long wait per
        // connection, 4, and no more.
        assert_eq!(p.latency.count_between(90 * US, 20 * MS), 100);
        assert!(p.latency.max() >= p.latency.lowest_equivalent(10 * MS));
        // The generator itself was never late: the waits were the server's.
        assert_eq!(p.late_sends, 0);
        assert!(p.timeline_late.iter().all(|&l| l == 0));
        // The timeline shows when: the worst of each millisecond's requests, by due time.
        assert_eq!(p.timeline.len(), 20);
        assert!(
            p.timeline[0] < 10 * US,
            "before the stall: {:?}",
            p.timeline
        );
        assert!(
            p.timeline[1] >= 10 * MS - 100 * US,
            "due at 1 ms: {:?}",
            p.timeline
        );
        assert!((6 * MS..=6 * MS + 100 * US).contains(&p.timeline[5]));
        assert!(
            p.timeline[19] < 10 * US,
            "drained by then: {:?}",
            p.timeline
        );
        // Every request due from the stall's start to 1 ms before its end waited over 1 ms:
        // 10 a millisecond, none before.
        assert_eq!(
            p.timeline_slow[..10],
            [0, 10, 10, 10, 10, 10, 10, 10, 10, 10]
        );
    }

    #[test]
    fn a_late_generator_is_told_apart_from_the_server() {
        let mut p = pacer(4);
        let mut send = Vec::new();
        // The generator wakes 2 ms late: all four are released at once, two sent, two queued.
        p.release(2 * MS, &mut send);
        assert_eq!(send, [0, 1]);
        assert_eq!(p.late_sends, 2, "ready at 0 and 0.1 ms, sent at 2 ms");
        assert!(p.answered(0, 2 * MS + 10 * US));
        assert!(p.answered(1, 2 * MS + 10 * US));
        assert!(!p.answered(0, 2 * MS + 20 * US));
        assert!(!p.answered(1, 2 * MS + 20 * US));
        assert!(p.done());
        assert_eq!(
            p.late_sends, 2,
            "the queued ones were sent as soon as their lane was free"
        );
        // Their latency still runs from their scheduled instants.
        assert!(p.latency.min() >= p.latency.lowest_equivalent(2 * MS - 300 * US));
        // All four fall due in the first millisecond; the first waited longest.
        assert_eq!(p.timeline_late, [2 * MS]);
    }

    #[test]
    fn only_the_window_is_recorded_and_giving_up_counts_the_rest() {
        let mut p = Pacer::new((0..10).map(|i| i * MS).collect(), 1, (2 * MS, 8 * MS));
        assert_eq!(p.in_window(), 6);
        let mut send = Vec::new();
        for i in 0..5 {
            send.clear();
            p.release(i * MS, &mut send);
            assert_eq!(send, [0]);
            assert!(!p.answered(0, i * MS + 1));
        }
        // Requests 5.. are never answered: 5 is in flight, 6 queued, 7 queued, 8 and 9 outside.
        p.release(7 * MS, &mut send);
        p.give_up(20 * MS);
        assert_eq!(p.answered, 3, "2, 3 and 4 ms");
        assert_eq!(p.unanswered, 3, "5, 6 and 7 ms");
        assert_eq!(p.latency.len(), 6);
        assert!(p.done());
    }
}
