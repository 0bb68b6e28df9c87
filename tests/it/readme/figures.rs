//! Figures as the README prints them, compared with the values a run gives
//! within the printed rounding: `1.46×` is any value from 1.455 to 1.465,
//! `89.1%` from 89.05 to 89.15, `about 11 900` the nearest hundred. A
//! check claims each figure it compares; a block is complete when every
//! figure in it (a number with a decimal point, or followed by % or ×,
//! outside inline code) was claimed, by a comparison or as an input of the
//! scenario (`given`).

use super::markdown::{Block, Table, without_code};

/// A printed number: its value and half the unit of its last digit.
#[derive(Clone, Copy, Debug)]
pub struct Printed {
    pub value: f64,
    pub half_unit: f64,
}

/// The first number in `s` (`11 900`, `1.46`, `−0.5`), with its rounding.
pub fn printed(s: &str) -> Option<Printed> {
    let chars: Vec<char> = s.chars().collect();
    let start = chars.iter().position(|c| c.is_ascii_digit())?;
    let negative = start > 0 && (chars[start - 1] == '−' || chars[start - 1] == '-');
    let mut digits = String::new();
    let mut decimals: Option<usize> = None;
    let mut i = start;
    while i < chars.len() {
        let c = chars[i];
        if c.is_ascii_digit() {
            digits.push(c);
            if let Some(d) = decimals.as_mut() {
                *d += 1;
            }
        } else if c == '.'
            && decimals.is_none()
            && chars.get(i + 1).is_some_and(|c| c.is_ascii_digit())
        {
            digits.push('.');
            decimals = Some(0);
        } else if (c == ' ' || c == '\u{202f}')
            && decimals.is_none()
            && chars.len() > i + 3
            && chars[i + 1..i + 4].iter().all(|c| c.is_ascii_digit())
            && chars.get(i + 4).is_none_or(|c| !c.is_ascii_digit())
        {
            // A thousands group: "11 900".
        } else {
            break;
        }
        i += 1;
    }
    let value: f64 = digits.parse().ok()?;
    Some(Printed {
        value: if negative { -value } else { value },
        half_unit: 0.5 * 10f64.powi(-(decimals.unwrap_or(0) as i32)),
    })
}

/// As `printed`, but "about N": a whole number is rounded to its last
/// non-zero digit (`about 11 900`: to the hundred).
pub fn about(s: &str) -> Printed {
    let mut p = printed(s).unwrap_or_else(|| panic!("no number in {s:?}"));
    if p.half_unit == 0.5 && p.value != 0.0 {
        let mut v = p.value.abs() as u64;
        while v.is_multiple_of(10) {
            v /= 10;
            p.half_unit *= 10.0;
        }
    }
    p
}

pub fn within(p: Printed, actual: f64) -> bool {
    (actual - p.value).abs() <= p.half_unit + 1e-9 * p.value.abs().max(1.0)
}

/// The figure tokens of a text: (start, end) in chars of `without_code`.
fn tokens(text: &str) -> Vec<(usize, usize)> {
    let chars: Vec<char> = without_code(text).chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if !chars[i].is_ascii_digit() || (i > 0 && is_word(chars[i - 1])) {
            i += 1;
            continue;
        }
        let start = i;
        let mut decimal = false;
        while i < chars.len()
            && (chars[i].is_ascii_digit()
                || (chars[i] == '.' && chars.get(i + 1).is_some_and(|c| c.is_ascii_digit())))
        {
            decimal |= chars[i] == '.';
            i += 1;
        }
        let next = chars.get(i).copied().unwrap_or(' ');
        if decimal || next == '%' || next == '×' {
            out.push((start, i + usize::from(next == '%' || next == '×')));
        }
    }
    out
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '.' || c == '^' || c == '/'
}

/// The checks of one block: what failed, and which figures were claimed.
pub struct Checker {
    block: Block,
    text: Vec<char>,
    claimed: Vec<(usize, usize)>,
    pub failures: Vec<String>,
}

impl Checker {
    pub fn new(block: &Block) -> Checker {
        Checker {
            block: block.clone(),
            text: without_code(&block.flat()).chars().collect(),
            claimed: Vec::new(),
            failures: Vec::new(),
        }
    }

