//! Which frame of a stalled thread's stack the one-line report names: the innermost one that
//! is neither a runtime's nor the system's, told by its symbol's name alone, so that a release
//! build without debug info (no file, no line) names it as well as a debug build.
//!
//! # The rule
//!
//! A frame is the user's unless its function is
//!
//! - a C symbol (a name without `::`: libc's and glibc's `nanosleep`, `__GI___poll`,
//!   `start_thread`, `clone3`, the dynamic loader's), or an address that resolved to nothing;
//! - in one of the crates that run the user's code rather than being it: `std`, `core`,
//!   `alloc`, `tickless` (and its `tickless_io`, `tickless_timer`, `tickless_http`), `tokio`,
//!   `async_task`, `backtrace`, `libc`, and libtest's `test`; or the frameworks that call a
//!   request handler (`hyper`, `hyper_util`, `h2`, `axum`, `axum_core`, `tower` and its
//!   `tower_http`, `tower_service`, `tower_layer`, `http_body`, `http_body_util`, `futures_core`,
//!   `futures_util`, `futures_lite`);
//! - a trait method whose type and trait are both those crates' (`<core::pin::Pin<P> as
//!   core::future::future::Future>::poll`), or a generic type's (or a primitive's) method of
//!   one of those crates' traits (`<F as core::future::future::Future>::poll`).
//!
//! So the user's own trait methods count, std's traits included (`<app::Hasher as
//! core::fmt::Debug>::fmt`, `<app::Job as app::Run>::run`), and the user's traits on std's
//! types (`<alloc::vec::Vec<T> as app::Run>::run`), and so do the libraries the user
//! calls (`argon2::...`): the innermost of those is where the core's thread is held, and the
//! outermost is the task's own code (a request handler's future, under the framework's
//! frames), which the report names too when it is another.

/// The crates whose frames are never the user's.
const RUNTIME_CRATES: [&str; 27] = [
    "std",
    "core",
    "alloc",
    "tickless",
    "tickless_io",
    "tickless_timer",
    "tickless_http",
    "tokio",
    "backtrace",
    "libc",
    "rustc_std_workspace_core",
    // The task cells tickless runs, and the test harness that runs `#[test]` functions.
    "async_task",
    "test",
    // The frameworks between a connection's task and its request handler.
    "hyper",
    "hyper_util",
    "h2",
    "axum",
    "axum_core",
    "tower",
    "tower_http",
    "tower_service",
    "tower_layer",
    "http_body",
    "http_body_util",
    "futures_core",
    "futures_util",
    "futures_lite",
];

/// Whether a frame whose function is `name` (demangled, without its hash) is the user's (see
/// the module's rule).
pub(crate) fn is_user_frame(name: &str) -> bool {
    let name = name.trim();
    if let Some(qualified) = name.strip_prefix('<') {
        // `<Type as Trait>::method`, or `<Type>::method` (an inherent method of a type the
        // demangler writes in brackets: a slice, a pointer, a generic instance).
        let Some(inside) = split_qualified(qualified) else {
            return false;
        };
        let (ty, tr) = match inside.split_once(" as ") {
            Some((ty, tr)) => (ty, Some(tr)),
            None => (inside, None),
        };
        // The user's type, or the user's trait (on any type: a generic parameter, a
        // primitive, std's `Vec`): the impl is the user's code. std's `FnOnce` on a closure,
        // or core's `Future` on tokio's type, is the runtime calling.
        return is_users(ty) || tr.is_some_and(is_users);
    }
    is_users(name)
}

/// Whether a path starts with a crate that is not a runtime's.
fn is_users(path: &str) -> bool {
    path_crate(path).is_some_and(|krate| !is_runtime(krate))
}

/// Whether a frame is the executor's own (tickless's loop and task cells, not its HTTP
/// crate's glue): outside the task whose poll stalled, so the user's frames of the stall end
/// there (a `block_on` caller's are not the stalled poll's).
pub(crate) fn is_executor_frame(name: &str) -> bool {
    let name = name.trim().trim_start_matches('<');
    ["tickless::", "async_task::"]
        .iter()
        .any(|p| name.starts_with(p))
}

/// `Type as Trait>::method...` up to the `>` that closes the opening `<`: the inside.
fn split_qualified(s: &str) -> Option<&str> {
    let mut depth = 1usize;
    for (i, c) in s.char_indices() {
        match c {
            '<' => depth += 1,
            '>' => {
                depth -= 1;
                if depth == 0 {
                    return Some(&s[..i]);
                }
            }
            _ => {}
        }
    }
    None
}

