//! The thread of a core other than core 0: start, loop, shutdown, and what it leaves behind if
//! it dies.

use std::io;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{mpsc, Arc};

use crate::catch::drop_caught;
use crate::task::join_error::panic_message;
use crate::worker::config::CoreConfig;
use crate::worker::id::CoreId;
use crate::worker::shared::Shared;
use crate::worker::shutdown::close;
use crate::worker::{Core, Siblings};

/// Tells the runtime a core's thread is gone, however it ends (a panic included).
struct Done(mpsc::Sender<usize>, usize);

impl Drop for Done {
    fn drop(&mut self) {
        let _ = self.0.send(self.1);
    }
}

/// The body of the thread of core `id.index > 0`.
///
/// A panic that escapes the loop (a broken invariant of the runtime, or of the system: tasks'
/// own panics are caught where they run) kills the core, visibly: the panic's message is
/// recorded for [`Runtime::shutdown`](crate::Runtime::shutdown) to report, the core still
/// drops its tasks (so their handles resolve as cancelled) and closes its inbox (so later
/// spawns onto it are refused, their handles cancelled, as after a shutdown).
pub(crate) fn core_thread(
    id: CoreId,
    config: CoreConfig,
    siblings: Siblings,
    cpu: Option<usize>,
    started: mpsc::SyncSender<io::Result<Arc<Shared>>>,
    done: mpsc::Sender<usize>,
) {
    let _done = Done(done, id.index);
    let core = cpu
        .map_or(Ok(()), tickless_io::internal::cpu::pin_current_thread)
        .and_then(|()| Core::new(id, config, siblings));
    let core = match core {
        Ok(core) => core,
        Err(e) => {
            let _ = started.send(Err(e));
            return;
        }
    };
    let shared = core.shared().clone();
    let _ = started.send(Ok(shared.clone()));
    let _entered = core.enter();
    // For the core's lifetime: libraries' `tokio::spawn` and kin find the core's tokio runtime.
    #[cfg(feature = "tokio-compat")]
    let _tokio = core.tokio().map(|t| t.enter());
    let ran = catch_unwind(AssertUnwindSafe(|| core.run_until_stopped()));
    if let Err(payload) = &ran {
        shared.set_death(panic_message(&**payload));
    }
    if let Err(payload) = catch_unwind(AssertUnwindSafe(|| core.shutdown())) {
        // Shutting down failed too: at least refuse everything from now on.
        if ran.is_ok() {
            shared.set_death(panic_message(&*payload));
        }
        for op in close(&shared) {
            drop_caught(op);
        }
    }
}
