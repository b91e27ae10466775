//! Task names: [`Builder`], as tokio's `tokio::task::Builder`, spawns a task with a name, which
//! the stall detector's report gives ([`StallReport::task_name`]); `tickless_http` names each
//! connection's task after the service it serves.
//!
//! # How a name reaches the task
//!
//! A name is interned once (a `&'static str` boxed and leaked, one per distinct name, for the
//! process's life), so that the task carries it as one word and its core publishes it with one
//! store at each of its polls (an unnamed task's poll stores nothing more). The builder puts it
//! in a thread-local for the one spawn it makes (`task::id::name_next`), and the new task's
//! meta takes it from there (`Meta::new`, on the spawning thread): no spawn function has to
//! carry it.
//!
//! [`StallReport::task_name`]: crate::runtime::StallReport::task_name

use std::cell::Cell;
use std::future::Future;
use std::io;
use std::sync::Mutex;

use crate::runtime::Handle;
use crate::task::id::name_next;
use crate::task::JoinHandle;

thread_local! {
    /// The last name this thread interned (a builder named the same way each time finds it
    /// here, without the lock).
    static LAST: Cell<Option<&'static &'static str>> = const { Cell::new(None) };
}

/// Every name interned so far.
static NAMES: Mutex<Vec<&'static &'static str>> = Mutex::new(Vec::new());

/// Spawns a task with a name, as tokio's `tokio::task::Builder` (which needs
/// `tokio_unstable` there).
///
/// The name is for people: the stall detector's report gives it
/// ([`StallReport::task_name`](crate::runtime::StallReport::task_name), and its one line), next
/// to the task's id and spawn location. It is a `&'static str` (tokio's takes any `&str`): a
/// string literal, or a type's name (`std::any::type_name`). Each distinct name is kept for the
/// process's life, so names are meant to be few: not one per connection or per request.
///
/// # Examples
///
/// ```
/// let rt = tickless::Runtime::new()?;
/// rt.block_on(async {
///     let task = tickless::task::Builder::new()
///         .name("flusher")
///         .spawn(async { 7 })?;
///     assert_eq!(task.await.unwrap(), 7);
///     std::io::Result::Ok(())
/// })?;
/// # std::io::Result::Ok(())
/// ```
#[derive(Debug, Default, Clone, Copy)]
pub struct Builder {
    /// The name, interned.
    name: Option<&'static &'static str>,
}

impl Builder {
    /// A builder for an unnamed task.
    pub fn new() -> Builder {
        Builder::default()
    }

    /// Names the task.
    pub fn name(self, name: &'static str) -> Builder {
        Builder {
            name: Some(intern(name)),
        }
    }

    /// Spawns `future` as [`spawn`](crate::spawn) does, with the name.
    ///
    /// # Errors
    ///
    /// None today: the `io::Result` is tokio's signature.
    ///
    /// # Panics
    ///
    /// Outside a runtime, as [`spawn`](crate::spawn).
    #[track_caller]
    pub fn spawn<F>(self, future: F) -> io::Result<JoinHandle<F::Output>>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let _named = self.enter();
        Ok(crate::spawn(future))
    }

    /// Spawns `future` as [`spawn_local`](crate::spawn_local) does, with the name.
    ///
    /// # Errors
    ///
    /// None today: the `io::Result` is tokio's signature.
    ///
    /// # Panics
    ///
    /// Outside a runtime, as [`spawn_local`](crate::spawn_local).
    #[track_caller]
    pub fn spawn_local<F>(self, future: F) -> io::Result<JoinHandle<F::Output>>
    where
        F: Future + 'static,
        F::Output: 'static,
    {
        let _named = self.enter();
        Ok(crate::spawn_local(future))
    }

    /// Spawns `future` onto `handle`'s core as [`Handle::spawn`] does, with the name.
    ///
    /// # Errors
    ///
    /// None today: the `io::Result` is tokio's signature.
    #[track_caller]
    pub fn spawn_on<F>(self, future: F, handle: &Handle) -> io::Result<JoinHandle<F::Output>>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let _named = self.enter();
        Ok(handle.spawn(future))
    }

    /// Puts the name where the new task's meta takes it, until the guard drops (a spawn
    /// that panicked, outside a runtime, leaves none behind). The spawn is called in the
    /// caller's own body, not in a closure: `#[track_caller]` reaches it only so.
    fn enter(self) -> Named {
        name_next(self.name);
        Named
    }
}

/// Takes the name back from the thread-local when dropped.
struct Named;

impl Drop for Named {
    fn drop(&mut self) {
        name_next(None);
    }
}

/// `name` as one word: the same `&'static &'static str` for the same string each time.
fn intern(name: &'static str) -> &'static &'static str {
    if let Some(last) = LAST.with(Cell::get).filter(|last| **last == name) {
        return last;
    }
    let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
    let interned = match names.iter().find(|n| ***n == name) {
        Some(n) => *n,
        None => {
            let n: &'static &'static str = Box::leak(Box::new(name));
            names.push(n);
            n
        }
    };
    LAST.with(|last| last.set(Some(interned)));
    interned
}

#[cfg(test)]
mod tests {
    use super::intern;

    #[test]
    fn one_word_per_distinct_name() {
        let a = intern("a");
        assert!(std::ptr::eq(a, intern("a")));
        let b = intern("b");
        assert!(!std::ptr::eq(a, b));
        // Equal strings at other addresses are the same name.
        let owned: &'static str = Box::leak(String::from("a").into_boxed_str());
        assert!(std::ptr::eq(a, intern(owned)));
        assert_eq!((*a, *b), ("a", "b"));
    }
}
