//! The duration notations of the configuration formats, read into
//! stormsim's [`Duration`] and written back in the same notation:
//!
//! - protobuf JSON (`google.protobuf.Duration`: gRPC service config,
//!   Envoy): seconds with up to nine decimals and an `s`, `"0.1s"`
//!   (protocolbuffers/protobuf `src/google/protobuf/duration.proto`, "JSON
//!   Mapping"); the `{seconds, nanos}` object form is read too (grpc-node
//!   accepts it).
//! - Go (`time.ParseDuration`: Istio, Linkerd): `300ms`, `1m30s`, `1.5s`,
//!   units `ns`, `us`, `µs`, `ms`, `s`, `m`, `h` (golang/go
//!   `src/time/format.go`).
//! - Spring Boot (`DurationStyle`: Resilience4j's `application.yml`):
//!   `500ms`, `2s`, `1m`, a bare number of milliseconds, or ISO-8601
//!   `PT2S` (spring-projects/spring-boot `DurationStyle.java`: SIMPLE is
//!   `^([+-]?\d+)([a-zA-Z]{0,2})$`, units ns, us, ms, s, m, h, d).
//! - .NET `TimeSpan` (`appsettings.json`): `[-][d.]hh:mm:ss[.fffffff]`,
//!   and a bare whole number is days (dotnet/runtime `TimeSpan.Parse`).

use crate::scenario::units::Duration;

/// White space around a duration (`" 1s"`, quoted in the file), for the
/// formats whose systems do not trim it but refuse the value: a Go
/// `time.ParseDuration` (Istio, Linkerd) takes a sign or a digit first
/// (golang/go `src/time/format.go`: anything else is "invalid duration");
/// grpc-go `parseDuration` (service_config.go) reads the seconds with
/// `strconv.ParseInt`, which takes no space, as protobuf's JSON mapping
/// of `google.protobuf.Duration` (digits, an optional fraction, `s`) is
/// read by Envoy; Spring Boot's `StringToDurationConverter` hands the
/// text as it is to `DurationStyle.detect`, whose patterns are anchored
/// (`^([+-]?\d+)([a-zA-Z]{0,2})$`, `^[+-]?[pP].*$`), so Resilience4j's
/// binding fails at startup. (.NET's `TimeSpan.Parse` does allow white
/// space around its value, `[ws]` in its format: `ms-resilience` trims.)
/// The message for such a value, `None` when there is none.
pub fn space_refusal(text: Option<&str>, system: &str) -> Option<String> {
    let t = text?;
    (t.trim() != t).then(|| {
        format!(
            "white space around the duration {}: {system} does not trim it and refuses the value; remove the space",
            crate::escape::quoted(t)
        )
    })
}

const NS: u64 = 1;
const US: u64 = 1_000;
const MS: u64 = 1_000_000;
const S: u64 = 1_000_000_000;
const M: u64 = 60 * S;
const H: u64 = 60 * M;
const D: u64 = 24 * H;

/// A decimal number of `unit`s as nanoseconds, exactly (at most nine
/// decimals after the point survive).
fn decimal(text: &str, unit: u64) -> Option<u64> {
    let (int, frac) = match text.split_once('.') {
        Some((i, f)) => (i, f),
        None => (text, ""),
    };
    if (int.is_empty() && frac.is_empty())
        || !int.chars().all(|c| c.is_ascii_digit())
        || !frac.chars().all(|c| c.is_ascii_digit())
    {
        return None;
    }
    let whole: u64 = if int.is_empty() { 0 } else { int.parse().ok()? };
    let mut ns = whole.checked_mul(unit)?;
    let mut scale = unit;
    for d in frac.chars().take(18) {
        scale /= 10;
        ns = ns.checked_add(u64::from(d.to_digit(10)?) * scale)?;
    }
    Some(ns)
}

/// `"1.5s"` (protobuf JSON): at most nine decimals, as protobuf allows
/// (a tenth would be finer than a nanosecond).
pub fn parse_proto(text: &str) -> Option<Duration> {
    let number = text.strip_suffix('s')?;
    if number.split_once('.').is_some_and(|(_, f)| f.len() > 9) {
        return None;
    }
    decimal(number, S).map(Duration)
}

