//! Units in scenario files: durations with units (`250ms`, `2s`, `5m`,
//! `1h`, `2m10s`, `1.5s`) and rates (`2000/s`, `30/m`, `100/h`).
//! A bare number is never a duration: `5` could mean seconds or
//! milliseconds, so it is an error that says which units exist.

use std::fmt;

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::engine::{NS_PER_MS, NS_PER_S, NS_PER_US, Nanos};

const UNITS: &[(&str, u64)] = &[
    ("ns", 1),
    ("us", NS_PER_US),
    ("µs", NS_PER_US),
    ("ms", NS_PER_MS),
    ("s", NS_PER_S),
    ("m", 60 * NS_PER_S),
    ("h", 3600 * NS_PER_S),
    ("d", 86_400 * NS_PER_S),
];

/// A duration in a scenario file, held as integer nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Duration(pub Nanos);

impl Duration {
    pub fn from_secs(s: u64) -> Self {
        Duration(s * NS_PER_S)
    }
    pub fn from_millis(ms: u64) -> Self {
        Duration(ms * NS_PER_MS)
    }
    pub fn ns(self) -> Nanos {
        self.0
    }
    pub fn secs_f64(self) -> f64 {
        self.0 as f64 / NS_PER_S as f64
    }
}

/// Parses `250ms`, `2s`, `1m30s`, `1.5s`, `2m 10s`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let s = text.trim();
    if s.is_empty() {
        return Err("empty duration; expected a number with a unit, such as 250ms or 2s".into());
    }
    // `.nan`, `.inf`, `-.Inf` (YAML's numbers that are not finite): not a
    // number with an unknown unit `nan`.
    if super::load::yaml_float(s).is_some_and(|v| !v.is_finite()) {
        return Err(not_finite(text));
    }
    if let Some(magnitude) = s.strip_prefix('-')
        && parse_duration(magnitude).is_ok()
    {
        return Err(format!(
            "duration `{text}` is negative; expected 0 or more, such as 250ms or 2s"
        ));
    }
    let mut total: u128 = 0;
    let mut rest = s;
    while !rest.is_empty() {
        rest = rest.trim_start();
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (num, tail) = rest.split_at(num_len);
        let tail = tail.trim_start();
        if num.is_empty() {
            return Err(format!(
                "invalid duration `{text}`: expected a number with a unit, such as 250ms or 2s"
            ));
        }
        let unit_len = tail
            .find(|c: char| c.is_ascii_digit() || c == '.' || c.is_whitespace())
            .unwrap_or(tail.len());
        let (unit, tail) = tail.split_at(unit_len);
        if unit.is_empty() {
            return Err(format!(
                "duration `{text}` has no unit; write it with one of ns, us, ms, s, m, h, d (for example {num}s or {num}ms)"
            ));
        }
        let Some(&(_, scale)) = UNITS.iter().find(|(u, _)| *u == unit) else {
            if let Some(after) = unit.strip_prefix(['e', 'E'])
                && (after.is_empty() || after == "-" || after == "+")
                && tail.starts_with(|c: char| c.is_ascii_digit())
            {
                return Err(format!(
                    "duration `{text}` has an exponent; write the number out, such as 1000s for 1e3s"
                ));
            }
            if let Some(sign) = unit.chars().find(|c| matches!(c, '-' | '+')) {
                return Err(format!(
                    "duration `{text}` has a `{sign}` inside it; a duration's parts only add up (2m10s), so write the result as one, such as 4m59s for 5m-1s"
                ));
            }
            return Err(format!(
                "duration `{text}` has an unknown unit `{unit}`; expected one of ns, us, ms, s, m, h, d"
            ));
        };
        total = total
            .checked_add(exact_ns(num, scale, text)?)
            .ok_or_else(|| too_large(text))?;
        rest = tail;
    }
    u64::try_from(total)
        .map(Duration)
        .map_err(|_| too_large(text))
}

