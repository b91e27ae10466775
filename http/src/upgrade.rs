//! Upgraded connections (WebSockets) run on the core that served their request.

use std::future::Future;

use tickless::Handle;

/// Wraps an upgrade callback (the one given to axum's `WebSocketUpgrade::on_upgrade`) so that
/// it runs as a task of the core that serves the request, next to the connection's stream,
/// whichever thread calls it.
///
/// axum's `on_upgrade` runs its callback with `tokio::spawn`: with the tokio context
/// (`tickless::Builder::tokio_context`, feature `tokio-compat`, which axum's `on_upgrade`
/// needs), on the tokio runtime of the core that served the request, which that core's thread
/// drives, so the socket works as it is. Wrapped in `on_core`, the callback is handed to the
/// core as a tickless task instead, with [`Handle::spawn_pinned`]: the future the callback
/// returns need not be `Send`, it is counted and shut down with the core's tasks, and it never
/// moves to another core. The tokio task only waits for the upgrade and hands the socket over.
///
/// Call it in the handler (on the core); the wrapped callback may be called from any thread.
///
/// # Examples
///
/// ```ignore
/// use axum::extract::ws::{WebSocket, WebSocketUpgrade};
///
/// async fn upgrade(ws: WebSocketUpgrade) -> axum::response::Response {
///     ws.on_upgrade(tickless_http::on_core(echo)) // was: ws.on_upgrade(echo)
/// }
///
/// async fn echo(mut socket: WebSocket) {
///     while let Some(Ok(msg)) = socket.recv().await {
///         if socket.send(msg).await.is_err() {
///             break;
///         }
///     }
/// }
/// ```
///
/// # Panics
///
/// Outside a tickless runtime (called anywhere but on a core).
pub fn on_core<T, C, F>(callback: C) -> impl FnOnce(T) -> OnCore + Send + 'static
where
    T: Send + 'static,
    C: FnOnce(T) -> F + Send + 'static,
    F: Future<Output = ()> + 'static,
{
    let core = Handle::current();
    move |socket| OnCore(core.spawn_pinned(move || callback(socket)))
}

/// The future [`on_core`]'s callback returns: the task on the core, awaited. A panic in the
/// task is the task's (caught on the core, as any task's); this future then completes.
///
/// # Examples
///
/// A callback wrapped on core 0, then called and awaited on core 1 (axum calls it from a tokio
/// task): it runs on core 0.
///
/// ```
/// use std::rc::Rc;
/// use std::sync::mpsc;
///
/// let rt = tickless::Builder::new().cores(2).build()?;
/// let (ran, where_it_ran) = mpsc::channel();
/// rt.block_on(async {
///     let callback = tickless_http::on_core(move |n: u32| async move {
///         let local = Rc::new(n); // the future need not be `Send`
///         ran.send((tickless::core_id(), *local)).unwrap();
///     });
///     let elsewhere = rt.handle(1).spawn(async move {
///         let on_core = callback(7); // an `OnCore`
///         on_core.await // completes when the task on core 0 has
///     });
///     elsewhere.await.unwrap();
/// });
/// assert_eq!(where_it_ran.recv().unwrap(), (0, 7));
/// # std::io::Result::Ok(())
/// ```
#[derive(Debug)]
#[must_use = "futures do nothing unless awaited"]
pub struct OnCore(tickless::JoinHandle<()>);

impl Future for OnCore {
    type Output = ();

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        // A panic or the runtime's shutdown ended the task: nothing to report to the caller,
        // which (axum's spawned task) discards the output.
        std::pin::Pin::new(&mut self.0).poll(cx).map(drop)
    }
}