/// The largest protobuf `Duration`, in seconds (duration.proto: about
/// 10 000 years).
const PROTO_MAX_SECS: u64 = 315_576_000_000;

/// What to say of `text` (a scalar, if the node is one), which
/// [`parse_proto`] refused: why, when it is written as a protobuf duration
/// but has more than nine decimals or is larger than stormsim holds (or
/// protobuf allows); else `expected` (the caller's "expected a duration
/// such as 0.25s").
pub fn proto_refusal(text: Option<&str>, expected: &str) -> String {
    let Some(number) = text.map(str::trim).and_then(|t| t.strip_suffix('s')) else {
        return expected.to_string();
    };
    let (int, frac) = number.split_once('.').unwrap_or((number, ""));
    let digits = |t: &str| t.chars().all(|c| c.is_ascii_digit());
    if (int.is_empty() && frac.is_empty()) || !digits(int) || !digits(frac) {
        return expected.to_string();
    }
    if frac.len() > 9 {
        return format!(
            "{expected}: `{}` has {} decimals, and protobuf durations have at most 9 (whole nanoseconds)",
            crate::scenario::error::clip(number),
            frac.len()
        );
    }
    let secs = int.trim_start_matches('0');
    let beyond = |max: u64| secs.len() > 20 || secs.parse::<u64>().is_ok_and(|v| v > max);
    if beyond(PROTO_MAX_SECS) {
        return format!(
            "{expected}: it is larger than protobuf's largest duration ({PROTO_MAX_SECS}s, about 10000 years)"
        );
    }
    if beyond(u64::MAX / S) || decimal(number, S).is_none() {
        return format!(
            "{expected}: it is too large: stormsim counts time in nanoseconds, up to {}s (about 584 years)",
            u64::MAX / S
        );
    }
    expected.to_string()
}

/// Seconds with the decimals needed, and `s`: `0.1s`, `2s`, `0.000001s`.
pub fn proto(d: Duration) -> String {
    let (secs, nanos) = (d.0 / S, d.0 % S);
    if nanos == 0 {
        format!("{secs}s")
    } else {
        let frac = format!("{nanos:09}");
        format!("{secs}.{}s", frac.trim_end_matches('0'))
    }
}

/// The nanoseconds of one of Go's duration units (`time.ParseDuration`:
/// ns, us/µs/μs, ms, s, m, h).
fn go_unit(unit: &str) -> Option<u64> {
    Some(match unit {
        "ns" => NS,
        "us" | "µs" | "μs" => US,
        "ms" => MS,
        "s" => S,
        "m" => M,
        "h" => H,
        _ => return None,
    })
}

/// Go's `time.ParseDuration` (no sign: a negative duration means nothing
/// here).
pub fn parse_go(text: &str) -> Option<Duration> {
    if text == "0" {
        return Some(Duration(0));
    }
    let mut rest = text;
    let mut total: u64 = 0;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let n = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, tail) = rest.split_at(n);
        let u = tail
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(tail.len());
        let (unit, next) = tail.split_at(u);
        let scale = go_unit(unit)?;
        total = total.checked_add(decimal(number, scale)?)?;
        rest = next;
    }
    Some(Duration(total))
}

/// As Go's `Duration.String()` prints it: `300ms`, `1.5s`, `1m30s`, `2h0m0s`.
pub fn go(d: Duration) -> String {
    let ns = d.0;
    if ns == 0 {
        return "0s".into();
    }
    if ns < S {
        let (unit, scale) = if ns < US {
            ("ns", NS)
        } else if ns < MS {
            ("µs", US)
        } else {
            ("ms", MS)
        };
        return format!("{}{unit}", trim(ns, scale));
    }
    let (h, m, s) = (ns / H, (ns % H) / M, ns % M);
    let secs = format!("{}s", trim(s, S));
    match (h, m) {
        (0, 0) => secs,
        (0, m) => format!("{m}m{secs}"),
        (h, m) => format!("{h}h{m}m{secs}"),
    }
}

