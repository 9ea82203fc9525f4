//! The colour of each cause of latency in every plot: one exhaustive table, so a new cause does not
//! compile until it has its colour. Related causes share a hue (interrupt work is blue, tasks orange,
//! time outside the kernel grey).

use latscope_model::CauseKind;
use plotters::style::RGBColor;

/// The colour of a cause.
pub fn cause_color(kind: CauseKind) -> RGBColor {
    match kind {
        CauseKind::TimerIrqDelay => RGBColor(86, 180, 233),
        CauseKind::IrqHandler => RGBColor(0, 114, 178),
        CauseKind::Irq => RGBColor(0, 90, 150),
        CauseKind::Vector => RGBColor(60, 140, 200),
        CauseKind::TimerTick => RGBColor(120, 170, 220),
        CauseKind::Softirq => RGBColor(0, 158, 115),
        CauseKind::Nmi => RGBColor(100, 60, 150),
        CauseKind::BlockingTask => RGBColor(213, 94, 0),
        CauseKind::PreemptOff => RGBColor(180, 60, 30),
        CauseKind::Idle => RGBColor(200, 200, 200),
        CauseKind::IrqsOff => RGBColor(204, 121, 167),
        CauseKind::BhOff => RGBColor(190, 140, 190),
        CauseKind::PreemptOrIrqsOff => RGBColor(170, 90, 140),
        CauseKind::KernelCode => RGBColor(150, 130, 160),
        CauseKind::RtThrottling => RGBColor(230, 159, 0),
        CauseKind::ReturnToUser => RGBColor(150, 200, 150),
        CauseKind::NoKernelEvent => RGBColor(120, 120, 120),
        CauseKind::OtherKernelEvent => RGBColor(160, 160, 120),
        CauseKind::WakeupLatency => RGBColor(240, 228, 66),
        CauseKind::FunctionTime => RGBColor(200, 180, 40),
        CauseKind::LostEvents => RGBColor(90, 90, 90),
        CauseKind::Configuration => RGBColor(150, 110, 70),
        CauseKind::NotTraced => RGBColor(215, 215, 215),
    }
}

/// The `nth` shade of a colour (0: itself), lighter each step, for several culprits of one cause.
pub fn shade(c: RGBColor, nth: usize) -> RGBColor {
    let f = 1.0 - (0.22 * nth as f64).min(0.66);
    let mix = |v: u8| (f * v as f64 + (1.0 - f) * 255.0).round() as u8;
    RGBColor(mix(c.0), mix(c.1), mix(c.2))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shades_get_lighter() {
        let c = cause_color(CauseKind::Irq);
        assert_eq!(shade(c, 0), c);
        assert!(shade(c, 1).0 > c.0 && shade(c, 2).0 > shade(c, 1).0);
    }
}
