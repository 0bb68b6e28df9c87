//! README.md cut into the blocks the checks work on: fenced code blocks,
//! and runs of text (a paragraph, a list, a table) between blank lines,
//! each with the section it falls under and the HTML comment just before
//! it (`<!-- test: NAME -->`, `<!-- output of: COMMAND -->`,
//! `<!-- exit: CODES -->`, `<!-- file: PATH -->`), which renders as
//! nothing and tells the test what the block is.

use std::path::Path;

#[derive(Clone, Debug)]
pub struct Block {
    /// Line of README.md the block starts on (1-based; for code, the fence).
    pub line: usize,
    /// The heading it falls under.
    pub section: String,
    /// `Some(language)` for a fenced code block (`""` when none is given).
    pub lang: Option<String>,
    /// The code, or the text's lines.
    pub text: String,
    /// The HTML comment just before the block, without `<!--` and `-->`.
    pub note: Option<String>,
}

impl Block {
    pub fn at(&self) -> String {
        format!("README.md:{}", self.line)
    }

    /// The note's value for `key` (`<!-- key: value -->`).
    pub fn note_value(&self, key: &str) -> Option<&str> {
        let note = self.note.as_deref()?;
        note.strip_prefix(key)?.strip_prefix(':').map(str::trim)
    }

    /// The text with its line breaks as spaces: a figure or an inline
    /// command can be cut over two lines.
    pub fn flat(&self) -> String {
        self.text.split_whitespace().collect::<Vec<_>>().join(" ")
    }
}

pub fn readme_text() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap()
}

pub fn blocks() -> Vec<Block> {
    let text = readme_text();
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut section = String::new();
    let mut note: Option<String> = None;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if let Some(lang) = line.strip_prefix("```") {
            let start = i;
            let mut body = Vec::new();
            i += 1;
            while i < lines.len() && !lines[i].starts_with("```") {
                body.push(lines[i]);
                i += 1;
            }
            assert!(
                i < lines.len(),
                "README.md:{}: unclosed code block",
                start + 1
            );
            out.push(Block {
                line: start + 1,
                section: section.clone(),
                lang: Some(lang.trim().to_string()),
                text: body.join("\n") + "\n",
                note: note.take(),
            });
            i += 1;
        } else if line.trim_start().starts_with("<!--") {
            let mut comment = String::new();
            loop {
                comment.push_str(lines[i]);
                comment.push('\n');
                if lines[i].contains("-->") {
                    break;
                }
                i += 1;
            }
            let inner = comment
                .trim()
                .trim_start_matches("<!--")
                .trim_end_matches("-->")
                .trim()
                .to_string();
            assert!(note.is_none(), "README.md:{}: two notes in a row", i + 1);
            note = Some(inner);
            i += 1;
        } else if line.starts_with('#') {
            section = line.trim_start_matches('#').trim().to_string();
            assert!(
                note.is_none(),
                "README.md:{}: a note before a heading",
                i + 1
            );
            i += 1;
        } else if line.trim().is_empty() {
            i += 1;
        } else {
            let start = i;
            let mut body = Vec::new();
            while i < lines.len()
                && !lines[i].trim().is_empty()
                && !lines[i].starts_with("```")
                && !lines[i].trim_start().starts_with("<!--")
                && !lines[i].starts_with('#')
            {
                body.push(lines[i]);
                i += 1;
            }
            out.push(Block {
                line: start + 1,
                section: section.clone(),
                lang: None,
                text: body.join("\n"),
                note: note.take(),
            });
        }
    }
    out
}

/// The block whose note is `test: name` (exactly one).
pub fn named(name: &str) -> Block {
    let found: Vec<Block> = blocks()
        .into_iter()
        .filter(|b| b.note_value("test") == Some(name))
        .collect();
    assert_eq!(
        found.len(),
        1,
        "README.md has {} blocks `test: {name}`",
        found.len()
    );
    found.into_iter().next().unwrap()
}

/// A markdown table: the header's cells and each row's cells.
pub struct Table {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

pub fn table(block: &Block) -> Table {
    let mut lines = block.text.lines().filter(|l| l.starts_with('|'));
    let cells = |l: &str| -> Vec<String> {
        l.trim()
            .trim_matches('|')
            .split('|')
            .map(|c| c.trim().to_string())
            .collect()
    };
    let header = cells(
        lines
            .next()
            .unwrap_or_else(|| panic!("{}: no table", block.at())),
    );
    let rows: Vec<Vec<String>> = lines
        .filter(|l| !l.starts_with("|---"))
        .map(cells)
        .collect();
    for r in &rows {
        assert_eq!(
            r.len(),
            header.len(),
            "{}: a row of {} cells",
            block.at(),
            r.len()
        );
    }
    Table { header, rows }
}

/// The spans between backticks of a text, in order.
pub fn inline_code(text: &str) -> Vec<String> {
    text.split('`')
        .enumerate()
        .filter(|(i, _)| i % 2 == 1)
        .map(|(_, s)| s.to_string())
        .collect()
}

/// The text with its inline code spans blanked (figures inside a command
/// are arguments, not results).
pub fn without_code(text: &str) -> String {
    text.split('`')
        .enumerate()
        .map(|(i, s)| {
            if i % 2 == 1 {
                " ".repeat(s.chars().count())
            } else {
                s.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}
