//! The lock that keeps two stormsim commands from writing one output
//! folder at once (two runs into the same `--out`, a `plot` during a run).
//!
//! The lock is an advisory lock (`flock(2)`, through `nix`) on a small
//! file beside the folder, `.stormsim-lock-<hash>`, where `<hash>`
//! is FNV-1a 64 of the folder's name (a fixed length, whatever the name's).
//! It is taken before any work starts and never waited for: the second
//! command is refused at once. The holder removes the file when it is
//! done; the lock dies with its process, so a file left by a killed
//! command is taken over by the next one, which learns from the file's
//! line which process left it ([`FolderLock::stale_holder`]), so that
//! what that process left can be cleaned up (`super::output_dir`). A
//! holder checks, once locked,
//! that the file is still the one at the path (its previous holder may
//! have removed it in between), so two commands never both hold it.
//!
//! The lock's name can be predicted, so a file of the user's may sit
//! there: a file found at the path is taken over (and later removed)
//! only when it reads as a lock file stormsim left, its line or nothing
//! (a command killed between making it and writing its line). Anything
//! else is the user's and is refused, untouched ([`LockError::Foreign`]).

use std::ffi::OsStr;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::interrupt;

/// Why the lock was not taken.
#[derive(Debug)]
pub enum LockError {
    /// Another command holds it.
    Held(PathBuf),
    /// The lock file could not be made or locked.
    Io(PathBuf, io::Error),
    /// A file stormsim did not write sits at the lock's path.
    Foreign(PathBuf),
}

/// A held lock; dropping it removes the lock file and releases the lock.
#[derive(Debug)]
pub struct FolderLock {
    path: PathBuf,
    file: Held,
    /// The process named in the file when it was taken, if another: a
    /// holder removes the file when done, so it was stopped outright
    /// (SIGKILL, a crash, a power cut) while writing the folder.
    stale: Option<u32>,
}

/// The locked file.
#[cfg(unix)]
type Held = nix::fcntl::Flock<File>;
#[cfg(not(unix))]
type Held = File;

/// Locks the file without waiting: `Ok(None)` when another holds it.
#[cfg(unix)]
fn try_lock(file: File) -> io::Result<Option<Held>> {
    use nix::errno::Errno;
    use nix::fcntl::{Flock, FlockArg};
    match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
        Ok(held) => Ok(Some(held)),
        Err((_, Errno::EWOULDBLOCK)) => Ok(None),
        Err((_, errno)) => Err(io::Error::from(errno)),
    }
}

/// Without flock(2), the lock is only the file's existence check below.
#[cfg(not(unix))]
fn try_lock(file: File) -> io::Result<Option<Held>> {
    Ok(Some(file))
}

/// The lock file of the folder `name` inside `parent`.
pub fn lock_path(parent: &Path, name: &OsStr) -> PathBuf {
    let hash = crate::shard::fnv1a64(name.as_encoded_bytes());
    parent.join(format!(".stormsim-lock-{hash:016x}"))
}

fn open(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // Never through a symbolic link planted at the lock's name.
        options.custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits());
    }
    options.open(path)
}

/// Whether the open file is the one now at `path`.
fn still_at(file: &File, path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (file.metadata(), std::fs::symlink_metadata(path)) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = (file, path);
        true
    }
}

impl FolderLock {
    /// Takes the lock of the folder `name` inside `parent` (which exists),
    /// or says who holds it.
    pub fn acquire(parent: &Path, name: &OsStr) -> Result<FolderLock, LockError> {
        let path = lock_path(parent, name);
        let io_err = |e| LockError::Io(path.clone(), e);
        for _ in 0..16 {
            let file = open(&path).map_err(io_err)?;
            let mut file = match try_lock(file) {
                Ok(Some(held)) => held,
                Ok(None) => return Err(LockError::Held(path)),
                Err(e) => return Err(io_err(e)),
            };
            if !still_at(&file, &path) {
                // Removed by its previous holder after we opened it: try
                // again with the file now at the path.
                continue;
            }
            let stale = match previous_holder(&mut file) {
                Ok(holder) => holder.filter(|&p| p != std::process::id()),
                Err(NotALock) => return Err(LockError::Foreign(path)),
            };
            interrupt::register_cleanup(&path);
            // For whoever looks: which process holds it.
            let _ = file.set_len(0);
            let _ = writeln!(
                file,
                "{HOLDER_PREFIX}{}) is writing the folder {} here",
                std::process::id(),
                name.to_string_lossy()
            );
            return Ok(FolderLock { path, file, stale });
        }
        Err(io_err(io::Error::other(
            "the lock file kept changing under us",
        )))
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The process that held the lock before and stopped without
    /// releasing it cleanly (its line was still in the file), if any.
    pub fn stale_holder(&self) -> Option<u32> {
        self.stale
    }
}

/// A file at the lock's path that is not a lock file stormsim left.
struct NotALock;

/// The line a holder writes, up to the process id.
const HOLDER_PREFIX: &str = "stormsim (process ";

/// What a file found at the lock's path says: nothing (`Ok(None)`: new,
/// or left empty by a command killed before writing its line), the
/// process that left it (`stormsim (process N) is writing ...`), or
/// something else, a file of the user's ([`NotALock`]). Only its first
/// bytes and its size are read: the file is never trusted.
fn previous_holder(file: &mut File) -> Result<Option<u32>, NotALock> {
    use std::io::{Read, Seek};
    let meta = file.metadata().map_err(|_| NotALock)?;
    if !meta.is_file() {
        return Err(NotALock);
    }
    if meta.len() == 0 {
        return Ok(None);
    }
    // A holder's line: the prefix, a process id, the rest; never long.
    if meta.len() > 4096 {
        return Err(NotALock);
    }
    let mut head = [0u8; 64];
    file.seek(io::SeekFrom::Start(0)).map_err(|_| NotALock)?;
    let n = file.read(&mut head).map_err(|_| NotALock)?;
    // Back to the start, where the new holder writes its line.
    file.seek(io::SeekFrom::Start(0)).map_err(|_| NotALock)?;
    let text = std::str::from_utf8(&head[..n]).map_err(|_| NotALock)?;
    let rest = text.strip_prefix(HOLDER_PREFIX).ok_or(NotALock)?;
    let digits = rest.find(')').map(|end| &rest[..end]).ok_or(NotALock)?;
    let pid = digits.parse().map_err(|_| NotALock)?;
    if !rest[digits.len()..].starts_with(") is writing the folder ") {
        return Err(NotALock);
    }
    Ok(Some(pid))
}

/// The live process, other than this one, whose line the lock file at
/// `path` holds: a command writing that folder now. Read only, never
/// locked (taking the lock, even for a moment, could refuse that
/// command's own start); a file that is not a lock file says nothing.
pub fn live_holder(path: &Path) -> Option<u32> {
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(
            nix::fcntl::OFlag::O_NOFOLLOW.bits() | nix::fcntl::OFlag::O_NONBLOCK.bits(),
        );
    }
    let mut file = options.open(path).ok()?;
    let pid = previous_holder(&mut file).ok()??;
    (pid != std::process::id() && process_alive(pid)).then_some(pid)
}

