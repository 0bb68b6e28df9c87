//! Where a field of a JSON document is, as a line and a column, for the
//! messages about a shard's `manifest.json`: serde_json reads the file
//! into values without positions, so the field a check refuses is found
//! again in the text by its path (`items.3.replicate`). The text is one
//! serde_json has already read, so it is valid JSON; a path that is not
//! in it (a missing field) points at the object that lacks it.

/// The 1-based line and column (in characters) of the value at `path` in
/// `text`, or of the innermost part of it that exists.
pub fn locate(text: &[u8], path: &[String]) -> (usize, usize) {
    let mut s = Scanner { text, at: 0 };
    s.space();
    let mut found = s.at;
    for part in path {
        match s.member(part) {
            Some(at) => {
                found = at;
                s.at = at;
            }
            None => break,
        }
    }
    line_column(text, found)
}

/// The first key that appears twice in one object of `text` (a JSON
/// document serde_json has read: it keeps the last of two equal keys
/// without a word), as its path (`items.3.rows`) and the 1-based line
/// and column of the second one.
pub fn duplicate_key(text: &[u8]) -> Option<(String, (usize, usize))> {
    let mut s = Scanner { text, at: 0 };
    s.space();
    let mut path = Vec::new();
    let at = s.duplicate(&mut path)?;
    Some((path.join("."), line_column(text, at)))
}

fn line_column(text: &[u8], at: usize) -> (usize, usize) {
    let before = &text[..at.min(text.len())];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    let column = String::from_utf8_lossy(&before[start..]).chars().count() + 1;
    (line, column)
}

struct Scanner<'a> {
    text: &'a [u8],
    at: usize,
}

