//! VINT Figure 12 on the real VMM, reduced to what must hold on any load:
//! a decoder task in a VCPU under a virtual interrupt storm (a host timer
//! every 60 us), with and without vINT (`irqlab_vmm::case::storm`, 60 %).
//! * every storm event is accounted (received = injected + dropped +
//!   pending, injected = completed + in the guest);
//! * with vINT the injections are bounded by the pseudo-VCPU's counter
//!   (VINT §V-B: 10 per 10 ms period) and its CPU time by its budget;
//!   without vINT (the falsifier) nothing bounds them but the ring, and
//!   they exceed that bound at least twice over;
//! * the paper's claim, as an ordering: the decoder completes more frames
//!   with vINT than without (without it, the storm's DSRs, above the
//!   decoder, take the VCPU's whole budget).
mod common;

use std::time::Duration;

use irqlab_vmm::case;
use irqlab_vmm::VmmReport;

const UTIL: u64 = 60;

/// The report and the wall time from before the start to after the stop
/// (the counter lives within it).
fn run(vint: bool) -> (VmmReport, u64) {
    let t = std::time::Instant::now();
    let vmm = common::start(case::storm(UTIL, vint, true).expect("config"));
    std::thread::sleep(Duration::from_millis(1200));
    let r = common::stop_ok(vmm);
    (r, t.elapsed().as_nanos() as u64)
}

#[test]
fn vint_bounds_the_storm_and_keeps_the_decoder_running() {
    require_kvm!();
    let (base, base_ns) = run(false);
    let (vint, vint_ns) = run(true);
    for (name, r) in [("Baseline", &base), ("vINT", &vint)] {
        let d = &r.devices[0];
        assert_eq!(
            d.received,
            d.injected + d.dropped + d.pending,
            "{name}: {d:?}"
        );
        assert_eq!(d.injected, d.completed + d.in_guest, "{name}: {d:?}");
        assert!(d.received > 1000, "{name}: the storm ran: {d:?}");
        let dec = &r.guest.tasks[0];
        assert!(
            dec.completed <= dec.releases && dec.releases >= 1,
            "{name}: {dec:?}"
        );
    }
    // The counter: at most ceil(T_p / T_i) = 10 injections per 10 ms
    // period of the pseudo-VCPU (deferrable: refilled at each boundary),
    // counted over every boundary the run can have crossed.
    let bound = |ns: u64| 10 * (ns / 10_000_000 + 2);
    let (b, v) = (&base.devices[0], &vint.devices[0]);
    assert!(v.managed && !b.managed);
    assert!(
        v.injected <= bound(vint_ns),
        "vINT injected {} > {}",
        v.injected,
        bound(vint_ns)
    );
    // At 60 % the Baseline VCPU's 6 ms per period pay for 30-46 storm
    // events of 130-200 us each (docs/reproductions.md), 3-4.6 times the
    // counter's 10; the wall time also holds the boot, before the storm
    // starts. Twice the bound keeps that margin under load (2.88 times at
    // a load average of 15 failed a factor of 3), and vINT must stay at 1.
    assert!(
        b.injected > 2 * bound(base_ns),
        "without vINT the storm is injected as fast as the guest completes it: {} vs the counter's {}",
        b.injected,
        bound(base_ns)
    );
    let rt = vint.runtime.as_ref().expect("runtime report");
    let p = rt
        .servers
        .iter()
        .find(|s| s.name == "pseudo-storm")
        .expect("pseudo-VCPU");
    let periods = rt.duration_ns / 10_000_000 + 2;
    assert!(
        p.cpu_time_ns <= periods * (2_000_000 + 500_000),
        "pseudo-VCPU used {} ns in {} ns",
        p.cpu_time_ns,
        rt.duration_ns
    );
    assert!(vint.exits.pseudo_slices > 0 && base.exits.pseudo_slices == 0);
    let (fb, fv) = (base.guest.tasks[0].completed, vint.guest.tasks[0].completed);
    assert!(
        fv > 2 * fb && fv >= 3,
        "decoder frames: vINT {fv}, Baseline {fb} (the paper: Baseline collapses, vINT keeps the rate)"
    );
    println!(
        "decoder frames in 1.2 s: Baseline {fb}, vINT {fv}; storm injected: Baseline {} (bound {}), vINT {} (bound {})",
        b.injected,
        bound(base_ns),
        v.injected,
        bound(vint_ns)
    );
}
