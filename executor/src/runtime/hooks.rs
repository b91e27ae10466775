//! The builder's observers: the task hooks (`Builder::on_task_spawn`, `on_task_terminate`,
//! `on_before_task_poll`, `on_after_task_poll`, as tokio's).

use std::sync::Arc;

use crate::runtime::Builder;
use crate::task::hooks::TaskMeta;

impl Builder {
    /// Calls `f` when a task is spawned, on the spawning thread, before the task can run; as
    /// tokio's `Builder::on_task_spawn`.
    ///
    /// `f` is told the task's id and where it was spawned ([`TaskMeta`]). It runs for every
    /// task of the runtime: [`spawn`](crate::spawn), [`spawn_local`](crate::spawn_local),
    /// [`Handle::spawn`](crate::Handle::spawn), `JoinSet`'s spawns, and the task a
    /// [`spawn_blocking`](crate::task::spawn_blocking) awaits its job in. A panic of `f` is
    /// caught (and counted in [`CoreStats::wake_panics`](crate::CoreStats::wake_panics) where
    /// a core is current); the spawn goes on.
    ///
    /// # Costs
    ///
    /// With no task hook set, a task checks one word per poll and at its end; with one, every
    /// task holds a reference to the runtime's hooks (one reference count per spawn).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use std::sync::Arc;
    ///
    /// let spawned = Arc::new(AtomicUsize::new(0));
    /// let count = spawned.clone();
    /// let rt = tickless::Builder::new()
    ///     .cores(1)
    ///     .on_task_spawn(move |_| {
    ///         count.fetch_add(1, Ordering::Relaxed);
    ///     })
    ///     .build()?;
    /// rt.block_on(async {
    ///     for _ in 0..3 {
    ///         tickless::spawn(async {}).await.unwrap();
    ///     }
    /// });
    /// assert_eq!(spawned.load(Ordering::Relaxed), 3);
    /// # std::io::Result::Ok(())
    /// ```
    pub fn on_task_spawn<F>(&mut self, f: F) -> &mut Self
    where
        F: Fn(&TaskMeta<'_>) + Send + Sync + 'static,
    {
        self.observers.hooks.spawn = Some(Arc::new(f));
        self
    }

    /// Calls `f` when a task terminates: it completed, panicked, was aborted, or was dropped
    /// unfinished by the runtime's shutdown; as tokio's `Builder::on_task_terminate`. It runs
    /// where the task's future is dropped (its core, for all but a task leaked by a shutdown
    /// on another thread), after the task's last poll hooks. A panic of `f` is caught.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use std::sync::Arc;
    ///
    /// let ended = Arc::new(AtomicUsize::new(0));
    /// let count = ended.clone();
    /// let rt = tickless::Builder::new()
    ///     .cores(1)
    ///     .on_task_terminate(move |_| {
    ///         count.fetch_add(1, Ordering::Relaxed);
    ///     })
    ///     .build()?;
    /// rt.block_on(async {
    ///     tickless::spawn(async {}).await.unwrap();
    ///     let stuck = tickless::spawn(std::future::pending::<()>());
    ///     stuck.abort();
    ///     assert!(stuck.await.unwrap_err().is_cancelled());
    /// });
    /// assert_eq!(ended.load(Ordering::Relaxed), 2); // one completed, one aborted
    /// # std::io::Result::Ok(())
    /// ```
    pub fn on_task_terminate<F>(&mut self, f: F) -> &mut Self
    where
        F: Fn(&TaskMeta<'_>) + Send + Sync + 'static,
    {
        self.observers.hooks.terminate = Some(Arc::new(f));
        self
    }

    /// Calls `f` on the task's core just before each poll of a task; as tokio's
    /// `Builder::on_before_task_poll`. Inside it, [`task::id`](crate::task::id()) is the
    /// task's. A panic of `f` is caught, and the poll goes on.
    ///
    /// # Examples
    ///
    /// Counting polls per task:
    ///
    /// ```
    /// use std::collections::HashMap;
    /// use std::sync::{Arc, Mutex};
    ///
    /// let polls = Arc::new(Mutex::new(HashMap::new()));
    /// let seen = polls.clone();
    /// let rt = tickless::Builder::new()
    ///     .cores(1)
    ///     .on_before_task_poll(move |meta| {
    ///         *seen.lock().unwrap().entry(meta.id()).or_insert(0) += 1;
    ///     })
    ///     .build()?;
    /// let id = rt.block_on(async {
    ///     let task = tickless::spawn(async {
    ///         tickless::yield_now().await; // two polls
    ///     });
    ///     let id = task.id();
    ///     task.await.unwrap();
    ///     id
    /// });
    /// assert_eq!(polls.lock().unwrap()[&id], 2);
    /// # std::io::Result::Ok(())
    /// ```
    pub fn on_before_task_poll<F>(&mut self, f: F) -> &mut Self
    where
        F: Fn(&TaskMeta<'_>) + Send + Sync + 'static,
    {
        self.observers.hooks.before_poll = Some(Arc::new(f));
        self
    }

    /// Calls `f` on the task's core just after each poll of a task (after the future's drop,
    /// when that poll completed it); as tokio's `Builder::on_after_task_poll`. A panic of `f`
    /// is caught.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use std::sync::Arc;
    ///
    /// let after = Arc::new(AtomicUsize::new(0));
    /// let count = after.clone();
    /// let rt = tickless::Builder::new()
    ///     .cores(1)
    ///     .on_after_task_poll(move |_| {
    ///         count.fetch_add(1, Ordering::Relaxed);
    ///     })
    ///     .build()?;
    /// rt.block_on(async { tickless::spawn(async {}).await.unwrap() });
    /// assert_eq!(after.load(Ordering::Relaxed), 1);
    /// # std::io::Result::Ok(())
    /// ```
    pub fn on_after_task_poll<F>(&mut self, f: F) -> &mut Self
    where
        F: Fn(&TaskMeta<'_>) + Send + Sync + 'static,
    {
        self.observers.hooks.after_poll = Some(Arc::new(f));
        self
    }
}