impl Scanner<'_> {
    fn peek(&self) -> Option<u8> {
        self.text.get(self.at).copied()
    }

    fn space(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_whitespace()) {
            self.at += 1;
        }
    }

    /// Skips a string (at its opening quote), returning its text.
    fn string(&mut self) -> String {
        let start = self.at;
        self.at += 1;
        while let Some(b) = self.peek() {
            self.at += 1;
            match b {
                b'\\' => self.at += 1,
                b'"' => break,
                _ => {}
            }
        }
        let raw = &self.text[start..self.at.min(self.text.len())];
        serde_json::from_slice(raw).unwrap_or_default()
    }

    /// Skips one value.
    fn value(&mut self) {
        match self.peek() {
            Some(b'"') => {
                self.string();
            }
            Some(open @ (b'{' | b'[')) => {
                let close = if open == b'{' { b'}' } else { b']' };
                self.at += 1;
                loop {
                    self.space();
                    match self.peek() {
                        None => return,
                        Some(b) if b == close => {
                            self.at += 1;
                            return;
                        }
                        Some(b',' | b':') => self.at += 1,
                        Some(_) => self.value(),
                    }
                }
            }
            _ => {
                while self
                    .peek()
                    .is_some_and(|b| !matches!(b, b',' | b'}' | b']') && !b.is_ascii_whitespace())
                {
                    self.at += 1;
                }
            }
        }
    }

    /// Skips one value like [`Scanner::value`], returning the position
    /// of the first repeated key in it (its path left in `path`).
    fn duplicate(&mut self, path: &mut Vec<String>) -> Option<usize> {
        match self.peek() {
            Some(b'{') => {
                self.at += 1;
                let mut keys: Vec<String> = Vec::new();
                loop {
                    self.space();
                    match self.peek() {
                        Some(b'"') => {
                            let key_at = self.at;
                            let key = self.string();
                            path.push(key.clone());
                            if keys.contains(&key) {
                                return Some(key_at);
                            }
                            self.space();
                            if self.peek() == Some(b':') {
                                self.at += 1;
                            }
                            self.space();
                            if let Some(at) = self.duplicate(path) {
                                return Some(at);
                            }
                            path.pop();
                            keys.push(key);
                        }
                        Some(b',') => self.at += 1,
                        Some(b'}') => {
                            self.at += 1;
                            return None;
                        }
                        _ => return None,
                    }
                }
            }
            Some(b'[') => {
                self.at += 1;
                let mut i = 0usize;
                loop {
                    self.space();
                    match self.peek() {
                        Some(b',') => self.at += 1,
                        Some(b']') | None => {
                            self.at += 1;
                            return None;
                        }
                        Some(_) => {
                            path.push(i.to_string());
                            if let Some(at) = self.duplicate(path) {
                                return Some(at);
                            }
                            path.pop();
                            i += 1;
                        }
                    }
                }
            }
            _ => {
                self.value();
                None
            }
        }
    }

    /// The position of the value of `part` (a key of the object, or an
    /// index of the list, at the cursor), the cursor left where it was.
    fn member(&mut self, part: &str) -> Option<usize> {
        let back = self.at;
        let found = self.find(part);
        self.at = back;
        found
    }

    fn find(&mut self, part: &str) -> Option<usize> {
        match self.peek()? {
            b'{' => {
                self.at += 1;
                loop {
                    self.space();
                    if self.peek()? != b'"' {
                        return None;
                    }
                    let key_at = self.at;
                    let key = self.string();
                    self.space();
                    if self.peek()? != b':' {
                        return None;
                    }
                    self.at += 1;
                    self.space();
                    if key == part {
                        // A value refused: its position; a key not
                        // known: the key's.
                        return Some(if self.peek().is_some() {
                            self.at
                        } else {
                            key_at
                        });
                    }
                    self.value();
                    self.space();
                    if self.peek()? == b',' {
                        self.at += 1;
                    } else {
                        return None;
                    }
                }
            }
            b'[' => {
                let index: usize = part.parse().ok()?;
                self.at += 1;
                for i in 0.. {
                    self.space();
                    if self.peek()? == b']' {
                        return None;
                    }
                    if i == index {
                        return Some(self.at);
                    }
                    self.value();
                    self.space();
                    if self.peek()? == b',' {
                        self.at += 1;
                    } else {
                        return None;
                    }
                }
                None
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str, path: &str) -> (usize, usize) {
        let parts: Vec<String> = path
            .split('.')
            .filter(|p| !p.is_empty())
            .map(str::to_string)
            .collect();
        locate(text.as_bytes(), &parts)
    }

    #[test]
    fn finds_the_first_repeated_key_at_any_depth() {
        let dup = |t: &str| duplicate_key(t.as_bytes());
        assert_eq!(dup("{\"a\": 1, \"b\": {\"a\": 2}}"), None);
        assert_eq!(dup("[1, {\"x\": [\"a\", \"a\"]}]"), None);
        assert_eq!(
            dup("{\"shard\": 0,\n \"shard\": 1}"),
            Some(("shard".to_string(), (2, 2)))
        );
        assert_eq!(
            dup("{\"items\": [{\"a\": 1}, {\"a\": 1, \"b\": {}, \"a\": 2}]}"),
            Some(("items.1.a".to_string(), (1, 40)))
        );
        // Equal after unescaping.
        assert_eq!(
            dup("{\"k\": 1, \"\\u006b\": 2}"),
            Some(("k".to_string(), (1, 10)))
        );
    }

    #[test]
    fn finds_fields_and_list_items_by_path() {
        let text = "{\n  \"a\": 1,\n  \"b\\\"x\": {\"c\": [10, {\"d\": \"é\"}, 3]},\n  \"items\": [\n    {\"x\": 1, \"y\": [1, 2]},\n    {\"x\": 2, \"y\": \"z\"}\n  ]\n}\n";
        assert_eq!(at(text, ""), (1, 1));
        assert_eq!(at(text, "a"), (2, 8));
        assert_eq!(at(text, "items.1.y"), (6, 19));
        assert_eq!(at(text, "items.0.y.1"), (5, 23));
        // A missing field: the object that lacks it.
        assert_eq!(at(text, "items.1.w"), (6, 5));
        assert_eq!(at(text, "nothing"), (1, 1));
        let b = "{\"b\\\"x\": {\"c\": [10, {\"d\": \"é\"}, 3]}, \"e\": 5}";
        let parts = ["b\"x".to_string(), "c".to_string(), "2".to_string()];
        assert_eq!(locate(b.as_bytes(), &parts), (1, 33));
        assert_eq!(at(b, "e"), (1, 43));
    }
}
