//! Per-CPU kernel counters and their deltas over a run: `/proc/interrupts`, `/proc/softirqs`, steal time
//! from `/proc/stat`, and the SMI count from MSR 0x34 (`/dev/cpu/N/msr`).
//!
//! The parsers are pure functions over the text (tested on layouts of several kernels and architectures);
//! the readers take snapshots. Nothing is loaded or changed: when a counter cannot be read, the reason
//! says what would make it readable.

use crate::SysError;
use latscope_model::noise_result::{CountDelta, CounterDeltas, SmiDelta};
use latscope_model::{CpuId, CpuList};
use std::path::Path;

/// The interrupt counters file.
pub const INTERRUPTS: &str = "/proc/interrupts";
/// The softirq counters file.
pub const SOFTIRQS: &str = "/proc/softirqs";
/// The file holding per-CPU steal time.
pub const STAT: &str = "/proc/stat";
/// Intel's `MSR_SMI_COUNT`: SMIs since reset (low 32 bits meaningful).
pub const MSR_SMI_COUNT: u64 = 0x34;

/// One line of a per-CPU counter table (`/proc/interrupts`, `/proc/softirqs`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CounterRow {
    /// The key before the colon: an IRQ number (`24`) or a name (`LOC`, `NMI`, `IPI0`, `TIMER`).
    pub id: String,
    /// Counts in the order of [`PerCpuTable::cpus`]. Shorter for global lines (`ERR`, `MIS`: one total).
    pub counts: Vec<u64>,
    /// The rest of the line (chip, hardware IRQ, trigger, handler names, or the description), with runs of
    /// whitespace collapsed to one space. Names containing spaces are kept whole.
    pub description: String,
}

/// A parsed per-CPU counter table.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PerCpuTable {
    /// The CPUs of the header (`CPU0 CPU1 CPU3`): only online CPUs have a column, so the n-th count of a
    /// row belongs to `cpus[n]`, not to CPU n.
    pub cpus: Vec<CpuId>,
    /// The lines, in file order.
    pub rows: Vec<CounterRow>,
    /// Lines that could not be read, each naming the source and line number. The rest was kept.
    pub warnings: Vec<String>,
}

/// Why a counter table could not be parsed at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{source_name}: line {line}: {what}")]
pub struct TableError {
    /// The file (or label) that was parsed.
    pub source_name: String,
    /// 1-based line number.
    pub line: usize,
    /// What was wrong.
    pub what: String,
}

impl PerCpuTable {
    /// The column of `cpu`, if the header has it.
    pub fn column(&self, cpu: CpuId) -> Option<usize> {
        self.cpus.iter().position(|c| *c == cpu)
    }

    /// The row with key `id`.
    pub fn row(&self, id: &str) -> Option<&CounterRow> {
        self.rows.iter().find(|r| r.id == id)
    }

    /// The count of `id` on `cpu`; `None` when the line or the CPU column is absent.
    pub fn count(&self, id: &str, cpu: CpuId) -> Option<u64> {
        let col = self.column(cpu)?;
        self.row(id)?.counts.get(col).copied()
    }
}

/// Parses `/proc/interrupts` or `/proc/softirqs` text. `source_name` names the file in messages.
///
/// The header lists the CPUs that have a column. Each following line is `ID: count… description`; at most
/// one count per header CPU is read, and the description is whatever follows. Lines with fewer counts (the
/// global `ERR:`/`MIS:` lines) keep what they have. A line without a colon or without counts becomes a
/// warning and is skipped; a missing header is an error.
pub fn parse_per_cpu_table(text: &str, source_name: &str) -> Result<PerCpuTable, TableError> {
    let mut lines = text.lines().enumerate().skip_while(|(_, l)| l.trim().is_empty());
    let (hdr_no, header) = lines.next().ok_or_else(|| TableError {
        source_name: source_name.into(),
        line: 1,
        what: "the file is empty".into(),
    })?;
    let mut cpus = Vec::new();
    for tok in header.split_whitespace() {
        let n = tok.strip_prefix("CPU").and_then(|n| n.parse::<u32>().ok()).ok_or_else(|| TableError {
            source_name: source_name.into(),
            line: hdr_no + 1,
            what: format!("expected a header of CPU columns (CPU0 CPU1 …), found '{tok}'"),
        })?;
        cpus.push(CpuId(n));
    }
    if cpus.is_empty() {
        return Err(TableError {
            source_name: source_name.into(),
            line: hdr_no + 1,
            what: "the header names no CPU column".into(),
        });
    }
    let mut table = PerCpuTable { cpus, rows: Vec::new(), warnings: Vec::new() };
    for (no, line) in lines {
        if line.trim().is_empty() {
            continue;
        }
        match parse_row(line, table.cpus.len()) {
            Ok(row) => table.rows.push(row),
            Err(what) => table.warnings.push(format!("{source_name}: line {}: {what}; line skipped", no + 1)),
        }
    }
    Ok(table)
}

