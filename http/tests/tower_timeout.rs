//! `tickless_http::tower`: tower-http's `TimeoutLayer` and `RequestBodyTimeoutLayer` on the core's
//! timer wheel. A slow service is answered 408 at its deadline and a fast one passes, each for
//! the timer operations counted in `Runtime::stats`; a body fails after a gap between frames
//! longer than the timeout, and not before; and the types are what axum's `Router::layer` asks.
//!
//! Every duration asserted here is one of the paused clock, which moves only when told to (or
//! jumps to the next timer); the one real-clock test asserts counts alone.

use std::cell::Cell;
use std::collections::VecDeque;
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body::{Body, Frame};
use http_body_util::{BodyExt, Empty, Full};
use tickless::time::{sleep, Instant, Sleep};
use tickless::{yield_now, Builder, CoreStats, Runtime};
use tickless_http::tower::{
    RequestBodyTimeout, RequestBodyTimeoutLayer, ResponseFuture, Timeout, TimeoutBody,
    TimeoutError, TimeoutLayer,
};
use tower::{service_fn, Layer, Service, ServiceBuilder, ServiceExt};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// One core on paused time, its timers exact (no default slack): each fires at its deadline,
/// and the paused clock jumps to just that.
fn paused() -> io::Result<Runtime> {
    Builder::new()
        .cores(1)
        .start_paused(true)
        .default_slack(Duration::ZERO)
        .build()
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// The runtime's counters since `before`.
fn since(rt: &Runtime, before: CoreStats) -> CoreStats {
    rt.stats().total - before
}

/// Sets its flag when dropped: tells that a timed-out service's future was dropped.
struct DropFlag(Rc<Cell<bool>>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.set(true);
    }
}

#[test]
fn a_slow_service_is_answered_408_with_an_empty_body_at_the_deadline() -> io::Result<()> {
    let rt = paused()?;
    let dropped = Rc::new(Cell::new(false));
    let flag = dropped.clone();
    let slow = service_fn(move |_: Request<()>| {
        let guard = DropFlag(flag.clone());
        async move {
            sleep(Duration::from_secs(60)).await;
            drop(guard);
            Ok::<_, Infallible>(Response::new(Full::<Bytes>::from("too late")))
        }
    });
    let before = rt.stats().total;
    let (status, body, took) = rt.block_on(async {
        let start = Instant::now();
        let svc = TimeoutLayer::new(Duration::from_secs(30)).layer(slow);
        let res = svc.oneshot(Request::new(())).await.unwrap();
        let took = start.elapsed();
        let status = res.status();
        (
            status,
            res.into_body().collect().await.unwrap().to_bytes(),
            took,
        )
    });
    assert_eq!(status, StatusCode::REQUEST_TIMEOUT);
    assert!(body.is_empty(), "{body:?}");
    assert_eq!(took, Duration::from_secs(30), "answered at the deadline");
    assert!(dropped.get(), "the service's future is dropped");
    let s = since(&rt, before);
    // The deadline and the service's sleep went in; the deadline fired, the sleep was
    // cancelled with the service's future.
    assert_eq!(
        (s.timer_inserts, s.timer_fires, s.timer_cancels),
        (2, 1, 1),
        "{s:?}"
    );
    Ok(())
}