/// `ns / scale` with the decimals needed.
fn trim(ns: u64, scale: u64) -> String {
    let (whole, rest) = (ns / scale, ns % scale);
    if rest == 0 {
        return whole.to_string();
    }
    let digits = scale.ilog10() as usize;
    let frac = format!("{rest:0digits$}");
    format!("{whole}.{}", frac.trim_end_matches('0'))
}

/// How a Spring duration was written, so that a new value is written the
/// same way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpringStyle {
    /// `500ms`, `2s`.
    Simple,
    /// A bare number: milliseconds.
    Millis,
    /// ISO-8601: `PT0.5S`.
    Iso,
}

/// A Spring Boot duration and how it was written.
pub fn parse_spring(text: &str) -> Option<(Duration, SpringStyle)> {
    let t = text.trim();
    if t.starts_with(['P', 'p']) || t.starts_with("-P") {
        return parse_iso(t).map(|d| (d, SpringStyle::Iso));
    }
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    if digits == 0 {
        return None;
    }
    let (number, unit) = t.split_at(digits);
    let n: u64 = number.parse().ok()?;
    let (scale, style) = match unit.to_ascii_lowercase().as_str() {
        "" => (MS, SpringStyle::Millis),
        "ns" => (NS, SpringStyle::Simple),
        "us" => (US, SpringStyle::Simple),
        "ms" => (MS, SpringStyle::Simple),
        "s" => (S, SpringStyle::Simple),
        "m" => (M, SpringStyle::Simple),
        "h" => (H, SpringStyle::Simple),
        "d" => (D, SpringStyle::Simple),
        _ => return None,
    };
    Some((Duration(n.checked_mul(scale)?), style))
}

/// ISO-8601 `PnDTnHnMn.nS` (java.time.Duration.parse; no years or months).
fn parse_iso(t: &str) -> Option<Duration> {
    let upper = t.to_ascii_uppercase();
    let rest = upper.strip_prefix('P')?;
    let (days, time) = match rest.split_once('T') {
        Some((d, t)) => (d, Some(t)),
        None => (rest, None),
    };
    let mut total: u64 = 0;
    if !days.is_empty() {
        let n = days.strip_suffix('D')?;
        total = total.checked_add(decimal(n, D)?)?;
    }
    if let Some(mut time) = time {
        if time.is_empty() {
            return None;
        }
        for (unit, scale) in [('H', H), ('M', M), ('S', S)] {
            if let Some(i) = time.find(unit) {
                let n = &time[..i];
                total = total.checked_add(decimal(n, scale)?)?;
                time = &time[i + 1..];
            }
        }
        if !time.is_empty() {
            return None;
        }
    } else if days.is_empty() {
        return None;
    }
    Some(Duration(total))
}

/// A Spring duration in `style`; a value Simple cannot write in whole units
/// is written in the smallest unit that can.
pub fn spring(d: Duration, style: SpringStyle) -> String {
    let ns = d.0;
    match style {
        SpringStyle::Millis if ns.is_multiple_of(MS) => format!("{}", ns / MS),
        SpringStyle::Iso => {
            let (h, m, s) = (ns / H, (ns % H) / M, ns % M);
            let mut out = String::from("PT");
            if h > 0 {
                out += &format!("{h}H");
            }
            if m > 0 {
                out += &format!("{m}M");
            }
            if s > 0 || (h == 0 && m == 0) {
                out += &format!("{}S", trim(s, S));
            }
            out
        }
        _ => {
            for (unit, scale) in [
                ("d", D),
                ("h", H),
                ("m", M),
                ("s", S),
                ("ms", MS),
                ("us", US),
            ] {
                if ns != 0 && ns.is_multiple_of(scale) {
                    return format!("{}{unit}", ns / scale);
                }
            }
            if ns == 0 {
                "0ms".into()
            } else {
                format!("{ns}ns")
            }
        }
    }
}

