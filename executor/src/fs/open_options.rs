//! `OpenOptions`: how to open a [`File`], as `std::fs::OpenOptions`, opened on the blocking
//! pool; and `File`'s constructors by path (`open`, `create`, `create_new`, `options`), which
//! are options set for the caller (here, so that `file.rs` does not name `OpenOptions` back).

use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use super::{blocking, owned, File};

/// Options for opening a [`File`]: `std::fs::OpenOptions`, with an async
/// [`open`](Self::open) that runs on the blocking pool (tokio's `tokio::fs::OpenOptions`).
///
/// Every option starts out `false`; [`File::open`] is `read(true)`, [`File::create`] is
/// `write(true).create(true).truncate(true)`.
///
/// # Examples
///
/// ```
/// use futures_lite::{AsyncReadExt, AsyncWriteExt};
/// use tickless::fs::OpenOptions;
///
/// let rt = tickless::Runtime::new()?;
/// rt.block_on(async {
///     let path = std::env::temp_dir().join(format!("tickless-options-doc-{}", std::process::id()));
///     let mut log = OpenOptions::new().create_new(true).append(true).open(&path).await?;
///     log.write_all(b"one\n").await?;
///     log.flush().await?; // the write's outcome
///     let mut log = OpenOptions::new().append(true).open(&path).await?;
///     log.write_all(b"two\n").await?; // at the end, whatever the cursor
///     log.flush().await?;
///     let mut text = String::new();
///     OpenOptions::new().read(true).open(&path).await?.read_to_string(&mut text).await?;
///     assert_eq!(text, "one\ntwo\n");
///     let again = OpenOptions::new().create_new(true).write(true).open(&path).await;
///     assert_eq!(again.unwrap_err().kind(), std::io::ErrorKind::AlreadyExists);
///     tickless::fs::remove_file(&path).await
/// })?;
/// # std::io::Result::Ok(())
/// ```
#[derive(Clone, Debug)]
pub struct OpenOptions {
    /// The options, handed to the pool thread that opens the file.
    std: std::fs::OpenOptions,
}

impl OpenOptions {
    /// Options with every flag unset.
    ///
    /// See the example on [`OpenOptions`].
    pub fn new() -> OpenOptions {
        OpenOptions {
            std: std::fs::OpenOptions::new(),
        }
    }

    /// Open for reading.
    ///
    /// See the example on [`OpenOptions`].
    pub fn read(&mut self, read: bool) -> &mut OpenOptions {
        self.std.read(read);
        self
    }

    /// Open for writing (at the cursor, which starts at 0).
    ///
    /// See the example on [`OpenOptions`].
    pub fn write(&mut self, write: bool) -> &mut OpenOptions {
        self.std.write(write);
        self
    }

    /// Open for appending: every write goes to the end of the file (implies writing).
    ///
    /// See the example on [`OpenOptions`].
    pub fn append(&mut self, append: bool) -> &mut OpenOptions {
        self.std.append(append);
        self
    }

    /// Truncate an existing file to length 0 when opening it (needs writing).
    ///
    /// See the example on [`OpenOptions`].
    pub fn truncate(&mut self, truncate: bool) -> &mut OpenOptions {
        self.std.truncate(truncate);
        self
    }

    /// Create the file if it does not exist (needs writing or appending).
    ///
    /// See the example on [`OpenOptions`].
    pub fn create(&mut self, create: bool) -> &mut OpenOptions {
        self.std.create(create);
        self
    }

    /// Create the file, failing with `AlreadyExists` if it exists (needs writing or
    /// appending; `create` and `truncate` are then ignored). The check and the creation are one
    /// atomic step.
    ///
    /// See the example on [`OpenOptions`].
    pub fn create_new(&mut self, create_new: bool) -> &mut OpenOptions {
        self.std.create_new(create_new);
        self
    }

    /// The permission bits of a file this creates (before the umask), `0o666` by default;
    /// `std::os::unix::fs::OpenOptionsExt::mode`.
    ///
    /// See the example on [`OpenOptions`].
    pub fn mode(&mut self, mode: u32) -> &mut OpenOptions {
        self.std.mode(mode);
        self
    }

    /// Extra `open(2)` flags (`libc::O_NOFOLLOW`, ...);
    /// `std::os::unix::fs::OpenOptionsExt::custom_flags`.
    ///
    /// See the example on [`OpenOptions`].
    pub fn custom_flags(&mut self, flags: i32) -> &mut OpenOptions {
        self.std.custom_flags(flags);
        self
    }

    /// Opens `path` with these options, on the blocking pool.
    ///
    /// # Errors
    ///
    /// As `std::fs::OpenOptions::open`: `NotFound`, `PermissionDenied`, `AlreadyExists` (with
    /// `create_new`), `InvalidInput` for a contradictory set of options.
    ///
    /// # Examples
    ///
    /// The options [`File::create`] sets, with the new file's permissions and a refusal to
    /// follow a symbolic link:
    ///
    /// ```
    /// use futures_lite::AsyncWriteExt;
    /// use std::os::unix::fs::PermissionsExt;
    /// use tickless::fs::OpenOptions;
    ///
    /// let rt = tickless::Runtime::new()?;
    /// rt.block_on(async {
    ///     let name = format!("tickless-open-options-doc-{}", std::process::id());
    ///     let path = std::env::temp_dir().join(name);
    ///     let mut file = OpenOptions::new()
    ///         .write(true)
    ///         .create(true) // made if missing,
    ///         .truncate(true) // emptied if not
    ///         .mode(0o600) // read and written by its owner alone, if made here
    ///         .custom_flags(libc::O_NOFOLLOW) // `ELOOP` if `path` is a symbolic link
    ///         .open(&path)
    ///         .await?;
    ///     file.write_all(b"secret").await?;
    ///     file.flush().await?;
    ///     assert_eq!(file.metadata().await?.permissions().mode() & 0o777, 0o600);
    ///     let missing = OpenOptions::new().read(true).open(path.with_extension("no")).await;
    ///     assert_eq!(missing.unwrap_err().kind(), std::io::ErrorKind::NotFound);
    ///     tickless::fs::remove_file(&path).await
    /// })?;
    /// # std::io::Result::Ok(())
    /// ```
    ///
    /// # Panics
    ///
    /// Outside a tickless runtime.
    pub async fn open(&self, path: impl AsRef<Path>) -> io::Result<File> {
        let (std, path) = (self.std.clone(), owned(path));
        let file = blocking(move || std.open(path)).await?;
        Ok(File::from_std(file))
    }
}

