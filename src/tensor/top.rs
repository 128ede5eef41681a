//! The largest values of a row, by id: a prediction's most likely tokens.

/// The ids of the `n` largest values, largest first (ties: lower id first).
pub fn top_ids(values: &[f32], n: usize) -> Vec<u32> {
    if n == 1 {
        // The largest alone: one pass, no list of every id (the logit lens asks this of dozens
        // of vocabulary-wide rows a keystroke).
        let best = (0..values.len()).reduce(|best, i| {
            if values[i].total_cmp(&values[best]).is_gt() {
                i
            } else {
                best
            }
        });
        return best.map(|i| vec![i as u32]).unwrap_or_default();
    }
    let mut ids: Vec<u32> = (0..values.len() as u32).collect();
    let n = n.min(ids.len());
    let by_value = |a: &u32, b: &u32| {
        values[*b as usize]
            .total_cmp(&values[*a as usize])
            .then(a.cmp(b))
    };
    if n < ids.len() && n > 0 {
        ids.select_nth_unstable_by(n - 1, by_value);
    }
    ids.truncate(n);
    ids.sort_by(by_value);
    ids
}

#[cfg(test)]
mod tests {
    use super::top_ids;

    /// Every id, largest value first, ties by lower id: what `top_ids` must agree with.
    fn ranked(values: &[f32]) -> Vec<u32> {
        let mut ids: Vec<u32> = (0..values.len() as u32).collect();
        ids.sort_by(|a, b| {
            values[*b as usize]
                .total_cmp(&values[*a as usize])
                .then(a.cmp(b))
        });
        ids
    }

    #[test]
    fn the_largest_alone_is_the_first_of_the_ranking() {
        for values in [
            vec![],
            vec![0.5],
            vec![1.0, 3.0, 3.0, -2.0],
            vec![-1.0, -1.0, -5.0],
            vec![f32::NEG_INFINITY, -1e30, 7.0, 7.0, 6.9],
        ] {
            let all = ranked(&values);
            assert_eq!(top_ids(&values, 1), all[..all.len().min(1)], "{values:?}");
            assert_eq!(top_ids(&values, 3), all[..all.len().min(3)], "{values:?}");
        }
    }
}
