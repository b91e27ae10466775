//! What wakes a core blocked in `epoll_wait` from another thread.

use tickless_io::internal::Unparker;

/// What wakes a core blocked in `epoll_wait`, from another thread: the core's eventfd in
/// production, a model thread's unpark in `loom-tests/`.
pub trait Unpark: Send + Sync + 'static {
    /// Makes the core's current or next blocking poll return.
    fn unpark(&self);
}

impl Unpark for Unparker {
    fn unpark(&self) {
        Unparker::unpark(self);
    }
}
