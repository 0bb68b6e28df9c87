//! Numbers for people, in error messages and `check` findings: a float
//! computed from the input (a sum of shares, a fraction of seconds) is
//! written by its shortest spelling once rounded to 15 significant
//! digits, so `0.7 + 0.1 + 0.1` reads `0.9`, not `0.8999999999999999`.
//! Fifteen is the most any decimal keeps through a double (`DBL_DIG`, C
//! `<float.h>`): a value as written in the scenario, with at most 15
//! significant digits, is written back exactly as it was read.

/// `v` for people: `0.9`, `2`, `1.5`, `0.0001`; `inf`, `NaN` as Rust
/// writes them.
pub fn num(v: f64) -> String {
    if !v.is_finite() {
        return format!("{v}");
    }
    if v == 0.0 {
        return "0".into();
    }
    let rounded: f64 = format!("{v:.14e}").parse().unwrap_or(v);
    format!("{rounded}")
}

/// `v` as written in a message that quotes a value back: Rust's shortest
/// round-trip spelling (`0.5`, `250`), or its exponent form when that is
/// shorter for a value of at least a billion or under a millionth (`1e12`,
/// `1e23`, `2.5e-9`), where the digits would be mostly zeros
/// (`100000000000000000000000`). Exact: it reads back as `v`.
pub fn compact(v: f64) -> String {
    let plain = format!("{v}");
    let large_or_tiny = v.abs() >= 1e9 || (v != 0.0 && v.abs() < 1e-6);
    if !v.is_finite() || !large_or_tiny {
        return plain;
    }
    let exp = format!("{v:e}");
    if exp.len() < plain.len() { exp } else { plain }
}

/// A count a message shows with its noun ([`plural`]).
pub trait Count: Copy + std::fmt::Display {
    /// Whether the count is one, which takes the singular.
    fn is_one(self) -> bool;
}

macro_rules! count_of {
    ($($t:ty),*) => {$(
        impl Count for $t {
            fn is_one(self) -> bool {
                self == 1 as $t
            }
        }
    )*};
}
count_of!(u8, u16, u32, u64, usize, i32, i64, f64);

/// `word` as `n` takes it: itself for one, else its plural (`runs`,
/// `retries`, `deliveries`, `status probes`: `s`, or `ies` for a `y`
/// after a consonant).
pub fn noun<N: Count>(n: N, word: &str) -> String {
    if n.is_one() {
        return word.to_string();
    }
    match word.strip_suffix('y') {
        Some(stem) if !stem.ends_with(['a', 'e', 'i', 'o', 'u']) => format!("{stem}ies"),
        _ => format!("{word}s"),
    }
}

/// `n` and `word` as `n` takes it: `1 run`, `3 runs`, `0 retries`.
pub fn plural<N: Count>(n: N, word: &str) -> String {
    format!("{n} {}", noun(n, word))
}

/// The article of `word`: `an` before a vowel (`an exponential service
/// time`, `an errors incident`), else `a`.
pub fn a_or_an(word: &str) -> &'static str {
    if word.starts_with(['a', 'e', 'i', 'o', 'u', 'A', 'E', 'I', 'O', 'U']) {
        "an"
    } else {
        "a"
    }
}

/// The verb `is` or `are`, as `n` takes it.
pub fn is_are<N: Count>(n: N) -> &'static str {
    if n.is_one() { "is" } else { "are" }
}

#[cfg(test)]
mod tests {
    use super::{a_or_an, compact, num, plural};

    #[test]
    fn the_article_follows_the_first_letter() {
        assert_eq!(a_or_an("exponential"), "an");
        assert_eq!(a_or_an("errors"), "an");
        assert_eq!(a_or_an("constant"), "a");
        assert_eq!(a_or_an("token_bucket"), "a");
    }

    #[test]
    fn counts_take_their_noun() {
        assert_eq!(plural(1usize, "run"), "1 run");
        assert_eq!(plural(2u32, "run"), "2 runs");
        assert_eq!(plural(0u64, "candidate"), "0 candidates");
        assert_eq!(plural(1u32, "retry"), "1 retry");
        assert_eq!(plural(3u32, "retry"), "3 retries");
        assert_eq!(plural(5u32, "delivery"), "5 deliveries");
        assert_eq!(plural(2u32, "key"), "2 keys");
        assert_eq!(plural(1usize, "swept path"), "1 swept path");
        assert_eq!(plural(3u32, "status probe"), "3 status probes");
        assert_eq!(plural(1.0f64, "retry"), "1 retry");
        assert_eq!(plural(0.5f64, "retry"), "0.5 retries");
    }

    #[test]
    fn compact_takes_the_exponent_only_where_it_is_shorter() {
        assert_eq!(compact(1e12), "1e12");
        assert_eq!(compact(1e23), "1e23");
        assert_eq!(compact(1.5e-9), "1.5e-9");
        assert_eq!(compact(-2e15), "-2e15");
        assert_eq!(compact(1_234_567_891.0), "1234567891");
        assert_eq!(compact(999_999_999.0), "999999999");
        assert_eq!(compact(0.000_001), "0.000001");
        assert_eq!(compact(2.5), "2.5");
        assert_eq!(compact(0.0), "0");
        assert_eq!(compact(f64::INFINITY), "inf");
        for v in [1e12, 1e23, 1.5e-9, 1_234_567_891.0, 0.1 + 0.2] {
            assert_eq!(compact(v).parse::<f64>().unwrap(), v, "{v}");
        }
    }

    #[test]
    fn noise_goes_and_written_values_stay() {
        assert_eq!(num(0.7 + 0.1 + 0.1), "0.9");
        assert_eq!(format!("{}", 0.7 + 0.1 + 0.1), "0.8999999999999999");
        assert_eq!(num(0.1 + 0.2), "0.3");
        assert_eq!(num(2.0), "2");
        assert_eq!(num(-0.0), "0");
        assert_eq!(num(1.5), "1.5");
        assert_eq!(num(0.0001), "0.0001");
        assert_eq!(num(123_456_789.125), "123456789.125");
        assert_eq!(num(0.123456789012345), "0.123456789012345");
        assert_eq!(num(1e300), format!("{}", 1e300));
        assert_eq!(num(f64::INFINITY), "inf");
        assert_eq!(num(f64::NAN), "NaN");
    }
}

/// Bytes for people: `512 B`, `3.2 MB`, `40.0 GB`, `1.2 PB`. A `Display`
/// that allocates nothing, so the out-of-memory message can use it too.
#[derive(Clone, Copy, Debug)]
pub struct Bytes(pub u64);

impl std::fmt::Display for Bytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        const UNITS: [&str; 6] = ["B", "kB", "MB", "GB", "TB", "PB"];
        let mut v = self.0 as f64;
        let mut unit = 0;
        while v >= 1000.0 && unit + 1 < UNITS.len() {
            v /= 1000.0;
            unit += 1;
        }
        if unit == 0 {
            write!(f, "{} B", self.0)
        } else {
            write!(f, "{v:.1} {}", UNITS[unit])
        }
    }
}
