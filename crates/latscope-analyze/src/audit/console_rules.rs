//! Console rule: kernel messages printed synchronously to a serial (or framebuffer) console, with
//! interrupts off on the printing CPU (seeds 000 and 002: `dmesg -n 1` removed the overruns).

use super::{show, Scope};
use latscope_model::{Finding, Fix, FixKind, Severity};

/// Runs the console rule.
pub(crate) fn check(s: &Scope, out: &mut Vec<Finding>) {
    let c = &s.facts.console;
    let (Some(levels), Some(consoles)) = (c.printk.get(), c.consoles.get()) else {
        out.push(
            Finding::new(
                "console.loglevel",
                Severity::Info,
                "console log level or consoles unknown",
                "Kernel messages printed to a slow console can keep interrupts off for milliseconds.",
            )
            .evidence("kernel.printk", show(&c.printk, |p| p.console_loglevel.to_string()), c.printk.from.clone())
            .evidence("consoles", show(&c.consoles, |v| v.len().to_string()), c.consoles.from.clone()),
        );
        return;
    };
    let lvl = levels.console_loglevel;
    let enabled: Vec<_> = consoles.iter().filter(|x| x.enabled).collect();
    let serial: Vec<_> = enabled.iter().filter(|x| x.serial).collect();
    let names =
        |v: &[&&latscope_model::facts::Console]| v.iter().map(|x| x.name.clone()).collect::<Vec<_>>().join(", ");
    let reaching = match lvl {
        0 | 1 => "no messages",
        2 => "emergency and alert messages",
        3 => "critical and worse messages",
        4 => "error and worse messages",
        5 => "warnings and worse",
        6 => "notices and worse",
        7 => "all but debug messages",
        _ => "every message",
    };
    let rt = s.facts.kernel.preemption.get().map(String::as_str) == Some("rt");
    let (sev, title, why) = if !serial.is_empty() && lvl >= 5 {
        (
            if rt { Severity::Warn } else { Severity::Fail },
            format!("serial console {} gets {reaching} (console loglevel {lvl})", names(&serial)),
            "Each kernel message is written to the UART at ~87 us per character with interrupts off on the \
             printing CPU, so one line can block timers for milliseconds.",
        )
    } else if !serial.is_empty() && lvl > 1 {
        (
            Severity::Info,
            format!("serial console {} gets {reaching} (console loglevel {lvl})", names(&serial)),
            "Only rare severe messages reach the UART, but each one is written with interrupts off for \
             milliseconds.",
        )
    } else if !enabled.is_empty() && lvl >= 5 {
        (
            Severity::Warn,
            format!("console {} gets {reaching} (console loglevel {lvl})", names(&enabled.iter().collect::<Vec<_>>())),
            "Rendering kernel messages on a console happens in the printing context and can take hundreds of \
             microseconds per line.",
        )
    } else {
        (
            Severity::Ok,
            format!("console loglevel {lvl}: {reaching} reach the consoles"),
            "Kernel messages do not stall the printing CPU on a slow console.",
        )
    };
    let mut f = Finding::new("console.loglevel", sev, title, why).evidence(
        "kernel.printk",
        format!(
            "{} {} {} {}",
            levels.console_loglevel,
            levels.default_message_loglevel,
            levels.minimum_console_loglevel,
            levels.default_console_loglevel
        ),
        c.printk.from.clone(),
    );
    for x in consoles {
        f = f.evidence(
            format!("console {}", x.name),
            format!("flags ({}){}", x.flags, if x.serial { ", serial" } else { "" }),
            c.consoles.from.clone(),
        );
    }
    if let Some(b) = s.facts.boot.get() {
        if !b.consoles.is_empty() {
            f = f.evidence("console=", b.consoles.join(" "), s.facts.boot.from.clone());
        }
    }
    if sev > Severity::Ok {
        f = f
            .fix(Fix::new(FixKind::Command, "dmesg -n 1"))
            .fix(Fix::new(
                FixKind::Sysctl,
                format!("kernel.printk=1 {} 1 {}", levels.default_message_loglevel, levels.default_console_loglevel),
            ))
            .fix(
                Fix::new(FixKind::BootParam, "loglevel=1")
                    .with_note("or drop console=ttyS… when no serial log is needed"),
            );
    }
    out.push(f);
}