fn parse_row(line: &str, ncpus: usize) -> Result<CounterRow, String> {
    let (id, rest) = line.split_once(':').ok_or_else(|| format!("no ':' in '{}'", line.trim()))?;
    let id = id.trim();
    if id.is_empty() || id.contains(char::is_whitespace) {
        return Err(format!("'{}' is not a counter name", id));
    }
    let mut counts = Vec::with_capacity(ncpus);
    let mut tokens = rest.split_whitespace().peekable();
    while counts.len() < ncpus {
        match tokens.peek().and_then(|t| t.parse::<u64>().ok()) {
            Some(v) => {
                counts.push(v);
                tokens.next();
            }
            None => break,
        }
    }
    if counts.is_empty() {
        return Err(format!("line '{id}' has no counts"));
    }
    let description = tokens.collect::<Vec<_>>().join(" ");
    Ok(CounterRow { id: id.to_string(), counts, description })
}

/// How much each line grew on `cpu` between two snapshots: lines that did not grow are left out, the rest
/// is sorted largest first. A line or CPU column present in only one snapshot is skipped; a count that went
/// down (counter reset, CPU hotplug) counts as zero.
pub fn table_deltas(before: &PerCpuTable, after: &PerCpuTable, cpu: CpuId) -> Vec<CountDelta> {
    let (Some(cb), Some(ca)) = (before.column(cpu), after.column(cpu)) else {
        return Vec::new();
    };
    let mut out: Vec<CountDelta> = after
        .rows
        .iter()
        .filter(|r| r.counts.len() == after.cpus.len())
        .filter_map(|ra| {
            let rb = before.rows.iter().find(|r| r.id == ra.id)?;
            let d = ra.counts.get(ca)?.saturating_sub(*rb.counts.get(cb)?);
            (d > 0).then(|| CountDelta { id: ra.id.clone(), description: ra.description.clone(), delta: d })
        })
        .collect();
    out.sort_by(|a, b| b.delta.cmp(&a.delta).then_with(|| a.id.cmp(&b.id)));
    out
}

/// Parses the per-CPU `cpuN` lines of `/proc/stat` into (CPU, steal ticks). Ticks are USER_HZ
/// ([`clock_ticks_per_second`]). Lines too short to have a steal column (kernels before 2.6.11) are skipped.
pub fn parse_stat_steal(text: &str) -> Vec<(CpuId, u64)> {
    text.lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let cpu = it.next()?.strip_prefix("cpu")?.parse::<u32>().ok()?;
            // user nice system idle iowait irq softirq steal
            let steal = it.nth(7)?.parse::<u64>().ok()?;
            Some((CpuId(cpu), steal))
        })
        .collect()
}

/// USER_HZ, the unit of `/proc/stat` times (almost always 100).
pub fn clock_ticks_per_second() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let v = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if v > 0 {
        v as u64
    } else {
        100
    }
}

/// Steal time per CPU at one instant.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StealSnapshot {
    /// (CPU, steal ticks since boot).
    pub ticks: Vec<(CpuId, u64)>,
    /// Ticks per second (USER_HZ).
    pub ticks_per_second: u64,
}

impl StealSnapshot {
    /// Steal time of `cpu` since boot, ns.
    pub fn steal_ns(&self, cpu: CpuId) -> Option<u64> {
        let t = self.ticks.iter().find(|(c, _)| *c == cpu)?.1;
        Some(t.saturating_mul(1_000_000_000) / self.ticks_per_second.max(1))
    }

    /// Steal time of `cpu` between `earlier` and `self`, ns. Resolution is one tick (10 ms at USER_HZ 100).
    pub fn steal_delta_ns(&self, earlier: &StealSnapshot, cpu: CpuId) -> Option<u64> {
        Some(self.steal_ns(cpu)?.saturating_sub(earlier.steal_ns(cpu)?))
    }
}

