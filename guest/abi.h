/* irqlab guest <-> VMM ABI: the memory map, the shared page and the
 * paravirtual ports. Mirrored in crates/irqlab-vmm/src/abi.rs (the VMM's
 * tests boot the guest and check every field it reads back).
 *
 * Design principles: fixed guest-physical addresses (the VMM builds the
 * page tables and GDT, the guest only reads them); every shared field is a
 * naturally aligned 64-bit word written by exactly one side. */
#ifndef IRQLAB_ABI_H
#define IRQLAB_ABI_H

#define ABI_MAGIC 0x31564d424c515249ULL /* "IRQLBMV1" */

/* Guest-physical memory map. */
#define MEM_SIZE      (4u << 20)
#define PML4_ADDR     0x1000
#define GDT_ADDR      0x8000
#define SHARED_ADDR   0x10000
#define RING_ADDR     0x20000         /* device d's ring: RING_ADDR + d * RING_BYTES */
#define RING_SLOTS    64
#define DESC_BYTES    2048
#define RING_BYTES    (RING_SLOTS * DESC_BYTES)
#define NDEV          2
#define KERNEL_ADDR   0x100000
#define STACK_TOP     0x3ff000
#define AP_STACK_TOP  0x3f0000        /* the second VCPU's stack (the BSP's is above) */
#define NCPU          2
#define LAPIC_ADDR    0xfee00000ULL

/* Paravirtual ports (out from the guest, one VM exit each). */
#define PORT_CONSOLE  0x3f8   /* byte: console output */
#define PORT_DONE     0x510   /* dword d: device d has completed descriptors (paravirtual EOI) */
#define PORT_PANIC    0x511   /* dword vector: CPU exception, details in the shared page */
#define PORT_READY    0x512   /* dword: boot finished, interrupts enabled */
#define PORT_EXIT     0x513   /* dword code: the guest asks to stop */
#define PORT_PING     0x514   /* dword: nothing (exit round-trip measurement) */
#define PORT_START_AP 0x515   /* dword: start the AP at S_AP_ENTRY (paravirtual start) */
#define PORT_AP_READY 0x516   /* dword: the AP runs, its LAPIC enabled, interrupts on */

/* Vector of device d's virtual interrupt. */
#define VEC_BASE      0x40

/* Behaviour flags (shared.flags, written by the VMM before boot). */
#define FLAG_BUSY     1   /* background task computes instead of halting */
#define FLAG_FAULT    2   /* after boot: execute ud2 (test of the panic path) */
#define FLAG_HANG     4   /* after boot: cli; spin forever (watchdog test) */
#define FLAG_TRIPLE   8   /* after boot: unmapped stack + int3 (triple fault test) */
#define FLAG_FLOOD    16  /* after boot: print forever (console flood test) */
#define FLAG_PING     32  /* after boot: PING_COUNT writes to PORT_PING, timed */
#define PING_COUNT    10000

/* A descriptor of a device ring: the VMM fills seq/len/data and the
 * injection time, the guest fills the three timestamps (guest TSC). */
#define D_SEQ        0
#define D_LEN        1
#define D_ISR        2   /* guest TSC at ISR entry of the interrupt that found it */
#define D_DSR_START  3
#define D_DSR_END    4
#define D_ISR_END    5   /* guest TSC just before that ISR's LAPIC EOI (on the last descriptor it saw) */
#define D_WORDS      8   /* header words; payload follows */
#define D_PAYLOAD    (D_WORDS * 8)

/* Shared page: 64-bit word indices. */
#define S_MAGIC      0
#define S_FLAGS      1
#define S_HEARTBEAT  3   /* incremented by the background task */
#define S_PANIC_VEC  4
#define S_PANIC_ERR  5
#define S_PANIC_RIP  6
#define S_GAP_MIN    7   /* TSC ticks: a longer step in the busy loop is a gap */
#define S_GAP_COUNT  8
#define S_PING_TSC   9   /* guest TSC ticks of PING_COUNT exits */
#define S_CAL_TICKS  10  /* guest: TSC ticks of CAL_ITERS iterations of its work loop (the fastest of 16) */
#define S_NTASK      11  /* VMM: guest tasks in the task table (at most NTASK_MAX) */
#define S_TIMER_MODE 12  /* guest: 1 = LAPIC TSC-deadline timer armed; 0 = no timer */
#define S_TIMER_IRQS 13  /* guest: LAPIC timer interrupts taken */
#define S_TASK_T0    14  /* guest: TSC of task time zero (releases: T0 + offset + k * period) */
#define S_JOBS       15  /* guest: jobs completed (the first JOB_SLOTS are in the job log) */
#define S_RDTSC_TSC  32  /* guest (FLAG_PING): TSC ticks of PING_COUNT rdtsc */
#define S_NCPU       33  /* VMM: VCPUs (1 or 2; with 2 the BSP starts the AP) */
#define S_AP_ENTRY   34  /* guest: the AP's entry point (PORT_START_AP) */
#define S_AP_LAPIC_ID 35 /* guest (AP): its LAPIC ID + 1 */
#define S_CPU_ISR    36  /* guest: device ISRs taken per CPU (NCPU words) */
#define S_DEV        16  /* per device d: S_DEV + d * 8 + ... */
#define DV_PROD      0   /* VMM: descriptors produced */
#define DV_CONS      1   /* guest: descriptors completed */
#define DV_ISR       2   /* guest: ISR entries */
#define DV_DSR       3   /* guest: DSR runs */
#define DV_COST      4   /* VMM: guest TSC ticks of DSR work per descriptor */
#define DV_PRIO      5   /* VMM: the DSR's priority in the guest scheduler (higher is more urgent) */
#define DV_SEEN      6   /* guest: descriptors seen by an ISR (written before its EOI) */
#define S_GAPS       64  /* GAP_SLOTS pairs (start, end) of guest TSC */
#define GAP_SLOTS    96
#define S_TASK       256 /* per task t: S_TASK + t * 8 + ... */
#define TK_PRIO      0   /* VMM: priority (>= 1; the background loop is 0) */
#define TK_PERIOD    1   /* VMM: TSC ticks */
#define TK_WCET      2   /* VMM: TSC ticks of compute per job */
#define TK_OFFSET    3   /* VMM: TSC ticks from T0 to the first release */
#define TK_RELEASES  4   /* guest: jobs released */
#define TK_DONE      5   /* guest: jobs completed */
#define NTASK_MAX    4
#define CAL_ITERS    256 /* a trial (about 0.3 ms here) fits in the smallest VCPU budget */

/* LAPIC timer vector: below the devices' (VEC_BASE + d), so a device
 * interrupt pending at the same time is taken first. */
#define TIMER_VEC    0x30

/* Job log: JOB_SLOTS records of JOB_WORDS words (task, release, start,
 * end; guest TSC), in completion order. */
#define JOB_ADDR     0x11000
#define JOB_SLOTS    1024
#define JOB_WORDS    4

#endif