    /// The first occurrence of `shown` not claimed yet, claimed now.
    fn claim(&mut self, shown: &str) -> bool {
        let needle: Vec<char> = shown.chars().collect();
        let n = needle.len();
        if n == 0 || self.text.len() < n {
            return false;
        }
        for at in 0..=self.text.len() - n {
            if self.text[at..at + n] == needle[..]
                && !self.claimed.iter().any(|&(s, e)| s < at + n && at < e)
            {
                self.claimed.push((at, at + n));
                return true;
            }
        }
        false
    }

    fn fail(&mut self, what: String) {
        self.failures.push(format!("{}: {what}", self.block.at()));
    }

    /// `shown` is in the block and `actual` rounds to its number.
    pub fn figure(&mut self, shown: &str, actual: f64) {
        self.figure_as(shown, printed(shown).expect("a number"), actual);
    }

    /// `about N` in the text: `actual` rounds to N's last non-zero digit.
    pub fn about(&mut self, shown: &str, actual: f64) {
        self.figure_as(shown, about(shown), actual);
    }

    fn figure_as(&mut self, shown: &str, p: Printed, actual: f64) {
        if !self.claim(shown) {
            self.fail(format!("no (more) `{shown}` in the text"));
        } else if !within(p, actual) {
            self.fail(format!("`{shown}` but the run gives {actual}"));
        }
    }

    /// Several values printed as the same `shown` (one figure for all the
    /// variants, say).
    pub fn figure_all(&mut self, shown: &str, actuals: &[f64]) {
        let p = printed(shown).expect("a number");
        if !self.claim(shown) {
            self.fail(format!("no (more) `{shown}` in the text"));
        }
        for &a in actuals {
            if !within(p, a) {
                self.fail(format!("`{shown}` but the run gives {a}"));
            }
        }
    }

    /// Figures that are the scenario's inputs or published values, not
    /// results: claimed without a comparison.
    pub fn given(&mut self, shown: &[&str]) {
        for s in shown {
            if !self.claim(s) {
                self.fail(format!("no (more) `{s}` in the text"));
            }
        }
    }

    /// A statement in words that the runs must bear out.
    pub fn holds(&mut self, what: &str, ok: bool) {
        if !ok {
            self.fail(format!("does not hold: {what}"));
        }
    }

    /// Every figure of the block was claimed, and every check passed.
    pub fn finish(mut self) {
        let text = self.text.clone();
        for (s, e) in tokens(&self.block.flat()) {
            if !self.claimed.iter().any(|&(cs, ce)| cs <= s && e <= ce) {
                let shown: String = text[s..e].iter().collect();
                self.fail(format!("figure `{shown}` is not checked"));
            }
        }
        assert!(self.failures.is_empty(), "\n{}", self.failures.join("\n"));
    }
}

/// Checks the cells of a table: each numeric cell outside the first column
/// must be compared (or declared an input) exactly once.
pub struct TableChecker {
    at: String,
    pub table: Table,
    done: Vec<Vec<bool>>,
    pub failures: Vec<String>,
}

impl TableChecker {
    pub fn new(block: &Block, table: Table) -> TableChecker {
        let done = table
            .rows
            .iter()
            .map(|r| {
                r.iter()
                    .enumerate()
                    .map(|(i, c)| i == 0 || !c.chars().any(|c| c.is_ascii_digit()))
                    .collect()
            })
            .collect();
        TableChecker {
            at: block.at(),
            table,
            done,
            failures: Vec::new(),
        }
    }

    /// The row whose first cell starts with `key` (a variant's name, an N).
    pub fn row(&self, key: &str) -> usize {
        let found: Vec<usize> = (0..self.table.rows.len())
            .filter(|&r| {
                let first = &self.table.rows[r][0];
                first == key
                    || first.starts_with(&format!("{key} "))
                    || first.starts_with(&format!("{key}:"))
            })
            .collect();
        assert_eq!(found.len(), 1, "{}: rows for {key:?}: {found:?}", self.at);
        found[0]
    }

