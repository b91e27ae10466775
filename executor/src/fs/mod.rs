//! Files, on the runtime's blocking pool: each call is one [`spawn_blocking`] of its
//! `std::fs` namesake, so a slow disk stalls a pool thread, never the core. The paths are
//! tokio's (`tokio::fs::read` becomes `tickless::fs::read`).
//!
//! # Examples
//!
//! ```
//! let rt = tickless::Runtime::new()?;
//! rt.block_on(async {
//!     let dir = std::env::temp_dir().join(format!("tickless-fs-doc-{}", std::process::id()));
//!     tickless::fs::create_dir_all(&dir).await?;
//!     let file = dir.join("hello.txt");
//!     tickless::fs::write(&file, "hello").await?;
//!     assert_eq!(tickless::fs::read_to_string(&file).await?, "hello");
//!     assert_eq!(tickless::fs::metadata(&file).await?.len(), 5);
//!     tickless::fs::remove_file(&file).await?;
//!     std::fs::remove_dir(&dir)
//! })?;
//! # std::io::Result::Ok(())
//! ```
//!
//! [`File`] is an open file, read and written through futures-io's (and, with `tokio-io`,
//! tokio's) `AsyncRead`, `AsyncWrite` and `AsyncSeek`, on the same pool.
//!
//! [`spawn_blocking`]: crate::task::spawn_blocking

use std::fs::Metadata;
use std::io;
use std::path::{Path, PathBuf};

use crate::task::spawn_blocking;

mod buf;
mod file;
mod open_options;
mod state;

pub use file::File;
pub use open_options::OpenOptions;

/// Runs `f` on the blocking pool; a panic or a cancel becomes an `io::Error`.
async fn blocking<T, F>(f: F) -> io::Result<T>
where
    F: FnOnce() -> io::Result<T> + Send + 'static,
    T: Send + 'static,
{
    spawn_blocking(f).await?
}

/// An owned copy of a path, to send to the pool.
fn owned(path: impl AsRef<Path>) -> PathBuf {
    path.as_ref().to_owned()
}

/// The whole contents of a file, as `std::fs::read`.
///
/// # Errors
///
/// As `std::fs::read`.
///
/// # Examples
///
/// ```
/// let rt = tickless::Runtime::new()?;
/// rt.block_on(async {
///     let path = std::env::temp_dir().join(format!("tickless-read-doc-{}", std::process::id()));
///     tickless::fs::write(&path, [0u8, 1, 255]).await?;
///     assert_eq!(tickless::fs::read(&path).await?, [0, 1, 255]); // any bytes
///     tickless::fs::remove_file(&path).await
/// })?;
/// # std::io::Result::Ok(())
/// ```
pub async fn read(path: impl AsRef<Path>) -> io::Result<Vec<u8>> {
    let path = owned(path);
    blocking(move || std::fs::read(path)).await
}

/// The whole contents of a file as a string, as `std::fs::read_to_string`.
///
/// # Errors
///
/// As `std::fs::read_to_string` (`InvalidData` if it is not UTF-8).
///
/// # Examples
///
/// ```
/// use std::io::ErrorKind;
///
/// let rt = tickless::Runtime::new()?;
/// rt.block_on(async {
///     let path = std::env::temp_dir().join(format!("tickless-text-doc-{}", std::process::id()));
///     tickless::fs::write(&path, "héllo").await?;
///     assert_eq!(tickless::fs::read_to_string(&path).await?, "héllo");
///     tickless::fs::write(&path, [0xff, 0xfe]).await?; // not UTF-8
///     let err = tickless::fs::read_to_string(&path).await.unwrap_err();
///     assert_eq!(err.kind(), ErrorKind::InvalidData);
///     tickless::fs::remove_file(&path).await
/// })?;
/// # std::io::Result::Ok(())
/// ```
pub async fn read_to_string(path: impl AsRef<Path>) -> io::Result<String> {
    let path = owned(path);
    blocking(move || std::fs::read_to_string(path)).await
}

