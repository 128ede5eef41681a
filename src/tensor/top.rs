//! The largest values of a row, by id: a prediction's most likely tokens.

/// The ids of the `n` largest values, largest first (ties: lower id first).
pub fn top_ids(values: &[f32], n: usize) -> Vec<u32> {
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
