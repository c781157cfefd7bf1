"""Valid base models the hostile cases mutate (one per interrupt path and
device kind). ``{x}`` marks are filled by the cases in ``generate.py``."""

QUEST_NIC = """\
machine: {{cpus: 1, path: quest}}
simulation: {{duration: {duration}, window: {window}, seed: 0}}
vcpus:
  - {{name: {vname}, policy: sporadic, budget: {budget}, period: {vperiod}{vextra}}}
  - {{name: io, kind: io, policy: pibs, utilization: {util}, io_class: net}}
tasks:
  - {{name: {tname}, vcpu: {vname}, period: {tperiod}, program: [{program}]}}
devices:
  - {{name: {dname}, kind: nic, class: net, cpu: 0, arrival: {arrival},
     top_half: {top_half}, bottom_half: {bottom_half}, packet: {packet}{dextra}}}
"""

QUEST_NIC_DEFAULTS = dict(
    duration="10ms", window="1ms", vname="main", budget="1ms", vperiod="5ms", vextra="",
    util="10%", tname="t", tperiod="5ms", program="{compute: 100us}", dname="nic0",
    arrival="{kind: periodic, interval: 100us}", top_half="2us", bottom_half="10us",
    packet="1500B", dextra="",
)

QUEST_DISK = """\
machine: {{cpus: 1, path: quest}}
simulation: {{duration: 10ms, window: 1ms, seed: 0}}
vcpus:
  - {{name: main, policy: sporadic, budget: 1ms, period: 5ms}}
  - {{name: io, kind: io, policy: pibs, utilization: 10%, io_class: ata}}
tasks:
  - {{name: reader, vcpu: main, program: [{{forever: [{{read: cd}}, {{compute: 50us}}]}}]}}
devices:
  - {{name: cd, kind: disk, class: ata, latency: {latency}, top_half: 10us,
     per_sector: {per_sector}, sectors: {sectors}, sector: {sector}}}
"""

QUEST_DISK_DEFAULTS = dict(latency="1ms", per_sector="120us", sectors="32", sector="2048B")

GENERIC = """\
machine: {{cpus: 1, path: quest}}
simulation: {{duration: 10ms, window: 1ms, seed: 0}}
vcpus:
  - {{name: main, policy: sporadic, budget: 1ms, period: 5ms}}
  - {{name: io, kind: io, policy: pibs, utilization: 10%, io_class: dev}}
tasks:
  - {{name: t, vcpu: main, period: 5ms, program: [{{compute: 100us}}]}}
devices:
  - {{name: g, kind: generic, class: dev, min_interarrival: {mi}, isr: {isr}, dsr: {dsr}}}
"""

GENERIC_DEFAULTS = dict(mi="1ms", isr="5us", dsr="20us")

HYPERVISOR = """\
machine: {{cpus: 1, path: hypervisor}}
simulation: {{duration: 10ms, window: 1ms, seed: 0}}
vms:
  physical_interrupts:
    - {{name: {pname}, cpu: 0, isr: {pisr}, min_interarrival: {pmi}}}
  guests:
    - name: guest
      vcpus:
        - name: v0
          cpu: 0
          policy: sporadic
          budget: {budget}
          period: {period}
          tasks:
            - {{name: rx, priority: 1, wcet: {wcet}}}
            - {{name: bg, priority: 2, wcet: 1ms, period: 10ms}}
      virtual_interrupts:
        - {{name: virq, physical: {pname}, vcpu: v0, isr: 5us, priority: 1, dsr: [rx]}}
"""

HYPERVISOR_DEFAULTS = dict(pname="nic", pisr="5us", pmi="1ms", budget="2ms", period="10ms",
                           wcet="50us")