#[test]
fn with_status_code_answers_with_that_status() -> io::Result<()> {
    let rt = paused()?;
    let never = service_fn(|_: Request<()>| async {
        std::future::pending::<()>().await;
        Ok::<_, Infallible>(Response::new(Empty::<Bytes>::new()))
    });
    let layered = TimeoutLayer::with_status_code(StatusCode::GATEWAY_TIMEOUT, ms(10));
    let direct = |svc| Timeout::with_status_code(svc, StatusCode::SERVICE_UNAVAILABLE, ms(10));
    let via = Timeout::<()>::layer_with_status_code(StatusCode::IM_A_TEAPOT, ms(10));
    let statuses = rt.block_on(async {
        [
            layered.layer(never).oneshot(Request::new(())).await,
            direct(never).oneshot(Request::new(())).await,
            via.layer(never).oneshot(Request::new(())).await,
            Timeout::<()>::layer(ms(10))
                .layer(never)
                .oneshot(Request::new(()))
                .await,
            Timeout::new(never, ms(10)).oneshot(Request::new(())).await,
        ]
        .map(|r| r.unwrap().status())
    });
    assert_eq!(
        statuses,
        [
            StatusCode::GATEWAY_TIMEOUT,
            StatusCode::SERVICE_UNAVAILABLE,
            StatusCode::IM_A_TEAPOT,
            StatusCode::REQUEST_TIMEOUT,
            StatusCode::REQUEST_TIMEOUT,
        ]
    );
    Ok(())
}

#[test]
fn a_fast_request_costs_one_insert_and_one_cancel() -> io::Result<()> {
    const N: u64 = 100;
    let rt = paused()?;
    // Answers at its second poll: the first one registers the deadline.
    let fast = service_fn(|req: Request<u64>| async move {
        yield_now().await;
        Ok::<_, Infallible>(Response::new(Full::<Bytes>::from(
            req.into_body().to_string(),
        )))
    });
    let svc = ServiceBuilder::new()
        .layer(TimeoutLayer::new(Duration::from_secs(30)))
        .service(fast);
    let before = rt.stats().total;
    rt.block_on(async {
        for i in 0..N {
            let res = svc.oneshot(Request::new(i)).await.unwrap();
            assert_eq!(res.status(), StatusCode::OK);
            let body = res.into_body().collect().await.unwrap().to_bytes();
            assert_eq!(body, i.to_string());
        }
    });
    let s = since(&rt, before);
    assert_eq!(
        (s.timer_inserts, s.timer_cancels, s.timer_fires),
        (N, N, 0),
        "{s:?}"
    );
    Ok(())
}

#[test]
fn a_response_ready_at_the_first_poll_registers_no_timer() -> io::Result<()> {
    let rt = paused()?;
    let ready = service_fn(|_: Request<()>| async {
        Ok::<_, Infallible>(Response::new(Empty::<Bytes>::new()))
    });
    let svc = Timeout::new(ready, Duration::from_secs(30));
    let before = rt.stats().total;
    let status = rt.block_on(async { svc.oneshot(Request::new(())).await.unwrap().status() });
    assert_eq!(status, StatusCode::OK);
    let s = since(&rt, before);
    assert_eq!((s.timer_inserts, s.timer_cancels), (0, 0), "{s:?}");
    Ok(())
}

#[test]
fn a_response_ready_as_the_deadline_passes_is_returned() -> io::Result<()> {
    // The service's sleep and the deadline fire at the same instant; the service's future is
    // polled first, so its answer wins (tower-http's checks the deadline first, and says 408).
    let rt = paused()?;
    let on_time = service_fn(|_: Request<()>| async {
        sleep(ms(30)).await;
        Ok::<_, Infallible>(Response::new(Empty::<Bytes>::new()))
    });
    let status = rt.block_on(async {
        let res = Timeout::new(on_time, ms(30))
            .oneshot(Request::new(()))
            .await;
        res.unwrap().status()
    });
    assert_eq!(status, StatusCode::OK);
    Ok(())
}

#[test]
fn the_service_errors_and_readiness_pass_through() -> io::Result<()> {
    /// Not ready at its first `poll_ready`, then ready; every call fails after a yield.
    struct Failing {
        polled_ready: u32,
    }
    impl Service<Request<()>> for Failing {
        type Response = Response<Empty<Bytes>>;
        type Error = &'static str;
        type Future = Pin<Box<dyn Future<Output = Result<Self::Response, &'static str>>>>;
        fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), &'static str>> {
            self.polled_ready += 1;
            if self.polled_ready == 1 {
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            Poll::Ready(Ok(()))
        }
        fn call(&mut self, _: Request<()>) -> Self::Future {
            Box::pin(async {
                yield_now().await;
                Err("no")
            })
        }
    }
    let rt = paused()?;
    let (err, polled_ready) = rt.block_on(async {
        let mut svc = Timeout::new(Failing { polled_ready: 0 }, Duration::from_secs(1));
        let err = (&mut svc).oneshot(Request::new(())).await.unwrap_err();
        (err, svc.get_ref().polled_ready)
    });
    assert_eq!(err, "no", "the service's own error, unchanged");
    assert_eq!(polled_ready, 2, "poll_ready is the service's");
    Ok(())
}

