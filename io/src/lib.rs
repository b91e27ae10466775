//! tickless-io: filled by the single-core runtime issue.
