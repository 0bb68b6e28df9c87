//! Output folders: stormsim writes only where nothing of the user's can
//! be lost, decides so before any work starts, and makes a folder appear
//! whole or not at all.
//!
//! **Ownership.** Every folder stormsim writes (a run's, a merge's, a
//! shard's) holds a marker file, [`MARKER`], that lists the entries
//! stormsim wrote there. A folder is replaced only when nothing in it
//! would be lost that stormsim did not write: it is absent or empty, or
//! each of its entries is listed in its marker or is a shard folder (a
//! folder with a `manifest.json`, carried over into the new folder). Any
//! other folder is refused, naming what is in the way, unless the user
//! passes `--force`. `plot` replaces only `charts/` and `report.html`
//! inside its folder, under the same rule ([`Mode::Entries`]).
//!
//! **Never, even with `--force`:** an output that is a symbolic link or an
//! existing file; one that is, holds or lies inside one of the command's
//! inputs (the scenario file, a shard folder given to `merge`), unless the
//! input lies in a shard folder that is carried over; the current folder
//! or one that holds it; a folder another stormsim command is writing
//! ([`super::folder_lock`]), or one inside it ([`check_writer_around`];
//! a folder written inside this one meanwhile is carried over instead,
//! [`writers_inside`]).
//!
//! **Decided before the work.** [`OutputDir::prepare`] makes every one of
//! these checks, creates the parent folders, takes the lock, and creates a
//! private work folder beside the target (`.stormsim-<hash>-<pid>-<n>`,
//! always a new one: an existing path is never reused, so no name stormsim
//! writes can collide with a user's file) with the staging folder
//! `new/<name>` inside it, which also proves that the file system takes
//! the name. A run is therefore refused (exit 2) before it simulates
//! anything, and a refused command leaves nothing behind, not even the
//! parent folders it created.
//!
//! **Whole or nothing.** Files are written into the staging folder;
//! [`OutputDir::commit`] checks the target again, moves the old folder
//! into the work folder, the new one into place, carries the shard folders
//! over, and removes the work folder. A stop asked for by Ctrl-C
//! (`crate::interrupt`) fails the next `write` or the `commit` with
//! `OutputError::Interrupted`; dropping the `OutputDir` then removes
//! everything it made, and a second Ctrl-C removes it on its way out
//! (except during the few renames of the swap, which it lets finish).

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::folder_lock::{FolderLock, LockError};
use crate::interrupt;

/// The marker file of a folder stormsim wrote.
pub const MARKER: &str = ".stormsim";
/// The marker's first line.
const SIGNATURE: &str = "stormsim output folder";
/// Markers larger than this are not stormsim's.
const MAX_MARKER_BYTES: u64 = 1 << 20;
/// The file names of `plot`'s outputs inside a run folder.
pub const VISUALS: &[&str] = &["charts", "report.html"];
/// The longest folder name most file systems take (NAME_MAX on Linux).
pub const MAX_NAME_BYTES: usize = 255;

/// The list, in a work folder, of every file its command put in `new/`
/// (a path relative to the staging folder a line), each added before the
/// file is created: what a later command may remove of a work folder
/// left by one stopped outright, and nothing else.
const JOURNAL: &str = "written";
/// The note, in a work folder, saying that its command finished (its
/// folder is in place) but could not remove all of what it replaced,
/// which is left in the work folder's `old/`: the next command writing
/// the folder tries again to remove it, and does not take it for the
/// work folder of a command stopped outright.
const LEFT: &str = "left-over";
/// Bytes written between two polls of the stop flag.
const WRITE_PIECE: usize = 4 << 20;
/// Entries named in a refusal, at most.
const SHOWN: usize = 5;

/// Why an output folder was not written.
#[derive(Debug)]
pub enum OutputError {
    /// The folder may not be written there (exit 2); the message says why
    /// and what to do instead.
    Refused(String),
    /// Ctrl-C or SIGTERM (exit 130).
    Interrupted,
    /// Writing failed (exit 1).
    Io(String),
}

impl OutputError {
    /// The command's exit code for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            OutputError::Refused(_) => 2,
            OutputError::Interrupted => interrupt::EXIT_CODE,
            OutputError::Io(_) => 1,
        }
    }
}

impl fmt::Display for OutputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OutputError::Refused(m) | OutputError::Io(m) => write!(f, "{m}"),
            OutputError::Interrupted => write!(f, "interrupted"),
        }
    }
}

impl std::error::Error for OutputError {}

impl From<interrupt::Stopped> for OutputError {
    fn from(_: interrupt::Stopped) -> Self {
        OutputError::Interrupted
    }
}

fn io_error(what: impl fmt::Display, e: &io::Error) -> OutputError {
    if e.kind() == io::ErrorKind::Interrupted && interrupt::requested() {
        return OutputError::Interrupted;
    }
    OutputError::Io(format!("{what}: {e}"))
}

/// What a command replaces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// The whole folder (`run`, `merge`, a shard).
    Folder,
    /// These entries inside an existing folder, which stays (`plot`:
    /// [`VISUALS`]).
    Entries(&'static [&'static str]),
}

/// What a folder stormsim writes holds. A command replaces only a folder
/// of its own kind (unless given `--force`): a run never takes the place
/// of a search or of a shard, nor a search or a merge that of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Contents {
    /// The tables, charts and report of a run (`run`, `merge`).
    Results,
    /// One shard of a run (`run --shard`), for `merge`.
    Shard,
    /// A search (`tune`).
    Tune,
}

impl Contents {
    /// The file that tells a folder of this kind: a shard's folder holds
    /// a `summary.csv` too, so its `manifest.json` is looked for first
    /// ([`Contents::ALL`]'s order).
    pub fn telltale(self) -> &'static str {
        match self {
            Contents::Results => "summary.csv",
            Contents::Shard => crate::shard::MANIFEST,
            Contents::Tune => "tune.csv",
        }
    }

    /// The kinds, in the order their telltale files are looked for.
    const ALL: [Contents; 3] = [Contents::Shard, Contents::Tune, Contents::Results];

    /// What a folder of this kind holds, in words.
    pub fn words(self) -> &'static str {
        match self {
            Contents::Results => "the results of a run",
            Contents::Shard => "a shard of a run",
            Contents::Tune => "a tune search",
        }
    }

    /// The kind of the folder `dir`, from what its marker lists (an
    /// older marker's bare names included), if it holds a marker of
    /// stormsim's listing one of the telltale files.
    pub fn marked_in(dir: &Path) -> Option<Contents> {
        let marked = marked_entries(dir)?;
        Contents::ALL
            .into_iter()
            .find(|c| marked.contains_key(c.telltale()))
    }

    /// [`Contents::marked_in`], or, in a folder without a marker of
    /// stormsim's (tables copied by hand), the kind its telltale files
    /// say.
    pub fn found_in(dir: &Path) -> Option<Contents> {
        if marked_entries(dir).is_some() {
            return Contents::marked_in(dir);
        }
        let holds = |file: &str| fs::symlink_metadata(dir.join(file)).is_ok_and(|m| m.is_file());
        Contents::ALL.into_iter().find(|c| holds(c.telltale()))
    }
}

/// How a command may write its folder.
#[derive(Clone, Copy, Debug)]
pub struct Options<'a> {
    pub mode: Mode,
    /// What the command writes: a folder of another kind is not replaced
    /// without `force`.
    pub contents: Contents,
    /// Replace what stormsim did not write (`--force`).
    pub force: bool,
    /// What the command reads: the output may not be, hold or lie inside
    /// any of them.
    pub inputs: &'a [PathBuf],
}

/// An output folder being written.
#[derive(Debug)]
pub struct OutputDir {
    /// The folder as the user named it (messages, the returned path).
    target: PathBuf,
    /// The folder, absolute (canonical parent and name).
    dest: PathBuf,
    mode: Mode,
    contents: Contents,
    force: bool,
    /// The private work folder: `new/` (staging), later `old/`.
    work: PathBuf,
    /// Where files are written: `work/new/<name>` (or `work/new`).
    staging: PathBuf,
    lock: Option<FolderLock>,
    /// The names of the locks of output folders other stormsim commands
    /// were writing inside this one for the first time when it took its
    /// lock: what they put in place is carried over ([`writers_inside`]).
    pending: Vec<OsString>,
    /// Parent folders this command created, outermost first: removed
    /// again (when still empty) if nothing is committed.
    created: Vec<PathBuf>,
    committed: bool,
    /// What was found and cleaned up of a command stopped outright
    /// before: for the console.
    notes: Vec<String>,
}

/// A file of an [`OutputDir`] being written piece by piece; it is in the
/// work folder like any other, and goes in place only with the folder.
#[derive(Debug)]
pub struct OutputFile {
    file: io::BufWriter<fs::File>,
    path: PathBuf,
}

impl OutputFile {
    /// Adds `bytes` at the end of the file.
    pub fn append(&mut self, bytes: &[u8]) -> Result<(), OutputError> {
        // In pieces, the stop flag polled between them: a long run's
        // timeseries.csv is hundreds of megabytes.
        let mut write = || -> io::Result<()> {
            for piece in bytes.chunks(WRITE_PIECE) {
                interrupt::check_io()?;
                io::Write::write_all(&mut self.file, piece)?;
            }
            Ok(())
        };
        write().map_err(|e| io_error(crate::escape::path(&self.path), &e))
    }

    /// Writes out what is buffered and closes the file.
    pub fn finish(mut self) -> Result<(), OutputError> {
        io::Write::flush(&mut self.file).map_err(|e| io_error(crate::escape::path(&self.path), &e))
    }
}

/// A folder [`OutputDir::commit`] put in place.
#[derive(Debug)]
pub struct Committed {
    /// The folder, as the user named it.
    pub path: PathBuf,
    /// What of the folder (or entries) it replaced could not be removed,
    /// with why, each left where it is in the work folder `work`.
    left: Vec<(PathBuf, String)>,
    work: PathBuf,
}

impl Committed {
    /// The warning to print when something of what the folder replaced
    /// could not be removed (the command then exits 1, README.md,
    /// "Outputs"), naming each path and why.
    pub fn left_over(&self) -> Option<String> {
        if self.left.is_empty() {
            return None;
        }
        let each: Vec<String> = self
            .left
            .iter()
            .map(|(path, why)| format!("{} ({why})", crate::escape::path(path)))
            .collect();
        Some(format!(
            "{} holds the new results, but stormsim could not remove all of what they \
             replaced: {}. It is left in {}; stormsim tries again to remove it the next \
             time it writes {} (or remove it yourself once nothing in it is needed)",
            crate::escape::path(&self.path),
            shown_paths(&each),
            crate::escape::path(&self.work),
            crate::escape::path(&self.path)
        ))
    }
}

fn shown_paths(each: &[String]) -> String {
    let mut s = each
        .iter()
        .take(SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join("; ");
    if each.len() > SHOWN {
        s.push_str(&format!("; and {} more", each.len() - SHOWN));
    }
    s
}

/// The file system (`st_dev`) of what `meta` describes.
fn device(path: &Path, meta: &fs::Metadata) -> u64 {
    #[cfg(test)]
    if tests::on_another_device(path) {
        return u64::MAX;
    }
    let _ = path;
    #[cfg(unix)]
    {
        std::os::unix::fs::MetadataExt::dev(meta)
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        0
    }
}

/// Removes `path` and everything under it, never following a symbolic
/// link (the link is removed, not what it points to) and never crossing
/// into another file system than `dev` (a mount point stays, with all it
/// holds, and so do the folders holding it). What cannot be removed is
/// added to `left`, with why; returns whether all of it was removed.
fn remove_tree(path: &Path, dev: u64, left: &mut Vec<(PathBuf, String)>) -> bool {
    let meta = match fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return true,
        Err(e) => {
            left.push((path.to_path_buf(), os_reason(&e)));
            return false;
        }
    };
    if device(path, &meta) != dev {
        left.push((
            path.to_path_buf(),
            "a mount point of another file system, which stormsim never removes".to_string(),
        ));
        return false;
    }
    if !meta.is_dir() {
        return match fs::remove_file(path) {
            Ok(()) => true,
            Err(e) => {
                left.push((path.to_path_buf(), os_reason(&e)));
                false
            }
        };
    }
    let entries = match fs::read_dir(path) {
        Ok(entries) => entries,
        Err(e) => {
            left.push((path.to_path_buf(), os_reason(&e)));
            return false;
        }
    };
    let mut all = true;
    for entry in entries {
        match entry {
            Ok(entry) => all &= remove_tree(&entry.path(), dev, left),
            Err(e) => {
                left.push((path.to_path_buf(), os_reason(&e)));
                all = false;
            }
        }
    }
    if !all {
        return false;
    }
    match fs::remove_dir(path) {
        Ok(()) => true,
        Err(e) => {
            left.push((path.to_path_buf(), os_reason(&e)));
            false
        }
    }
}