#[test]
fn fast_requests_while_the_core_parks_rearm_the_timerfd_once() -> io::Result<()> {
    // On the real clock, where the timerfd is used (paused time never arms it). Each request
    // waits for a blocking-pool job that returns only once the core has published that it
    // sleeps: the core goes idle with the request's deadline in its wheel, every time. The
    // first deadline arms the timerfd; the later ones are later than that arming, and their
    // cancels never re-program it (the `Lazy` policy): one `timerfd_settime` for them all.
    const N: u64 = 20;
    let rt = Builder::new().cores(1).build()?;
    let core = rt.handle(0);
    let waits_for_a_park = service_fn(move |_: Request<()>| {
        let core = core.clone();
        async move {
            let parked = tickless::task::spawn_blocking(move || {
                while !core.is_parked() {
                    std::thread::sleep(Duration::from_micros(50));
                }
            });
            parked.await.unwrap();
            Ok::<_, Infallible>(Response::new(Empty::<Bytes>::new()))
        }
    });
    let svc = Timeout::new(waits_for_a_park, Duration::from_secs(30));
    let before = rt.stats().total;
    rt.block_on(async {
        for _ in 0..N {
            let res = svc.clone().oneshot(Request::new(())).await.unwrap();
            assert_eq!(res.status(), StatusCode::OK);
        }
    });
    let s = since(&rt, before);
    assert_eq!(
        (s.timer_inserts, s.timer_cancels, s.timer_fires),
        (N, N, 0),
        "{s:?}"
    );
    assert!(s.parks >= N, "each request waited in a park: {s:?}");
    assert_eq!(s.timerfd_rearms, 1, "{s:?}");
    Ok(())
}

/// A body whose frames come after the given gaps, each counted from when it is asked for.
struct Gaps {
    gaps: VecDeque<Duration>,
    sleep: Option<Sleep>,
}

fn gaps(ms_each: &[u64]) -> Gaps {
    Gaps {
        gaps: ms_each.iter().map(|&n| ms(n)).collect(),
        sleep: None,
    }
}

impl Body for Gaps {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = &mut *self;
        let Some(&gap) = this.gaps.front() else {
            return Poll::Ready(None);
        };
        ready!(Pin::new(this.sleep.get_or_insert_with(|| sleep(gap))).poll(cx));
        this.sleep = None;
        this.gaps.pop_front();
        Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(b"x")))))
    }
}

/// Reads `body` to its end or its first error: when each frame came (`Ok`) and when the error
/// did (`Err`), on the paused clock from the first read.
async fn read_times<B: Body<Error = BoxError> + Unpin>(
    mut body: B,
) -> Vec<Result<Duration, Duration>> {
    let start = Instant::now();
    let mut log = Vec::new();
    while let Some(frame) = body.frame().await {
        let at = start.elapsed();
        match frame {
            Ok(_) => log.push(Ok(at)),
            Err(e) => {
                assert!(e.is::<TimeoutError>(), "{e}");
                log.push(Err(at));
                break;
            }
        }
    }
    log
}