/// .NET `TimeSpan.Parse` (invariant culture): `[-][d.]hh:mm[:ss[.fffffff]]`
/// (hours to 23, minutes and seconds to 59, one or two digits each; at
/// most seven decimals), `d:hh:mm:ss[.fffffff]`, or a whole number of
/// days. Negative spans, and spans too long for stormsim's durations, are
/// `None` ([`timespan_syntax`] tells those from text that is no TimeSpan).
pub fn parse_timespan(text: &str) -> Option<Duration> {
    match timespan_syntax(text)? {
        TimeSpanText::Span(ns) => u64::try_from(ns).ok().map(Duration),
        TimeSpanText::Negative(_) => None,
    }
}

/// A text `TimeSpan.Parse` reads: its length in nanoseconds, or a
/// negative span (`-00:00:01`) with the length of its magnitude.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeSpanText {
    Span(u128),
    Negative(u128),
}

/// The length of a `TimeSpan.Parse` text, however long (up to
/// `TimeSpan.MaxValue`, `10675199.02:48:05.4775807`), and negative ones;
/// `None`: not a TimeSpan.
pub fn timespan_syntax(text: &str) -> Option<TimeSpanText> {
    let t = text.trim();
    if let Some(rest) = t.strip_prefix('-') {
        return match timespan_syntax(rest)? {
            TimeSpanText::Span(ns) => Some(TimeSpanText::Negative(ns)),
            TimeSpanText::Negative(_) => None,
        };
    }
    let (h, m, s, d) = (H as u128, M as u128, S as u128, D as u128);
    if t.chars().all(|c| c.is_ascii_digit()) && !t.is_empty() {
        let days = t.parse::<u128>().ok().filter(|v| *v <= 10_675_199)?;
        return Some(TimeSpanText::Span(days * d));
    }
    let (days, clock) = match t.split_once(':') {
        Some((head, _)) => match head.split_once('.') {
            Some((d, h)) => (Some(d), format!("{h}{}", &t[head.len()..])),
            None => (None, t.to_string()),
        },
        None => return None,
    };
    let parts: Vec<&str> = clock.split(':').collect();
    // `d:hh:mm:ss[.fffffff]`, the general ("g") form, is read too.
    let (days, parts) = match (days, parts.len()) {
        (None, 4) => (Some(parts[0]), parts[1..].to_vec()),
        _ => (days, parts),
    };
    if !(2..=3).contains(&parts.len()) {
        return None;
    }
    let int = |s: &str, max: u128| -> Option<u128> {
        (!s.is_empty() && s.chars().all(|c| c.is_ascii_digit()))
            .then(|| s.parse::<u128>().ok())
            .flatten()
            .filter(|v| *v <= max)
    };
    let mut total = int(parts[0], 23)? * h + int(parts[1], 59)? * m;
    if let Some(sec) = parts.get(2) {
        let (whole, frac) = match sec.split_once('.') {
            Some((w, f)) if (1..=7).contains(&f.len()) => (w, f),
            Some(_) => return None,
            None => (*sec, ""),
        };
        total += int(whole, 59)? * s;
        if !frac.is_empty() {
            total += decimal(&format!("0.{frac}"), S)? as u128;
        }
    }
    if let Some(days) = days {
        total += int(days, 10_675_199)? * d;
    }
    Some(TimeSpanText::Span(total))
}

/// `hh:mm:ss` with the decimals needed (at most seven: .NET ticks of
/// 100 ns), and `d.` when a day or more.
pub fn timespan(d: Duration) -> String {
    let ns = d.0 - d.0 % 100;
    let (days, h, m, s, frac) = (ns / D, (ns % D) / H, (ns % H) / M, (ns % M) / S, ns % S);
    let mut out = if days > 0 {
        format!("{days}.{h:02}:{m:02}:{s:02}")
    } else {
        format!("{h:02}:{m:02}:{s:02}")
    };
    if frac > 0 {
        let f = format!("{:07}", frac / 100);
        out += &format!(".{}", f.trim_end_matches('0'));
    }
    out
}

// ------------------------------------------------- writing in the file's style

/// A duration notation, for [`styled`]: a tuned value is written the way
/// the value it replaces (or, for a new key, a duration beside it) was
/// written, so that an export changes the number and nothing of the
/// user's style.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Notation {
    /// protobuf JSON (gRPC service config, Envoy).
    Proto,
    /// Go `time.ParseDuration` (Istio, Linkerd).
    Go,
    /// .NET `TimeSpan` (`appsettings.json`).
    TimeSpan,
}