/// The crate a path starts with (`app` of `app::db::query`, of `&mut app::Conn` or of
/// `[app::Row]`); `None` for a name without `::` (a C symbol, a generic parameter, a
/// primitive type).
fn path_crate(path: &str) -> Option<&str> {
    let path = path
        .trim()
        .trim_start_matches(['&', '[', '(', '*'])
        .trim_start_matches("mut ")
        .trim_start_matches("const ")
        .trim_start_matches("dyn ")
        .trim_start();
    let (krate, _) = path.split_once("::")?;
    let valid = !krate.is_empty() && krate.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    valid.then_some(krate)
}

/// Whether `krate` runs the user's code rather than being it.
fn is_runtime(krate: &str) -> bool {
    RUNTIME_CRATES.contains(&krate)
}

#[cfg(test)]
mod tests {
    use super::{is_executor_frame, is_user_frame};

    #[test]
    fn the_executor_s_frames_end_the_stalled_poll() {
        assert!(is_executor_frame("tickless::worker::run::run"));
        assert!(is_executor_frame(
            "<tickless::task::harness::TaskFuture<F> as core::future::future::Future>::poll"
        ));
        assert!(is_executor_frame("async_task::raw::RawTask<F,T,S,M>::run"));
        assert!(!is_executor_frame(
            "<tickless_http::body::Responding<F> as core::future::future::Future>::poll"
        ));
        assert!(!is_executor_frame("app::main"));
    }

    #[test]
    fn c_symbols_and_addresses_are_not_the_user_s() {
        for name in [
            "start_thread",
            "clone3",
            "__GI___clock_nanosleep",
            "nanosleep",
            "__nanosleep",
            "epoll_wait",
            "0x7f3a12345678",
            "(anonymous namespace)::helper",
            "operator new(unsigned long)",
            "",
        ] {
            assert!(!is_user_frame(name), "{name}");
        }
    }

    #[test]
    fn the_runtimes_frames_are_not_the_user_s() {
        for name in [
            "std::thread::sleep",
            "std::sys::pal::unix::thread::Thread::sleep",
            "core::ops::function::FnOnce::call_once",
            "alloc::boxed::Box<T>::new",
            "tickless::worker::run::run",
            "tickless_http::serve_connection",
            "tokio::runtime::task::raw::poll",
            "backtrace::backtrace::trace_unsynchronized",
            "async_task::raw::RawTask<F,T,S,M>::run",
            "test::run_test::{closure#0}",
            "<std::thread::lifecycle::spawn_unchecked<F,T>::{closure#1} as core::ops::function::FnOnce<()>>::call_once::{shim:vtable#0}",
            "<tickless::worker::Core as tickless::worker::run::Driver>::run_tasks",
            "<core::pin::Pin<P> as core::future::future::Future>::poll",
            "<tickless::task::harness::TaskFuture<F> as core::future::future::Future>::poll",
            "<F as core::future::future::Future>::poll",
            "<F as core::ops::function::FnOnce<()>>::call_once",
            "<alloc::boxed::Box<F,A> as core::ops::function::FnOnce<Args>>::call_once",
            "<std::panic::AssertUnwindSafe<F> as core::future::future::Future>::poll",
            "<[T] as core::fmt::Debug>::fmt",
            "hyper::proto::h1::dispatch::Dispatcher<D,Bs,I,T>::poll_catch",
            "<axum::routing::Router as tower_service::Service<Request<B>>>::call",
            // A runtime's trait on a runtime's type whose parameter is the user's: the
            // runtime's code (the `>` of the inner `<...>` does not end the type).
            "<core::pin::Pin<alloc::boxed::Box<app::Job>> as core::future::future::Future>::poll",
            "<tower::util::map_response::MapResponseFuture<F,N> as core::future::future::Future>::poll",
        ] {
            assert!(!is_user_frame(name), "{name}");
        }
    }

    #[test]
    fn the_user_s_functions_closures_and_trait_methods_are() {
        for name in [
            "rt_stall::block",
            "app::handlers::login::{{closure}}",
            "argon2::Argon2::hash_password_into",
            "<app::Hasher as core::fmt::Debug>::fmt",
            "<app::Job as app::Run>::run",
            "<T as app::Run>::run",
            "<&mut app::Conn as std::io::Read>::read",
            "<app::Wrapper<tokio::net::TcpStream> as core::future::future::Future>::poll",
            "<[app::Row]>::sort_rows",
            // The user's trait on std's type; nested brackets do not end the type early.
            "<alloc::vec::Vec<app::Row> as app::Store>::save",
            "<alloc::vec::Vec<core::option::Option<u8>> as app::Store>::save",
        ] {
            assert!(is_user_frame(name), "{name}");
        }
    }
}
