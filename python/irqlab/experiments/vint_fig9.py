"""VINT Figure 9: schedulable task sets and serviceable interrupt sets as
the WCETs of the virtual ISRs and DSRs grow (scaled together; short
inter-arrival times [1, 1.5] ms so that the trend is visible)."""

from __future__ import annotations

from pathlib import Path

from irqlab.analysis import vint_curve
from irqlab.experiments import Check, Result
from irqlab.experiments._vint import MS, US, sets_for, table, write

NAME = "vint-fig9"
TITLE = "VINT Figure 9: virtual ISR and DSR length"
SCALES = [1, 2, 3, 4, 6, 8]


def run(out_dir: Path, *, quick: bool = False) -> Result:
    pts = [(s, {"virt_isr_wcet": (5 * s * US, 10 * s * US), "dsr_wcet": (10 * s * US, 50 * s * US),
                "irq_interarrival": (1 * MS, 3 * MS // 2)}) for s in SCALES]
    curve = vint_curve(pts, sets_for(quick), seed=9)
    # compare where the schemes differ most in serviceability (at the
    # longest handlers every scheme is at 0 %)
    last = max(curve, key=lambda p: p["serviceable"]["SSvINT"] - p["serviceable"]["SSbase"]
               + p["serviceable"]["DSvINT"] - p["serviceable"]["DSbase"])
    sched_lower = (last["schedulable"]["DSvINT"] <= last["schedulable"]["DSbase"]
                   and last["schedulable"]["SSvINT"] <= last["schedulable"]["SSbase"])
    serv_higher = (last["serviceable"]["DSvINT"] > last["serviceable"]["DSbase"] + 20
                   and last["serviceable"]["SSvINT"] > last["serviceable"]["SSbase"] + 20)
    falls = all(curve[0]["schedulable"][s] >= curve[-1]["schedulable"][s]
                for s in curve[0]["schedulable"])
    checks = [
        Check("schedulability falls as the virtual ISR/DSR WCETs grow", "falls",
              ", ".join(f"{s} {curve[0]['schedulable'][s]:.0f}->{curve[-1]['schedulable'][s]:.0f}"
                        for s in curve[0]["schedulable"]), "no scheme rises", falls),
        Check(f"with vINT task schedulability is lower (scale {last['x']})", "lower",
              f"DS {last['schedulable']['DSvINT']:.0f} vs {last['schedulable']['DSbase']:.0f}, "
              f"SS {last['schedulable']['SSvINT']:.0f} vs {last['schedulable']['SSbase']:.0f}",
              "vINT <= base", sched_lower),
        Check(f"... but serviceability much higher (scale {last['x']})", "much higher",
              f"DS {last['serviceable']['DSvINT']:.0f} vs {last['serviceable']['DSbase']:.0f}, "
              f"SS {last['serviceable']['SSvINT']:.0f} vs {last['serviceable']['SSbase']:.0f}",
              "> 20 points more", serv_higher),
    ]
    files = write(out_dir, "vint_fig9", curve, "ISR/DSR WCET scale", "VINT Fig. 9")
    return Result(NAME, checks, table(curve, "scale"), files, {"curve": curve})