    pub fn col(&self, name: &str) -> usize {
        self.table
            .header
            .iter()
            .position(|h| h == name)
            .unwrap_or_else(|| panic!("{}: no column {name:?}", self.at))
    }

    pub fn cell(&self, row: usize, col: usize) -> &str {
        &self.table.rows[row][col]
    }

    /// The cell's numbers, in order, each compared with its value (`None`:
    /// not compared, an input or a published value).
    pub fn check(&mut self, row: usize, col: usize, actuals: &[Option<f64>]) {
        let cell = self.table.rows[row][col].clone();
        let numbers = numbers_in(&cell);
        if numbers.len() != actuals.len() {
            self.failures.push(format!(
                "{}: cell {cell:?} has {} numbers, the check {}",
                self.at,
                numbers.len(),
                actuals.len()
            ));
        }
        for (p, a) in numbers.iter().zip(actuals) {
            if let Some(a) = a
                && !within(*p, *a)
            {
                self.failures.push(format!(
                    "{}: row {:?}, column {:?}: `{cell}` but the run gives {a}",
                    self.at, self.table.rows[row][0], self.table.header[col]
                ));
            }
        }
        self.done[row][col] = true;
    }

    pub fn finish(self) {
        let mut failures = self.failures;
        for (r, row) in self.done.iter().enumerate() {
            for (c, done) in row.iter().enumerate() {
                if !done {
                    failures.push(format!(
                        "{}: row {:?}, column {:?} is not checked",
                        self.at, self.table.rows[r][0], self.table.header[c]
                    ));
                }
            }
        }
        assert!(failures.is_empty(), "\n{}", failures.join("\n"));
    }
}

/// Every number in a cell, as printed ("38.9 ± 2.3 / 40.00 ms": three).
pub fn numbers_in(cell: &str) -> Vec<Printed> {
    let mut out = Vec::new();
    let mut rest = cell;
    while let Some(start) = rest.find(|c: char| c.is_ascii_digit()) {
        let from = if start > 0 && rest[..start].ends_with('−') {
            start - '−'.len_utf8()
        } else {
            start
        };
        let p = printed(&rest[from..]).unwrap();
        out.push(p);
        // Skip past this number (digits, dots and thousands groups).
        let mut end = start;
        let bytes: Vec<char> = rest[start..].chars().collect();
        let mut i = 0;
        while i < bytes.len()
            && (bytes[i].is_ascii_digit()
                || (bytes[i] == '.' && bytes.get(i + 1).is_some_and(|c| c.is_ascii_digit()))
                || (bytes[i] == ' '
                    && bytes.len() > i + 3
                    && bytes[i + 1..i + 4].iter().all(|c| c.is_ascii_digit())
                    && bytes.get(i + 4).is_none_or(|c| !c.is_ascii_digit())))
        {
            end += bytes[i].len_utf8();
            i += 1;
        }
        rest = &rest[end..];
    }
    out
}

#[test]
fn printed_figures_carry_their_rounding() {
    let p = printed("1.46×").unwrap();
    assert_eq!((p.value, p.half_unit), (1.46, 0.005));
    assert!(within(p, 1.455) && within(p, 1.465) && !within(p, 1.466));
    let p = printed("about 11 900 customers").unwrap();
    assert_eq!((p.value, p.half_unit), (11900.0, 0.5));
    let p = about("about 11 900 customers");
    assert_eq!((p.value, p.half_unit), (11900.0, 50.0));
    assert!(!within(about("about 5 700"), 5751.0));
    assert_eq!(printed("−0.5").unwrap().value, -0.5);
    let n = numbers_in("38.9 ± 2.3 / 40.00 ms");
    assert_eq!(n.len(), 3);
    assert_eq!((n[2].value, n[2].half_unit), (40.0, 0.005));
    let n = numbers_in("12 075 of 131, 119");
    assert_eq!(
        n.iter().map(|p| p.value).collect::<Vec<_>>(),
        [12075.0, 131.0, 119.0]
    );
    assert_eq!(
        tokens("ours 1.104 and 3 of 25% but `--set x=0.5` and N^1.8").len(),
        2
    );
}
