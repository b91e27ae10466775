//! What several models share: each model file uses part of it.
#![allow(dead_code)]

pub mod io_tasks;
pub mod model_tasks;
