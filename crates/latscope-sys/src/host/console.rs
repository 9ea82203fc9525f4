//! printk levels (`kernel.printk`) and the registered consoles (`/proc/consoles`), marking serial ones.

use super::read_fact::read_parsed;
use latscope_model::facts::{Console, PrintkLevels};
use latscope_model::Fact;

/// Device name prefixes of UARTs and other slow consoles that print synchronously.
pub const SERIAL_PREFIXES: &[&str] =
    &["ttyS", "ttyAMA", "ttymxc", "ttyPS", "ttySAC", "ttyO", "ttyMSM", "ttyHS", "ttyUSB", "ttyLP", "ttySC", "ttyTHS"];

/// Parses `kernel.printk` (`4\t4\t1\t7`).
pub fn parse_printk(text: &str) -> Option<PrintkLevels> {
    let v: Vec<u8> = text.split_whitespace().map(|t| t.parse().ok()).collect::<Option<Vec<u8>>>()?;
    match v.as_slice() {
        [c, d, m, dc] => Some(PrintkLevels {
            console_loglevel: *c,
            default_message_loglevel: *d,
            minimum_console_loglevel: *m,
            default_console_loglevel: *dc,
        }),
        _ => None,
    }
}

/// Parses `/proc/consoles` (`ttyS0                -W- (EC  p a)    4:64`).
pub fn parse_consoles(text: &str) -> Vec<Console> {
    text.lines()
        .filter_map(|l| {
            let name = l.split_whitespace().next()?.to_string();
            let flags = match (l.find('('), l.find(')')) {
                (Some(a), Some(b)) if b > a => l[a + 1..b].to_string(),
                _ => String::new(),
            };
            let serial = SERIAL_PREFIXES.iter().any(|p| {
                name.strip_prefix(p)
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with(|c: char| c.is_ascii_digit()))
            });
            Some(Console { enabled: flags.contains('E'), serial, name, flags })
        })
        .collect()
}

/// Reads both.
pub fn read_console() -> (Fact<PrintkLevels>, Fact<Vec<Console>>) {
    (read_parsed("/proc/sys/kernel/printk", parse_printk), read_parsed("/proc/consoles", |t| Some(parse_consoles(t))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_levels_and_consoles() {
        let p = parse_printk("4\t4\t1\t7\n").expect("levels");
        assert_eq!((p.console_loglevel, p.default_console_loglevel), (4, 7));
        assert_eq!(parse_printk("4 4 1"), None);
        let c =
            parse_consoles("ttyS0                -W- (EC  p a)    4:64\ntty0                 -WU (E  p  )    4:1\n");
        assert_eq!(c.len(), 2);
        assert!(c[0].serial && c[0].enabled && c[0].name == "ttyS0");
        assert!(!c[1].serial && c[1].enabled);
        assert_eq!(c[0].flags, "EC  p a");
        let n = parse_consoles("netcon0              -W- (E     )\nttySAC2 -W- (E)\nttyS -W- ()\n");
        assert!(!n[0].serial && n[1].serial && n[2].serial && !n[2].enabled);
    }
}
