//! SQL LIKE patterns: matching one value, and the literal prefix file skipping can use.

/// SQL LIKE with `%` and `_` and backslash escapes.
pub fn like(text: &str, pattern: &str, case_insensitive: bool) -> bool {
    let (t, p): (Vec<char>, Vec<char>) = if case_insensitive {
        (
            text.to_lowercase().chars().collect(),
            pattern.to_lowercase().chars().collect(),
        )
    } else {
        (text.chars().collect(), pattern.chars().collect())
    };
    like_chars(&t, &p)
}

fn like_chars(t: &[char], p: &[char]) -> bool {
    // Iterative matcher with backtracking to the last `%`.
    let (mut ti, mut pi) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() {
            match p[pi] {
                '%' => {
                    star = Some((pi, ti));
                    pi += 1;
                    continue;
                }
                '_' => {
                    ti += 1;
                    pi += 1;
                    continue;
                }
                '\\' if pi + 1 < p.len() && p[pi + 1] == t[ti] => {
                    ti += 1;
                    pi += 2;
                    continue;
                }
                c if c != '\\' && c == t[ti] => {
                    ti += 1;
                    pi += 1;
                    continue;
                }
                _ => {}
            }
        }
        match star {
            Some((sp, st)) => {
                pi = sp + 1;
                ti = st + 1;
                star = Some((sp, st + 1));
            }
            None => return false,
        }
    }
    p[pi..].iter().all(|&c| c == '%')
}

/// The fixed prefix of a LIKE pattern (before the first wildcard), for range pruning.
pub fn like_prefix(pattern: &str) -> String {
    let mut out = String::new();
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match c {
            '%' | '_' => break,
            '\\' => match chars.next() {
                Some(n) => out.push(n),
                None => break,
            },
            c => out.push(c),
        }
    }
    out
}
