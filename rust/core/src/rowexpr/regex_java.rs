//! RLIKE patterns are Java regexes (Spark evaluates them with java.util.regex, `find()`); the
//! evaluator runs Rust's `regex`. This translates the common subset to a Rust pattern that
//! matches the same strings, and refuses what differs: lookaround, backreferences, atomic groups,
//! possessive quantifiers, inline flags, named groups, `\b`, `\p{..}` classes, class unions and
//! intersections. Rewritten because the two differ by default: Java's `\d \w \s` are ASCII and
//! its `.` and `$` know `\r`, U+0085, U+2028 and U+2029 as line terminators.

const DOT: &str = r"[^\n\r\x{85}\x{2028}\x{2029}]";
const DOLLAR: &str = r"(?:\r\n|[\n\r\x{85}\x{2028}\x{2029}])?\z";
const META: &str = r"\.+*?()|[]{}^$#&-~";

pub fn translate(p: &str) -> Result<String, String> {
    let c: Vec<char> = p.chars().collect();
    let mut out = String::with_capacity(p.len() + 8);
    let mut i = 0;
    let mut class: Option<usize> = None; // index where the open class's items start
    let refuse = |what: &str| {
        Err(format!(
            "{what} is not supported (Java and Rust regexes differ)"
        ))
    };
    while i < c.len() {
        let ch = c[i];
        if ch == '\\' {
            let Some(&d) = c.get(i + 1) else {
                return Err("the pattern ends with a backslash".into());
            };
            i += 2;
            let inside = class.is_some();
            match d {
                'd' => out.push_str(if inside { "0-9" } else { "[0-9]" }),
                'w' => out.push_str(if inside { "a-zA-Z0-9_" } else { "[a-zA-Z0-9_]" }),
                's' => out.push_str(if inside {
                    r"\t\n\x0B\x0C\r "
                } else {
                    r"[\t\n\x0B\x0C\r ]"
                }),
                'D' | 'W' | 'S' if inside => return refuse(&format!("\\{d} inside a class")),
                'D' => out.push_str("[^0-9]"),
                'W' => out.push_str("[^a-zA-Z0-9_]"),
                'S' => out.push_str(r"[^\t\n\x0B\x0C\r ]"),
                't' | 'n' | 'r' | 'f' => {
                    out.push('\\');
                    out.push(d);
                }
                'a' => out.push_str(r"\x07"),
                'e' => out.push_str(r"\x1B"),
                'x' | 'u' => {
                    out.push('\\');
                    out.push(d);
                }
                'A' | 'z' if !inside => {
                    out.push('\\');
                    out.push(d);
                }
                'Q' => {
                    // \Q...\E quotes everything up to \E.
                    let rest: String = c[i..].iter().collect();
                    let (quoted, after) = match rest.find("\\E") {
                        Some(k) => (&rest[..k], k + 2),
                        None => (rest.as_str(), rest.len()),
                    };
                    for q in quoted.chars() {
                        push_literal(&mut out, q);
                    }
                    i += rest[..after].chars().count();
                }
                '0'..='9' => return refuse("a backreference or octal escape"),
                'b' | 'B' => return refuse("a word boundary"),
                'p' | 'P' => return refuse("a \\p{...} class"),
                d if d.is_ascii_alphanumeric() => return refuse(&format!("the escape \\{d}")),
                d => push_literal(&mut out, d),
            }
            continue;
        }
        if let Some(start) = class {
            match ch {
                '[' => return refuse("a nested class or class union"),
                '&' if c.get(i + 1) == Some(&'&') => return refuse("a class intersection"),
                '-' | '~' if c.get(i + 1) == Some(&ch) => {
                    return refuse("a doubled - or ~ in a class")
                }
                ']' if i == start => return refuse("a ] first in a class"),
                ']' => {
                    class = None;
                    out.push(']');
                }
                _ => out.push(ch),
            }
            i += 1;
            continue;
        }
        match ch {
            '[' => {
                out.push('[');
                i += 1;
                if c.get(i) == Some(&'^') {
                    out.push('^');
                    i += 1;
                }
                class = Some(i);
                continue;
            }
            '.' => out.push_str(DOT),
            '$' => out.push_str(DOLLAR),
            '(' if c.get(i + 1) == Some(&'?') => {
                if c.get(i + 2) != Some(&':') {
                    return refuse("a (?...) group other than (?:...)");
                }
                out.push_str("(?:");
                i += 3;
                continue;
            }
            '*' | '+' | '?' | '}' if c.get(i + 1) == Some(&'+') => {
                return refuse("a possessive quantifier")
            }
            _ => out.push(ch),
        }
        i += 1;
    }
    if class.is_some() {
        return Err("unclosed character class".into());
    }
    Ok(out)
}

fn push_literal(out: &mut String, ch: char) {
    if META.contains(ch) {
        out.push('\\');
    }
    out.push(ch);
}

#[cfg(test)]
mod tests {
    use super::translate;

    #[test]
    fn java_patterns_become_rust_patterns_or_are_refused() {
        // Hand-written: the Rust spelling of each Java construct's meaning.
        let ok = [
            ("^ab+c", "^ab+c"),
            (r"\d{3}-\d{4}", "[0-9]{3}-[0-9]{4}"),
            (r"[\w.]+@x\.com", r"[a-zA-Z0-9_.]+@x\.com"),
            ("a.c", r"a[^\n\r\x{85}\x{2028}\x{2029}]c"),
            (r"\Q1+1\E=2", r"1\+1=2"),
            (r"\<a\>", "<a>"),
            ("(?:ab)*", "(?:ab)*"),
        ];
        for (java, rust) in ok {
            assert_eq!(translate(java).unwrap(), rust, "{java}");
        }
        assert!(translate("x$").unwrap().ends_with(r"?\z"));
        for bad in [
            "(?=a)",
            "(?<!a)b",
            r"(a)\1",
            "a*+",
            "(?i)abc",
            r"\bword",
            r"\p{Alpha}",
            "[a[b]]",
            "[a&&b]",
            "(?<n>a)",
            "[ab",
        ] {
            assert!(translate(bad).is_err(), "{bad}");
        }
    }
}
