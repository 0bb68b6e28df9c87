//! How `stormsim export` replaces the user's file: two exports of one
//! file take turns, so neither's edit is silently undone by the other,
//! and the file's extended attributes (ACLs, labels, user tags) survive
//! the replacement.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::{Arc, Barrier};

use stormsim::configs::write::replace_file;

/// Two commands that read the same text and then replace the file at
/// the same moment: exactly one may succeed, the other must find the
/// text changed. Without turn-taking both compare the text they read
/// with the file (unchanged, as neither has renamed yet), both rename,
/// both report success, and the first edit is lost.
#[test]
fn two_exports_of_one_file_never_both_succeed() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("envoy.yaml");
    for round in 0..100 {
        std::fs::write(&file, "num_retries: 3\n").unwrap();
        let barrier = Arc::new(Barrier::new(2));
        let results: Vec<Result<(), String>> = std::thread::scope(|s| {
            let handles: Vec<_> = ["num_retries: 4\n", "num_retries: 5\n"]
                .into_iter()
                .map(|text| {
                    let barrier = Arc::clone(&barrier);
                    let file = file.clone();
                    s.spawn(move || {
                        barrier.wait();
                        replace_file(&file, "num_retries: 3\n", text)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let ok = results.iter().filter(|r| r.is_ok()).count();
        assert_eq!(ok, 1, "round {round}: {results:?}");
        let refused = results.iter().find_map(|r| r.as_ref().err()).unwrap();
        assert!(refused.contains("changed"), "{refused}");
        let now = std::fs::read_to_string(&file).unwrap();
        let winner = if results[0].is_ok() { "4" } else { "5" };
        assert_eq!(now, format!("num_retries: {winner}\n"));
    }
}

fn set_xattr(path: &Path, name: &str, value: &[u8]) -> std::io::Result<()> {
    let p = CString::new(path.as_os_str().as_bytes()).unwrap();
    let n = CString::new(name).unwrap();
    // SAFETY: NUL-terminated strings and a buffer of the length given.
    let r = unsafe {
        libc::setxattr(
            p.as_ptr(),
            n.as_ptr(),
            value.as_ptr().cast(),
            value.len(),
            0,
        )
    };
    if r < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(())
    }
}

fn get_xattr(path: &Path, name: &str) -> Option<Vec<u8>> {
    let p = CString::new(path.as_os_str().as_bytes()).unwrap();
    let n = CString::new(name).unwrap();
    let mut buf = vec![0u8; 4096];
    // SAFETY: as above.
    let r = unsafe { libc::getxattr(p.as_ptr(), n.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    (r >= 0).then(|| {
        buf.truncate(r as usize);
        buf
    })
}

/// A file with an extended attribute keeps it (and its new text) after
/// an export, which replaces it with a new file renamed over it.
#[test]
fn an_export_keeps_the_files_extended_attributes() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("application.yml");
    std::fs::write(&file, "maxAttempts: 3\n").unwrap();
    match set_xattr(&file, "user.reviewed-by", b"sre-team") {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::ENOTSUP) => {
            eprintln!("skipped: this file system has no extended attributes ({e})");
            return;
        }
        Err(e) => panic!("setxattr: {e}"),
    }
    replace_file(&file, "maxAttempts: 3\n", "maxAttempts: 4\n").unwrap();
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "maxAttempts: 4\n");
    assert_eq!(
        get_xattr(&file, "user.reviewed-by").as_deref(),
        Some(&b"sre-team"[..]),
        "the extended attribute was lost"
    );
}
