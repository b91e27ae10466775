//! tower-http's timeouts on tickless's timer wheel, and tower's own
//! error-returning one in [`timeout`].
//!
//! [`TimeoutLayer`] and [`RequestBodyTimeoutLayer`] are tower-http 0.6's
//! `tower_http::timeout::{TimeoutLayer, RequestBodyTimeoutLayer}` with the same names,
//! constructors and behaviour: a request too slow is answered `408 Request Timeout` (or the
//! status code given) with an empty body, a body frame too slow is an error. Moving an axum or
//! tower stack over is a change of `use` line. Their timers are
//! [`time::Sleep`](tickless::time::Sleep)s on the wheel of the core that serves the request, where
//! tower-http's are tokio's: those panic on a tickless core without the tokio context, and with
//! it are timers of the core's tokio runtime, at tokio's millisecond resolution.
//!
//! # Costs
//!
//! A request whose service answers at its first poll registers no timer. One that waits costs
//! an insert into the core's wheel at its first poll and a cancel when it answers: O(1) each,
//! on the core's own thread, no system call, no other thread. The core's timerfd is touched
//! only if the core goes idle while the request waits, and then (under the default `Lazy`
//! re-arm policy) only if this deadline is earlier than the one it is armed for. A body frame
//! that the reader has to wait for costs the same; one that is ready when asked for costs
//! nothing. The timers' slack is the runtime's default for timers that give none (see
//! [`Builder::default_slack`](tickless::Builder::default_slack)).
//!
//! # `Send`
//!
//! axum's `Router::layer` and hyper-util's tower adapter want `Send` futures and bodies, and
//! they are: a [`Sleep`](tickless::time::Sleep) is `Send` and `Sync`, a deadline until its first
//! poll, then the name of the core whose wheel holds its timer. So [`ResponseFuture`] and
//! [`TimeoutBody`] are `Send` (and `Sync`) whenever what they wrap is, and the services and
//! layers are `Clone`, `Send` and `Sync` like the services they wrap. A timer polled on another
//! core than the one it was registered with moves there (a cancel through the old core's inbox,
//! an insert here); one dropped on another thread is cancelled through its core's inbox, waking
//! nobody. Polled outside a tickless runtime (on a tokio worker thread, say), a future or body
//! that has to wait panics, saying so.
//!
//! # Differences from tower-http
//!
//! - The service's future (a body's frame) is polled before the deadline is checked: a
//!   response ready at the poll where the deadline has passed is returned, where tower-http
//!   answers with the timeout; and a response ready at the first poll costs no timer, where
//!   tower-http's, which checks its deadline first, registers one.
//! - [`TimeoutLayer::new`] and [`Timeout::new`] are not deprecated (tower-http 0.6.7 deprecated
//!   them for `with_status_code`, which is here too).
//! - [`TimeoutBody`] passes the inner body's `size_hint` and `is_end_stream` on.
//! - tower-http's `ResponseBodyTimeoutLayer` has no counterpart here.
//! - tower's `ServiceBuilder::timeout(d)` shorthand is [`ServiceBuilderExt::tickless_timeout`].
//! - [`AnyBodyTimeoutLayer`] has no counterpart there: the 408 of [`TimeoutLayer`] for a
//!   service whose response body has no `Default` (outside `TraceLayer`, say), its responses'
//!   bodies in [`OrEmpty`].
//!
//! # Examples
//!
//! With axum, the layer goes where tower-http's went:
//!
//! ```ignore
//! use tickless_http::tower::TimeoutLayer; // was: use tower_http::timeout::TimeoutLayer;
//!
//! let app = axum::Router::new()
//!     .route("/", axum::routing::get(handler))
//!     .layer(TimeoutLayer::new(Duration::from_secs(10)));
//! ```
//!
//! A tower stack with both timeouts, on paused time so that no real minute passes:
//!
//! ```
//! use std::convert::Infallible;
//! use std::time::Duration;
//!
//! use bytes::Bytes;
//! use http::{Request, Response, StatusCode};
//! use http_body_util::{BodyExt, Full};
//! use tickless_http::tower::{RequestBodyTimeoutLayer, TimeoutBody, TimeoutLayer};
//! use tower::{ServiceBuilder, ServiceExt};
//!
//! async fn handle(
//!     req: Request<TimeoutBody<Full<Bytes>>>,
//! ) -> Result<Response<Full<Bytes>>, Infallible> {
//!     let body = req.into_body().collect().await.unwrap().to_bytes();
//!     if body == "slow" {
//!         tickless::time::sleep(Duration::from_secs(60)).await;
//!     }
//!     Ok(Response::new(Full::new(body)))
//! }
//!
//! let rt = tickless::Builder::new().start_paused(true).build()?;
//! rt.block_on(async {
//!     let svc = ServiceBuilder::new()
//!         .layer(TimeoutLayer::new(Duration::from_secs(30)))
//!         .layer(RequestBodyTimeoutLayer::new(Duration::from_secs(10)))
//!         .service_fn(handle);
//!     let fast = svc.clone().oneshot(Request::new(Full::from("fast"))).await.unwrap();
//!     assert_eq!(fast.status(), StatusCode::OK);
//!     let slow = svc.oneshot(Request::new(Full::from("slow"))).await.unwrap();
//!     assert_eq!(slow.status(), StatusCode::REQUEST_TIMEOUT);
//!     assert!(slow.into_body().collect().await.unwrap().to_bytes().is_empty());
//! });
//! # std::io::Result::Ok(())
//! ```

/// `get_ref`, `get_mut` and `into_inner` of a middleware whose inner service is `inner: S`.
macro_rules! inner_service_accessors {
    () => {
        /// The inner service.
        ///
        /// # Examples
        ///
        /// The three accessors, on tower-http's [`Timeout`](crate::tower::Timeout); they are
        /// the same on [`RequestBodyTimeout`](crate::tower::RequestBodyTimeout) and on
        /// tower's [`timeout::Timeout`](crate::tower::timeout::Timeout).
        ///
        /// ```
        /// use std::time::Duration;
        /// use tickless_http::tower::Timeout;
        ///
        /// #[derive(Debug, PartialEq)]
        /// struct Hello {
        ///     calls: u32, // an inner service with state (its `Service` impl left out)
        /// }
        ///
        /// let mut svc = Timeout::new(Hello { calls: 0 }, Duration::from_secs(10));
        /// svc.get_mut().calls += 1;
        /// assert_eq!(svc.get_ref().calls, 1);
        /// let inner: Hello = svc.into_inner(); // the timeout is gone
        /// assert_eq!(inner, Hello { calls: 1 });
        /// ```
        pub fn get_ref(&self) -> &S {
            &self.inner
        }

        /// The inner service, mutably. See the example on [`get_ref`](Self::get_ref).
        pub fn get_mut(&mut self) -> &mut S {
            &mut self.inner
        }

        /// The inner service, dropping the timeout. See the example on
        /// [`get_ref`](Self::get_ref).
        pub fn into_inner(self) -> S {
            self.inner
        }
    };
}

mod body_timeout;
mod builder;
pub mod timeout;
pub(crate) mod timeout_any;
mod timeout_http;

pub use body_timeout::{RequestBodyTimeout, RequestBodyTimeoutLayer, TimeoutBody, TimeoutError};
pub use builder::ServiceBuilderExt;
pub use timeout_any::{AnyBodyResponseFuture, AnyBodyTimeout, AnyBodyTimeoutLayer, OrEmpty};
pub use timeout_http::{ResponseFuture, Timeout, TimeoutLayer};