/// Removes the work folder `work` of a command whose folder is in place,
/// as [`remove_tree`] does. When something cannot be removed, it stays,
/// and so does the work folder, with the note [`LEFT`]; returns what
/// stays, with why (nothing when the work folder is gone).
fn clear_work(work: &Path) -> Vec<(PathBuf, String)> {
    let mut left = Vec::new();
    let dev = match fs::symlink_metadata(work) {
        Ok(m) => device(work, &m),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return left,
        Err(e) => {
            left.push((work.to_path_buf(), os_reason(&e)));
            return left;
        }
    };
    let entries = match fs::read_dir(work) {
        Ok(entries) => entries,
        Err(e) => {
            left.push((work.to_path_buf(), os_reason(&e)));
            return left;
        }
    };
    for entry in entries.flatten() {
        if entry.file_name() != LEFT {
            remove_tree(&entry.path(), dev, &mut left);
        }
    }
    if left.is_empty() {
        remove_tree(work, dev, &mut left);
    } else {
        let note = "stormsim: the command that made this folder put its results in place \
                    but could not remove what is left here of what they replaced\n";
        let _ = fs::write(work.join(LEFT), note);
    }
    left
}

/// The default output folder of a scenario: `output/<name>`, refused when
/// the name is not one plain folder name.
pub fn default_folder(name: &str) -> Result<PathBuf, OutputError> {
    let one_component = {
        let mut c = Path::new(name).components();
        matches!((c.next(), c.next()), (Some(Component::Normal(n)), None) if n == OsStr::new(name))
    };
    if !one_component || name.chars().any(crate::input_file::is_unsafe_char) {
        return Err(OutputError::Refused(format!(
            "the scenario name {} cannot name a folder (expected one folder name, \
             without `/`, `..` or control characters); choose the folder with --out",
            crate::escape::quoted(name)
        )));
    }
    if name.len() > MAX_NAME_BYTES {
        return Err(OutputError::Refused(format!(
            "the scenario name is {} bytes, too long for a folder name (at most \
             {MAX_NAME_BYTES}, the most file systems take); choose the folder with --out",
            name.len()
        )));
    }
    Ok(Path::new("output").join(name))
}

/// What an entry of an output folder is, as its marker records it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryKind {
    File,
    Folder,
}

impl EntryKind {
    fn word(self) -> &'static str {
        match self {
            EntryKind::File => "file",
            EntryKind::Folder => "folder",
        }
    }

    /// The kind of what is at `meta`, if stormsim could have written it
    /// (a symbolic link, a FIFO, a device: never).
    fn of(meta: &fs::Metadata) -> Option<EntryKind> {
        if meta.is_file() {
            Some(EntryKind::File)
        } else if meta.is_dir() {
            Some(EntryKind::Folder)
        } else {
            None
        }
    }
}

/// Every file and folder stormsim wrote in a folder, by path relative to
/// it (`/`-separated: `charts`, `charts/load.svg`), as its marker lists
/// them.
pub type Marked = BTreeMap<String, EntryKind>;

/// What the marker of `dir` lists, if `dir` holds a marker of stormsim's.
/// A line of a marker older than the kinds (a bare top-level name) counts
/// as a file: a folder it lists is not known to be stormsim's, nor what is
/// in it.
pub fn marked_entries(dir: &Path) -> Option<Marked> {
    let path = dir.join(MARKER);
    // Not through a symbolic link; a regular file under the cap.
    if !fs::symlink_metadata(&path).ok()?.is_file() {
        return None;
    }
    let bytes = crate::input_file::read_capped(&path, MAX_MARKER_BYTES).ok()?;
    let text = String::from_utf8(bytes).ok()?;
    let mut lines = text.lines();
    if lines.next() != Some(SIGNATURE) {
        return None;
    }
    let mut marked = Marked::new();
    for line in lines.filter(|l| !l.is_empty() && !l.starts_with('#')) {
        let (kind, rel) = if let Some(rel) = line.strip_prefix("file ") {
            (EntryKind::File, rel)
        } else if let Some(rel) = line.strip_prefix("folder ") {
            (EntryKind::Folder, rel)
        } else {
            (EntryKind::File, line)
        };
        marked.insert(rel.to_string(), kind);
    }
    Some(marked)
}

/// The marker's text for these entries.
fn marker_text(entries: &Marked) -> String {
    let mut s = format!(
        "{SIGNATURE}\n\
         # stormsim wrote the files and folders listed below and replaces them\n\
         # when it writes here again; it refuses to replace this folder, or\n\
         # one of these folders, while it holds anything else (unless given\n\
         # --force).\n"
    );
    for (rel, kind) in entries {
        s.push_str(kind.word());
        s.push(' ');
        s.push_str(rel);
        s.push('\n');
    }
    s
}

/// Every file and folder under `dir` (not the marker), by relative path.
/// A name that is not plain text (not UTF-8, or holding a control
/// character: never one stormsim writes) is left out, and so counts as
/// not stormsim's.
fn walk_written(dir: &Path) -> io::Result<Marked> {
    fn walk(root: &Path, rel: &str, out: &mut Marked) -> io::Result<()> {
        for entry in fs::read_dir(root.join(rel))? {
            let entry = entry?;
            let Some(name) = entry.file_name().to_str().map(str::to_string) else {
                continue;
            };
            if rel.is_empty() && name == MARKER {
                continue;
            }
            if name.chars().any(crate::escape::is_unsafe_char) {
                continue;
            }
            let path = if rel.is_empty() {
                name
            } else {
                format!("{rel}/{name}")
            };
            match EntryKind::of(&entry.metadata()?) {
                Some(EntryKind::Folder) => {
                    out.insert(path.clone(), EntryKind::Folder);
                    walk(root, &path, out)?;
                }
                Some(EntryKind::File) => {
                    out.insert(path, EntryKind::File);
                }
                None => {}
            }
        }
        Ok(())
    }
    let mut out = Marked::new();
    walk(dir, "", &mut out)?;
    Ok(out)
}

/// Whether `path` is carried over when the folder holding it is
/// replaced: a shard folder (a real folder with a `manifest.json`), the
/// results of `stormsim tune` (a real folder `tune` that stormsim wrote:
/// it holds a marker), or what a stormsim command writing beside it may
/// be using (its work folder `.stormsim-…` or its lock
/// `.stormsim-lock-…`, perhaps left by a command killed outright).
fn is_carried(path: &Path) -> bool {
    let name = path.file_name().and_then(OsStr::to_str);
    let stormsims = name.is_some_and(|n| n.starts_with(".stormsim-"));
    let is_dir = || fs::symlink_metadata(path).is_ok_and(|m| m.is_dir());
    let holds = |file: &str| fs::symlink_metadata(path.join(file)).is_ok_and(|m| m.is_file());
    stormsims
        || (is_dir() && holds(crate::shard::MANIFEST))
        || (name == Some("tune") && is_dir() && holds(MARKER))
}

fn shown_list(names: &[String]) -> String {
    let mut s = names
        .iter()
        .take(SHOWN)
        .map(|n| crate::escape::quoted(n))
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > SHOWN {
        s.push_str(&format!(" and {} more", names.len() - SHOWN));
    }
    s
}

/// The entries of the existing folder `dir` that replacing it (or, with
/// `Mode::Entries`, those entries of it) would lose although stormsim did
/// not write them: anything its marker does not list with its kind (a
/// file, a folder), at any depth, as paths relative to `dir`. An entry
/// that is not stormsim's is named whole; what lies inside it is not
/// listed.
fn foreign_entries(dir: &Path, mode: Mode, pending: &[OsString]) -> io::Result<Vec<String>> {
    foreign_in(dir, mode, marked_entries(dir), pending)
}

/// [`foreign_entries`] of `dir` against the list `marked` (read from the
/// marker of the folder `dir`'s entries come from); `pending` as
/// [`written_meanwhile`] takes it.
fn foreign_in(
    dir: &Path,
    mode: Mode,
    marked: Option<Marked>,
    pending: &[OsString],
) -> io::Result<Vec<String>> {
    let listed = marked.clone().unwrap_or_default();
    let mut foreign = Vec::new();
    match mode {
        Mode::Folder => {
            for entry in fs::read_dir(dir)? {
                let entry = entry?;
                let name = entry.file_name();
                // A `.stormsim` file that is not stormsim's marker is the
                // user's like any other.
                if (name == MARKER && marked.is_some())
                    || is_carried(&entry.path())
                    || written_meanwhile(&entry.path(), pending)
                {
                    continue;
                }
                owned_at(dir, &name, "", &listed, &mut foreign)?;
            }
        }
        Mode::Entries(names) => {
            for &name in names {
                if fs::symlink_metadata(dir.join(name)).is_ok() {
                    owned_at(dir, OsStr::new(name), "", &listed, &mut foreign)?;
                }
            }
        }
    }
    foreign.sort();
    Ok(foreign)
}

/// Checks the entry `name` of the folder `parent` (relative to `root`)
/// against the marker's list, adding what is not stormsim's to `foreign`.
fn owned_at(
    root: &Path,
    name: &OsStr,
    parent: &str,
    listed: &Marked,
    foreign: &mut Vec<String>,
) -> io::Result<()> {
    let shown = name.to_string_lossy();
    let rel = if parent.is_empty() {
        shown.into_owned()
    } else {
        format!("{parent}/{shown}")
    };
    let meta = fs::symlink_metadata(root.join(&rel))?;
    let kind = EntryKind::of(&meta);
    let ours = name.to_str().is_some() && kind.is_some() && listed.get(&rel) == kind.as_ref();
    if !ours {
        foreign.push(rel);
        return Ok(());
    }
    if kind == Some(EntryKind::Folder) {
        for entry in fs::read_dir(root.join(&rel))? {
            owned_at(root, &entry?.file_name(), &rel, listed, foreign)?;
        }
    }
    Ok(())
}

/// The stormsim command writing the folder `dir` now, if any: its lock
/// file and process (read from the lock file, which is not taken). A
/// folder being written for the first time does not exist yet (its run
/// stages it elsewhere), so this is how `plot` tells "being written"
/// from "no such folder".
pub fn writer_of(dir: &Path) -> Option<(PathBuf, u32)> {
    let plain = without_missing_dotdot(dir);
    let located = match plain.canonicalize() {
        Ok(c) => c,
        Err(_) => resolve(&plain).ok()?,
    };
    let name = located.file_name()?;
    let parent = located.parent()?;
    let lock = super::folder_lock::lock_path(parent, name);
    let pid = super::folder_lock::live_holder(&lock)?;
    Some((lock, pid))
}

/// A stormsim command, other than this one, writing a folder now: the
/// folder (absolute), its lock file and its process.
struct Writer {
    folder: PathBuf,
    lock: PathBuf,
    pid: u32,
}

/// The stormsim command writing the folder `folder` now, other than
/// this one, if any (its lock, beside it, names a live process).
fn writer_at(folder: &Path) -> Option<Writer> {
    let (parent, name) = (folder.parent()?, folder.file_name()?);
    let lock = super::folder_lock::lock_path(parent, name);
    let pid = super::folder_lock::live_holder(&lock)?;
    Some(Writer {
        folder: folder.to_path_buf(),
        lock,
        pid,
    })
}

/// `outer`, a folder holding `dest` (absolute), as the user wrote it in
/// `target` when the parts of `target` below it are plain names, else its
/// full path.
fn shown_outer(target: &Path, dest: &Path, outer: &Path) -> String {
    let below = dest
        .strip_prefix(outer)
        .map_or(0, |r| r.components().count());
    let plain_tail = target
        .components()
        .rev()
        .take(below)
        .all(|c| matches!(c, Component::Normal(_)));
    match target.ancestors().nth(below) {
        Some(a) if below > 0 && plain_tail && !a.as_os_str().is_empty() => crate::escape::path(a),
        _ => crate::escape::path(outer),
    }
}

