//! loom models of tickless's cross-thread protocols, one file per protocol in `tests/`.
//!
//! They only run under loom:
//!
//! ```text
//! RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test -p tickless-loom-tests --release
//! ```
//!
//! Built without `--cfg loom` the models compile to nothing.