/// Reads per-CPU steal time from `/proc/stat`. Public for the audit: a non-zero, growing steal time
/// means a hypervisor is running other work on these vCPUs.
pub fn read_steal() -> Result<StealSnapshot, SysError> {
    let text = std::fs::read_to_string(STAT).map_err(|e| SysError::file(STAT, e))?;
    let ticks = parse_stat_steal(&text);
    if ticks.is_empty() {
        return Err(SysError::Parse { path: STAT.into(), what: "no per-CPU 'cpuN' lines with a steal column".into() });
    }
    Ok(StealSnapshot { ticks, ticks_per_second: clock_ticks_per_second() })
}

/// Reads the SMI count of `cpu` from MSR 0x34 through `/dev/cpu/N/msr`. Public for the audit.
///
/// Nothing is loaded: when the msr driver is absent, access is denied, or the CPU (or hypervisor) does not
/// implement the MSR, the error string says which and what would make it readable.
pub fn read_smi_count(cpu: CpuId) -> Result<u64, String> {
    read_msr_at(&Path::new("/dev/cpu").join(cpu.0.to_string()).join("msr"), MSR_SMI_COUNT, cpu)
}

fn read_msr_at(path: &Path, msr: u64, cpu: CpuId) -> Result<u64, String> {
    use std::os::unix::fs::FileExt;
    let file = std::fs::File::open(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => format!(
            "{} is missing: the msr driver is not loaded ('modprobe msr' provides it; latscope loads no modules)",
            path.display()
        ),
        std::io::ErrorKind::PermissionDenied => {
            format!("{}: permission denied; reading MSRs needs root with CAP_SYS_RAWIO", path.display())
        }
        _ => format!("{}: {e}", path.display()),
    })?;
    let mut buf = [0u8; 8];
    file.read_exact_at(&mut buf, msr).map_err(|e| {
        if e.raw_os_error() == Some(libc::EIO) {
            format!(
                "MSR {msr:#x} is not implemented on CPU {cpu} (MSR_SMI_COUNT exists on Intel CPUs only, and \
                 hypervisors usually hide it)"
            )
        } else {
            format!("{}: reading MSR {msr:#x}: {e}", path.display())
        }
    })?;
    Ok(u64::from_ne_bytes(buf) & 0xffff_ffff)
}

/// All counters of the measured CPUs at one instant.
#[derive(Clone, Debug, Default)]
pub struct CounterSnapshot {
    /// `/proc/interrupts`, unless unreadable.
    pub interrupts: Option<PerCpuTable>,
    /// `/proc/softirqs`, unless unreadable.
    pub softirqs: Option<PerCpuTable>,
    /// Steal time, unless unreadable.
    pub steal: Option<StealSnapshot>,
    /// SMI count per measured CPU, or why it is not readable.
    pub smi: Vec<(CpuId, Result<u64, String>)>,
    /// What could not be read, and parse warnings, each naming the file.
    pub warnings: Vec<String>,
}

/// Reads every counter for `cpus`. Never fails: what cannot be read is left out with a warning.
pub fn snapshot(cpus: &CpuList) -> CounterSnapshot {
    let mut s = CounterSnapshot::default();
    s.interrupts = read_table(INTERRUPTS, &mut s.warnings);
    s.softirqs = read_table(SOFTIRQS, &mut s.warnings);
    match read_steal() {
        Ok(st) => s.steal = Some(st),
        Err(e) => s.warnings.push(e.to_string()),
    }
    s.smi = cpus.iter().map(|c| (c, read_smi_count(c))).collect();
    s
}

fn read_table(path: &str, warnings: &mut Vec<String>) -> Option<PerCpuTable> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            warnings.push(SysError::file(path, e).to_string());
            return None;
        }
    };
    match parse_per_cpu_table(&text, path) {
        Ok(t) => {
            warnings.extend(t.warnings.iter().cloned());
            Some(t)
        }
        Err(e) => {
            warnings.push(e.to_string());
            None
        }
    }
}