/// Refuses (even with force) an output inside a folder another stormsim
/// command is writing now (`dest` is the output made absolute): its
/// results would hold a folder it did not write, and it would be refused
/// at its end. An output that command's replacement carries over is
/// left to be written: a search's `tune` or a shard folder directly
/// inside it (`stormsim tune` into `output/x/tune` while `stormsim run`
/// writes `output/x`).
fn check_writer_around(target: &Path, dest: &Path, contents: Contents) -> Result<(), OutputError> {
    for (k, folder) in dest.ancestors().enumerate().skip(1) {
        let carried = k == 1
            && match contents {
                Contents::Shard => true,
                Contents::Tune => dest.file_name() == Some(OsStr::new("tune")),
                Contents::Results => false,
            };
        let Some(w) = writer_at(folder).filter(|_| !carried) else {
            continue;
        };
        let outer = shown_outer(target, dest, &w.folder);
        return Err(OutputError::Refused(format!(
            "another stormsim command (process {}) is writing {outer} (it holds the lock \
             {}), and {} lies inside it, where a folder would stand in the way of that \
             command's results; nothing was written: wait for it to finish, or choose a \
             folder outside {outer}",
            w.pid,
            crate::escape::path(&w.lock),
            crate::escape::path(target)
        )));
    }
    Ok(())
}

/// Whether `name` is that of a lock file of stormsim's.
fn is_lock_name(name: &OsStr) -> bool {
    name.as_encoded_bytes().starts_with(b".stormsim-lock-")
}

/// The output folders inside `dest` (an existing folder this command
/// replaces, whole or `mode`'s entries) that other stormsim commands are
/// writing now, found by their locks, which lie beside them. One that
/// exists where the replacement removes it, or any being written deeper
/// in what is removed (looked for with `force` only), is refused, even
/// with force: the replacement
/// would pull it from under that command. One not there yet (a first
/// write, staged in that command's work folder, which the replacement
/// carries over) is returned by its lock's name: what that command puts
/// in place is carried over too ([`written_meanwhile`]).
fn writers_inside(
    target: &Path,
    dest: &Path,
    mode: Mode,
    force: bool,
) -> Result<Vec<OsString>, OutputError> {
    let Ok(entries) = fs::read_dir(dest) else {
        return Ok(Vec::new());
    };
    let names: Vec<OsString> = entries.flatten().map(|e| e.file_name()).collect();
    let removed = |name: &OsStr| match mode {
        Mode::Folder => !is_carried(&dest.join(name)),
        Mode::Entries(list) => list.iter().any(|n| OsStr::new(n) == name),
    };
    let refuse = |inner: &Path, pid: u32, lock: &Path| {
        let rel = inner.strip_prefix(dest).unwrap_or(inner);
        OutputError::Refused(format!(
            "another stormsim command (process {pid}) is writing {} (it holds the lock {}), \
             and writing {} would remove it from under that command, even with --force; \
             nothing was written: wait for it to finish, or choose another folder",
            crate::escape::path(&target.join(rel)),
            crate::escape::path(lock),
            crate::escape::path(target)
        ))
    };
    let mut pending = Vec::new();
    for lock_name in names.iter().filter(|n| is_lock_name(n)) {
        let lock = dest.join(lock_name);
        let Some(pid) = super::folder_lock::live_holder(&lock) else {
            continue;
        };
        match names
            .iter()
            .find(|n| super::folder_lock::lock_path(dest, n) == lock)
        {
            Some(n) if removed(n) => return Err(refuse(&dest.join(n), pid, &lock)),
            Some(_) => {}
            None if mode == Mode::Folder => pending.push(lock_name.clone()),
            None => {}
        }
    }
    // Deeper, in every folder the replacement removes: only with force,
    // since without it a folder holding another output folder is refused
    // anyway (`check_owned`), before the walk would read all of it.
    let mut stack: Vec<PathBuf> = names
        .iter()
        .filter(|n| force && removed(n))
        .map(|n| dest.join(n))
        .collect();
    while let Some(dir) = stack.pop() {
        if !fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir()) {
            continue;
        }
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        let inside: Vec<OsString> = entries.flatten().map(|e| e.file_name()).collect();
        for lock_name in inside.iter().filter(|n| is_lock_name(n)) {
            let lock = dir.join(lock_name);
            if let Some(pid) = super::folder_lock::live_holder(&lock) {
                let written = inside
                    .iter()
                    .find(|n| super::folder_lock::lock_path(&dir, n) == lock)
                    .map_or_else(|| dir.clone(), |n| dir.join(n));
                return Err(refuse(&written, pid, &lock));
            }
        }
        stack.extend(inside.iter().map(|n| dir.join(n)));
    }
    Ok(pending)
}

/// Whether `path`, an entry of a folder being replaced, is the output
/// folder another stormsim command was writing there for the first time
/// when this one took its lock (`pending` holds the names of their
/// locks), now in place: it is carried over, as its work folder would
/// have been had it not finished first.
fn written_meanwhile(path: &Path, pending: &[OsString]) -> bool {
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return false;
    };
    !pending.is_empty()
        && super::folder_lock::lock_path(parent, name)
            .file_name()
            .is_some_and(|l| pending.iter().any(|p| p == l))
        && fs::symlink_metadata(path).is_ok_and(|m| m.is_dir())
        && marked_entries(path).is_some()
}

/// `path` made absolute with its longest existing ancestor resolved
/// (symbolic links followed), the rest taken as written.
fn resolve(path: &Path) -> io::Result<PathBuf> {
    let abs = std::path::absolute(path)?;
    let parts: Vec<Component<'_>> = abs.components().collect();
    for k in (1..=parts.len()).rev() {
        let head: PathBuf = parts[..k].iter().collect();
        if let Ok(mut out) = head.canonicalize() {
            for c in &parts[k..] {
                match c {
                    Component::ParentDir => {
                        out.pop();
                    }
                    Component::CurDir => {}
                    other => out.push(other.as_os_str()),
                }
            }
            return Ok(out);
        }
    }
    Ok(abs)
}

/// Refuses a target that is a symbolic link or not a folder.
fn check_kind(target: &Path, mode: Mode) -> Result<bool, OutputError> {
    let shown = crate::escape::path(target);
    match fs::symlink_metadata(target) {
        Ok(m) if m.file_type().is_symlink() => Err(OutputError::Refused(format!(
            "{shown} is a symbolic link; stormsim writes only into a real folder: \
             give the folder itself, or another name"
        ))),
        Ok(m) if !m.is_dir() => Err(OutputError::Refused(format!(
            "{shown} exists and is not a folder; nothing was written: choose another folder"
        ))),
        Ok(_) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => match mode {
            Mode::Folder => Ok(false),
            Mode::Entries(_) => Err(OutputError::Refused(format!("{shown}: no such folder"))),
        },
        Err(e) => Err(OutputError::Refused(match file_on_the_way(target) {
            Some(file) => format!(
                "cannot use {shown} as the output folder: {} is a file, not a folder; \
                 nothing was written: choose another output folder",
                crate::escape::path(&file)
            ),
            None => format!("cannot use {shown} as the output folder: {e}"),
        })),
    }
}

/// The first part of `path` that exists and is not a folder (so that no
/// folder can be made below it), if one is.
fn file_on_the_way(path: &Path) -> Option<PathBuf> {
    let mut parts: Vec<&Path> = path
        .ancestors()
        .skip(1)
        .filter(|a| !a.as_os_str().is_empty())
        .collect();
    parts.reverse();
    parts
        .into_iter()
        .find(|a| fs::metadata(a).is_ok_and(|m| !m.is_dir()))
        .map(Path::to_path_buf)
}

/// The current folder, its links resolved (as [`resolve`] gives paths).
fn current_folder() -> Option<PathBuf> {
    std::env::current_dir().ok()?.canonicalize().ok()
}

/// Refuses a target that is, holds or lies inside an input, or a folder
/// to replace that holds the current folder.
fn check_inputs(target: &Path, dest: &Path, opts: Options<'_>) -> Result<(), OutputError> {
    let shown = crate::escape::path(target);
    if let Some(cwd) = current_folder().filter(|_| opts.mode == Mode::Folder)
        && cwd.starts_with(dest)
    {
        return Err(OutputError::Refused(format!(
            "{shown} is the current folder or holds it; stormsim will not replace it: \
                 choose another output folder"
        )));
    }
    for input in opts.inputs {
        let Ok(i) = input.canonicalize() else {
            continue;
        };
        let relation = if i == dest {
            "is"
        } else if dest.starts_with(&i) {
            "lies inside"
        } else if let Ok(rest) = i.strip_prefix(dest) {
            // Inside a shard folder that the replacement carries over,
            // the input survives.
            let child = rest.components().next().map(|c| dest.join(c));
            if child.is_some_and(|c| is_carried(&c)) {
                continue;
            }
            "holds"
        } else {
            continue;
        };
        return Err(OutputError::Refused(format!(
            "the output folder {shown} {relation} the input {}; writing there would \
             destroy what the command reads: choose another output folder",
            crate::escape::path(input)
        )));
    }
    Ok(())
}

/// Whether this process may make and remove entries in the folder `dir`
/// (write and search permission: root passes unless the file system is
/// read-only), and if not, why.
fn writable(dir: &Path) -> Result<(), io::Error> {
    #[cfg(unix)]
    {
        // access(2) checks the real user, which is the effective one:
        // stormsim is never installed set-user-ID.
        use nix::unistd::{AccessFlags, access};
        access(dir, AccessFlags::W_OK | AccessFlags::X_OK).map_err(io::Error::from)
    }
    #[cfg(not(unix))]
    {
        match fs::metadata(dir) {
            Ok(m) if m.permissions().readonly() => {
                Err(io::Error::from(io::ErrorKind::PermissionDenied))
            }
            Ok(_) => Ok(()),
            Err(e) => Err(e),
        }
    }
}

/// Why a folder cannot be written, in words: `is read-only for this user
/// (permission denied)`.
fn unwritable_words(e: &io::Error) -> String {
    match e.raw_os_error() {
        #[cfg(unix)]
        Some(code) if code == nix::errno::Errno::EROFS as i32 => {
            "is on a read-only file system".to_string()
        }
        _ if e.kind() == io::ErrorKind::PermissionDenied => {
            "is read-only for this user (permission denied)".to_string()
        }
        _ => format!("cannot be written ({e})"),
    }
}

/// Refuses, before any work, an output stormsim could not put in place:
/// a parent folder it cannot write in (the work folder, the lock and the
/// swap live there), an existing folder it cannot replace (moving a
/// folder rewrites its `..`: its own write permission is needed) or write
/// into (`plot`), and the folders inside it that the swap moves or
/// empties (every folder of what is replaced, at any depth; a shard
/// folder a replacement carries over, itself only).
fn check_writable(
    target: &Path,
    parent: &Path,
    dest: &Path,
    mode: Mode,
) -> Result<(), OutputError> {
    let shown = crate::escape::path(target);
    let refuse = |what: String, e: &io::Error| {
        OutputError::Refused(format!(
            "cannot write {shown}: {what} {}; nothing was written: choose another folder \
             with --out, or make it writable",
            unwritable_words(e)
        ))
    };
    if let Err(e) = writable(parent) {
        return Err(refuse(
            format!("the folder that holds it, {},", crate::escape::path(parent)),
            &e,
        ));
    }
    let Ok(meta) = fs::symlink_metadata(dest) else {
        return Ok(());
    };
    if !meta.is_dir() {
        return Ok(());
    }
    if let Err(e) = writable(dest) {
        return Err(refuse("it".to_string(), &e));
    }
    // The folders the swap moves or removes: every folder inside (what it
    // holds is deleted once replaced), a carried one itself only (it is
    // moved, not emptied).
    let tops: Vec<PathBuf> = match mode {
        Mode::Folder => fs::read_dir(dest)
            .map(|entries| entries.flatten().map(|e| e.path()).collect())
            .unwrap_or_default(),
        Mode::Entries(names) => names.iter().map(|n| dest.join(n)).collect(),
    };
    let mut stack: Vec<(PathBuf, bool)> = tops
        .into_iter()
        .map(|p| {
            let carried = mode == Mode::Folder && is_carried(&p);
            (p, carried)
        })
        .collect();
    while let Some((dir, carried)) = stack.pop() {
        if !fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir()) {
            continue;
        }
        if let Err(e) = writable(&dir) {
            let rel = dir.strip_prefix(dest).unwrap_or(&dir);
            return Err(refuse(
                format!("the folder {} inside it", crate::escape::path(rel)),
                &e,
            ));
        }
        if !carried && let Ok(entries) = fs::read_dir(&dir) {
            stack.extend(entries.flatten().map(|e| (e.path(), false)));
        }
    }
    Ok(())
}