#[test]
fn a_body_fails_after_a_gap_longer_than_the_timeout_and_not_before() -> io::Result<()> {
    let rt = paused()?;
    let before = rt.stats().total;
    let log = rt.block_on(read_times(TimeoutBody::new(
        ms(30),
        gaps(&[10, 20, 29, 45]),
    )));
    // 59 ms of body before the error: the timeout counts from each frame. The late frame's
    // error comes 30 ms after the frame before it, not at its own 45 ms, and not earlier.
    assert_eq!(log, [Ok(ms(10)), Ok(ms(30)), Ok(ms(59)), Err(ms(89))]);
    let s = since(&rt, before);
    // Four waits, each one insert: three cancelled as their frame came, one fired. The body's
    // own four sleeps: three fired, the last cancelled as the body was dropped.
    assert_eq!(
        (s.timer_inserts, s.timer_fires, s.timer_cancels),
        (4 + 4, 1 + 3, 3 + 1),
        "{s:?}"
    );
    Ok(())
}

#[test]
fn a_body_within_its_timeout_reads_to_the_end() -> io::Result<()> {
    let rt = paused()?;
    let log = rt.block_on(read_times(TimeoutBody::new(ms(30), gaps(&[25; 6]))));
    assert_eq!(log, (1..=6).map(|i| Ok(ms(25 * i))).collect::<Vec<_>>());
    Ok(())
}

#[test]
fn a_frame_that_comes_as_the_deadline_passes_is_returned() -> io::Result<()> {
    let rt = paused()?;
    let log = rt.block_on(read_times(TimeoutBody::new(ms(30), gaps(&[30, 31]))));
    assert_eq!(log, [Ok(ms(30)), Err(ms(60))]);
    Ok(())
}

#[test]
fn a_timed_out_body_keeps_failing() -> io::Result<()> {
    let rt = paused()?;
    rt.block_on(async {
        let mut body = TimeoutBody::new(ms(10), gaps(&[20]));
        let first = body.frame().await.unwrap().unwrap_err();
        assert_eq!(
            first.to_string(),
            "data was not received within the designated timeout"
        );
        // The inner body's frame is ready by now; the timed-out body still fails.
        tickless::time::advance(ms(20)).await;
        for _ in 0..2 {
            let again = body.frame().await.unwrap().unwrap_err();
            assert!(again.is::<TimeoutError>(), "{again}");
        }
    });
    Ok(())
}

#[test]
fn a_ready_body_costs_no_timer_and_keeps_its_size() -> io::Result<()> {
    let rt = paused()?;
    let before = rt.stats().total;
    let body = TimeoutBody::new(ms(30), Full::<Bytes>::from("twelve bytes"));
    assert_eq!(body.size_hint().exact(), Some(12));
    assert!(!body.is_end_stream());
    assert!(TimeoutBody::new(ms(30), Empty::<Bytes>::new()).is_end_stream());
    let read = rt.block_on(body.collect()).unwrap().to_bytes();
    assert_eq!(read, "twelve bytes");
    let s = since(&rt, before);
    assert_eq!((s.timer_inserts, s.clock_reads), (0, 0), "{s:?}");
    Ok(())
}

#[test]
fn the_inner_bodys_error_comes_boxed() -> io::Result<()> {
    let rt = paused()?;
    let failing =
        http_body_util::StreamBody::new(futures_lite::stream::once(
            Err::<Frame<Bytes>, io::Error>(io::Error::other("reset")),
        ));
    let e = rt
        .block_on(TimeoutBody::new(ms(30), failing).collect())
        .unwrap_err();
    assert_eq!(e.downcast_ref::<io::Error>().unwrap().to_string(), "reset");
    Ok(())
}

#[test]
fn request_body_timeout_wraps_the_request_body() -> io::Result<()> {
    let rt = paused()?;
    let upload = service_fn(|req: Request<TimeoutBody<Gaps>>| async move {
        let status = match req.into_body().collect().await {
            Ok(_) => StatusCode::OK,
            Err(e) if e.is::<TimeoutError>() => StatusCode::REQUEST_TIMEOUT,
            Err(_) => StatusCode::BAD_REQUEST,
        };
        Ok::<_, Infallible>(Response::builder().status(status).body(()).unwrap())
    });
    let statuses = rt.block_on(async {
        let layered = RequestBodyTimeoutLayer::new(ms(30)).layer(upload);
        let direct = RequestBodyTimeout::new(upload, ms(30));
        let via = RequestBodyTimeout::<()>::layer(ms(50)).layer(upload);
        [
            layered.oneshot(Request::new(gaps(&[20, 20, 20]))).await,
            direct.oneshot(Request::new(gaps(&[20, 40]))).await,
            via.oneshot(Request::new(gaps(&[20, 40]))).await,
        ]
        .map(|r| r.unwrap().status())
    });
    assert_eq!(
        statuses,
        [StatusCode::OK, StatusCode::REQUEST_TIMEOUT, StatusCode::OK]
    );
    Ok(())
}

