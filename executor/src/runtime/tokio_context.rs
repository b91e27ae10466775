//! The tokio context every core enters with `Builder::tokio_context(true)` (feature
//! `tokio-compat`): one small tokio runtime for the process, so that `tokio::spawn`,
//! `tokio::time` and `tokio::net` called inside libraries work from tickless tasks. Their timers
//! and I/O run on tokio's thread and wake tickless tasks across threads, through the cores'
//! inboxes like any remote wake.

use std::io;

/// The tokio runtime's handle, if the runtime has one.
#[derive(Clone, Default)]
pub(crate) struct TokioContext {
    /// `None`: no tokio context.
    #[cfg(feature = "tokio-compat")]
    handle: Option<tokio::runtime::Handle>,
}

/// What entering the context returns: tokio's guard, or nothing.
#[cfg(feature = "tokio-compat")]
pub(crate) type Entered<'a> = Option<tokio::runtime::EnterGuard<'a>>;
/// What entering the context returns: nothing, without the feature.
#[cfg(not(feature = "tokio-compat"))]
pub(crate) type Entered<'a> = Option<&'a ()>;

impl TokioContext {
    /// Enters the context on this thread until the guard drops (a no-op without one).
    pub(crate) fn enter(&self) -> Entered<'_> {
        #[cfg(feature = "tokio-compat")]
        return self.handle.as_ref().map(|h| h.enter());
        #[cfg(not(feature = "tokio-compat"))]
        None
    }
}

/// The tokio runtime a tickless runtime owns, if asked for.
#[derive(Default)]
pub(crate) struct TokioRuntime {
    /// One worker thread, timers and I/O enabled.
    #[cfg(feature = "tokio-compat")]
    runtime: Option<tokio::runtime::Runtime>,
}

impl TokioRuntime {
    /// Starts tokio's runtime if `wanted`.
    ///
    /// # Errors
    ///
    /// Starting tokio's runtime failed (its thread, its epoll instance).
    pub(crate) fn start(wanted: bool) -> io::Result<TokioRuntime> {
        #[cfg(feature = "tokio-compat")]
        if wanted {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("tickless-tokio")
                .enable_all()
                .build()?;
            return Ok(TokioRuntime {
                runtime: Some(runtime),
            });
        }
        let _ = wanted;
        Ok(TokioRuntime::default())
    }

    /// The context the cores enter.
    pub(crate) fn context(&self) -> TokioContext {
        TokioContext {
            #[cfg(feature = "tokio-compat")]
            handle: self.runtime.as_ref().map(|r| r.handle().clone()),
        }
    }

    /// Stops tokio's runtime without waiting for what its threads run (after the cores are
    /// gone, nothing of ours waits on it).
    pub(crate) fn stop(&mut self) {
        #[cfg(feature = "tokio-compat")]
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}