/// Refuses (without force) a target that is, or lies inside, an entry of
/// another output folder of stormsim's, as its marker lists it
/// (`out/charts`, `out/charts/x`, `out/report.html/x`): written there, a
/// folder would break those results, and writing that folder again would
/// replace it. `dest` is the target made absolute ([`resolve`]).
fn check_nested(target: &Path, dest: &Path, force: bool) -> Result<(), OutputError> {
    if force {
        return Ok(());
    }
    for outer in dest.ancestors().skip(1) {
        let Some(marked) = marked_entries(outer) else {
            continue;
        };
        let Ok(rel) = dest.strip_prefix(outer) else {
            continue;
        };
        let parts: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        // The outermost listed entry the target is or lies inside.
        let Some(k) = (1..=parts.len()).find(|&k| marked.contains_key(&parts[..k].join("/")))
        else {
            continue;
        };
        let entry = parts[..k].join("/");
        // The outer folder as the user wrote it, when the target's last
        // components are plain names.
        let tail_plain = target
            .components()
            .rev()
            .take(parts.len())
            .all(|c| matches!(c, Component::Normal(_)))
            && target.components().count() >= parts.len();
        // `--out OUTER` replaces those results, unless OUTER is or holds
        // the current folder, which stormsim never replaces: then the
        // way out is to run from outside it.
        let holds_cwd = current_folder().is_some_and(|cwd| cwd.starts_with(outer));
        // `--out` refuses the current folder and a symbolic link: those
        // are named by the folder's full path.
        let outer_shown = match target.ancestors().nth(parts.len()) {
            Some(a)
                if tail_plain
                    && !holds_cwd
                    && !fs::symlink_metadata(a).is_ok_and(|m| m.file_type().is_symlink()) =>
            {
                crate::escape::path(a)
            }
            _ => crate::escape::path(outer),
        };
        let what = match marked.get(&entry) {
            Some(EntryKind::Folder) => "folder",
            _ => "file",
        };
        let kind =
            Contents::marked_in(outer).map_or("the output of a stormsim command", Contents::words);
        let replace = if holds_cwd {
            format!(
                "or, to replace those results, run from outside {outer_shown} with --out \
                 {outer_shown}"
            )
        } else {
            format!("or --out {outer_shown} to replace those results")
        };
        return Err(OutputError::Refused(format!(
            "{} {} `{entry}` of {outer_shown}, which holds {kind} (its {MARKER} marker \
             lists `{entry}` as a {what} stormsim wrote there); a folder written there \
             would break those results, and writing {outer_shown} again would replace it. \
             Nothing was written: choose a folder outside {outer_shown}; {replace}",
            crate::escape::path(target),
            if k == parts.len() {
                format!("is the {what}")
            } else {
                format!("lies inside the {what}")
            }
        )));
    }
    Ok(())
}

/// Refuses (without force) a folder holding what stormsim did not write,
/// or, replaced whole, a folder of another kind than `contents`.
fn check_owned(
    target: &Path,
    dest: &Path,
    mode: Mode,
    contents: Contents,
    force: bool,
    pending: &[OsString],
) -> Result<(), OutputError> {
    if force {
        return Ok(());
    }
    if mode == Mode::Folder
        && let Some(found) = Contents::marked_in(dest).filter(|&found| found != contents)
    {
        return Err(OutputError::Refused(format!(
            "{} holds {} (its {MARKER} marker lists {}), and this command writes {}: \
             stormsim does not replace a folder of one kind with another. Nothing was \
             written: choose another folder with --out, or pass --force to replace the \
             folder and everything in it",
            crate::escape::path(target),
            found.words(),
            found.telltale(),
            contents.words()
        )));
    }
    let foreign = foreign_entries(dest, mode, pending).map_err(|e| {
        OutputError::Refused(format!("cannot read {}: {e}", crate::escape::path(target)))
    })?;
    if foreign.is_empty() {
        return Ok(());
    }
    let mut refused = refusal(target, mode, &foreign);
    if let OutputError::Refused(m) = &mut refused
        && has_old_marker(dest)
    {
        m.push_str(&format!(
            " (its {MARKER} marker is from an older stormsim, which did not list the files \
             inside the folders it wrote: if all of it is stormsim's, pass --force once)"
        ));
    }
    Err(refused)
}

/// Whether the marker of `dir` is of the older form, a bare name a line.
fn has_old_marker(dir: &Path) -> bool {
    marked_entries(dir).is_some()
        && fs::read_to_string(dir.join(MARKER)).is_ok_and(|t| {
            t.lines().skip(1).any(|l| {
                !l.is_empty()
                    && !l.starts_with('#')
                    && !l.starts_with("file ")
                    && !l.starts_with("folder ")
            })
        })
}

/// The refusal of `target`, which holds the `foreign` entries.
fn refusal(target: &Path, mode: Mode, foreign: &[String]) -> OutputError {
    let shown = crate::escape::path(target);
    // Output folders of stormsim's own written inside this one (`run
    // --out out/sub`): stormsim wrote them, but not as part of it.
    let (own, other): (Vec<String>, Vec<String>) = foreign.iter().cloned().partition(|f| {
        fs::symlink_metadata(target.join(f)).is_ok_and(|m| m.is_dir())
            && marked_entries(&target.join(f)).is_some()
    });
    OutputError::Refused(match mode {
        Mode::Folder if other.is_empty() => format!(
            "{shown} already exists and holds {}: {} of stormsim's written inside it, \
             not part of the results it holds, which replacing {shown} would delete; \
             nothing was written. Move {} out of {shown}, choose another folder with \
             --out, or pass --force to replace the folder and everything in it",
            shown_list(&own),
            if own.len() == 1 {
                "another output folder"
            } else {
                "other output folders"
            },
            if own.len() == 1 { "it" } else { "them" }
        ),
        Mode::Folder => format!(
            "{shown} already exists and holds files stormsim did not write ({}){}; \
             nothing was written. Choose another folder with --out, or pass --force \
             to replace the folder and everything in it",
            shown_list(&other),
            if own.is_empty() {
                String::new()
            } else {
                format!(
                    ", and other output folders of stormsim's written inside it ({})",
                    shown_list(&own)
                )
            }
        ),
        Mode::Entries(_) => {
            let marker = target.join(MARKER);
            let why = match fs::symlink_metadata(&marker) {
                Err(_) => format!("it has no {MARKER} marker"),
                Ok(m) if !m.is_file() => format!("its {MARKER} is not a file"),
                Ok(m) if m.len() > MAX_MARKER_BYTES => format!(
                    "its {MARKER} file is too large to be stormsim's marker ({} bytes; a \
                     marker is at most {MAX_MARKER_BYTES})",
                    m.len()
                ),
                Ok(_) if marked_entries(target).is_none() => {
                    format!("its {MARKER} file is not a stormsim marker")
                }
                Ok(_) => format!("its {MARKER} marker does not list them"),
            };
            format!(
                "{shown} holds {} that stormsim did not write ({why}); nothing was \
                 written. Move them away, or pass --force to replace them",
                shown_list(foreign)
            )
        }
    })
}

/// Whether `name` is one stormsim gives its own files beside or inside a
/// folder it writes: the marker, [`MARKER`], or `.stormsim-…` (its work
/// folders and lock files), which a later command would take for its own.
fn is_reserved(name: &OsStr) -> bool {
    name == MARKER || name.as_encoded_bytes().starts_with(b".stormsim-")
}

/// Creates the missing ancestors of `dir`, returning those created,
/// outermost first.
fn create_parents(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut missing: Vec<PathBuf> = dir
        .ancestors()
        .filter(|a| !a.as_os_str().is_empty())
        .take_while(|a| fs::symlink_metadata(a).is_err())
        .map(Path::to_path_buf)
        .collect();
    missing.reverse();
    let mut created = Vec::new();
    for d in missing {
        match fs::create_dir(&d) {
            Ok(()) => created.push(d),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => {
                remove_created(&created);
                return Err(e);
            }
        }
    }
    Ok(created)
}

/// `path` without `.` components (a leading one kept) and without each
/// `missing/..`: a folder that does not exist is no symbolic link, so
/// `sub/../x` is `x` when `sub` does not exist, and creating the parents
/// of the output creates no `sub` (which would be left behind, empty).
/// A `..` after a folder that exists is left to the file system, which
/// may resolve it through a link.
fn without_missing_dotdot(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir if out.as_os_str().is_empty() => out.push(c),
            Component::CurDir => {}
            Component::ParentDir
                if matches!(out.components().next_back(), Some(Component::Normal(_)))
                    && fs::symlink_metadata(&out).is_err() =>
            {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// Removes folders this command created, innermost first, when empty.
fn remove_created(created: &[PathBuf]) {
    for d in created.iter().rev() {
        let _ = fs::remove_dir(d);
    }
}

static NEXT: AtomicU64 = AtomicU64::new(0);

/// A new folder `.stormsim-<tag>-<pid>-<n>` inside `dir`, never an
/// existing one.
fn make_work_folder(dir: &Path, tag: &str) -> io::Result<PathBuf> {
    loop {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = dir.join(format!(".stormsim-{tag}-{}-{n}", std::process::id()));
        match fs::create_dir(&path) {
            Ok(()) => return Ok(path),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && n < 1_000_000 => continue,
            Err(e) => return Err(e),
        }
    }
}

/// The process id in the name of a work folder `.stormsim-<tag>-<pid>-<n>`.
fn work_folder_pid(name: &OsStr, tag: &str) -> Option<u32> {
    let rest = name
        .to_str()?
        .strip_prefix(".stormsim-")?
        .strip_prefix(tag)?
        .strip_prefix('-')?;
    let (pid, n) = rest.split_once('-')?;
    let digits = |t: &str| !t.is_empty() && t.len() <= 20 && t.bytes().all(|b| b.is_ascii_digit());
    (digits(pid) && digits(n)).then(|| pid.parse().ok())?
}

/// The work folders of tag `tag` in `dir`, with the process that made
/// each.
fn work_folders(dir: &Path, tag: &str) -> Vec<(PathBuf, u32)> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<(PathBuf, u32)> = entries
        .flatten()
        .filter_map(|e| Some((e.path(), work_folder_pid(&e.file_name(), tag)?)))
        .filter(|(p, _)| fs::symlink_metadata(p).is_ok_and(|m| m.is_dir()))
        .collect();
    found.sort();
    found
}

/// What a command stopped outright (SIGKILL, a crash, a power cut) while
/// writing `target` left behind, found once its lock is held: its work
/// folders, which no live command can be using (they are made only under
/// the lock, and a command removes its own before it releases the lock).
/// Each is put right and removed ([`recover`]); one whose process still
/// runs (a reused process id) is left alone. `stale` is the process the
/// lock file named. One sentence per finding.
fn clean_leftovers(
    home: &Path,
    tag: &str,
    dest: &Path,
    mode: Mode,
    target: &Path,
    stale: Option<u32>,
) -> Vec<String> {
    let own = std::process::id();
    let mut found: Vec<(PathBuf, u32, Mode)> = work_folders(home, tag)
        .into_iter()
        .map(|(p, pid)| (p, pid, mode))
        .collect();
    // A `plot` of this folder holds the same lock.
    if mode == Mode::Folder {
        found.extend(
            work_folders(dest, "plot")
                .into_iter()
                .map(|(p, pid)| (p, pid, Mode::Entries(VISUALS))),
        );
    }
    let shown = crate::escape::path(target);
    let mut notes = Vec::new();
    for (work, pid, kind) in found {
        let name = work.file_name().unwrap_or_default().to_string_lossy();
        let place = crate::escape::path(work.parent().unwrap_or(Path::new(".")));
        // Left on purpose by a command that finished (its results are in
        // place), which no command is using now that the lock is held.
        if fs::symlink_metadata(work.join(LEFT)).is_ok_and(|m| m.is_file()) {
            let left = clear_work(&work);
            notes.push(if left.is_empty() {
                format!(
                    "removed {name} in {place}, what an earlier stormsim command (process \
                     {pid}) could not remove of what its results replaced in {shown}"
                )
            } else {
                let each: Vec<String> = left
                    .iter()
                    .map(|(path, why)| format!("{} ({why})", crate::escape::path(path)))
                    .collect();
                format!(
                    "{name} in {place} still holds what an earlier stormsim command (process \
                     {pid}) could not remove of what its results replaced in {shown}: {}; \
                     left as it is",
                    shown_paths(&each)
                )
            });
            continue;
        }
        if pid != own && super::folder_lock::process_alive(pid) {
            notes.push(format!(
                "{name} in {place} is the work folder of a stormsim command (process {pid}) that \
                 is not writing {shown} but still runs (or another process has its id); left as it is"
            ));
            continue;
        }
        let owner = match kind {
            Mode::Folder => dest,
            Mode::Entries(_) => work.parent().unwrap_or(dest),
        };
        let what = match recover(&work, owner, kind) {
            Ok(done) => format!("removed its work folder {name} in {place}{done}"),
            Err(why) => format!("its work folder {name} in {place} is left as it is: {why}"),
        };
        notes.push(format!(
            "a stormsim command (process {pid}) was stopped outright while writing {shown} \
             (killed?); {what}"
        ));
    }
    if notes.is_empty()
        && let Some(pid) = stale
    {
        notes.push(format!(
            "the lock of {shown} was left by a stormsim command (process {pid}) stopped \
             outright (killed?); taken over"
        ));
    }
    notes
}

/// Puts right what the work folder `work` of a stopped command holds,
/// then removes it: in `old/`, what it had moved aside to swap in its
/// results goes back where it was when nothing has taken its place (the
/// whole folder `dest`, or the entries `plot` replaces), shard folders
/// are carried over as a finished replacement does; `new/` holds only
/// what it was writing. Returns what was put back (`, after putting back
/// ...`, or nothing), or, when `old/` still holds what stormsim did not
/// write (or a carried folder that could not be put back), why it is
/// kept: nothing of the user's is ever deleted.
fn recover(work: &Path, dest: &Path, mode: Mode) -> Result<String, String> {
    // Only what stormsim makes in a work folder: a folder of that name
    // holding anything else is not one of its own.
    let entries = fs::read_dir(work).map_err(|e| e.to_string())?;
    let other: Vec<String> = entries
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != "new" && n != "old" && n != JOURNAL && n != MARKER)
        .collect();
    if !other.is_empty() {
        return Err(format!(
            "it holds what stormsim never puts in a work folder ({})",
            shown_list(&other)
        ));
    }
    let old = work.join("old");
    let mut put_back: Vec<String> = Vec::new();
    if fs::symlink_metadata(&old).is_ok_and(|m| m.is_dir()) {
        let absent = |p: &Path| fs::symlink_metadata(p).is_err();
        if mode == Mode::Folder && absent(dest) {
            fs::rename(&old, dest)
                .map_err(|e| format!("cannot put back {}: {e}", crate::escape::path(dest)))?;
            put_back.push(crate::escape::path(dest));
        } else {
            let entries = fs::read_dir(&old).map_err(|e| e.to_string())?;
            for entry in entries.flatten() {
                let (from, to) = (entry.path(), dest.join(entry.file_name()));
                let wanted = mode != Mode::Folder || is_carried(&from);
                if wanted && absent(&to) {
                    fs::rename(&from, &to).map_err(|e| {
                        format!("cannot put back {}: {e}", crate::escape::path(&to))
                    })?;
                    put_back.push(crate::escape::path(&to));
                }
            }
        }
        if fs::symlink_metadata(&old).is_ok() {
            let marked = match mode {
                Mode::Folder => marked_entries(&old),
                Mode::Entries(_) => marked_entries(dest),
            };
            let mut kept =
                foreign_in(&old, Mode::Folder, marked, &[]).map_err(|e| e.to_string())?;
            if let Ok(entries) = fs::read_dir(&old) {
                kept.extend(
                    entries
                        .flatten()
                        .filter(|e| is_carried(&e.path()))
                        .map(|e| e.file_name().to_string_lossy().into_owned()),
                );
            }
            if !kept.is_empty() {
                return Err(format!(
                    "its old/ holds what stormsim did not write or could not put back ({}): \
                     move what you need out of it, then delete it",
                    shown_list(&kept)
                ));
            }
        }
    }
    let done = if put_back.is_empty() {
        String::new()
    } else {
        format!(
            ", after putting back {} (moved aside to make room for its results)",
            put_back.join(", ")
        )
    };
    let name = dest.file_name().unwrap_or_default();
    let foreign = foreign_in_new(work, name, mode).map_err(|e| e.to_string())?;
    if !foreign.is_empty() {
        return Err(format!(
            "its new/ holds what stormsim did not write ({}): move what you need out of \
             it, then delete it{done}",
            shown_list(&foreign)
        ));
    }
    let dev = fs::symlink_metadata(work)
        .map(|m| device(work, &m))
        .map_err(|e| os_reason(&e))?;
    let mut left = Vec::new();
    if !remove_tree(work, dev, &mut left) {
        let each: Vec<String> = left
            .iter()
            .map(|(path, why)| format!("{} ({why})", crate::escape::path(path)))
            .collect();
        return Err(format!(
            "cannot remove all of it: {}{done}",
            shown_paths(&each)
        ));
    }
    Ok(done)
}

