//! Reading the files a user hands to stormsim (scenario files, the tables
//! `plot` and `merge` read back, shard manifests) without hanging or
//! running away.
//!
//! Only regular files are read: a folder, a FIFO, a device or a socket,
//! or a symbolic link to one of them, is refused before anything is read
//! (`stormsim run /dev/zero` or a FIFO with no writer would otherwise read
//! for ever or block for ever). The file is opened non-blocking and checked
//! again once open, so a FIFO swapped in after the first check cannot
//! block the open either; and every read stops at a hard byte cap.

use std::fmt;
use std::fs::{File, Metadata};
use std::io::{self, Read};
use std::path::Path;

/// Whether a character of text read from input must not reach a terminal
/// or a file name as it is: control characters (ESC, NUL...) and the
/// invisible formatting characters that reorder or hide text
/// (right-to-left override, zero-width space, byte order mark...).
pub fn is_unsafe_char(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{FEFF}')
}

/// Why an input file was not read.
#[derive(Debug)]
pub enum InputError {
    /// Nothing at that path.
    NotFound,
    /// Something other than a regular file (through a symbolic link when
    /// `via_link`).
    NotRegular { kind: &'static str, via_link: bool },
    /// More bytes than the cap: `len` is the file's size when known, else
    /// the cap plus one.
    TooLarge { len: u64, cap: u64 },
    /// The read itself failed.
    Io(io::Error),
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InputError::NotFound => write!(f, "no such file"),
            InputError::NotRegular { kind, via_link } => {
                let link = if *via_link { "a symbolic link to " } else { "" };
                write!(f, "is {link}{kind}, not a regular file")
            }
            InputError::TooLarge { len, cap } => {
                write!(
                    f,
                    "the file is {len} bytes; at most {cap} bytes are read from it"
                )
            }
            InputError::Io(e) if e.kind() == io::ErrorKind::PermissionDenied => {
                write!(f, "permission denied: cannot read the file")
            }
            InputError::Io(e) => write!(f, "cannot read the file: {e}"),
        }
    }
}

impl std::error::Error for InputError {}

impl From<io::Error> for InputError {
    fn from(e: io::Error) -> Self {
        if e.kind() == io::ErrorKind::NotFound {
            InputError::NotFound
        } else {
            InputError::Io(e)
        }
    }
}

/// What a non-regular file is, in words.
fn kind_of(meta: &Metadata) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let t = meta.file_type();
        if t.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    if meta.is_dir() {
        "a folder"
    } else {
        "not a regular file"
    }
}

/// What `path` is when not a regular file (its `meta`, symbolic links
/// followed), in words: "a FIFO (named pipe)", "a symbolic link to a
/// character device".
pub fn describe(path: &Path, meta: &Metadata) -> String {
    let via_link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    let link = if via_link { "a symbolic link to " } else { "" };
    format!("{link}{}", kind_of(meta))
}

fn not_regular(path: &Path, meta: &Metadata) -> InputError {
    let via_link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    InputError::NotRegular {
        kind: kind_of(meta),
        via_link,
    }
}

/// Opens a regular file for reading (following symbolic links to regular
/// files), refusing anything else before reading a byte. Returns the open
/// file and its size.
pub fn open_regular(path: &Path) -> Result<(File, u64), InputError> {
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() {
        return Err(not_regular(path, &meta));
    }
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // A FIFO put in place since the check must not block the open, and
        // a terminal must not become our controlling terminal.
        use nix::fcntl::OFlag;
        options.custom_flags((OFlag::O_NONBLOCK | OFlag::O_NOCTTY).bits());
    }
    let file = options.open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(not_regular(path, &meta));
    }
    Ok((file, meta.len()))
}

/// A reader over a regular file that fails with `TooLarge` (as an
/// `io::Error` of kind `InvalidData` wrapping it) past `cap` bytes.
pub struct Capped {
    inner: File,
    read: u64,
    cap: u64,
    len: u64,
}

