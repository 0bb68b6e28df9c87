//! The repository stands on its own: no tracked file (code, README,
//! scenarios, presets, notebooks, deploy files, the fuzz corpus) points at
//! a `shared/` folder outside it or at design documents it does not ship,
//! and every citation of the project's source pages (`docs/sources/X.md
//! §N`, or `docs/sources/X.md, "Heading"` for the pages without numbers)
//! names a page and a section that exist.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The files git tracks; outside a git checkout (a source archive), every
/// file under the root except the build, results and fuzzing work folders.
fn tracked_files() -> Vec<PathBuf> {
    let git = Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(root())
        .output();
    if let Ok(out) = git
        && out.status.success()
        && !out.stdout.is_empty()
    {
        return out
            .stdout
            .split(|&b| b == 0)
            .filter(|p| !p.is_empty())
            .map(|p| root().join(String::from_utf8_lossy(p).as_ref()))
            .filter(|p| p.is_file())
            .collect();
    }
    let skip = [
        ".git",
        "target",
        "output",
        ".venv-notebooks",
        "fuzz/target",
        "fuzz/artifacts",
        "fuzz/corpus",
    ];
    let mut files = Vec::new();
    let mut stack = vec![root().to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let rel = path.strip_prefix(root()).unwrap();
            if skip.iter().any(|s| rel == Path::new(s)) {
                continue;
            }
            if path.is_dir() {
                stack.push(path);
            } else if path.is_file() {
                files.push(path);
            }
        }
    }
    files
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// Where `needle` starts a word in `hay` (no letter, digit, `_` or `-`
/// just before it), as (line number, the line).
fn word_starts(hay: &[u8], needle: &[u8]) -> Vec<(usize, String)> {
    let mut hits = Vec::new();
    let mut from = 0;
    while let Some(i) = find(&hay[from..], needle).map(|i| i + from) {
        if i == 0 || !is_word_byte(hay[i - 1]) {
            hits.push(line_at(hay, i));
        }
        from = i + 1;
    }
    hits
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn line_at(hay: &[u8], i: usize) -> (usize, String) {
    let line = hay[..i].iter().filter(|&&b| b == b'\n').count() + 1;
    let start = hay[..i]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |p| p + 1);
    let end = hay[i..]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(hay.len(), |p| p + i);
    (line, String::from_utf8_lossy(&hay[start..end]).into_owned())
}

#[test]
fn no_tracked_file_points_outside_the_repository() {
    let files = tracked_files();
    assert!(files.len() > 100, "only {} files found", files.len());
    let forbidden: [&[u8]; 3] = [b"shared/", b"DESIGN.md", b"DESIGN-v2.md"];
    let mut found = Vec::new();
    for file in &files {
        if file.ends_with("tests/it/self_contained.rs") {
            continue; // names the patterns it looks for
        }
        let bytes = std::fs::read(file).unwrap();
        for needle in forbidden {
            for (line, text) in word_starts(&bytes, needle) {
                let rel = file.strip_prefix(root()).unwrap().display();
                found.push(format!("{rel}:{line}: {}", text.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "files that point outside the repository (cite docs/sources/ or a README section instead):\n{}",
        found.join("\n")
    );
}

/// The section numbers (`1`, `1.3`, `9`) and the headings of a source page.
fn sections(page: &str) -> (Vec<String>, Vec<String>) {
    let mut numbers = Vec::new();
    let mut headings = Vec::new();
    for line in page.lines().filter(|l| l.starts_with('#')) {
        let title = line.trim_start_matches('#').trim();
        let number: String = title
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        let number = number.trim_end_matches('.');
        if !number.is_empty() {
            numbers.push(number.to_string());
        }
        headings.push(title.to_string());
    }
    (numbers, headings)
}

#[test]
fn every_citation_of_the_source_pages_exists() {
    let dir = root().join("docs/sources");
    let mut cited = 0;
    let mut wrong = Vec::new();
    for file in tracked_files() {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue; // binary fuzz inputs
        };
        let rel = file.strip_prefix(root()).unwrap().display().to_string();
        if rel.starts_with("fuzz/regressions/") {
            continue; // mutated copies of the scenarios, cut anywhere
        }
        for (at, _) in text.match_indices("docs/sources/") {
            let rest = &text[at + "docs/sources/".len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || "-_.".contains(*c))
                .collect();
            let name = name.trim_end_matches('.');
            let (line, _) = line_at(text.as_bytes(), at);
            let here = format!("{rel}:{line}");
            if name.is_empty() || name == "X.md" {
                continue; // the folder itself, or the pattern named above
            }
            let Ok(page) = std::fs::read_to_string(dir.join(name)) else {
                wrong.push(format!("{here}: no page docs/sources/{name}"));
                continue;
            };
            let (numbers, headings) = sections(&page);
            let after = rest[name.len()..].trim_start_matches(['`', '*']);
            cited += 1;
            if let Some(section) = after.strip_prefix(" §") {
                let number: String = section
                    .chars()
                    .take_while(|c| c.is_ascii_digit() || *c == '.')
                    .collect();
                let number = number.trim_end_matches('.');
                if number.is_empty() {
                    continue; // a pattern that looks for citations, not one
                }
                if !numbers.iter().any(|n| n == number) {
                    wrong.push(format!("{here}: docs/sources/{name} has no §{number}"));
                }
            } else if let Some(quoted) = after.strip_prefix(", \"") {
                let heading = quoted.split('"').next().unwrap();
                if !headings.iter().any(|h| h.starts_with(heading)) {
                    wrong.push(format!(
                        "{here}: docs/sources/{name} has no heading \"{heading}\""
                    ));
                }
            }
        }
    }
    assert!(cited > 50, "only {cited} citations found");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
