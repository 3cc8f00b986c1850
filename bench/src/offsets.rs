//! Log offsets: how far a lake has come.

use std::collections::HashMap;

/// Whether the lake holds every record up to `ends`.
pub fn covers(
    got: &HashMap<(Option<i64>, i32), i64>,
    ends: &HashMap<(Option<i64>, i32), i64>,
) -> bool {
    ends.iter()
        .all(|(k, end)| *end == 0 || got.get(k).is_some_and(|o| o >= end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lake_covers_ends_it_reached_or_passed_and_empty_buckets() {
        let ends = HashMap::from([((None, 0), 10), ((None, 1), 0), ((Some(7), 2), 5)]);
        let mut got = HashMap::from([((None, 0), 10), ((Some(7), 2), 6)]);
        assert!(covers(&got, &ends));
        got.insert((None, 0), 9);
        assert!(!covers(&got, &ends));
        got.insert((None, 0), 10);
        got.remove(&(Some(7), 2));
        assert!(!covers(&got, &ends));
    }
}