impl Read for Capped {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let room = (self.cap + 1).saturating_sub(self.read);
        let want = buf.len().min(usize::try_from(room).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..want])?;
        self.read += n as u64;
        if self.read > self.cap {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                InputError::TooLarge {
                    len: self.len.max(self.read),
                    cap: self.cap,
                },
            ));
        }
        Ok(n)
    }
}

/// A reader that fails (an `io::Error` of kind `InvalidData`) on a line
/// longer than `max` bytes: a table read row by row then holds at most
/// one such line in memory, whatever the file (a sparse file of zeros has
/// no line breaks at all).
pub struct LineLimited<R> {
    inner: R,
    since_newline: usize,
    max: usize,
}

impl<R: Read> LineLimited<R> {
    pub fn new(inner: R, max: usize) -> Self {
        LineLimited {
            inner,
            since_newline: 0,
            max,
        }
    }
}

impl<R: Read> Read for LineLimited<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.since_newline = match buf[..n].iter().rposition(|&b| b == b'\n') {
            Some(i) => n - i - 1,
            None => self.since_newline.saturating_add(n),
        };
        if self.since_newline > self.max {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "a line longer than {} bytes: not a table stormsim wrote",
                    self.max
                ),
            ));
        }
        Ok(n)
    }
}

/// Opens a regular file for streaming, at most `cap` bytes.
pub fn open_capped(path: &Path, cap: u64) -> Result<Capped, InputError> {
    let (file, len) = open_regular(path)?;
    if len > cap {
        return Err(InputError::TooLarge { len, cap });
    }
    Ok(Capped {
        inner: file,
        read: 0,
        cap,
        len,
    })
}

/// Reads a whole regular file of at most `cap` bytes.
pub fn read_capped(path: &Path, cap: u64) -> Result<Vec<u8>, InputError> {
    let mut reader = open_capped(path, cap)?;
    let mut bytes = Vec::with_capacity(usize::try_from(reader.len).unwrap_or(0));
    reader.read_to_end(&mut bytes).map_err(unwrap_too_large)?;
    Ok(bytes)
}

/// The `InputError` inside an `io::Error` from [`Capped`], or the I/O
/// error itself.
pub fn unwrap_too_large(e: io::Error) -> InputError {
    if !e.get_ref().is_some_and(|inner| inner.is::<InputError>()) {
        return InputError::from(e);
    }
    match e.into_inner().map(|inner| inner.downcast::<InputError>()) {
        Some(Ok(input)) => *input,
        _ => InputError::Io(io::Error::other("unreadable")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regular_files_are_read_up_to_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("a.txt");
        std::fs::write(&f, b"0123456789").unwrap();
        assert_eq!(read_capped(&f, 10).unwrap(), b"0123456789");
        match read_capped(&f, 9) {
            Err(InputError::TooLarge { len: 10, cap: 9 }) => {}
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            read_capped(&dir.path().join("nope"), 9),
            Err(InputError::NotFound)
        ));
    }

    #[test]
    fn lines_longer_than_the_limit_fail_the_read() {
        let mut ok = String::new();
        LineLimited::new("abc\ndefg\n".as_bytes(), 4)
            .read_to_string(&mut ok)
            .unwrap();
        assert_eq!(ok, "abc\ndefg\n");
        let zeros = vec![0u8; 100_000];
        let err = LineLimited::new(zeros.as_slice(), 1000)
            .read_to_end(&mut Vec::new())
            .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
    }

    #[cfg(unix)]
    #[test]
    fn devices_folders_and_links_to_them_are_refused_without_reading() {
        let dir = tempfile::tempdir().unwrap();
        let err = read_capped(Path::new("/dev/zero"), 1 << 20).unwrap_err();
        assert!(err.to_string().contains("is a character device"), "{err}");
        let link = dir.path().join("zero.yaml");
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        let err = read_capped(&link, 1 << 20).unwrap_err();
        assert!(
            err.to_string()
                .contains("is a symbolic link to a character device"),
            "{err}"
        );
        let err = read_capped(dir.path(), 1 << 20).unwrap_err();
        assert!(err.to_string().contains("is a folder"), "{err}");
    }
}
