//! `JoinError`: why a task gave no output.

use std::any::Any;
use std::fmt;

use crate::sync::{lock, Mutex};

/// Why a task gave no output: it was cancelled (aborted, its runtime shut down, or its core
/// died), or it panicked (in a poll, or in its destructor when the core dropped it).
///
/// # Examples
///
/// ```
/// let rt = tickless::Runtime::new()?;
/// rt.block_on(async {
///     let stuck = tickless::spawn(std::future::pending::<()>());
///     stuck.abort();
///     let err = stuck.await.unwrap_err();
///     assert!(err.is_cancelled() && !err.is_panic());
///
///     let boom = tickless::spawn(async { panic!("boom") }); // the core lives on
///     let err = boom.await.unwrap_err();
///     assert!(err.is_panic() && !err.is_cancelled());
///     let payload = err.into_panic(); // for `std::panic::resume_unwind`
///     assert_eq!(payload.downcast_ref::<&str>(), Some(&"boom"));
/// });
/// # std::io::Result::Ok(())
/// ```
pub struct JoinError {
    /// Cancelled or panicked.
    repr: Repr,
}

/// The two kinds.
enum Repr {
    /// Aborted, or dropped unfinished by its core's shutdown.
    Cancelled,
    /// Behind a mutex only so that `JoinError` is `Sync` (and converts into `io::Error`); it is
    /// locked once, by `into_panic` or to print the message.
    Panic(Mutex<Box<dyn Any + Send + 'static>>),
}

impl JoinError {
    /// A cancelled task's error.
    pub(crate) fn cancelled() -> JoinError {
        JoinError {
            repr: Repr::Cancelled,
        }
    }

    /// A panicked task's error, with the panic's payload.
    pub(crate) fn panic(payload: Box<dyn Any + Send + 'static>) -> JoinError {
        JoinError {
            repr: Repr::Panic(Mutex::new(payload)),
        }
    }

    /// The task was aborted, or its runtime shut down (or its core died) before it finished.
    ///
    /// See the example on [`JoinError`].
    pub fn is_cancelled(&self) -> bool {
        matches!(self.repr, Repr::Cancelled)
    }

    /// The task panicked.
    ///
    /// See the example on [`JoinError`].
    pub fn is_panic(&self) -> bool {
        matches!(self.repr, Repr::Panic(_))
    }

    /// The panic's payload, to resume it with `std::panic::resume_unwind`.
    ///
    /// # Panics
    ///
    /// If the task did not panic (see [`is_panic`](Self::is_panic)).
    ///
    /// # Examples
    ///
    /// Passing a task's panic on to the awaiting task:
    ///
    /// ```should_panic
    /// let rt = tickless::Runtime::new()?;
    /// rt.block_on(async {
    ///     let task = tickless::spawn(async { panic!("boom") });
    ///     if let Err(err) = task.await {
    ///         std::panic::resume_unwind(err.into_panic()); // panics here, with "boom"
    ///     }
    /// });
    /// # std::io::Result::Ok(())
    /// ```
    pub fn into_panic(self) -> Box<dyn Any + Send + 'static> {
        match self.repr {
            Repr::Panic(p) => p.into_inner().unwrap_or_else(|e| e.into_inner()),
            Repr::Cancelled => panic!("`JoinError::into_panic` on a cancelled task"),
        }
    }
}

impl fmt::Debug for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.repr {
            Repr::Cancelled => f.write_str("JoinError::Cancelled"),
            Repr::Panic(p) => write!(f, "JoinError::Panic({:?})", panic_message(&**lock(p))),
        }
    }
}

impl fmt::Display for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.repr {
            Repr::Cancelled => f.write_str("task was cancelled"),
            Repr::Panic(p) => write!(
                f,
                "task panicked with message {:?}",
                panic_message(&**lock(p))
            ),
        }
    }
}

impl std::error::Error for JoinError {}

/// A panic payload's message, if it is a string.
pub(crate) fn panic_message(p: &(dyn Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "<non-string panic payload>".to_string())
}

impl From<JoinError> for std::io::Error {
    fn from(e: JoinError) -> std::io::Error {
        std::io::Error::other(e)
    }
}
