//! Plugin configuration helpers: the WIT passes configuration and table properties as
//! `list<tuple<string, string>>`; these look values up and parse the usual value syntaxes.

use crate::error::{Error, Result};

/// Key/value pairs as they cross the WIT boundary.
pub type Pairs = [(String, String)];

/// The value of `key` (last occurrence wins, like a map built from the list).
pub fn get<'a>(pairs: &'a Pairs, key: &str) -> Option<&'a str> {
    pairs
        .iter()
        .rev()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

/// The value of the first key present among `keys`.
pub fn get_any<'a>(pairs: &'a Pairs, keys: &[&str]) -> Option<&'a str> {
    keys.iter().find_map(|k| get(pairs, k))
}

/// Parses a boolean option (`true`/`false`, case-insensitive).
pub fn get_bool(pairs: &Pairs, key: &str, default: bool) -> Result<bool> {
    match get(pairs, key) {
        None => Ok(default),
        Some(v) => match v.trim().to_ascii_lowercase().as_str() {
            "true" => Ok(true),
            "false" => Ok(false),
            _ => Err(Error::invalid_input(format!(
                "option {key}: {v:?} is not a boolean"
            ))),
        },
    }
}

/// Parses an integer option.
pub fn get_i64(pairs: &Pairs, key: &str, default: i64) -> Result<i64> {
    parse_i64(key, get(pairs, key), default)
}

/// Parses option `key`'s `value`, wherever it was looked up (plugin configuration, table
/// options), as an integer; `default` when absent.
pub fn parse_i64(key: &str, value: Option<&str>, default: i64) -> Result<i64> {
    match value {
        None => Ok(default),
        Some(v) => v
            .trim()
            .parse()
            .map_err(|_| Error::invalid_input(format!("option {key}: {v:?} is not an integer"))),
    }
}

/// Parses a size option (see [`parse_size`]).
pub fn get_size(pairs: &Pairs, key: &str, default: u64) -> Result<u64> {
    match get(pairs, key) {
        None => Ok(default),
        Some(v) => parse_size(v).map_err(|e| e.context(format!("option {key}"))),
    }
}

/// Parses a memory size the way Flink/Paimon/Fluss `MemorySize` does: a number followed by an
/// optional unit (`b`, `k`/`kb`/`kibibytes`, `m`/`mb`, `g`/`gb`, `t`/`tb`; binary multiples,
/// case-insensitive, optional whitespace): `128mb`, `64 MB`, `1g`, `4096`.
pub fn parse_size(text: &str) -> Result<u64> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let bad = || Error::invalid_input(format!("{text:?} is not a memory size"));
    let n: u64 = num.parse().map_err(|_| bad())?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" | "bytes" => 1,
        "k" | "kb" | "kibibytes" => 1 << 10,
        "m" | "mb" | "mebibytes" => 1 << 20,
        "g" | "gb" | "gibibytes" => 1 << 30,
        "t" | "tb" | "tebibytes" => 1 << 40,
        _ => return Err(bad()),
    };
    n.checked_mul(mult).ok_or_else(bad)
}

/// Parses a duration the way Flink/Paimon `TimeUtils.parseDuration` does, in milliseconds: a
/// number followed by an optional unit (`ms`, `s`, `min`, `h`, `d` and their long forms,
/// case-insensitive, optional whitespace; no unit = milliseconds): `1 h`, `30min`, `500`.
pub fn parse_duration_ms(text: &str) -> Result<i64> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let bad = || Error::invalid_input(format!("{text:?} is not a duration"));
    let n: i64 = num.parse().map_err(|_| bad())?;
    let mult: i64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "ms" | "milli" | "millis" | "millisecond" | "milliseconds" => 1,
        "s" | "sec" | "secs" | "second" | "seconds" => 1_000,
        "m" | "min" | "mins" | "minute" | "minutes" => 60_000,
        "h" | "hour" | "hours" => 3_600_000,
        "d" | "day" | "days" => 86_400_000,
        _ => return Err(bad()),
    };
    n.checked_mul(mult).ok_or_else(bad)
}

/// Parses a map option the way Flink/Paimon `Options` do: `k1:v1,k2:v2` (whitespace around
/// keys and values trimmed, empty text = empty map).
pub fn parse_map(text: &str) -> Result<Vec<(String, String)>> {
    text.split(',')
        .filter(|e| !e.trim().is_empty())
        .map(|entry| {
            let (k, v) = entry.split_once(':').ok_or_else(|| {
                Error::invalid_input(format!("{text:?} is not a map (expected k1:v1,k2:v2)"))
            })?;
            Ok((k.trim().to_string(), v.trim().to_string()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("128mb").unwrap(), 128 << 20);
        assert_eq!(parse_size("128 MB").unwrap(), 128 << 20);
        assert_eq!(parse_size("1g").unwrap(), 1 << 30);
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("8 kb").unwrap(), 8192);
        assert!(parse_size("mb").is_err());
        assert!(parse_size("12 parsecs").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration_ms("1 h").unwrap(), 3_600_000);
        assert_eq!(parse_duration_ms("30min").unwrap(), 1_800_000);
        assert_eq!(parse_duration_ms("10 s").unwrap(), 10_000);
        assert_eq!(parse_duration_ms("500").unwrap(), 500);
        assert_eq!(parse_duration_ms("2 D").unwrap(), 172_800_000);
        assert!(parse_duration_ms("h").is_err());
        assert!(parse_duration_ms("3 fortnights").is_err());
        assert!(parse_duration_ms("9999999999999999 d").is_err());
    }

    #[test]
    fn maps() {
        assert_eq!(
            parse_map("0:none, 1 : truncate(16)").unwrap(),
            vec![
                ("0".to_string(), "none".to_string()),
                ("1".to_string(), "truncate(16)".to_string())
            ]
        );
        assert!(parse_map("").unwrap().is_empty());
        assert!(parse_map("0").is_err());
    }

    #[test]
    fn lookup() {
        let p = vec![
            ("a".to_string(), "1".to_string()),
            ("a".to_string(), "2".to_string()),
        ];
        assert_eq!(get(&p, "a"), Some("2"));
        assert_eq!(get(&p, "b"), None);
        assert_eq!(get_any(&p, &["b", "a"]), Some("2"));
        assert_eq!(get_i64(&p, "a", 0).unwrap(), 2);
        assert!(get_bool(&p, "a", false).is_err());
        assert!(get_bool(&p, "x", true).unwrap());
    }
}
