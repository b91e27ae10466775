//! `#[tickless::main]` and `#[tickless::test]`: an `async fn` run on a tickless runtime, as
//! tokio's macros do. Use them through the `tickless` crate, which re-exports them.
#![warn(missing_docs)]

use proc_macro::TokenStream;
use proc_macro2::Span;
use quote::quote;
use syn::parse::Parser;
use syn::{parse_macro_input, Ident, ItemFn, LitBool, LitInt};

/// The runtime settings an attribute may give.
#[derive(Default)]
struct Settings {
    /// `cores = N`.
    cores: Option<LitInt>,
    /// `start_paused = true`.
    start_paused: Option<LitBool>,
    /// `timer_policy = Lazy` (a `RearmPolicy` variant).
    timer_policy: Option<Ident>,
    /// `default_slack_us = N`.
    default_slack_us: Option<LitInt>,
    /// `tokio_context = BOOL` (`true` needs tickless's `tokio-compat` feature, where it is the
    /// default).
    tokio_context: Option<LitBool>,
    /// `pin = true`: each core pinned to its CPU.
    pin: Option<LitBool>,
}

/// Parses `cores = N, pin = BOOL, start_paused = BOOL, timer_policy = P, default_slack_us = N,
/// tokio_context = BOOL` (each optional).
fn settings(args: TokenStream) -> syn::Result<Settings> {
    let mut s = Settings::default();
    let parser = syn::meta::parser(|meta| {
        if meta.path.is_ident("cores") {
            s.cores = Some(meta.value()?.parse()?);
            Ok(())
        } else if meta.path.is_ident("start_paused") {
            s.start_paused = Some(meta.value()?.parse()?);
            Ok(())
        } else if meta.path.is_ident("timer_policy") {
            let policy: Ident = meta.value()?.parse()?;
            if !["Eager", "OnIdle", "Lazy"].iter().any(|p| policy == p) {
                return Err(syn::Error::new_spanned(
                    policy,
                    "unknown timer policy: expected `Eager`, `OnIdle` or `Lazy`",
                ));
            }
            s.timer_policy = Some(policy);
            Ok(())
        } else if meta.path.is_ident("default_slack_us") {
            s.default_slack_us = Some(meta.value()?.parse()?);
            Ok(())
        } else if meta.path.is_ident("tokio_context") {
            s.tokio_context = Some(meta.value()?.parse()?);
            Ok(())
        } else if meta.path.is_ident("pin") {
            s.pin = Some(meta.value()?.parse()?);
            Ok(())
        } else if meta.path.is_ident("flavor") || meta.path.is_ident("worker_threads") {
            Err(meta.error(
                "tickless has one flavor, thread per core: say `cores = N` for the number of \
                 cores",
            ))
        } else {
            Err(meta.error(
                "unknown setting: expected `cores = N`, `pin = true`, `start_paused = true`, \
                 `timer_policy = Eager|OnIdle|Lazy`, `default_slack_us = N` or \
                 `tokio_context = true|false`",
            ))
        }
    });
    parser.parse(args)?;
    Ok(s)
}

/// The function, its body run by `block_on` on a runtime built with `settings`.
fn expand(args: TokenStream, item: TokenStream, test: bool) -> TokenStream {
    let settings = match settings(args) {
        Ok(s) => s,
        Err(e) => return e.to_compile_error().into(),
    };
    let mut f = parse_macro_input!(item as ItemFn);
    if f.sig.asyncness.take().is_none() {
        let what = if test { "test" } else { "main" };
        return syn::Error::new_spanned(
            f.sig.fn_token,
            format!("#[tickless::{what}] goes on an `async fn`"),
        )
        .to_compile_error()
        .into();
    }
    if !test && f.sig.ident != "main" {
        return syn::Error::new(
            Span::call_site(),
            "#[tickless::main] goes on `async fn main`",
        )
        .to_compile_error()
        .into();
    }
    // A test runs on one core unless it says otherwise, as tokio's tests run on one thread.
    let cores = match (&settings.cores, test) {
        (Some(n), _) => quote! { builder.cores(#n); },
        (None, true) => quote! { builder.cores(1); },
        (None, false) => quote! {},
    };
    let pin = settings.pin.map(|p| quote! { builder.pin(#p); });
    let paused = settings
        .start_paused
        .map(|p| quote! { builder.start_paused(#p); });
    let policy = settings
        .timer_policy
        .map(|p| quote! { builder.timer_policy(::tickless::RearmPolicy::#p); });
    let slack = settings.default_slack_us.map(|us| {
        quote! { builder.default_slack(::std::time::Duration::from_micros(#us)); }
    });
    // Through a trait that only the `tokio-compat` feature implements: without it, the error
    // names the feature.
    // `tokio_context = false` compiles without the feature too (there is no context to turn
    // off there).
    let tokio = settings.tokio_context.map(|on| {
        if on.value {
            quote! { ::tickless::__macro_support::TokioContext::tokio_context(&mut builder, #on); }
        } else {
            quote! { ::tickless::__macro_support::no_tokio_context(&mut builder); }
        }
    });
    let body = &f.block;
    let test_attr = test.then(|| quote! { #[::core::prelude::v1::test] });
    let attrs = &f.attrs;
    let vis = &f.vis;
    let sig = &f.sig;
    quote! {
        #test_attr
        #(#attrs)*
        #vis #sig {
            let mut builder = ::tickless::Builder::new();
            #cores
            #pin
            #paused
            #policy
            #slack
            #tokio
            let runtime = builder
                .build()
                .expect("building the tickless runtime failed");
            runtime.block_on(async move #body)
        }
    }
    .into()
}

/// Runs `async fn main` on a tickless runtime: one core per CPU (`cores = N` to choose,
/// `pin = true` to pin each core to its CPU), real time (`start_paused = true` to pause it), the default re-arm policy
/// (`timer_policy = Eager`, `OnIdle` or `Lazy`) and slack (`default_slack_us = N`), and, where
/// tickless's `tokio-compat` feature is on, a tokio context on every core for libraries
/// written for tokio (`tokio_context = false` to go without; see `Builder::tokio_context`).
///
/// ```ignore
/// #[tickless::main]
/// async fn main() {
///     tickless::time::sleep(std::time::Duration::from_millis(1)).await;
/// }
/// ```
#[proc_macro_attribute]
pub fn main(args: TokenStream, item: TokenStream) -> TokenStream {
    expand(args, item, false)
}

/// Runs an `async fn` test on a tickless runtime of one core (`cores = N` for more), with
/// `start_paused = true` for paused time, as `#[tokio::test(start_paused = true)]`; also
/// `pin = true`, `timer_policy = ...`, `default_slack_us = N` and `tokio_context = false`, as
/// for [`main`](macro@main): with the `tokio-compat` feature a renamed `#[tokio::test]` has its
/// tokio context.
///
/// ```ignore
/// #[tickless::test(start_paused = true)]
/// async fn an_hour_passes_at_once() {
///     tickless::time::sleep(std::time::Duration::from_secs(3600)).await;
/// }
/// ```
#[proc_macro_attribute]
pub fn test(args: TokenStream, item: TokenStream) -> TokenStream {
    expand(args, item, true)
}