/// What a duration that is not finite (`.nan`, `-.Inf`) is told.
fn not_finite(text: &str) -> String {
    format!(
        "duration `{text}` is not a finite duration; expected a number with a unit, such as 250ms or 2s"
    )
}

/// What a duration beyond the largest one stormsim counts is told: that
/// largest one, in nanoseconds and in days.
fn too_large(text: &str) -> String {
    format!(
        "duration `{text}` is too large: the largest duration accepted is {}ns (about {}d, 584 years)",
        u64::MAX,
        u64::MAX / 86_400_000_000_000
    )
}

/// `num` (digits, with at most one `.`) times `scale` nanoseconds,
/// exactly: integer arithmetic, so `9223372036854775807ns` is that many
/// nanoseconds (a float would round it), and a fraction finer than a
/// nanosecond is refused rather than rounded.
fn exact_ns(num: &str, scale: u64, text: &str) -> Result<u128, String> {
    let invalid = || format!("invalid number `{num}` in duration `{text}`");
    let too_large = || too_large(text);
    let (whole, frac) = num.split_once('.').unwrap_or((num, ""));
    if (whole.is_empty() && frac.is_empty()) || frac.contains('.') {
        return Err(invalid());
    }
    let whole = whole.trim_start_matches('0');
    let frac = frac.trim_end_matches('0');
    // Over 40 digits is over any u64 of nanoseconds (and u128 holds 38).
    if whole.len() > 30 {
        return Err(too_large());
    }
    let int: u128 = if whole.is_empty() {
        0
    } else {
        whole.parse().map_err(|_| invalid())?
    };
    let mut ns = int.checked_mul(u128::from(scale)).ok_or_else(too_large)?;
    if !frac.is_empty() {
        let finer = || {
            format!(
                "duration `{text}` is finer than a nanosecond; stormsim counts time in whole nanoseconds"
            )
        };
        // A scale is at most 86400e9 < 10^14: more than 20 decimals (the
        // last one not 0) cannot make whole nanoseconds.
        if frac.len() > 20 {
            return Err(finer());
        }
        let digits: u128 = frac.parse().map_err(|_| invalid())?;
        let den = 10u128.pow(frac.len() as u32);
        let part = digits * u128::from(scale);
        if !part.is_multiple_of(den) {
            return Err(finer());
        }
        ns = ns.checked_add(part / den).ok_or_else(too_large)?;
    }
    Ok(ns)
}

impl fmt::Display for Duration {
    /// The shortest exact spelling: `2m10s`, `250ms`, `1500us`, `0s`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ns = self.0;
        if ns == 0 {
            return write!(f, "0s");
        }
        if ns.is_multiple_of(NS_PER_S) {
            let mut s = ns / NS_PER_S;
            let (d, h, m);
            d = s / 86_400;
            s %= 86_400;
            h = s / 3600;
            s %= 3600;
            m = s / 60;
            s %= 60;
            for (v, u) in [(d, "d"), (h, "h"), (m, "m"), (s, "s")] {
                if v > 0 {
                    write!(f, "{v}{u}")?;
                }
            }
            return Ok(());
        }
        for (u, scale) in [("ms", NS_PER_MS), ("us", NS_PER_US)] {
            if ns.is_multiple_of(scale) {
                return write!(f, "{}{u}", ns / scale);
            }
        }
        write!(f, "{ns}ns")
    }
}

impl schemars::JsonSchema for Duration {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Duration".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A duration with units: `250ms`, `2s`, `5m`, `1h`, `2m10s`, `1.5s` (units ns, us, ms, s, m, h, d). A bare number is not a duration.",
            "type": "string",
            "pattern": DURATION_PATTERN
        })
    }
}

/// What `parse_duration` accepts, as a JSON Schema pattern.
pub const DURATION_PATTERN: &str = r"^\s*([0-9.]+\s*(ns|us|µs|ms|s|m|h|d)\s*)+$";

