//! Misusing `#[tickless::main]` and `#[tickless::test]` is a compile error that says what to
//! do (the expected messages are the `.stderr` files next to each case in `tests/ui/`).

#[test]
fn misuse_is_a_clear_compile_error() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
