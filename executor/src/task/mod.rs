//! Tasks: spawning, join handles, panics and aborts. The paths are tokio's: a port is a change
//! of imports (`tokio::task::spawn` becomes `tickless::task::spawn`).

mod bound;
mod current;
mod deferred;
mod harness;
pub(crate) mod hooks;
pub(crate) mod id;
pub(crate) mod join_error;
mod join_handle;
mod join_set;
pub(crate) mod join_slot;
mod name;
mod spawn;
mod yield_now;

pub use current::{id, try_id};
pub(crate) use deferred::DeferredStart;
pub use id::Id;
pub use join_error::JoinError;
pub use join_handle::JoinHandle;
pub use join_set::JoinSet;
pub use name::Builder;
#[cfg(not(loom))]
pub(crate) use spawn::spawn_remote;
#[cfg(loom)]
#[doc(hidden)]
pub use spawn::{schedule, spawn_remote};
pub use spawn::{spawn, spawn_blocking, spawn_local};
pub use yield_now::yield_now;