#[test]
fn both_layers_stack_on_one_service() -> io::Result<()> {
    let rt = paused()?;
    let handle = service_fn(|req: Request<TimeoutBody<Gaps>>| async move {
        let n = req.into_body().collect().await?.to_bytes().len();
        Ok::<_, BoxError>(Response::new(Full::<Bytes>::from(n.to_string())))
    });
    let svc = ServiceBuilder::new()
        .layer(TimeoutLayer::new(ms(100)))
        .layer(RequestBodyTimeoutLayer::new(ms(30)))
        .service(handle);
    rt.block_on(async {
        let read = svc.oneshot(Request::new(gaps(&[20; 4]))).await.unwrap();
        let body = read.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(body, "4", "four frames of a byte, each in time");
        // Every frame in time, but the whole request too long: 408.
        let long = svc.oneshot(Request::new(gaps(&[20; 8]))).await;
        assert_eq!(long.unwrap().status(), StatusCode::REQUEST_TIMEOUT);
        // A frame too late: the service's error, before the request's deadline.
        let late = svc
            .oneshot(Request::new(gaps(&[20, 40])))
            .await
            .unwrap_err();
        assert!(late.is::<TimeoutError>(), "{late}");
    });
    Ok(())
}

/// What axum 0.8's `Router::layer` asks of a layer `L` over its `Route`: `L: Layer<Route> +
/// Clone + Send + Sync + 'static`, its service `Clone + Send + Sync + 'static` and that
/// service's future `Send + 'static`; and of a body, `Send + 'static` (`axum::body::Body::new`).
/// A stand-in `Route`: a `Send + Sync` service with a `Send` boxed future, as axum's is.
#[test]
fn the_types_are_what_axum_asks_for() {
    fn layer<L: Layer<S> + Clone + Send + Sync + 'static, S>(_: &L, _: S)
    where
        L::Service: Clone + Send + Sync + 'static,
    {
    }
    fn future<F: Future + Send + 'static>(_: &F) {}
    fn body<B: Body + Send + Sync + Unpin + 'static>(_: &B) {}

    type Route =
        tower::util::BoxCloneSyncService<Request<Full<Bytes>>, Response<Full<Bytes>>, Infallible>;
    let route = || -> Route {
        tower::util::BoxCloneSyncService::new(service_fn(|_| async {
            Ok(Response::new(Full::default()))
        }))
    };
    layer(&TimeoutLayer::new(ms(1)), route());
    layer(&RequestBodyTimeoutLayer::new(ms(1)), route());
    let rt = paused().unwrap();
    rt.block_on(async {
        let ready = service_fn(|_: Request<()>| {
            std::future::ready(Ok::<_, Infallible>(Response::new(Full::<Bytes>::default())))
        });
        let mut svc = Timeout::new(ready, ms(1));
        let f: ResponseFuture<_> = svc.call(Request::new(()));
        future(&f);
        body(&TimeoutBody::new(ms(1), Full::<Bytes>::default()));
        body(&TimeoutBody::new(ms(1), gaps(&[1])));
        f.await.unwrap();
    });
}

/// tower's error-returning timeout: a slow service fails with `Elapsed` at the deadline, for
/// `HandleErrorLayer` to answer; a fast one passes, its error boxed as tower boxes it.
mod tower_s_timeout {
    use super::*;
    use tickless_http::tower::timeout::{error::Elapsed, TimeoutLayer as TowerTimeoutLayer};

