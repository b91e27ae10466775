//! The open-loop load generator: requests sent on a fixed schedule over many keep-alive
//! connections, each request's latency timed from when it was *due*, into an HDR histogram.
//!
//! - [`schedule`]: the send instants (Poisson or evenly spaced), computed before the run.
//! - [`pacer`]: the bookkeeping (which connection sends what, latency from the scheduled
//!   instant, the generator's own lateness), with no clock or socket of its own: tested on a
//!   counter.
//! - [`proto`]: HTTP/1.1 keep-alive requests and a response parser; the key-value protocol of
//!   `server_tokio_shape`.
//! - [`gen`]: the run itself, one thread with an epoll loop over every connection.
//! - [`plot`]: the latency-against-load SVG.

pub mod gen;
pub mod pacer;
pub mod plot;
pub mod proto;
pub mod schedule;
