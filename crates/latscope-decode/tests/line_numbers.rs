//! Warning locations name the right line, also after a line longer than the reader's 1 MiB chunk (#15.16).

use latscope_decode::decode_text_reader;

#[test]
fn line_numbers_stay_right_after_a_line_longer_than_a_chunk() {
    let mut t = String::from("# tracer: nop\n");
    for i in 0..40 {
        t.push_str(&format!("            bash-1998  [000] d.h1   138.{:06}: softirq_raise: vec=1 [action=TIMER]\n", i));
    }
    // Line 42: 5 MiB in one line, then garbage on line 43.
    t.push_str(&format!("            bash-1998  [000] d.h1   139.000000: print: {}\n", "x".repeat(5 << 20)));
    t.push_str("garbage that is no ftrace line\n");
    t.push_str("            bash-1998  [000] d.h1   140.000000: softirq_raise: vec=1 [action=TIMER]\n");
    let mut n = 0;
    let (_, warnings) =
        decode_text_reader("t.txt", std::io::Cursor::new(t.as_bytes()), false, &mut |_| n += 1).expect("decodes");
    let garbage: Vec<&str> =
        warnings.iter().filter(|w| w.message.starts_with("not an ftrace line")).map(|w| w.location.as_str()).collect();
    assert_eq!(garbage, ["t.txt:43"], "{warnings:?}");
    assert!(
        warnings.iter().any(|w| w.location == "t.txt:42" && w.message.contains("longer than 1 MiB")),
        "{warnings:?}"
    );
    // 40 + the long line's start + the last line.
    assert_eq!(n, 42);
}
