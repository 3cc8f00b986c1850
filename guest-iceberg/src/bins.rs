//! Bin packing as Iceberg's `BinPacking.ListPacker` does it with a look-back of one bin:
//! bins are contiguous runs of the list, so packing never reorders (manifests keep their
//! order, data files their `__offset` order).

/// Bins of `items` (weights by `weight`) of at most `target` each, packed from the end with a
/// look-back of one bin (Java's `ListPacker.packEnd(items, weight)` with lookback 1): bins
/// are contiguous runs, in list order, and the first one is the under-filled one.
pub fn pack_end<T>(items: Vec<T>, target: u64, weight: impl Fn(&T) -> u64) -> Vec<Vec<T>> {
    let mut bins: Vec<Vec<T>> = Vec::new();
    let mut open: Vec<T> = Vec::new();
    let mut open_weight = 0u64;
    for item in items.into_iter().rev() {
        let w = weight(&item);
        if open.is_empty() || open_weight.saturating_add(w) > target {
            if !open.is_empty() {
                bins.push(std::mem::take(&mut open));
            }
            open_weight = 0;
        }
        open_weight = open_weight.saturating_add(w);
        open.push(item);
    }
    if !open.is_empty() {
        bins.push(open);
    }
    bins.reverse();
    for bin in &mut bins {
        bin.reverse();
    }
    bins
}

/// Bins of `items` of at most `target` each, packed front to back with a look-back of one
/// (Java's `ListPacker.pack(items, weight)` with lookback 1): an item joins the open bin
/// while the bin's weight stays within `target`, else starts the next one.
pub fn pack<T>(items: Vec<T>, target: u64, weight: impl Fn(&T) -> u64) -> Vec<Vec<T>> {
    let mut bins: Vec<Vec<T>> = Vec::new();
    let mut open: Vec<T> = Vec::new();
    let mut open_weight = 0u64;
    for item in items {
        let w = weight(&item);
        if !open.is_empty() && open_weight.saturating_add(w) > target {
            bins.push(std::mem::take(&mut open));
            open_weight = 0;
        }
        open_weight = open_weight.saturating_add(w);
        open.push(item);
    }
    if !open.is_empty() {
        bins.push(open);
    }
    bins
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_pack_from_the_end_leaving_the_newest_under_filled() {
        let bins = pack_end(vec![1u64, 2, 3, 4, 5, 6], 7, |w| *w);
        // From the end: [6]; 5 does not fit (11): [5]; 4 neither (9): [4, 3] (7); [2, 1].
        assert_eq!(bins, vec![vec![1, 2], vec![3, 4], vec![5], vec![6]]);
        let bins = pack_end(vec![1u64; 10], 4, |w| *w);
        assert_eq!(
            bins.iter().map(Vec::len).collect::<Vec<_>>(),
            vec![2, 4, 4],
            "the first (newest) bin is the under-filled one"
        );
        let bins = pack_end(vec![10u64, 1, 1], 4, |w| *w);
        assert_eq!(bins, vec![vec![10], vec![1, 1]], "an oversized item alone");
        assert!(pack_end(Vec::<u64>::new(), 4, |w| *w).is_empty());
        assert_eq!(
            pack(vec![1u64, 2, 3, 4, 5, 6], 7, |w| *w),
            vec![vec![1, 2, 3], vec![4], vec![5], vec![6]]
        );
        assert_eq!(
            pack(vec![10u64, 1, 1], 4, |w| *w),
            vec![vec![10], vec![1, 1]]
        );
    }
}