impl Default for OpenOptions {
    /// [`OpenOptions::new`].
    fn default() -> OpenOptions {
        OpenOptions::new()
    }
}

impl From<std::fs::OpenOptions> for OpenOptions {
    /// Options as set on a `std::fs::OpenOptions`.
    fn from(std: std::fs::OpenOptions) -> OpenOptions {
        OpenOptions { std }
    }
}

// Opening by path: `File`'s constructors that are `OpenOptions` set for the caller.
impl File {
    /// Opens a file for reading, on the blocking pool.
    ///
    /// # Errors
    ///
    /// As `std::fs::File::open` (`NotFound`, `PermissionDenied`, ...).
    ///
    /// # Examples
    ///
    /// ```
    /// use futures_lite::AsyncReadExt;
    /// use std::io::ErrorKind;
    /// use tickless::fs::File;
    ///
    /// let rt = tickless::Runtime::new()?;
    /// rt.block_on(async {
    ///     let name = format!("tickless-open-doc-{}", std::process::id());
    ///     let path = std::env::temp_dir().join(name);
    ///     let missing = File::open(&path).await.unwrap_err();
    ///     assert_eq!(missing.kind(), ErrorKind::NotFound); // `open` never creates
    ///     tickless::fs::write(&path, "hello").await?;
    ///     let mut text = String::new();
    ///     File::open(&path).await?.read_to_string(&mut text).await?;
    ///     assert_eq!(text, "hello");
    ///     tickless::fs::remove_file(&path).await
    /// })?;
    /// # std::io::Result::Ok(())
    /// ```
    pub async fn open(path: impl AsRef<Path>) -> io::Result<File> {
        OpenOptions::new().read(true).open(path).await
    }

    /// Opens a file for writing, creating it or truncating it, on the blocking pool.
    ///
    /// # Errors
    ///
    /// As `std::fs::File::create`.
    ///
    /// # Examples
    ///
    /// ```
    /// use futures_lite::AsyncWriteExt;
    /// use tickless::fs::File;
    ///
    /// let rt = tickless::Runtime::new()?;
    /// rt.block_on(async {
    ///     let name = format!("tickless-create-doc-{}", std::process::id());
    ///     let path = std::env::temp_dir().join(name);
    ///     tickless::fs::write(&path, "old and longer").await?;
    ///     let mut file = File::create(&path).await?; // emptied
    ///     file.write_all(b"new").await?;
    ///     file.flush().await?;
    ///     assert_eq!(tickless::fs::read_to_string(&path).await?, "new");
    ///     tickless::fs::remove_file(&path).await
    /// })?;
    /// # std::io::Result::Ok(())
    /// ```
    pub async fn create(path: impl AsRef<Path>) -> io::Result<File> {
        OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .await
    }

    /// Creates a new file for reading and writing, failing if it exists, on the blocking pool.
    ///
    /// # Errors
    ///
    /// `AlreadyExists` if it exists; otherwise as `std::fs::File::create_new`.
    ///
    /// # Examples
    ///
    /// ```
    /// use futures_lite::AsyncWriteExt;
    /// use std::io::ErrorKind;
    /// use tickless::fs::File;
    ///
    /// let rt = tickless::Runtime::new()?;
    /// rt.block_on(async {
    ///     let name = format!("tickless-create-new-doc-{}", std::process::id());
    ///     let path = std::env::temp_dir().join(name);
    ///     let mut file = File::create_new(&path).await?;
    ///     file.write_all(b"first").await?;
    ///     file.flush().await?;
    ///     let again = File::create_new(&path).await.unwrap_err();
    ///     assert_eq!(again.kind(), ErrorKind::AlreadyExists); // the first file is untouched
    ///     assert_eq!(tickless::fs::read_to_string(&path).await?, "first");
    ///     tickless::fs::remove_file(&path).await
    /// })?;
    /// # std::io::Result::Ok(())
    /// ```
    pub async fn create_new(path: impl AsRef<Path>) -> io::Result<File> {
        OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)
            .await
    }

    /// Options to open a file with, every one unset: [`OpenOptions::new`].
    ///
    /// # Examples
    ///
    /// ```
    /// use futures_lite::AsyncWriteExt;
    /// use tickless::fs::File;
    ///
    /// let rt = tickless::Runtime::new()?;
    /// rt.block_on(async {
    ///     let name = format!("tickless-options-doc-{}", std::process::id());
    ///     let path = std::env::temp_dir().join(name);
    ///     for line in ["one\n", "two\n"] {
    ///         let mut log = File::options().create(true).append(true).open(&path).await?;
    ///         log.write_all(line.as_bytes()).await?;
    ///         log.flush().await?;
    ///     }
    ///     assert_eq!(tickless::fs::read_to_string(&path).await?, "one\ntwo\n");
    ///     tickless::fs::remove_file(&path).await
    /// })?;
    /// # std::io::Result::Ok(())
    /// ```
    pub fn options() -> OpenOptions {
        OpenOptions::new()
    }
}