/// What the `new/` of the work folder `work` holds that its command did
/// not put there, as paths relative to `work` (an entry named whole, not
/// what lies inside it): anything but the staging folder `name` (or, with
/// `Mode::Entries`, `new/` itself) and, in it, the files its
/// [`JOURNAL`] lists, the folders holding them and the marker.
fn foreign_in_new(work: &Path, name: &OsStr, mode: Mode) -> io::Result<Vec<String>> {
    /// `dir` is the staging folder's `inner` (relative to it; empty at
    /// its top, where `marker` says whether stormsim writes its marker),
    /// shown as `shown`.
    fn walk(
        dir: &Path,
        shown: &str,
        inner: &str,
        marker: bool,
        listed: &[String],
        foreign: &mut Vec<String>,
    ) -> io::Result<()> {
        for entry in fs::read_dir(dir)? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = format!("{shown}/{name}");
            let rel = if inner.is_empty() {
                name.clone()
            } else {
                format!("{inner}/{name}")
            };
            let kind = EntryKind::of(&fs::symlink_metadata(entry.path())?);
            let ours = entry.file_name().to_str().is_some()
                && match kind {
                    Some(EntryKind::File) => {
                        (marker && inner.is_empty() && name == MARKER) || listed.contains(&rel)
                    }
                    Some(EntryKind::Folder) => listed
                        .iter()
                        .any(|l| l.strip_prefix(&rel).is_some_and(|r| r.starts_with('/'))),
                    None => false,
                };
            if !ours {
                foreign.push(path);
            } else if kind == Some(EntryKind::Folder) {
                walk(&entry.path(), &path, &rel, false, listed, foreign)?;
            }
        }
        Ok(())
    }
    let new = work.join("new");
    let mut foreign = Vec::new();
    if !fs::symlink_metadata(&new).is_ok_and(|m| m.is_dir()) {
        return Ok(foreign);
    }
    let listed: Vec<String> = match fs::read_to_string(work.join(JOURNAL)) {
        Ok(text) => text.lines().map(str::to_string).collect(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(e),
    };
    match mode {
        Mode::Folder => {
            for entry in fs::read_dir(&new)? {
                let entry = entry?;
                let path = format!("new/{}", entry.file_name().to_string_lossy());
                let staging = entry.file_name() == name
                    && fs::symlink_metadata(entry.path()).is_ok_and(|m| m.is_dir());
                if staging {
                    walk(&entry.path(), &path, "", true, &listed, &mut foreign)?;
                } else {
                    foreign.push(path);
                }
            }
        }
        Mode::Entries(_) => walk(&new, "new", "", false, &listed, &mut foreign)?,
    }
    foreign.sort();
    Ok(foreign)
}

/// Before a command reads the folder `dir` (`merge DIR`, `plot DIR`):
/// puts right what a stormsim command stopped outright while writing it
/// left behind, as the next command writing it would ([`clean_leftovers`],
/// under the folder's lock), and returns what was done (one sentence
/// each). A folder killed in the middle of its swap is then back in
/// place, rather than reported missing. Nothing is done (nor a lock
/// taken) unless a work folder of a process no longer running is there;
/// when the lock cannot be taken, the sentence says where the folder's
/// contents are.
pub fn recover_for_reading(dir: &Path) -> Vec<String> {
    let plain = without_missing_dotdot(dir);
    let Some(Component::Normal(name)) = plain.components().next_back() else {
        return Vec::new();
    };
    let parent = match plain.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let Ok(parent) = parent.canonicalize() else {
        return Vec::new();
    };
    let tag = format!("{:016x}", crate::shard::fnv1a64(name.as_encoded_bytes()));
    let own = std::process::id();
    let dead: Vec<PathBuf> = work_folders(&parent, &tag)
        .into_iter()
        .filter(|&(_, pid)| pid != own && !super::folder_lock::process_alive(pid))
        .map(|(p, _)| p)
        .collect();
    if dead.is_empty() {
        return Vec::new();
    }
    let shown = crate::escape::path(dir);
    let lock = match FolderLock::acquire(&parent, name) {
        Ok(lock) => lock,
        // Its writer is at work and puts it right itself.
        Err(LockError::Held(_)) => return Vec::new(),
        Err(LockError::Foreign(lock) | LockError::Io(lock, _)) => {
            return dead
                .iter()
                .map(|work| {
                    format!(
                        "a stormsim command was stopped outright while writing {shown} \
                         (killed?), and its lock {} cannot be taken to put things right: \
                         what it had moved aside is in {}/old (move it back to {shown} \
                         if {shown} is missing)",
                        crate::escape::path(&lock),
                        crate::escape::path(work)
                    )
                })
                .collect();
        }
    };
    let stale = lock.stale_holder();
    let notes = clean_leftovers(
        &parent,
        &tag,
        &parent.join(name),
        Mode::Folder,
        &plain,
        stale,
    );
    drop(lock);
    notes
}

/// What the OS said of `e`, in words (`permission denied`), without the
/// error's number.
fn os_reason(e: &io::Error) -> String {
    let text = e.to_string();
    let words = match text.rfind(" (os error ") {
        Some(at) if text.ends_with(')') => &text[..at],
        _ => &text,
    };
    let mut chars = words.chars();
    chars.next().map_or_else(String::new, |first| {
        first.to_lowercase().chain(chars).collect()
    })
}

/// The refusal of an output folder (`shown`, in the folder `parent`)
/// whose lock was not taken. What sits at the lock's path may be the
/// user's: the message says to move it, never to remove it.
fn lock_refusal(shown: &str, parent: &Path, e: LockError) -> OutputError {
    OutputError::Refused(match e {
        LockError::Held(lock) => format!(
            "another stormsim command is writing {shown} (it holds the lock {}); \
             nothing was written: wait for it to finish, or choose another folder",
            crate::escape::path(&lock)
        ),
        LockError::Foreign(lock) => format!(
            "cannot lock {shown}: {} is where stormsim keeps the folder's lock file, \
             and a file stormsim did not write is there; it was left as it is and \
             nothing was written: move it, or choose another folder",
            crate::escape::path(&lock)
        ),
        LockError::Io(lock, e) => {
            let what = match fs::symlink_metadata(&lock) {
                Err(_) => {
                    return OutputError::Refused(format!(
                        "cannot lock {shown}: its lock file {} cannot be created there \
                         ({}); nothing was written: choose another folder, or make {} \
                         writable",
                        crate::escape::path(&lock),
                        os_reason(&e),
                        crate::escape::path(parent)
                    ));
                }
                Ok(m) if m.file_type().is_symlink() => {
                    "it is a symbolic link, and stormsim's lock files are plain files it \
                     makes itself"
                        .to_string()
                }
                Ok(m) if m.is_dir() => {
                    "it is a folder, and stormsim's lock files are plain files".to_string()
                }
                Ok(m) if !m.is_file() => {
                    "it is not a plain file, as stormsim's lock files are".to_string()
                }
                Ok(_) => os_reason(&e),
            };
            format!(
                "cannot lock {shown}: {} is where stormsim keeps the folder's lock file, \
                 and what is there cannot be used ({what}); it was left as it is and \
                 nothing was written: move it (it may be yours), or choose another folder",
                crate::escape::path(&lock)
            )
        }
    })
}