impl Notation {
    /// Whether `text` is a duration of this notation that tells a style
    /// (a bare `0` of Go, or a whole number of days of a TimeSpan, says
    /// too little to copy).
    pub fn reads(self, text: &str) -> bool {
        let t = text.trim();
        match self {
            Notation::Proto => parse_proto(t).is_some(),
            Notation::Go => t != "0" && parse_go(t).is_some(),
            Notation::TimeSpan => t.contains(':') && parse_timespan(t).is_some(),
        }
    }
}

/// `d` in `notation`, written as `sample` (a value of the same notation,
/// as the file has it) was; the notation's usual form when there is no
/// sample or it tells nothing. Always text the notation reads back as
/// exactly `d` (where the notation can hold `d` at all).
pub fn styled(notation: Notation, d: Duration, sample: Option<&str>) -> String {
    let sample = sample.map(str::trim).filter(|s| notation.reads(s));
    match notation {
        Notation::Proto => proto_like(d, sample),
        Notation::Go => go_like(d, sample),
        Notation::TimeSpan => timespan_like(d, sample),
    }
}

/// The fixed number of decimals a sample pads to (`0.100s`, `2.000s`,
/// `00:00:01.5000000`): `Some(n)` when its fraction ends in `0`, which
/// only a fixed-width writer does (protobuf's own JSON printer writes 0,
/// 3, 6 or 9 decimals; .NET's `"c"` format 7).
fn padded_decimals(number: &str) -> Option<usize> {
    let (_, frac) = number.split_once('.')?;
    frac.ends_with('0').then_some(frac.len())
}

/// `ns % unit` (a whole part and `unit`'s nanoseconds, `unit` a power of
/// ten) with at least `min` decimals, as many as needed beyond.
fn decimals(ns: u64, unit: u64, min: usize) -> String {
    let (whole, rest) = (ns / unit, ns % unit);
    let digits = unit.ilog10() as usize;
    let mut frac = format!("{rest:0digits$}");
    while frac.len() > min && frac.ends_with('0') {
        frac.pop();
    }
    if digits == 0 || frac.is_empty() {
        return whole.to_string();
    }
    format!("{whole}.{frac}")
}

fn proto_like(d: Duration, sample: Option<&str>) -> String {
    match sample
        .and_then(|s| s.strip_suffix('s'))
        .and_then(padded_decimals)
    {
        Some(n) if n <= 9 => format!("{}s", decimals(d.0, S, n)),
        _ => proto(d),
    }
}

fn go_like(d: Duration, sample: Option<&str>) -> String {
    // A sample of one unit (`300ms`, `30s`, `0.5s`, `2m`): the value in
    // that unit, when it can be written exactly in it.
    let unit = sample.and_then(|s| {
        let n = s
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .filter(|&n| n > 0)?;
        let unit = &s[n..];
        (!unit.contains(|c: char| c.is_ascii_digit() || c == '.')).then_some((&s[..n], unit))
    });
    let Some((number, unit)) = unit else {
        return go(d);
    };
    let Some(scale) = go_unit(unit) else {
        return go(d);
    };
    // The unit stays when the value is a whole number of it (`2000ms`
    // gives `3000ms`, `30s` `90s`), or when the sample itself has
    // decimals in it (`0.5s` gives `0.25s`); else Go's own spelling
    // (`2s` and 200 ms give `200ms`, not `0.2s`).
    let min = padded_decimals(number).unwrap_or(0);
    let decimal_unit = 10u64.pow(scale.ilog10()) == scale;
    if d.0.is_multiple_of(scale) && min == 0 {
        format!("{}{unit}", d.0 / scale)
    } else if decimal_unit && number.contains('.') {
        format!("{}{unit}", decimals(d.0, scale, min))
    } else {
        go(d)
    }
}