impl Serialize for Duration {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Duration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Duration;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a duration with a unit, such as 250ms, 2s, 5m or 1h")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Duration, E> {
                parse_duration(v).map_err(E::custom)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Duration, E> {
                Err(E::custom(format!(
                    "duration `{v}` has no unit; write it with one of ns, us, ms, s, m, h, d (for example {v}s or {v}ms)"
                )))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Duration, E> {
                if v < 0 {
                    Err(E::custom(format!("duration `{v}` is negative")))
                } else {
                    self.visit_u64(v as u64)
                }
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Duration, E> {
                if !v.is_finite() {
                    return Err(E::custom(not_finite(&crate::human::compact(v))));
                }
                Err(E::custom(format!(
                    "duration `{v}` has no unit; write it with one of ns, us, ms, s, m, h, d (for example {v}s)"
                )))
            }
        }
        d.deserialize_any(V)
    }
}

/// A rate of events, held as events per second.
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd, Default)]
pub struct Rate(pub f64);

impl Rate {
    pub fn per_sec(self) -> f64 {
        self.0
    }
}

/// Parses `2000/s`, `30/m`, `100/h`, `1.5/s`.
pub fn parse_rate(text: &str) -> Result<Rate, String> {
    let s = text.trim();
    let Some((num, unit)) = s.split_once('/') else {
        return Err(format!(
            "rate `{text}` has no unit; write it as N/s, N/m or N/h (for example {s}/s)"
        ));
    };
    let per = match unit.trim() {
        "s" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        other => {
            return Err(format!(
                "rate `{text}` has an unknown unit `/{other}`; expected /s, /m or /h"
            ));
        }
    };
    let n: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("invalid number `{}` in rate `{text}`", num.trim()))?;
    if !n.is_finite() {
        return Err(format!("rate `{text}` is not a finite number"));
    }
    if n < 0.0 {
        return Err(format!("rate `{text}` is negative"));
    }
    Ok(Rate(n / per))
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/s", self.0)
    }
}

impl schemars::JsonSchema for Rate {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Rate".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A rate: `2000/s`, `30/m`, `100/h`.",
            "type": "string",
            "pattern": RATE_PATTERN
        })
    }
}

/// What `parse_rate` accepts, as a JSON Schema pattern.
pub const RATE_PATTERN: &str =
    r"^\s*[+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?\s*/\s*(s|m|min|h)\s*$";

