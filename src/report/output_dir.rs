//! An output folder that appears whole or not at all. Files are written
//! into a hidden sibling folder (`.NAME.partial-PID`); `commit` swaps it in
//! place of the old folder. An interrupted or failed run leaves the old
//! results untouched and no half-written table that looks complete.
//!
//! A stop asked for by Ctrl-C (`crate::interrupt`) fails the next `write`
//! or the `commit` with `ErrorKind::Interrupted`; dropping the folder then
//! removes the staging folder, and a second Ctrl-C removes it on its way
//! out.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::interrupt;

pub struct OutputDir {
    target: PathBuf,
    staging: PathBuf,
    committed: bool,
    keep: Vec<String>,
}

impl OutputDir {
    /// Prepares to write the folder `target`.
    pub fn create(target: &Path) -> io::Result<Self> {
        let parent = match target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        fs::create_dir_all(&parent)?;
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "output".into());
        let staging = parent.join(format!(".{name}.partial-{}", std::process::id()));
        if staging.exists() {
            fs::remove_dir_all(&staging)?;
        }
        fs::create_dir_all(&staging)?;
        interrupt::register_staging(&staging);
        Ok(OutputDir {
            target: target.to_path_buf(),
            staging,
            committed: false,
            keep: Vec::new(),
        })
    }

    /// Carries the entry `name` of the folder being replaced over into the
    /// new one on commit (shard folders inside a run's folder, say), unless
    /// something of that name was written.
    pub fn keep(&mut self, name: &str) {
        self.keep.push(name.to_string());
    }

    /// Writes one file into the folder (relative path, subfolders allowed).
    pub fn write(&self, rel: &str, bytes: &[u8]) -> io::Result<()> {
        interrupt::check_io()?;
        let path = self.staging.join(rel);
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir)?;
        }
        let tmp = path.with_extension("tmp");
        fs::write(&tmp, bytes)?;
        fs::rename(&tmp, &path)
    }

    /// Replaces the target folder with everything written.
    pub fn commit(mut self) -> io::Result<PathBuf> {
        interrupt::check_io()?;
        let old = self.staging.with_file_name(format!(
            ".{}.old-{}",
            self.file_name(),
            std::process::id()
        ));
        let had_old = self.target.exists();
        if had_old {
            if !self.target.is_dir() {
                return Err(io::Error::other(format!(
                    "{} exists and is not a folder",
                    self.target.display()
                )));
            }
            fs::rename(&self.target, &old)?;
        }
        if let Err(e) = fs::rename(&self.staging, &self.target) {
            if had_old {
                let _ = fs::rename(&old, &self.target);
            }
            return Err(e);
        }
        self.committed = true;
        interrupt::unregister_staging(&self.staging);
        if had_old {
            for name in &self.keep {
                let (from, to) = (old.join(name), self.target.join(name));
                if from.exists() && !to.exists() {
                    fs::rename(&from, &to)?;
                }
            }
            fs::remove_dir_all(&old)?;
        }
        Ok(self.target.clone())
    }

    fn file_name(&self) -> String {
        self.target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "output".into())
    }
}

impl Drop for OutputDir {
    fn drop(&mut self) {
        if !self.committed {
            let _ = fs::remove_dir_all(&self.staging);
            interrupt::unregister_staging(&self.staging);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_a_folder_whole() {
        let root = tempfile::tempdir().unwrap();
        let target = root.path().join("out");
        fs::create_dir_all(&target).unwrap();
        fs::write(target.join("stale.csv"), "old").unwrap();
        let out = OutputDir::create(&target).unwrap();
        out.write("a.csv", b"new").unwrap();
        out.write("charts/x.svg", b"<svg/>").unwrap();
        // Nothing visible before the commit.
        assert!(target.join("stale.csv").exists());
        assert!(!target.join("a.csv").exists());
        out.commit().unwrap();
        assert!(!target.join("stale.csv").exists());
        assert_eq!(fs::read_to_string(target.join("a.csv")).unwrap(), "new");
        assert!(target.join("charts/x.svg").exists());
        let leftovers: Vec<_> = fs::read_dir(root.path()).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "no staging or old folder left behind");
    }

    #[test]
    fn kept_entries_move_into_the_new_folder() {
        let root = tempfile::tempdir().unwrap();
        let target = root.path().join("out");
        fs::create_dir_all(target.join("shard-0-of-2")).unwrap();
        fs::write(target.join("shard-0-of-2/manifest.json"), "{}").unwrap();
        fs::write(target.join("stale.csv"), "old").unwrap();
        let mut out = OutputDir::create(&target).unwrap();
        out.keep("shard-0-of-2");
        out.keep("absent");
        out.write("a.csv", b"new").unwrap();
        out.commit().unwrap();
        assert!(target.join("shard-0-of-2/manifest.json").is_file());
        assert!(!target.join("stale.csv").exists());
        assert_eq!(fs::read_dir(root.path()).unwrap().count(), 1);
    }

    #[test]
    fn dropped_without_commit_leaves_nothing() {
        let root = tempfile::tempdir().unwrap();
        let target = root.path().join("out");
        {
            let out = OutputDir::create(&target).unwrap();
            out.write("a.csv", b"x").unwrap();
        }
        assert!(!target.exists());
        assert_eq!(fs::read_dir(root.path()).unwrap().count(), 0);
    }
}