/// `d` as a Spring Boot duration written like `sample` (a Spring duration
/// of the file): a bare number of milliseconds, ISO-8601, or a number
/// and unit, the unit kept when the value is a whole number of it
/// (`500ms` gives `1000ms`, not `1s`), else the largest unit that holds it
/// whole. No sample: `500ms`, `2s`.
pub fn spring_like(d: Duration, sample: Option<&str>) -> String {
    let Some((_, style)) = sample.and_then(parse_spring) else {
        return spring(d, SpringStyle::Simple);
    };
    if style == SpringStyle::Simple
        && let Some(s) = sample.map(str::trim)
    {
        let unit = s.trim_start_matches(|c: char| c.is_ascii_digit() || c == '+');
        let scale = match unit.to_ascii_lowercase().as_str() {
            "ns" => NS,
            "us" => US,
            "ms" => MS,
            "s" => S,
            "m" => M,
            "h" => H,
            "d" => D,
            _ => 0,
        };
        if scale > 0 && d.0.is_multiple_of(scale) && d.0 > 0 {
            return format!("{}{unit}", d.0 / scale);
        }
    }
    spring(d, style)
}

/// How a TimeSpan sample is written: `00:00:02` or `0:0:2`, `hh:mm` alone,
/// `d.hh:mm:ss` or `d:hh:mm:ss`, a fixed number of decimals.
fn timespan_like(d: Duration, sample: Option<&str>) -> String {
    let Some(s) = sample else {
        return timespan(d);
    };
    let ns = d.0 - d.0 % 100;
    let (days, h, m, sec, frac) = (ns / D, (ns % D) / H, (ns % H) / M, (ns % M) / S, ns % S);
    // The sample's clock, without its days.
    let (day_sep, clock) = match s.split_once(':') {
        Some((head, _)) if head.contains('.') => {
            (Some('.'), &s[head.find('.').map_or(0, |i| i + 1)..])
        }
        _ if s.split(':').count() == 4 => (Some(':'), &s[s.find(':').map_or(0, |i| i + 1)..]),
        _ => (None, s),
    };
    let parts: Vec<&str> = clock.split(':').collect();
    let width = |i: usize| {
        parts
            .get(i)
            .map_or(2, |p| p.split('.').next().map_or(2, str::len).clamp(1, 2))
    };
    let (wh, wm, ws) = (width(0), width(1), width(2));
    let with_seconds = parts.len() >= 3 || sec != 0 || frac != 0;
    let min = parts
        .get(2)
        .and_then(|p| padded_decimals(p))
        .filter(|n| (1..=7).contains(n))
        .unwrap_or(0);
    let mut out = match (days, day_sep) {
        (0, Some('.')) if s.starts_with("0.") => format!("0.{h:0wh$}"),
        (0, _) => format!("{h:0wh$}"),
        (days, Some(':')) => format!("{days}:{h:0wh$}"),
        (days, _) => format!("{days}.{h:0wh$}"),
    };
    out += &format!(":{m:0wm$}");
    if with_seconds {
        out += &format!(":{sec:0ws$}");
        let f = decimals(frac / 100, 10_000_000, min);
        if let Some((_, f)) = f.split_once('.') {
            out += &format!(".{f}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn proto_durations_too_fine_or_too_large_say_so() {
        assert_eq!(parse_proto("0.000000001s"), Some(Duration(1)));
        assert_eq!(parse_proto("0.0000000001s"), None);
        let e = "expected a duration";
        assert!(proto_refusal(Some("0.0000000001s"), e).contains("10 decimals"));
        assert!(proto_refusal(Some("99999999999s"), e).contains("up to 18446744073s"));
        assert!(proto_refusal(Some("999999999999s"), e).contains("largest duration"));
        assert_eq!(proto_refusal(Some("abc"), e), e);
    }

    #[test]
    fn proto_round_trips() {
        assert_eq!(parse_proto("0.1s"), Some(ms(100)));
        assert_eq!(parse_proto("1.000000001s"), Some(Duration(S + 1)));
        assert_eq!(parse_proto("2s"), Some(ms(2000)));
        assert_eq!(parse_proto("2"), None);
        assert_eq!(parse_proto("1.5ms"), None);
        for d in [ms(100), ms(2000), ms(1500), Duration(1), ms(0)] {
            assert_eq!(parse_proto(&proto(d)), Some(d));
        }
        assert_eq!(proto(ms(250)), "0.25s");
    }

    #[test]
    fn go_round_trips() {
        assert_eq!(parse_go("1m30s"), Some(ms(90_000)));
        assert_eq!(parse_go("1.5s"), Some(ms(1500)));
        assert_eq!(parse_go("300ms"), Some(ms(300)));
        assert_eq!(parse_go("2h"), Some(Duration(2 * H)));
        assert_eq!(parse_go("10"), None);
        assert_eq!(parse_go("1x"), None);
        assert_eq!(go(ms(90_000)), "1m30s");
        assert_eq!(go(ms(1500)), "1.5s");
        assert_eq!(go(ms(300)), "300ms");
        assert_eq!(go(Duration(2 * H)), "2h0m0s");
        for d in [ms(25), ms(10_000), Duration(1500), Duration(3 * H + 7)] {
            assert_eq!(parse_go(&go(d)), Some(d), "{}", go(d));
        }
    }

    #[test]
    fn spring_round_trips_in_its_style() {
        assert_eq!(parse_spring("500ms"), Some((ms(500), SpringStyle::Simple)));
        assert_eq!(
            parse_spring("10000"),
            Some((ms(10_000), SpringStyle::Millis))
        );
        assert_eq!(parse_spring("PT2S"), Some((ms(2000), SpringStyle::Iso)));
        assert_eq!(parse_spring("PT0.5S"), Some((ms(500), SpringStyle::Iso)));
        assert_eq!(
            parse_spring("PT1M30S"),
            Some((ms(90_000), SpringStyle::Iso))
        );
        assert_eq!(parse_spring("1.5s"), None);
        assert_eq!(spring(ms(1500), SpringStyle::Simple), "1500ms");
        assert_eq!(spring(ms(2000), SpringStyle::Simple), "2s");
        assert_eq!(spring(ms(750), SpringStyle::Iso), "PT0.75S");
        assert_eq!(spring(ms(750), SpringStyle::Millis), "750");
        for style in [SpringStyle::Simple, SpringStyle::Millis, SpringStyle::Iso] {
            for d in [ms(1), ms(750), ms(60_000), ms(3_723_004)] {
                assert_eq!(parse_spring(&spring(d, style)).map(|p| p.0), Some(d));
            }
        }
    }

    #[test]
    fn timespan_round_trips() {
        assert_eq!(parse_timespan("00:00:02"), Some(ms(2000)));
        assert_eq!(parse_timespan("00:00:00.5"), Some(ms(500)));
        assert_eq!(parse_timespan("00:00:00.5000000"), Some(ms(500)));
        assert_eq!(parse_timespan("1.02:00:00"), Some(Duration(D + 2 * H)));
        assert_eq!(parse_timespan("2"), Some(Duration(2 * D)));
        assert_eq!(parse_timespan("00:01"), Some(ms(60_000)));
        assert_eq!(parse_timespan("00:00:60"), None);
        assert_eq!(parse_timespan("2.5:00:00"), Some(Duration(2 * D + 5 * H)));
        assert_eq!(
            parse_timespan("1:02:00:00.25"),
            Some(Duration(D + 2 * H + 250 * MS))
        );
        assert_eq!(parse_timespan("0:0:2"), Some(ms(2000)));
        assert_eq!(parse_timespan("24:00:00"), None);
        assert_eq!(parse_timespan("00:00:00.12345678"), None);
        assert_eq!(parse_timespan("-00:00:01"), None);
        assert_eq!(parse_timespan("1.2.00:00:00"), None);
        assert_eq!(parse_timespan("00:00:02 "), Some(ms(2000)));
        assert_eq!(parse_timespan("2s"), None);
        assert_eq!(timespan(ms(2000)), "00:00:02");
        assert_eq!(timespan(ms(1500)), "00:00:01.5");
        for d in [ms(2000), ms(1500), ms(30_000), Duration(D + 3 * H + 100)] {
            assert_eq!(parse_timespan(&timespan(d)), Some(d), "{}", timespan(d));
        }
    }
}