impl Serialize for Rate {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Rate {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Rate;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a rate such as 2000/s, 30/m or 100/h")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Rate, E> {
                parse_rate(v).map_err(E::custom)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Rate, E> {
                Err(E::custom(format!(
                    "rate `{v}` has no unit; write it as N/s, N/m or N/h (for example {v}/s)"
                )))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Rate, E> {
                self.visit_u64(v.unsigned_abs())
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Rate, E> {
                Err(E::custom(format!(
                    "rate `{v}` has no unit; write it as N/s, N/m or N/h (for example {v}/s)"
                )))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_exact_to_the_nanosecond() {
        let max = parse_duration("9223372036854775807ns").unwrap();
        assert_eq!(max.0, 9_223_372_036_854_775_807);
        assert_eq!(max.to_string(), "9223372036854775807ns");
        assert_eq!(
            parse_duration("18446744073709551615ns").unwrap().0,
            u64::MAX
        );
        assert_eq!(
            parse_duration("18446744073709551616ns").unwrap_err(),
            "duration `18446744073709551616ns` is too large: the largest duration accepted is 18446744073709551615ns (about 213503d, 584 years)"
        );
        assert_eq!(parse_duration("0.000000001s").unwrap().0, 1);
        assert_eq!(
            parse_duration("1.000000000000000000000s").unwrap().0,
            NS_PER_S
        );
        assert!(
            parse_duration("0.0000000001s")
                .unwrap_err()
                .contains("finer")
        );
        assert!(parse_duration("1.5ns").unwrap_err().contains("finer"));
        assert!(parse_duration("1.2.3s").is_err());
        assert!(
            parse_duration(&format!("{}s", "9".repeat(400)))
                .unwrap_err()
                .contains("too large")
        );
    }

    #[test]
    fn parses_durations() {
        assert_eq!(parse_duration("250ms").unwrap().0, 250 * NS_PER_MS);
        assert_eq!(parse_duration("2s").unwrap().0, 2 * NS_PER_S);
        assert_eq!(parse_duration("5m").unwrap().0, 300 * NS_PER_S);
        assert_eq!(parse_duration("1h").unwrap().0, 3600 * NS_PER_S);
        assert_eq!(parse_duration("2m10s").unwrap().0, 130 * NS_PER_S);
        assert_eq!(parse_duration("2m 10s").unwrap().0, 130 * NS_PER_S);
        assert_eq!(parse_duration("1.5s").unwrap().0, 1_500 * NS_PER_MS);
        assert_eq!(parse_duration("100us").unwrap().0, 100 * NS_PER_US);
        assert_eq!(parse_duration("0s").unwrap().0, 0);
    }

    #[test]
    fn rejects_bad_durations() {
        assert!(parse_duration("5").unwrap_err().contains("no unit"));
        assert!(
            parse_duration("5 parsecs")
                .unwrap_err()
                .contains("unknown unit")
        );
        assert!(parse_duration("").is_err());
        assert!(parse_duration("ms").is_err());
        assert!(parse_duration("1.2.3s").is_err());
        assert!(
            parse_duration("99999999999999999999h")
                .unwrap_err()
                .contains("too large")
        );
        assert!(parse_duration("0.5ns").unwrap_err().contains("nanosecond"));
        // A sign, an exponent: said as what they are, not as a unit.
        assert_eq!(
            parse_duration("-5s").unwrap_err(),
            "duration `-5s` is negative; expected 0 or more, such as 250ms or 2s"
        );
        assert!(
            parse_duration("-1m30s")
                .unwrap_err()
                .contains("is negative")
        );
        assert!(
            parse_duration("-x")
                .unwrap_err()
                .contains("expected a number")
        );
        for e in ["1e3s", "2E3ms", "1e-3s", "1e+3s"] {
            assert!(
                parse_duration(e).unwrap_err().contains("has an exponent"),
                "{e}"
            );
        }
        for e in ["5m-1s", "1m+30s"] {
            assert!(
                parse_duration(e).unwrap_err().contains("only add up"),
                "{e}"
            );
        }
        assert!(
            parse_duration("5em")
                .unwrap_err()
                .contains("unknown unit `em`")
        );
    }

    #[test]
    fn duration_display_round_trips() {
        for s in ["2m10s", "250ms", "1500us", "0s", "1h", "1d2h", "7ns", "90s"] {
            let d = parse_duration(s).unwrap();
            assert_eq!(parse_duration(&d.to_string()).unwrap(), d, "{s}");
        }
        assert_eq!(parse_duration("90s").unwrap().to_string(), "1m30s");
        assert_eq!(parse_duration("1.5s").unwrap().to_string(), "1500ms");
    }

    #[test]
    fn parses_rates() {
        assert_eq!(parse_rate("2000/s").unwrap().0, 2000.0);
        assert_eq!(parse_rate("60/m").unwrap().0, 1.0);
        assert_eq!(parse_rate("3600/h").unwrap().0, 1.0);
        assert!(parse_rate("2000").unwrap_err().contains("no unit"));
        assert!(parse_rate("-5/s").unwrap_err().contains("negative"));
        assert!(
            parse_rate("5/fortnight")
                .unwrap_err()
                .contains("unknown unit")
        );
        assert!(parse_rate("NaN/s").is_err());
        assert!(parse_rate("inf/s").is_err());
    }
}