    #[test]
    fn a_slow_service_fails_with_elapsed_at_the_deadline_after_one_timer() -> io::Result<()> {
        let rt = paused()?;
        let before = rt.stats().total;
        let (err, took) = rt.block_on(async {
            let svc = ServiceBuilder::new()
                .layer(TowerTimeoutLayer::new(ms(30)))
                .service_fn(|_: ()| async {
                    sleep(ms(100)).await;
                    Ok::<_, Infallible>("late")
                });
            let start = Instant::now();
            let err = svc.oneshot(()).await.unwrap_err();
            (err, start.elapsed())
        });
        assert!(err.is::<Elapsed>(), "{err}");
        assert_eq!(err.to_string(), "request timed out");
        assert_eq!(took, ms(30));
        let s = since(&rt, before);
        // The timeout's timer fired; the service's own sleep was cancelled with its future.
        assert_eq!((s.timer_inserts, s.timer_fires, s.timer_cancels), (2, 1, 1));
        Ok(())
    }

    /// A `HandleErrorLayer` function written for tower tests for tower's own `Elapsed`: it
    /// recognises this middleware's timeouts (a look-alike type would answer 500, not 408).
    #[test]
    fn the_error_is_tower_s_own_elapsed_and_the_builder_shorthand_gives_it() -> io::Result<()> {
        use tickless_http::tower::ServiceBuilderExt;

        fn status_of(err: &tower::BoxError) -> StatusCode {
            if err.is::<tower::timeout::error::Elapsed>() {
                StatusCode::REQUEST_TIMEOUT
            } else {
                StatusCode::INTERNAL_SERVER_ERROR
            }
        }
        let rt = paused()?;
        let before = rt.stats().total;
        let (layered, shorthand) = rt.block_on(async {
            let slow = |_: ()| async {
                sleep(ms(100)).await;
                Ok::<_, Infallible>("late")
            };
            let layered = ServiceBuilder::new()
                .layer(TowerTimeoutLayer::new(ms(30)))
                .service_fn(slow)
                .oneshot(())
                .await;
            let shorthand = ServiceBuilder::new()
                .tickless_timeout(ms(30))
                .service_fn(slow)
                .oneshot(())
                .await;
            (layered.unwrap_err(), shorthand.unwrap_err())
        });
        assert_eq!(status_of(&layered), StatusCode::REQUEST_TIMEOUT);
        assert_eq!(status_of(&shorthand), StatusCode::REQUEST_TIMEOUT);
        assert_eq!(status_of(&"down".into()), StatusCode::INTERNAL_SERVER_ERROR);
        // Both on the core's wheel: each a timeout timer that fired, a sleep cancelled.
        let s = since(&rt, before);
        assert_eq!((s.timer_fires, s.timer_cancels), (2, 2), "{s:?}");
        Ok(())
    }

    #[test]
    fn a_fast_service_passes_and_its_errors_come_boxed_not_as_elapsed() -> io::Result<()> {
        let rt = paused()?;
        let before = rt.stats().total;
        let (ok, err) = rt.block_on(async {
            let layer = TowerTimeoutLayer::new(ms(30));
            let ok = layer
                .layer(service_fn(
                    |n: u32| async move { Ok::<_, io::Error>(n + 1) },
                ))
                .oneshot(1)
                .await;
            let err = layer
                .layer(service_fn(|_: u32| async {
                    sleep(ms(10)).await;
                    Err::<u32, _>(io::Error::other("the service's own"))
                }))
                .oneshot(1)
                .await;
            (ok, err)
        });
        assert_eq!(ok.unwrap(), 2);
        let err = err.unwrap_err();
        assert!(!err.is::<Elapsed>());
        assert_eq!(err.to_string(), "the service's own");
        let s = since(&rt, before);
        // Ready at once: no timer; the failing one waited, so its timeout was set and cancelled.
        assert_eq!((s.timer_inserts, s.timer_cancels), (2, 1), "{s:?}");
        Ok(())
    }
}