/// Whether the process `pid` is alive on this machine (`kill(pid, 0)`):
/// one that exists but may not be signalled counts as alive; anything
/// that is not a plain process id does too (never a process group).
pub fn process_alive(pid: u32) -> bool {
    #[cfg(unix)]
    {
        use nix::errno::Errno;
        use nix::sys::signal::kill;
        use nix::unistd::Pid;
        let Ok(raw) = i32::try_from(pid) else {
            return true;
        };
        if raw <= 0 {
            return true;
        }
        !matches!(kill(Pid::from_raw(raw), None), Err(Errno::ESRCH))
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        true
    }
}

impl Drop for FolderLock {
    fn drop(&mut self) {
        // Removed while still held, so the next command makes a new one.
        if still_at(&self.file, &self.path) {
            let _ = std::fs::remove_file(&self.path);
        }
        interrupt::unregister_cleanup(&self.path);
        // The lock itself goes with the file, when `file` is dropped.
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_until_the_first_is_done() {
        let dir = tempfile::tempdir().unwrap();
        let name = OsStr::new("out");
        let first = FolderLock::acquire(dir.path(), name).unwrap();
        assert!(first.path().is_file());
        match FolderLock::acquire(dir.path(), name) {
            Err(LockError::Held(p)) => assert_eq!(p, first.path()),
            other => panic!("{other:?}"),
        }
        // Another folder of the same parent has its own lock.
        let other = FolderLock::acquire(dir.path(), OsStr::new("other")).unwrap();
        drop(other);
        drop(first);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        let again = FolderLock::acquire(dir.path(), name).unwrap();
        drop(again);
    }

    #[test]
    fn a_lock_file_left_by_a_killed_command_is_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        let name = OsStr::new("out");
        std::fs::write(
            lock_path(dir.path(), name),
            "stormsim (process 4000000) is writing the folder out here\n",
        )
        .unwrap();
        let lock = FolderLock::acquire(dir.path(), name).unwrap();
        assert_eq!(lock.stale_holder(), Some(4_000_000));
        drop(lock);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        // An empty one: killed before it wrote its line.
        std::fs::write(lock_path(dir.path(), name), "").unwrap();
        let lock = FolderLock::acquire(dir.path(), name).unwrap();
        assert_eq!(lock.stale_holder(), None);
        drop(lock);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_file_of_the_users_at_the_lock_name_is_refused_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let name = OsStr::new("out");
        let path = lock_path(dir.path(), name);
        for content in [
            "user content\n",
            "stormsim (process 12) wrote this? no\n",
            "stormsim (process x) is writing the folder out here\n",
        ] {
            std::fs::write(&path, content).unwrap();
            match FolderLock::acquire(dir.path(), name) {
                Err(LockError::Foreign(p)) => assert_eq!(p, path),
                other => panic!("{content:?}: {other:?}"),
            }
            assert_eq!(std::fs::read_to_string(&path).unwrap(), content);
        }
        // Long: not a lock line, even when it starts like one.
        let long = format!(
            "stormsim (process 12) is writing the folder out here\n{}",
            "x".repeat(5000)
        );
        std::fs::write(&path, &long).unwrap();
        assert!(matches!(
            FolderLock::acquire(dir.path(), name),
            Err(LockError::Foreign(_))
        ));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), long);
    }

    #[cfg(unix)]
    #[test]
    fn a_symbolic_link_at_the_lock_name_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let name = OsStr::new("out");
        let victim = dir.path().join("victim.txt");
        std::fs::write(&victim, "keep me").unwrap();
        std::os::unix::fs::symlink(&victim, lock_path(dir.path(), name)).unwrap();
        assert!(matches!(
            FolderLock::acquire(dir.path(), name),
            Err(LockError::Io(..))
        ));
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me");
    }
}
