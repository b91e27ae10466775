//! tickless: filled by the single-core runtime issue.