/// The deltas of `cpu` between two snapshots.
pub fn deltas(before: &CounterSnapshot, after: &CounterSnapshot, cpu: CpuId) -> CounterDeltas {
    let table = |b: &Option<PerCpuTable>, a: &Option<PerCpuTable>| match (b, a) {
        (Some(b), Some(a)) => table_deltas(b, a, cpu),
        _ => Vec::new(),
    };
    let smi_of = |s: &CounterSnapshot| s.smi.iter().find(|(c, _)| *c == cpu).map(|(_, r)| r.clone());
    let smi = match (smi_of(before), smi_of(after)) {
        (Some(Ok(b)), Some(Ok(a))) => SmiDelta { delta: Some(a.wrapping_sub(b) & 0xffff_ffff), unavailable: None },
        (Some(Err(e)), _) | (_, Some(Err(e))) => SmiDelta { delta: None, unavailable: Some(e) },
        _ => SmiDelta { delta: None, unavailable: Some(format!("CPU {cpu} was not in the SMI snapshot")) },
    };
    CounterDeltas {
        interrupts: table(&before.interrupts, &after.interrupts),
        softirqs: table(&before.softirqs, &after.softirqs),
        steal_ns: match (&before.steal, &after.steal) {
            (Some(b), Some(a)) => a.steal_delta_ns(b, cpu),
            _ => None,
        },
        smi,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// x86-64 server (Intel, 4 CPUs shown of a bigger box), kernel 5.15: IO-APIC and PCI-MSI lines,
    /// names with spaces and brackets, the architecture lines, and the global ERR/MIS lines.
    const X86_SERVER: &str = "            CPU0       CPU1       CPU2       CPU3       
   0:         35          0          0          0   IO-APIC   2-edge      timer
   8:          0          0          1          0   IO-APIC   8-edge      rtc0
   9:          0          4          0          0   IO-APIC   9-fasteoi   acpi
  16:          0          0          0       1312   IO-APIC  16-fasteoi   ehci_hcd:usb1, i801_smbus
 120:          0          0          0          0   PCI-MSI 16384-edge      aerdrv
 125:    1877126          0          0          0   PCI-MSI 376832-edge      ahci[0000:00:17.0]
 129:          0   53114312          0          0   PCI-MSI 524288-edge      nvme0q1
 NMI:        208        197        190        193   Non-maskable interrupts
 LOC:  101877633   94011259   92010921   90874313   Local timer interrupts
 SPU:          0          0          0          0   Spurious interrupts
 PMI:        208        197        190        193   Performance monitoring interrupts
 IWI:     246761     130145     127433     121342   IRQ work interrupts
 RTR:          0          0          0          0   APIC ICR read retries
 RES:   11390321    9801228    8977329    8455341   Rescheduling interrupts
 CAL:    1460251    1575634    1562114    1532213   Function call interrupts
 TLB:    1030443    1093349    1077437    1067134   TLB shootdowns
 TRM:          0          0          0          0   Thermal event interrupts
 THR:          0          0          0          0   Threshold APIC interrupts
 DFR:          0          0          0          0   Deferred Error APIC interrupts
 MCE:          0          0          0          0   Machine check exceptions
 MCP:       4217       4218       4218       4218   Machine check polls
 ERR:          0
 MIS:          0
 PIN:          0          0          0          0   Posted-interrupt notification event
 NPI:          0          0          0          0   Nested posted-interrupt event
 PIW:          0          0          0          0   Posted-interrupt wakeup event
";

    /// arm64 with GICv3 and ITS (kernel 6.1): hardware IRQ number and trigger between chip and name,
    /// numbered IPIs with descriptions containing spaces and parentheses, and `Err:`.
    const ARM64_GIC: &str = "           CPU0       CPU1       CPU2       CPU3       
 11:    5032141    4890321    4760123    4651234     GICv3  27 Level     arch_timer
 13:          0          0          0          0     GICv3  23 Level     arm-pmu
 14:        512          0          0          0     GICv3  33 Level     uart-pl011
 50:          0       7421          0          0 ITS-MSI 16384 Edge      nvme0q0
 51:      88101          0          0          0 ITS-MSI 16385 Edge      nvme0q1
IPI0:    231412     198223     187011     176522       Rescheduling interrupts
IPI1:     12842      20381      19922      19001       Function call interrupts
IPI2:         0          0          0          0       CPU stop interrupts
IPI3:         0          0          0          0       CPU stop (for crash dump) interrupts
IPI4:         0          0          0          0       Timer broadcast interrupts
IPI5:      3121       2811       2765       2691       IRQ work interrupts
IPI6:         0          0          0          0       CPU wake-up interrupts
Err:          0
";

    /// x86 laptop with CPU 2 offline (kernel 6.5): the header skips it, so columns are CPU0, CPU1, CPU3.
    const X86_OFFLINE_CPU: &str = "           CPU0       CPU1       CPU3       
   1:          0       9122          0   IO-APIC   1-edge      i8042
  12:          0          0     152210   IO-APIC  12-edge      i8042
 LOC:    4118211    3890124    3701288   Local timer interrupts
 RES:      91234      80123      77001   Rescheduling interrupts
 HYP:          0          0          0   Hypervisor callback interrupts
 ERR:          0
";

    /// This VM (Firecracker, kernel 6.18, AMD): PCI-MSIX chips with the device address in the chip name.
    const FIRECRACKER: &str = "           CPU0       CPU1       
 24:          1          0  IO-APIC   5-edge      ACPI:Ged
 36:          0     132742 PCI-MSIX-0000:00:02.0   1-edge      virtio1-req.0
NMI:          0          0   Non-maskable interrupts
LOC:     217248     231508   Local timer interrupts
CAL:      46141      31289   Function call interrupts
HYP:         46         68   Hypervisor callback interrupts
ERR:          0
MIS:          0
";

    const SOFTIRQS_TEXT: &str = "                    CPU0       CPU1       
          HI:          0          0
       TIMER:      19115      30335
      NET_TX:          4          0
      NET_RX:       1185       1551
       BLOCK:          0     132740
    IRQ_POLL:          0          0
     TASKLET:         46          3
       SCHED:      40827      46747
     HRTIMER:          0          0
         RCU:      20035      25455
";

    #[test]
    fn parses_x86_server_layout() {
        let t = parse_per_cpu_table(X86_SERVER, "x86").expect("parse");
        assert!(t.warnings.is_empty(), "{:?}", t.warnings);
        assert_eq!(t.cpus, vec![CpuId(0), CpuId(1), CpuId(2), CpuId(3)]);
        assert_eq!(t.count("LOC", CpuId(3)), Some(90_874_313));
        assert_eq!(t.count("129", CpuId(1)), Some(53_114_312));
        assert_eq!(t.row("16").map(|r| r.description.as_str()), Some("IO-APIC 16-fasteoi ehci_hcd:usb1, i801_smbus"));
        assert_eq!(t.row("125").map(|r| r.description.as_str()), Some("PCI-MSI 376832-edge ahci[0000:00:17.0]"));
        assert_eq!(t.row("NMI").map(|r| r.description.as_str()), Some("Non-maskable interrupts"));
        // Global lines keep their single total and no per-CPU count.
        assert_eq!(t.row("ERR").map(|r| r.counts.clone()), Some(vec![0]));
        assert_eq!(t.count("ERR", CpuId(1)), None);
        assert_eq!(t.rows.len(), 26);
    }

    #[test]
    fn parses_arm64_gic_layout() {
        let t = parse_per_cpu_table(ARM64_GIC, "arm64").expect("parse");
        assert!(t.warnings.is_empty(), "{:?}", t.warnings);
        assert_eq!(t.count("11", CpuId(2)), Some(4_760_123));
        assert_eq!(t.row("11").map(|r| r.description.as_str()), Some("GICv3 27 Level arch_timer"));
        assert_eq!(t.row("IPI3").map(|r| r.description.as_str()), Some("CPU stop (for crash dump) interrupts"));
        assert_eq!(t.count("IPI0", CpuId(0)), Some(231_412));
        assert_eq!(t.row("Err").map(|r| r.counts.len()), Some(1));
    }

    #[test]
    fn offline_cpu_columns_follow_the_header() {
        let t = parse_per_cpu_table(X86_OFFLINE_CPU, "offline").expect("parse");
        assert_eq!(t.cpus, vec![CpuId(0), CpuId(1), CpuId(3)]);
        assert_eq!(t.count("12", CpuId(3)), Some(152_210));
        assert_eq!(t.count("12", CpuId(2)), None);
        assert_eq!(t.count("LOC", CpuId(1)), Some(3_890_124));
    }

    #[test]
    fn parses_this_vm_and_softirqs() {
        let t = parse_per_cpu_table(FIRECRACKER, "fc").expect("parse");
        assert_eq!(t.row("36").map(|r| r.description.as_str()), Some("PCI-MSIX-0000:00:02.0 1-edge virtio1-req.0"));
        assert_eq!(t.count("HYP", CpuId(1)), Some(68));
        let s = parse_per_cpu_table(SOFTIRQS_TEXT, "softirqs").expect("parse");
        assert_eq!(s.count("BLOCK", CpuId(1)), Some(132_740));
        assert_eq!(s.count("RCU", CpuId(0)), Some(20_035));
        assert_eq!(s.row("HI").map(|r| r.description.as_str()), Some(""));
    }

    #[test]
    fn deltas_per_cpu_sorted_and_hotplug_safe() {
        let before = parse_per_cpu_table(X86_OFFLINE_CPU, "b").expect("parse");
        let after_text = X86_OFFLINE_CPU
            .replace("4118211    3890124    3701288", "4118211    3890124    3702288")
            .replace("91234      80123      77001", "91234      80123      77003")
            .replace("0     152210", "0     152200");
        let after = parse_per_cpu_table(&after_text, "a").expect("parse");
        let d = table_deltas(&before, &after, CpuId(3));
        assert_eq!(
            d,
            vec![
                CountDelta { id: "LOC".into(), description: "Local timer interrupts".into(), delta: 1000 },
                CountDelta { id: "RES".into(), description: "Rescheduling interrupts".into(), delta: 2 },
            ],
            "a decreasing count (IRQ 12) must not show up"
        );
        assert!(table_deltas(&before, &after, CpuId(2)).is_empty(), "offline CPU has no column");
    }

    #[test]
    fn damaged_input_keeps_what_it_can() {
        let text = "           CPU0       CPU1\n LOC:   5   6   Local timer interrupts\ngarbage line\n RES:  oops\n";
        let t = parse_per_cpu_table(text, "/proc/interrupts").expect("parse");
        assert_eq!(t.count("LOC", CpuId(1)), Some(6));
        assert_eq!(t.warnings.len(), 2, "{:?}", t.warnings);
        assert!(t.warnings[0].contains("/proc/interrupts: line 3"), "{}", t.warnings[0]);
        let e = parse_per_cpu_table("", "/proc/softirqs").expect_err("empty");
        assert!(e.to_string().contains("/proc/softirqs: line 1"), "{e}");
        let e = parse_per_cpu_table(" 0: 1 2\n", "x").expect_err("no header");
        assert!(e.to_string().contains("header"), "{e}");
    }

    #[test]
    fn parses_steal_from_stat() {
        let stat = "cpu  145221 0 5948 535154 885 0 113 293 0 0\n\
                    cpu0 71765 0 1995 269994 41 0 13 139 0 0\n\
                    cpu1 73455 0 3953 265160 843 0 100 154 0 0\n\
                    intr 123 0 0\nctxt 99\n";
        assert_eq!(parse_stat_steal(stat), vec![(CpuId(0), 139), (CpuId(1), 154)]);
        let a = StealSnapshot { ticks: vec![(CpuId(1), 154)], ticks_per_second: 100 };
        let b = StealSnapshot { ticks: vec![(CpuId(1), 150)], ticks_per_second: 100 };
        assert_eq!(a.steal_delta_ns(&b, CpuId(1)), Some(40_000_000));
        assert_eq!(a.steal_delta_ns(&b, CpuId(0)), None);
        assert!(parse_stat_steal("cpu0 1 2 3\n").is_empty(), "old kernels without steal are skipped");
    }

    #[test]
    fn smi_reasons_name_the_fix() {
        let missing = read_msr_at(Path::new("/nonexistent/cpu/0/msr"), MSR_SMI_COUNT, CpuId(0)).expect_err("missing");
        assert!(missing.contains("modprobe msr"), "{missing}");
        // A short regular file stands in for an MSR the CPU does not implement: reading fails, with a reason.
        let path = std::env::temp_dir().join(format!("latscope-msr-{}", std::process::id()));
        std::fs::write(&path, [0u8; 4]).expect("write");
        assert!(read_msr_at(&path, MSR_SMI_COUNT, CpuId(0)).is_err());
        let mut bytes = vec![0u8; 0x40];
        bytes[0x34..0x3c].copy_from_slice(&0x0000_0001_0000_0007u64.to_ne_bytes());
        std::fs::write(&path, bytes).expect("write");
        assert_eq!(read_msr_at(&path, MSR_SMI_COUNT, CpuId(0)), Ok(7), "only the low 32 bits count");
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn live_snapshot_has_this_cpu() {
        let cpus = CpuList(vec![CpuId(0)]);
        let a = snapshot(&cpus);
        let b = snapshot(&cpus);
        let t = a.interrupts.as_ref().expect("/proc/interrupts is readable everywhere");
        assert!(t.column(CpuId(0)).is_some());
        let d = deltas(&a, &b, CpuId(0));
        assert!(d.smi.delta.is_some() || d.smi.unavailable.is_some());
    }
}