/// Writes `contents` as the whole file, creating or truncating it, as `std::fs::write`.
///
/// # Errors
///
/// As `std::fs::write`.
///
/// # Examples
///
/// ```
/// let rt = tickless::Runtime::new()?;
/// rt.block_on(async {
///     let path = std::env::temp_dir().join(format!("tickless-write-doc-{}", std::process::id()));
///     tickless::fs::write(&path, "a first, longer text").await?; // creates the file
///     tickless::fs::write(&path, b"second").await?; // replaces all of it
///     assert_eq!(tickless::fs::read_to_string(&path).await?, "second");
///     tickless::fs::remove_file(&path).await
/// })?;
/// # std::io::Result::Ok(())
/// ```
pub async fn write(path: impl AsRef<Path>, contents: impl AsRef<[u8]>) -> io::Result<()> {
    let (path, contents) = (owned(path), contents.as_ref().to_owned());
    blocking(move || std::fs::write(path, contents)).await
}

/// A path's metadata, following symbolic links, as `std::fs::metadata`.
///
/// # Errors
///
/// As `std::fs::metadata`.
///
/// # Examples
///
/// ```
/// use std::io::ErrorKind;
///
/// let rt = tickless::Runtime::new()?;
/// rt.block_on(async {
///     let dir = std::env::temp_dir();
///     assert!(tickless::fs::metadata(&dir).await?.is_dir());
///     let path = dir.join(format!("tickless-metadata-doc-{}", std::process::id()));
///     tickless::fs::write(&path, "12345").await?;
///     let meta = tickless::fs::metadata(&path).await?;
///     assert!(meta.is_file());
///     assert_eq!(meta.len(), 5);
///     tickless::fs::remove_file(&path).await?;
///     let gone = tickless::fs::metadata(&path).await.unwrap_err();
///     assert_eq!(gone.kind(), ErrorKind::NotFound);
///     std::io::Result::Ok(())
/// })?;
/// # std::io::Result::Ok(())
/// ```
pub async fn metadata(path: impl AsRef<Path>) -> io::Result<Metadata> {
    let path = owned(path);
    blocking(move || std::fs::metadata(path)).await
}

/// Removes a file, as `std::fs::remove_file`.
///
/// # Errors
///
/// As `std::fs::remove_file`.
///
/// # Examples
///
/// ```
/// use std::io::ErrorKind;
///
/// let rt = tickless::Runtime::new()?;
/// rt.block_on(async {
///     let path = std::env::temp_dir().join(format!("tickless-remove-doc-{}", std::process::id()));
///     tickless::fs::write(&path, "short-lived").await?;
///     tickless::fs::remove_file(&path).await?;
///     let again = tickless::fs::remove_file(&path).await.unwrap_err();
///     assert_eq!(again.kind(), ErrorKind::NotFound); // it is gone
///     std::io::Result::Ok(())
/// })?;
/// # std::io::Result::Ok(())
/// ```
pub async fn remove_file(path: impl AsRef<Path>) -> io::Result<()> {
    let path = owned(path);
    blocking(move || std::fs::remove_file(path)).await
}

/// Creates a directory and its missing parents, as `std::fs::create_dir_all`.
///
/// # Errors
///
/// As `std::fs::create_dir_all`.
///
/// # Examples
///
/// ```
/// let rt = tickless::Runtime::new()?;
/// rt.block_on(async {
///     let top = std::env::temp_dir().join(format!("tickless-dirs-doc-{}", std::process::id()));
///     let deep = top.join("a").join("b");
///     tickless::fs::create_dir_all(&deep).await?; // `top` and `a` too
///     tickless::fs::create_dir_all(&deep).await?; // already there: not an error
///     assert!(tickless::fs::metadata(&deep).await?.is_dir());
///     std::fs::remove_dir_all(&top)
/// })?;
/// # std::io::Result::Ok(())
/// ```
pub async fn create_dir_all(path: impl AsRef<Path>) -> io::Result<()> {
    let path = owned(path);
    blocking(move || std::fs::create_dir_all(path)).await
}