impl OutputDir {
    /// Decides everything about writing `target` before the work starts:
    /// see the module's documentation. A refusal leaves nothing behind.
    pub fn prepare(target: &Path, opts: Options<'_>) -> Result<OutputDir, OutputError> {
        // `link/` and `link/.` name what `link` points to; every check
        // below is of the path without them, which is a symbolic link.
        let plain = without_missing_dotdot(target);
        let target = plain.as_path();
        let shown = crate::escape::path(target);
        // `plot .` names its folder by its canonical path.
        let canonical;
        let located = match opts.mode {
            Mode::Folder => target,
            Mode::Entries(_) => {
                check_kind(target, opts.mode)?;
                canonical = target
                    .canonicalize()
                    .map_err(|e| OutputError::Refused(format!("{shown}: {e}")))?;
                canonical.as_path()
            }
        };
        let name: OsString = match located.components().next_back() {
            Some(Component::Normal(n)) => n.to_os_string(),
            _ => {
                return Err(OutputError::Refused(format!(
                    "{shown} does not name a folder stormsim can write (expected a path \
                     ending in a folder name, such as output/run)"
                )));
            }
        };
        if is_reserved(&name) {
            return Err(OutputError::Refused(format!(
                "{shown}: the name {} is stormsim's own ({MARKER} is the marker file of \
                 the folders it writes, .stormsim-… its work folders and locks), and no \
                 output folder may take it; nothing was written: choose another name",
                crate::escape::quoted(&name.to_string_lossy())
            )));
        }
        let parent = match located.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        // First without touching anything.
        let exists = check_kind(target, opts.mode)?;
        let guess = resolve(located).map_err(|e| io_error(&shown, &e))?;
        check_inputs(target, &guess, opts)?;
        if opts.mode == Mode::Folder {
            check_nested(target, &guess, opts.force)?;
        }
        check_writer_around(target, &guess, opts.contents)?;
        if exists {
            let pending = writers_inside(target, &guess, opts.mode, opts.force)?;
            check_owned(
                target,
                &guess,
                opts.mode,
                opts.contents,
                opts.force,
                &pending,
            )?;
        }

        let created = create_parents(&parent).map_err(|e| {
            OutputError::Refused(match file_on_the_way(target) {
                Some(file) => format!(
                    "cannot create the folder {} for {shown}: {} is a file, not a folder; \
                     nothing was written: choose another output folder",
                    crate::escape::path(&parent),
                    crate::escape::path(&file)
                ),
                None => format!(
                    "cannot create the folder {} for {shown}: {e}",
                    crate::escape::path(&parent)
                ),
            })
        })?;
        let mut out = OutputDir {
            target: target.to_path_buf(),
            dest: guess,
            mode: opts.mode,
            contents: opts.contents,
            force: opts.force,
            work: PathBuf::new(),
            staging: PathBuf::new(),
            lock: None,
            pending: Vec::new(),
            created,
            committed: false,
            notes: Vec::new(),
        };
        // From here on, dropping `out` removes what was made.
        let parent = parent
            .canonicalize()
            .map_err(|e| io_error(crate::escape::path(&parent), &e))?;
        out.dest = parent.join(&name);
        check_inputs(target, &out.dest, opts)?;
        check_writable(target, &parent, &out.dest, opts.mode)?;
        out.lock = Some(
            FolderLock::acquire(&parent, &name).map_err(|e| lock_refusal(&shown, &parent, e))?,
        );
        let (home, tag) = match opts.mode {
            Mode::Folder => (
                parent,
                format!("{:016x}", crate::shard::fnv1a64(name.as_encoded_bytes())),
            ),
            Mode::Entries(_) => (out.dest.clone(), "plot".to_string()),
        };
        // What a command stopped outright left, first: the folder may
        // have to be put back.
        let stale = out.lock.as_ref().and_then(FolderLock::stale_holder);
        out.notes = clean_leftovers(&home, &tag, &out.dest, opts.mode, target, stale);
        // Again, now that no other stormsim command can change it; and
        // the commands writing around it, now that this one's lock is
        // there for them to see (one that took its lock after this check
        // finds this one's: of two commands, one inside the other's
        // folder, the second is refused whichever order they start in).
        let again = check_writer_around(target, &out.dest, opts.contents).and_then(|()| {
            if !check_kind(target, opts.mode)? {
                return Ok(());
            }
            out.pending = writers_inside(target, &out.dest, opts.mode, opts.force)?;
            check_owned(
                target,
                &out.dest,
                opts.mode,
                opts.contents,
                opts.force,
                &out.pending,
            )
        });
        if let Err(e) = again {
            // What was put right stays so: said before the refusal.
            for n in &out.notes {
                crate::terminal::errln!("note: {}", crate::escape::escape(n));
            }
            return Err(e);
        }
        out.work = make_work_folder(&home, &tag).map_err(|e| {
            OutputError::Refused(format!(
                "cannot create a work folder in {}: {e}",
                crate::escape::path(&home)
            ))
        })?;
        interrupt::register_cleanup(&out.work);
        let new = out.work.join("new");
        fs::create_dir(&new).map_err(|e| io_error(crate::escape::path(&new), &e))?;
        out.staging = match opts.mode {
            Mode::Folder => {
                let staging = new.join(&name);
                fs::create_dir(&staging).map_err(|e| {
                    OutputError::Refused(format!(
                        "cannot create a folder named {} ({} bytes) in {}: {e}",
                        crate::escape::quoted(&name.to_string_lossy()),
                        name.len(),
                        crate::escape::path(out.dest.parent().unwrap_or(Path::new("/")))
                    ))
                })?;
                staging
            }
            Mode::Entries(_) => new,
        };
        Ok(out)
    }

    /// What was found and cleaned up of a stormsim command that was
    /// stopped outright while writing this folder (one sentence each),
    /// for the console.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Writes one file (a relative path of plain names; subfolders are
    /// created).
    pub fn write(&self, rel: &str, bytes: &[u8]) -> Result<(), OutputError> {
        let mut file = self.create(rel)?;
        file.append(bytes)?;
        file.finish()
    }

    /// Creates one file to be written piece by piece ([`OutputFile`]: a
    /// table written as the runs finish), as `write` would write it.
    pub fn create(&self, rel: &str) -> Result<OutputFile, OutputError> {
        let path = self.staged(rel)?;
        let file = fs::File::create(&path).map_err(|e| io_error(crate::escape::path(&path), &e))?;
        Ok(OutputFile {
            file: io::BufWriter::with_capacity(1 << 16, file),
            path,
        })
    }

    /// Opens a file written (and finished) into the folder, to read it
    /// back before the folder is committed (the charts are drawn from the
    /// tables as written).
    pub fn open_written(&self, rel: &str) -> Result<fs::File, OutputError> {
        let path = self.staged(rel)?;
        fs::File::open(&path).map_err(|e| io_error(crate::escape::path(&path), &e))
    }

    /// Where the file `rel` is written (its folders created), once `rel`
    /// is checked to be a plain relative path this command may write.
    fn staged(&self, rel: &str) -> Result<PathBuf, OutputError> {
        interrupt::check()?;
        let rel = Path::new(rel);
        if !rel.components().all(|c| matches!(c, Component::Normal(_))) {
            return Err(OutputError::Io(format!(
                "{}: not a plain relative path",
                crate::escape::path(rel)
            )));
        }
        if let Mode::Entries(names) = self.mode {
            let top = rel.components().next().map(|c| c.as_os_str());
            if !top.is_some_and(|t| names.iter().any(|n| OsStr::new(n) == t)) {
                return Err(OutputError::Io(format!(
                    "{}: not one of the entries this command replaces",
                    crate::escape::path(rel)
                )));
            }
        }
        let path = self.staging.join(rel);
        // Listed before it exists: a command stopped outright leaves no
        // file of its own that the list does not name.
        let listed = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.work.join(JOURNAL))
            .and_then(|mut j| {
                io::Write::write_all(&mut j, format!("{}\n", crate::escape::path(rel)).as_bytes())
            });
        listed.map_err(|e| io_error(crate::escape::path(&self.work), &e))?;
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir).map_err(|e| io_error(crate::escape::path(dir), &e))?;
        }
        Ok(path)
    }

    /// Puts everything written in place (see the module's documentation)
    /// and returns the folder's path as the user named it.
    pub fn commit(self) -> Result<Committed, OutputError> {
        self.commit_unless(interrupt::requested)
    }

    /// [`OutputDir::commit`], with `stopped` saying whether a stop was
    /// asked for. It is asked once more at the commit point, the first
    /// rename of the swap, after the marker is written and the target
    /// checked: a stop asked for before it leaves the folder as it was
    /// (`OutputError::Interrupted`); one asked for during the renames
    /// lets them finish, and a note says the folder was replaced.
    fn commit_unless(mut self, stopped: impl Fn() -> bool) -> Result<Committed, OutputError> {
        let stop = || {
            if stopped() {
                Err(OutputError::Interrupted)
            } else {
                Ok(())
            }
        };
        stop()?;
        let written = walk_written(&self.staging)
            .map_err(|e| io_error(crate::escape::path(&self.staging), &e))?;
        if self.mode == Mode::Folder {
            fs::write(self.staging.join(MARKER), marker_text(&written))
                .map_err(|e| io_error(crate::escape::path(&self.staging), &e))?;
        }
        // The target again: something may have appeared during the run.
        if check_kind(&self.target, self.mode)? {
            check_owned(
                &self.target,
                &self.dest,
                self.mode,
                self.contents,
                self.force,
                &self.pending,
            )?;
        }
        let swapped = interrupt::uninterrupted(|| {
            // The commit point: from the first rename on, the swap runs to
            // its end whatever signal comes.
            stop()?;
            match self.mode {
                Mode::Folder => self.swap_folder(),
                Mode::Entries(_) => self.swap_entries(&written),
            }
        });
        swapped?;
        self.committed = true;
        // What it replaced, moved aside: removed as carefully as anything
        // of the user's, and what cannot be is said, not lost track of.
        interrupt::unregister_cleanup(&self.work);
        let left = clear_work(&self.work);
        if stopped() {
            crate::terminal::errln!(
                "note: the stop came during the final renames, which run to their end: {} \
                 holds the new results",
                crate::escape::path(&self.target)
            );
        }
        Ok(Committed {
            path: self.target.clone(),
            left,
            work: self.work.clone(),
        })
    }

    /// Moves the old folder aside, checks once more that it holds nothing
    /// but what stormsim wrote (now that nothing can reach it by its
    /// name; otherwise it goes back and the commit is refused), moves the
    /// new one in place and the shard folders of the old one over.
    fn swap_folder(&self) -> Result<(), OutputError> {
        let old = self.work.join("old");
        let had_old = fs::symlink_metadata(&self.dest).is_ok();
        if had_old {
            fs::rename(&self.dest, &old)
                .map_err(|e| io_error(crate::escape::path(&self.target), &e))?;
            if !self.force {
                let foreign = foreign_entries(&old, Mode::Folder, &self.pending);
                if !foreign.as_ref().is_ok_and(Vec::is_empty) {
                    let _ = fs::rename(&old, &self.dest);
                    return Err(match foreign {
                        Ok(foreign) => refusal(&self.target, self.mode, &foreign),
                        Err(e) => io_error(crate::escape::path(&self.target), &e),
                    });
                }
            }
        }
        if let Err(e) = fs::rename(&self.staging, &self.dest) {
            if had_old {
                let _ = fs::rename(&old, &self.dest);
            }
            return Err(io_error(crate::escape::path(&self.target), &e));
        }
        if !had_old {
            return Ok(());
        }
        let entries = fs::read_dir(&old).map_err(|e| io_error(crate::escape::path(&old), &e))?;
        for entry in entries.flatten() {
            let (from, to) = (entry.path(), self.dest.join(entry.file_name()));
            if (is_carried(&from) || written_meanwhile(&from, &self.pending))
                && fs::symlink_metadata(&to).is_err()
            {
                fs::rename(&from, &to).map_err(|e| {
                    OutputError::Io(format!(
                        "the results are in {} but the shard folder {} could not be \
                         carried over ({e}); it is in {}",
                        crate::escape::path(&self.target),
                        crate::escape::path(Path::new(&entry.file_name())),
                        crate::escape::path(&old)
                    ))
                })?;
            }
        }
        Ok(())
    }

    /// Replaces each written entry inside the existing folder: the old
    /// ones are moved aside and checked once more against the folder's
    /// marker (put back, and the commit refused, if they hold anything
    /// stormsim did not write), the new ones moved in; the marker, when
    /// the folder has one, then lists what was written in place of what
    /// was replaced; a folder without a marker gets one that lists only
    /// what was written.
    fn swap_entries(&self, written: &Marked) -> Result<(), OutputError> {
        let old = self.work.join("old");
        fs::create_dir(&old).map_err(|e| io_error(crate::escape::path(&old), &e))?;
        let marked = marked_entries(&self.dest);
        let names: Vec<&String> = written.keys().filter(|k| !k.contains('/')).collect();
        let mut moved: Vec<&String> = Vec::new();
        let put_back = |moved: &[&String]| {
            for name in moved {
                let _ = fs::rename(old.join(name), self.dest.join(name));
            }
        };
        for name in &names {
            let to = self.dest.join(name);
            if fs::symlink_metadata(&to).is_ok() {
                if let Err(e) = fs::rename(&to, old.join(name)) {
                    put_back(&moved);
                    return Err(io_error(crate::escape::path(&to), &e));
                }
                moved.push(name);
            }
        }
        if !self.force {
            let foreign = foreign_in(&old, self.mode, marked.clone(), &[]);
            if !foreign.as_ref().is_ok_and(Vec::is_empty) {
                put_back(&moved);
                return Err(match foreign {
                    Ok(foreign) => refusal(&self.target, self.mode, &foreign),
                    Err(e) => io_error(crate::escape::path(&self.target), &e),
                });
            }
        }
        for name in &names {
            let (from, to) = (self.staging.join(name), self.dest.join(name));
            fs::rename(&from, &to).map_err(|e| io_error(crate::escape::path(&to), &e))?;
        }
        if let Some(mut listed) = marked {
            listed.retain(|rel, _| {
                !names.iter().any(|n| {
                    rel == *n
                        || rel
                            .strip_prefix(n.as_str())
                            .is_some_and(|r| r.starts_with('/'))
                })
            });
            listed.extend(written.iter().map(|(k, v)| (k.clone(), *v)));
            let fresh = self.work.join(MARKER);
            fs::write(&fresh, marker_text(&listed))
                .and_then(|()| fs::rename(&fresh, self.dest.join(MARKER)))
                .map_err(|e| io_error(crate::escape::path(&self.target), &e))?;
        } else if fs::symlink_metadata(self.dest.join(MARKER)).is_err() {
            // A folder without a marker (tables copied by hand): a new one
            // lists only what was written here, so that the next `plot`
            // replaces its own output and no command takes the user's
            // files for stormsim's. Linked into place, never over a file
            // that appeared meanwhile.
            let fresh = self.work.join(MARKER);
            fs::write(&fresh, marker_text(written))
                .and_then(|()| fs::hard_link(&fresh, self.dest.join(MARKER)))
                .map_err(|e| io_error(crate::escape::path(&self.target), &e))?;
        }
        Ok(())
    }
}

