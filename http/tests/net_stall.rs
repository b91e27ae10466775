//! The stall detector's report of a request handler that blocks its core (a password hash
//! inline): it names the service the connection's task serves (`task::Builder::name`, which
//! `tickless_http` fills with the service's type name) and the handler's own frame, not only
//! the accept loop that spawned the connection. Counts and names only.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Empty, Full};
use hyper::body::Incoming;
use tickless::runtime::StallReport;
use tickless::Builder;

/// Blocks the core's thread 200 ms, as an inline hash would. Never inlined, and not a tail
/// call: a frame of its own in release builds too.
#[inline(never)]
fn hash_password() {
    std::thread::sleep(Duration::from_millis(200));
    std::hint::black_box(());
}

/// The handler's future: blocks (in a function of its own, as a hashing crate's would be),
/// then answers. A future type of the test's own, its `poll` never inlined: a frame of the
/// handler's in release builds too (an `async fn`'s body may be inlined into hyper's frames),
/// and a trait method of the user's type, which the report must keep.
struct Login;

impl Future for Login {
    type Output = Result<Response<Full<Bytes>>, Infallible>;

    #[inline(never)]
    fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Self::Output> {
        hash_password();
        Poll::Ready(Ok(Response::new(Full::from("ok"))))
    }
}

/// The handler.
fn login(_req: Request<Incoming>) -> Login {
    Login
}

/// The name of `T`, for a value of it.
fn type_name_of<T>(_: &T) -> &'static str {
    std::any::type_name::<T>()
}

#[test]
fn a_blocking_handler_is_reported_with_its_service_and_frame() -> io::Result<()> {
    let reports = Arc::new(Mutex::new(Vec::<StallReport>::new()));
    let seen = Arc::clone(&reports);
    let rt = Builder::new()
        .cores(1)
        .stall_threshold(Some(Duration::from_millis(50)))
        .on_stall(move |r| seen.lock().unwrap().push(r.clone()))
        .build()?;
    let service = tower::service_fn(login);
    let name = type_name_of(&service);
    let server = tickless_http::serve(&rt, SocketAddr::from(([127, 0, 0, 1], 0)), service)?;
    let uri = format!("http://{}/login", server.local_addr());
    rt.block_on(async {
        let client = tickless_http::client::<Empty<Bytes>>();
        let res = client.get(uri.parse().unwrap()).await.unwrap();
        assert_eq!(res.status(), StatusCode::OK);
        assert_eq!(res.into_body().collect().await.unwrap().to_bytes(), "ok");
        server.shutdown(Duration::from_secs(5)).await
    })?;
    let reports = reports.lock().unwrap();
    assert_eq!(reports.len(), 1, "{reports:?}");
    let r = &reports[0];
    assert!(r.task_id().is_some(), "{r}");
    assert_eq!(r.task_name(), Some(name), "{r}");
    assert!(name.contains("login"), "{name}");
    let line = r.to_string();
    assert!(line.contains(&format!("\"{name}\"")), "{line}");
    if let Some(trace) = r.backtrace() {
        // Where the thread is held, and the handler that called it under hyper's frames.
        assert!(
            line.contains("in net_stall::hash_password"),
            "{line}\n{trace}"
        );
        assert!(
            trace.outermost_user_frame().is_some_and(
                |f| f.starts_with("<net_stall::Login as core::future::future::Future>::poll")
            ),
            "{line}\n{trace}"
        );
    }
    Ok(())
}