impl Drop for OutputDir {
    fn drop(&mut self) {
        if !self.committed {
            if !self.work.as_os_str().is_empty() {
                let _ = fs::remove_dir_all(&self.work);
                interrupt::unregister_cleanup(&self.work);
            }
            // The lock file first: it may live in a folder created here.
            self.lock.take();
            remove_created(&self.created);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    thread_local! {
        /// The name of the folders this test takes for mount points of
        /// another file system (no test can mount one).
        static OTHER_DEVICE: RefCell<Option<&'static str>> = const { RefCell::new(None) };
    }

    /// Whether `path` is taken, in this test, for a mount point.
    pub(super) fn on_another_device(path: &Path) -> bool {
        OTHER_DEVICE.with(|d| {
            d.borrow()
                .is_some_and(|name| path.file_name() == Some(OsStr::new(name)))
        })
    }

    fn forced(inputs: &[PathBuf]) -> Options<'_> {
        Options {
            force: true,
            ..folder(inputs)
        }
    }

    #[test]
    fn a_folder_of_another_kind_is_replaced_only_with_force() {
        let root = tempfile::tempdir().unwrap();
        let target = root.path().join("out");
        let out = OutputDir::prepare(&target, folder(&[])).unwrap();
        out.write("summary.csv", b"run").unwrap();
        out.commit().unwrap();
        assert_eq!(Contents::marked_in(&target), Some(Contents::Results));
        for (contents, words) in [
            (Contents::Tune, "a tune search"),
            (Contents::Shard, "a shard"),
        ] {
            let opts = Options {
                contents,
                ..folder(&[])
            };
            let m = refused(OutputDir::prepare(&target, opts));
            assert!(
                m.contains("holds the results of a run")
                    && m.contains("summary.csv")
                    && m.contains(words)
                    && m.contains("--out")
                    && m.contains("--force"),
                "{m}"
            );
        }
        // A marker of an older stormsim (bare names) tells the kind too.
        let tuned = root.path().join("tuned");
        fs::create_dir(&tuned).unwrap();
        fs::write(tuned.join(MARKER), format!("{SIGNATURE}\ntune.csv\n")).unwrap();
        fs::write(tuned.join("tune.csv"), "c").unwrap();
        assert_eq!(Contents::marked_in(&tuned), Some(Contents::Tune));
        let m = refused(OutputDir::prepare(&tuned, folder(&[])));
        assert!(m.contains("holds a tune search"), "{m}");
        assert_eq!(names(&tuned), [MARKER, "tune.csv"], "left as it was");
        // The same kind is replaced; another with --force.
        let opts = Options {
            contents: Contents::Tune,
            ..folder(&[])
        };
        OutputDir::prepare(&tuned, opts).unwrap().commit().unwrap();
        let out = OutputDir::prepare(&tuned, forced(&[])).unwrap();
        out.write("summary.csv", b"run").unwrap();
        out.commit().unwrap();
        assert_eq!(names(&tuned), [MARKER, "summary.csv"]);
        // A shard folder lists summary.csv too: its manifest decides.
        fs::write(
            tuned.join(MARKER),
            format!("{SIGNATURE}\nsummary.csv\nmanifest.json\n"),
        )
        .unwrap();
        assert_eq!(Contents::marked_in(&tuned), Some(Contents::Shard));
    }

    #[test]
    fn stormsims_own_names_are_refused_before_anything_is_made() {
        let root = tempfile::tempdir().unwrap();
        for name in [MARKER, ".stormsim-", ".stormsim-lock-0123", ".stormsim-x"] {
            let target = root.path().join("new").join(name);
            let m = refused(OutputDir::prepare(&target, forced(&[])));
            assert!(
                m.contains("stormsim's own") && m.contains("choose another name"),
                "{m}"
            );
        }
        assert!(names(root.path()).is_empty(), "{:?}", names(root.path()));
        for fine in [".stormsimx", "stormsim-x", "a.stormsim-"] {
            assert!(!is_reserved(OsStr::new(fine)), "{fine}");
        }
    }

    #[test]
    fn a_lock_path_in_the_way_is_to_be_moved_never_removed() {
        let root = tempfile::tempdir().unwrap();
        let never = |m: &str| {
            let lower = m.to_lowercase();
            assert!(
                !lower.contains("remove") && !lower.contains("delete"),
                "{m}"
            );
        };
        // Nothing there: it could not be created.
        let absent = root.path().join(".stormsim-lock-0");
        let denied = io::Error::from_raw_os_error(13);
        let OutputError::Refused(m) =
            lock_refusal("out", root.path(), LockError::Io(absent, denied))
        else {
            panic!()
        };
        assert!(
            m.contains("cannot be created there (permission denied)"),
            "{m}"
        );
        assert!(!m.contains("os error"), "{m}");
        never(&m);
        // A folder at the lock's path (perhaps the user's).
        let target = root.path().join("out");
        let lock = super::super::folder_lock::lock_path(root.path(), OsStr::new("out"));
        fs::create_dir(&lock).unwrap();
        fs::write(lock.join("mine.txt"), "x").unwrap();
        let m = refused(OutputDir::prepare(&target, folder(&[])));
        assert!(m.contains("it is a folder") && m.contains("move it"), "{m}");
        never(&m);
        assert!(lock.join("mine.txt").is_file());
    }

    #[test]
    fn what_a_forced_replace_cannot_remove_is_said_and_known_later() {
        let root = tempfile::tempdir().unwrap();
        let target = root.path().join("out");
        fs::create_dir_all(target.join("mnt")).unwrap();
        fs::write(target.join("mnt/theirs.txt"), "on another disk").unwrap();
        fs::write(target.join("notes.txt"), "mine").unwrap();
        // A link to a folder outside: removed, what it points to kept.
        let outside = root.path().join("outside");
        fs::create_dir(&outside).unwrap();
        fs::write(outside.join("keep.txt"), "k").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(&outside, target.join("link")).unwrap();
        OTHER_DEVICE.with(|d| *d.borrow_mut() = Some("mnt"));
        let out = OutputDir::prepare(&target, forced(&[])).unwrap();
        out.write("summary.csv", b"new").unwrap();
        let done = out.commit().unwrap();
        assert_eq!(
            names(&target),
            [MARKER, "summary.csv"],
            "the results are in place"
        );
        assert!(outside.join("keep.txt").is_file(), "no link followed");
        let warning = done.left_over().expect("a warning");
        assert!(
            warning.contains("mnt") && warning.contains("mount point"),
            "{warning}"
        );
        let work = done.work.clone();
        assert!(
            work.join("old/mnt/theirs.txt").is_file(),
            "nothing across the mount"
        );
        assert!(!work.join("old/notes.txt").exists());
        assert!(work.join(LEFT).is_file());
        // The next command says what is still left, not that a command
        // was killed.
        let out = OutputDir::prepare(&target, folder(&[])).unwrap();
        let notes = out.notes().join("\n");
        assert!(
            notes.contains("still holds") && !notes.contains("killed"),
            "{notes}"
        );
        drop(out);
        // Once it can be removed, it is.
        OTHER_DEVICE.with(|d| *d.borrow_mut() = None);
        let out = OutputDir::prepare(&target, folder(&[])).unwrap();
        let notes = out.notes().join("\n");
        assert!(
            notes.contains("removed") && !notes.contains("killed"),
            "{notes}"
        );
        drop(out);
        assert!(!work.exists());
        assert_eq!(names(root.path()), ["out", "outside"]);
    }

    #[test]
    fn os_reasons_are_words() {
        assert_eq!(
            os_reason(&io::Error::from_raw_os_error(13)),
            "permission denied"
        );
        assert_eq!(os_reason(&io::Error::other("Odd thing")), "odd thing");
    }

    fn folder(inputs: &[PathBuf]) -> Options<'_> {
        Options {
            mode: Mode::Folder,
            contents: Contents::Results,
            force: false,
            inputs,
        }
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    fn refused(r: Result<OutputDir, OutputError>) -> String {
        match r {
            Err(OutputError::Refused(m)) => m,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn writes_a_new_folder_whole_with_its_marker() {
        let root = tempfile::tempdir().unwrap();
        let target = root.path().join("a/b/out");
        let out = OutputDir::prepare(&target, folder(&[])).unwrap();
        out.write("x.csv", b"new").unwrap();
        out.write("charts/y.svg", b"<svg/>").unwrap();
        // Nothing visible before the commit.
        assert!(!target.exists());
        out.commit().unwrap();
        assert_eq!(names(&target), [MARKER, "charts", "x.csv"]);
        assert_eq!(
            marked_entries(&target)
                .unwrap()
                .into_iter()
                .collect::<Vec<_>>(),
            [
                ("charts".to_string(), EntryKind::Folder),
                ("charts/y.svg".to_string(), EntryKind::File),
                ("x.csv".to_string(), EntryKind::File)
            ]
        );
        assert!(
            fs::read_to_string(target.join(MARKER))
                .unwrap()
                .ends_with("\nfolder charts\nfile charts/y.svg\nfile x.csv\n")
        );
        assert_eq!(
            names(&root.path().join("a/b")),
            ["out"],
            "no work folder or lock left"
        );
    }

    #[test]
    fn replaces_its_own_folder_and_carries_shard_folders_over() {
        let root = tempfile::tempdir().unwrap();
        let target = root.path().join("out");
        let out = OutputDir::prepare(&target, folder(&[])).unwrap();
        out.write("stale.csv", b"old").unwrap();
        out.commit().unwrap();
        fs::create_dir(target.join("shard-0-of-2")).unwrap();
        fs::write(target.join("shard-0-of-2/manifest.json"), "{}").unwrap();
        let out = OutputDir::prepare(&target, folder(&[])).unwrap();
        out.write("a.csv", b"new").unwrap();
        out.commit().unwrap();
        assert_eq!(names(&target), [MARKER, "a.csv", "shard-0-of-2"]);
        assert_eq!(names(root.path()), ["out"]);
    }

    #[test]
    fn refuses_a_folder_holding_what_stormsim_did_not_write() {
        let root = tempfile::tempdir().unwrap();
        let target = root.path().join("mine");
        fs::create_dir(&target).unwrap();
        fs::write(target.join("notes.txt"), "precious").unwrap();
        let m = refused(OutputDir::prepare(&target, folder(&[])));
        assert!(m.contains("\"notes.txt\"") && m.contains("--force"), "{m}");
        // Also in a folder stormsim wrote, for an entry its marker does not list.
        let ours = root.path().join("ours");
        OutputDir::prepare(&ours, folder(&[]))
            .unwrap()
            .commit()
            .unwrap();
        fs::write(ours.join("added.txt"), "mine").unwrap();
        let m = refused(OutputDir::prepare(&ours, folder(&[])));
        assert!(m.contains("\"added.txt\""), "{m}");
        // A fake marker does not make it stormsim's either, and is itself
        // a file of the user's.
        fs::write(target.join(MARKER), "hello\nnotes.txt\n").unwrap();
        refused(OutputDir::prepare(&target, folder(&[])));
        let only = root.path().join("only");
        fs::create_dir(&only).unwrap();
        fs::write(only.join(MARKER), "my own dotfile").unwrap();
        let m = refused(OutputDir::prepare(&only, folder(&[])));
        assert!(m.contains("\".stormsim\""), "{m}");
        fs::remove_dir_all(&only).unwrap();
        assert_eq!(names(root.path()), ["mine", "ours"], "nothing left behind");
        // With force, it is replaced.
        let out = OutputDir::prepare(
            &target,
            Options {
                force: true,
                ..folder(&[])
            },
        )
        .unwrap();
        out.write("a.csv", b"x").unwrap();
        out.commit().unwrap();
        assert_eq!(names(&target), [MARKER, "a.csv"]);
    }

    #[test]
    fn an_empty_folder_or_one_of_shard_folders_only_is_usable() {
        let root = tempfile::tempdir().unwrap();
        let target = root.path().join("out");
        fs::create_dir_all(target.join("shard-1-of-2")).unwrap();
        fs::write(target.join("shard-1-of-2/manifest.json"), "{}").unwrap();
        // What a shard run killed outright leaves beside its folder.
        let stale = ".stormsim-0123456789abcdef-99999-0";
        fs::create_dir_all(target.join(stale).join("new")).unwrap();
        fs::write(target.join(".stormsim-lock-0123456789abcdef"), "").unwrap();
        let out = OutputDir::prepare(&target, folder(&[])).unwrap();
        out.write("a.csv", b"x").unwrap();
        out.commit().unwrap();
        assert_eq!(
            names(&target),
            [
                MARKER,
                ".stormsim-0123456789abcdef-99999-0",
                ".stormsim-lock-0123456789abcdef",
                "a.csv",
                "shard-1-of-2"
            ]
        );
    }

    #[test]
    fn refuses_inputs_the_current_folder_files_and_links() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("scenarios");
        fs::create_dir(&dir).unwrap();
        let file = dir.join("s.yaml");
        fs::write(&file, "name: s\n").unwrap();
        let inputs = [file.clone()];
        let m = refused(OutputDir::prepare(&dir, folder(&inputs)));
        assert!(m.contains("holds the input"), "{m}");
        let m = refused(OutputDir::prepare(&file, folder(&inputs)));
        assert!(m.contains("not a folder"), "{m}");
        let shard = root.path().join("shard");
        fs::create_dir(&shard).unwrap();
        let inputs = [shard.clone()];
        let m = refused(OutputDir::prepare(&shard, folder(&inputs)));
        assert!(m.contains(" is the input"), "{m}");
        let m = refused(OutputDir::prepare(&shard.join("x"), folder(&inputs)));
        assert!(m.contains("lies inside the input"), "{m}");
        let m = refused(OutputDir::prepare(root.path(), folder(&inputs)));
        assert!(m.contains("holds the input"), "{m}");
        #[cfg(unix)]
        {
            let link = root.path().join("link");
            std::os::unix::fs::symlink(&dir, &link).unwrap();
            let m = refused(OutputDir::prepare(&link, folder(&[])));
            assert!(m.contains("symbolic link"), "{m}");
        }
        let m = refused(OutputDir::prepare(Path::new(".."), folder(&[])));
        assert!(m.contains("does not name a folder"), "{m}");
        assert!(dir.is_dir() && file.is_file() && shard.is_dir());
    }

    #[test]
    fn a_name_too_long_is_refused_before_anything_is_left() {
        let root = tempfile::tempdir().unwrap();
        let target = root.path().join("new/parent").join("x".repeat(300));
        let m = refused(OutputDir::prepare(&target, folder(&[])));
        assert!(m.contains("too long"), "{m}");
        assert!(names(root.path()).is_empty(), "{:?}", names(root.path()));
    }

    #[test]
    fn a_second_writer_is_refused() {
        let root = tempfile::tempdir().unwrap();
        let target = root.path().join("out");
        let first = OutputDir::prepare(&target, folder(&[])).unwrap();
        let m = refused(OutputDir::prepare(&target, folder(&[])));
        assert!(m.contains("another stormsim command is writing"), "{m}");
        drop(first);
        assert!(names(root.path()).is_empty());
    }

    /// Another stormsim command writing the folder `name` of `parent`,
    /// as its lock file says: the line a holder writes, naming this test's
    /// parent process (alive, and not this one).
    #[cfg(unix)]
    fn another_writer(parent: &Path, name: &str) -> PathBuf {
        let lock = super::super::folder_lock::lock_path(parent, OsStr::new(name));
        fs::write(
            &lock,
            format!(
                "stormsim (process {}) is writing the folder {name} here\n",
                std::os::unix::process::parent_id()
            ),
        )
        .unwrap();
        lock
    }

    /// An output inside a folder another command is writing is refused
    /// before anything is made, the folder existing or not, at any depth
    /// (`run --out c2/sub` while another writes `c2`); but a search's
    /// `tune` directly inside it is written, since that command's
    /// replacement carries it over.
    #[cfg(unix)]
    #[test]
    fn an_output_inside_a_folder_being_written_is_refused() {
        let root = tempfile::tempdir().unwrap();
        let lock = another_writer(root.path(), "c2");
        for target in ["c2/sub", "c2/a/b"] {
            let m = refused(OutputDir::prepare(&root.path().join(target), folder(&[])));
            assert!(
                m.contains(&format!(
                    "another stormsim command (process {}) is writing",
                    std::os::unix::process::parent_id()
                )) && m.contains("nothing was written")
                    && m.contains("lies inside it"),
                "{m}"
            );
            assert_eq!(names(root.path()).len(), 1, "only the lock");
        }
        // With c2 there (the folder it replaces), and even with force.
        fs::create_dir(root.path().join("c2")).unwrap();
        let m = refused(OutputDir::prepare(&root.path().join("c2/sub"), forced(&[])));
        assert!(m.contains("is writing"), "{m}");
        assert_eq!(names(&root.path().join("c2")), Vec::<String>::new());
        let tune = Options {
            contents: Contents::Tune,
            ..folder(&[])
        };
        drop(OutputDir::prepare(&root.path().join("c2/tune"), tune).unwrap());
        // Once that command is done, c2/sub is written.
        fs::remove_file(&lock).unwrap();
        drop(OutputDir::prepare(&root.path().join("c2/sub"), folder(&[])).unwrap());
    }

    /// A folder replaced while another command writes an output folder
    /// inside it for the first time: that folder, finished before the
    /// replacement is put in place, is carried over (it was refused at
    /// the commit, the whole work lost); one that already exists, being
    /// replaced by that command, is not pulled from under it, even with
    /// force.
    #[cfg(unix)]
    #[test]
    fn an_output_folder_written_inside_meanwhile_is_carried_over() {
        let root = tempfile::tempdir().unwrap();
        let target = root.path().join("c3");
        fs::create_dir(&target).unwrap();
        let lock = another_writer(&target, "sub");
        let out = OutputDir::prepare(&target, folder(&[])).unwrap();
        out.write("summary.csv", b"x\n").unwrap();
        // The other command puts its folder in place and is done.
        let sub = OutputDir::prepare(&root.path().join("sub"), folder(&[])).unwrap();
        sub.write("summary.csv", b"y\n").unwrap();
        sub.commit().unwrap();
        fs::rename(root.path().join("sub"), target.join("sub")).unwrap();
        fs::remove_file(&lock).unwrap();
        out.commit().unwrap();
        assert_eq!(names(&target), [".stormsim", "sub", "summary.csv"]);
        assert_eq!(fs::read(target.join("sub/summary.csv")).unwrap(), b"y\n");
        // Written again, c3 is refused for the sub folder, as before.
        assert!(refused(OutputDir::prepare(&target, folder(&[]))).contains("\"sub\""));
        // sub being replaced by another command: c3 is refused at once.
        another_writer(&target, "sub");
        for opts in [folder(&[]), forced(&[])] {
            let m = refused(OutputDir::prepare(&target, opts));
            assert!(
                m.contains("is writing") && m.contains("c3/sub") && m.contains("even with --force"),
                "{m}"
            );
        }
        // Deeper, with force: c3/sub/deep being written.
        fs::remove_file(&lock).unwrap();
        let deep = another_writer(&target.join("sub"), "deep");
        let m = refused(OutputDir::prepare(&target, forced(&[])));
        assert!(m.contains("is writing") && m.contains("c3/sub"), "{m}");
        fs::remove_file(&deep).unwrap();
        assert_eq!(fs::read(target.join("sub/summary.csv")).unwrap(), b"y\n");
    }

    #[test]
    fn entries_mode_replaces_only_its_entries() {
        let root = tempfile::tempdir().unwrap();
        let target = root.path().join("run");
        let out = OutputDir::prepare(&target, folder(&[])).unwrap();
        out.write("report.html", b"old").unwrap();
        out.write("charts/a.svg", b"old").unwrap();
        out.write("summary.csv", b"table").unwrap();
        out.commit().unwrap();
        fs::write(target.join("a.csv"), "user").unwrap();
        fs::write(target.join("a.tmp"), "user").unwrap();
        let plot = Options {
            mode: Mode::Entries(VISUALS),
            contents: Contents::Results,
            force: false,
            inputs: &[],
        };
        let out = OutputDir::prepare(&target, plot).unwrap();
        out.write("report.html", b"new").unwrap();
        out.write("charts/b.svg", b"new").unwrap();
        assert!(out.write("summary.csv", b"no").is_err());
        out.commit().unwrap();
        assert_eq!(
            names(&target),
            [
                MARKER,
                "a.csv",
                "a.tmp",
                "charts",
                "report.html",
                "summary.csv"
            ]
        );
        assert_eq!(names(&target.join("charts")), ["b.svg"]);
        assert_eq!(fs::read_to_string(target.join("a.tmp")).unwrap(), "user");
        // In a folder stormsim did not write, existing charts are refused.
        let theirs = root.path().join("theirs");
        fs::create_dir_all(theirs.join("charts")).unwrap();
        let m = refused(OutputDir::prepare(&theirs, plot));
        assert!(m.contains("\"charts\""), "{m}");
    }

    /// What appears in the folder while the command works (a file of the
    /// user's deep inside a folder stormsim wrote) stops the swap, and
    /// stays: the check is made again at the commit.
    #[test]
    fn a_file_added_during_the_work_stops_the_commit() {
        let root = tempfile::tempdir().unwrap();
        let target = root.path().join("out");
        let out = OutputDir::prepare(&target, folder(&[])).unwrap();
        out.write("charts/a.svg", b"old").unwrap();
        out.commit().unwrap();
        for mode in [Mode::Folder, Mode::Entries(VISUALS)] {
            let opts = Options {
                mode,
                ..folder(&[])
            };
            let out = OutputDir::prepare(&target, opts).unwrap();
            out.write("charts/b.svg", b"new").unwrap();
            fs::write(target.join("charts/notes.md"), "mine").unwrap();
            match out.commit() {
                Err(OutputError::Refused(m)) => {
                    assert!(m.contains("\"charts/notes.md\""), "{m}")
                }
                other => panic!("{other:?}"),
            }
            assert_eq!(names(&target.join("charts")), ["a.svg", "notes.md"]);
            assert_eq!(names(root.path()), ["out"], "no work folder left");
            fs::remove_file(target.join("charts/notes.md")).unwrap();
        }
    }

    #[test]
    fn a_stop_asked_for_before_the_swap_leaves_the_folder_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out");
        let out = OutputDir::prepare(&target, folder(&[])).unwrap();
        out.write("a.csv", b"old").unwrap();
        out.commit().unwrap();
        let out = OutputDir::prepare(&target, folder(&[])).unwrap();
        out.write("a.csv", b"new").unwrap();
        // No stop at the start of the commit; one asked for while the
        // marker was written, seen at the commit point.
        let asked = std::cell::Cell::new(0);
        let stopped = || {
            asked.set(asked.get() + 1);
            asked.get() > 1
        };
        assert!(matches!(
            out.commit_unless(stopped),
            Err(OutputError::Interrupted)
        ));
        assert_eq!(fs::read(target.join("a.csv")).unwrap(), b"old");
        assert_eq!(names(dir.path()), ["out"]);
    }

    #[test]
    fn dropped_without_commit_leaves_nothing() {
        let root = tempfile::tempdir().unwrap();
        let target = root.path().join("p/out");
        {
            let out = OutputDir::prepare(&target, folder(&[])).unwrap();
            out.write("a.csv", b"x").unwrap();
        }
        assert!(names(root.path()).is_empty());
    }

    #[test]
    fn default_folders_are_one_plain_name() {
        assert_eq!(default_folder("a b").unwrap(), Path::new("output/a b"));
        assert!(default_folder(&"n".repeat(255)).is_ok());
        assert!(default_folder(&"n".repeat(256)).is_err());
        for bad in [
            "",
            ".",
            "..",
            "../x",
            "/abs",
            "a/b",
            "a\u{1b}[2J",
            "\u{202e}x",
        ] {
            assert!(default_folder(bad).is_err(), "{bad:?}");
        }
    }
}
