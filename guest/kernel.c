/* irqlab guest kernel: a minimal 64-bit kernel for the irqlab VMM.
 *
 * What it is: the VMM enters it in long mode (identity paging and GDT built
 * by the VMM). It installs an IDT, enables its local APIC (the in-kernel
 * LAPIC of KVM) and runs a fixed-priority scheduler (VINT section III's
 * guest): each virtual device d has a descriptor ring in guest memory and
 * a virtual interrupt (vector VEC_BASE + d, an MSI from the VMM) whose ISR
 * time-stamps the new descriptors, sends the LAPIC EOI and makes the
 * device's DSR ready; the DSR does the device's configured work (DV_COST)
 * per descriptor and reports completion on the paravirtual EOI port
 * PORT_DONE (the VMM then sends a NIC's echo). Periodic tasks, declared by
 * the VMM in the shared page, are released by the LAPIC timer in
 * TSC-deadline mode and log each job. Below everything runs a background
 * loop (busy, or halted). CPU exceptions are reported with vector and RIP
 * through PORT_PANIC.
 *
 * Design principles: no red zone (-mno-red-zone) and general registers
 * only (-mgeneral-regs-only); one stack, jobs run to completion, a more
 * urgent one nested on the one it preempts; work is a calibrated loop
 * (CPU time, not elapsed time); interrupts are never left disabled for
 * long (pending injections wait for a VM exit otherwise, docs/vmm.md);
 * every timestamp is the guest TSC written to guest memory; the shared
 * page words have a single writer each. */
#include "abi.h"

typedef unsigned long u64;
typedef unsigned int u32;
typedef unsigned short u16;
typedef unsigned char u8;

#define SH ((volatile u64 *)SHARED_ADDR)
#define DEV(d, f) (SH[S_DEV + (d) * 8 + (f)])

static inline void outb(u16 port, u8 v) { __asm__ volatile("outb %0, %1" ::"a"(v), "Nd"(port)); }
static inline void outl(u16 port, u32 v) { __asm__ volatile("outl %0, %1" ::"a"(v), "Nd"(port)); }
static inline u64 rdtsc(void) {
    u32 lo, hi;
    __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
    return ((u64)hi << 32) | lo;
}
static inline void lapic_write(u32 reg, u32 v) { *(volatile u32 *)(LAPIC_ADDR + reg) = v; }
static inline u32 lapic_read(u32 reg) { return *(volatile u32 *)(LAPIC_ADDR + reg); }

static void puts(const char *s) {
    while (*s) outb(PORT_CONSOLE, (u8)*s++);
}
static void puthex(u64 v) {
    char b[19];
    b[0] = '0';
    b[1] = 'x';
    for (int i = 0; i < 16; i++) b[2 + i] = "0123456789abcdef"[(v >> (60 - 4 * i)) & 15];
    b[18] = 0;
    puts(b);
}

/* ---- IDT ---------------------------------------------------------------- */
struct idt_entry {
    u16 off0, sel;
    u8 ist, type;
    u16 off1;
    u32 off2, zero;
} __attribute__((packed));
static struct idt_entry idt[256] __attribute__((aligned(16)));
struct frame {
    u64 ip, cs, flags, sp, ss;
};

static void set_gate(int v, void *h) {
    u64 a = (u64)h;
    idt[v].off0 = (u16)a;
    idt[v].sel = 0x08;
    idt[v].ist = 0;
    idt[v].type = 0x8e; /* present, DPL 0, 64-bit interrupt gate */
    idt[v].off1 = (u16)(a >> 16);
    idt[v].off2 = (u32)(a >> 32);
    idt[v].zero = 0;
}
static void lidt(void *base, u16 limit) {
    struct {
        u16 limit;
        u64 base;
    } __attribute__((packed)) d = {limit, (u64)base};
    __asm__ volatile("lidt %0" ::"m"(d));
}

static void panic(u64 vec, u64 err, u64 rip) {
    SH[S_PANIC_VEC] = vec;
    SH[S_PANIC_ERR] = err;
    SH[S_PANIC_RIP] = rip;
    outl(PORT_PANIC, (u32)vec);
    for (;;) __asm__ volatile("cli; hlt");
}
#define EXC(n)                                                                              \
    __attribute__((interrupt)) static void exc##n(struct frame *f) { panic(n, 0, f->ip); }
#define EXC_ERR(n)                                                                          \
    __attribute__((interrupt)) static void exc##n(struct frame *f, u64 e) { panic(n, e, f->ip); }
EXC(0) EXC(1) EXC(2) EXC(3) EXC(4) EXC(5) EXC(6) EXC(7) EXC_ERR(8) EXC(9) EXC_ERR(10)
EXC_ERR(11) EXC_ERR(12) EXC_ERR(13) EXC_ERR(14) EXC(16) EXC_ERR(17) EXC(18) EXC(19)

/* ---- the scheduler --------------------------------------------------------
 * Fixed priority, preemptive, one stack: every job (a DSR run or a periodic
 * task's job) runs to completion, so a more urgent job simply runs nested
 * on top of the one it preempts. dispatch(c) is called with interrupts off
 * at the end of every ISR on CPU c (after its EOI): it runs, with
 * interrupts on, every job ready on c more urgent than what runs there now
 * (`cur_prio[c]`, 0 for the background loop), most urgent first (VINT
 * §III's guest: ISRs above every task, DSR tasks and periodic tasks by
 * priority). Each CPU has its own stack and state; the AP runs only the
 * DSRs of the interrupts routed to it. */
static volatile u64 cur_prio[NCPU];
/* Per CPU: the DSRs made ready by ISRs taken on that CPU (a device's MSI
 * goes to one CPU, so its DSR runs there and nowhere else). */
static volatile u64 dsr_pending[NCPU][NDEV];

/* Which CPU runs this code: the AP runs on its own stack, below
 * AP_STACK_TOP (read from RSP: no LAPIC read, which would trap). */
static inline u64 this_cpu(void) {
    u64 sp;
    __asm__ volatile("mov %%rsp, %0" : "=r"(sp));
    return sp <= AP_STACK_TOP ? 1 : 0;
}
static volatile u64 task_pending[NTASK_MAX];
static u64 task_next[NTASK_MAX]; /* next release, guest TSC */
static u64 ntask, task_t0;
/* Descriptors seen by an ISR of device d (the DSR completes up to here). */
static volatile u64 isr_seen[NDEV];

#define TK(t, f) (SH[S_TASK + (t) * 8 + (f)])
static inline void cli(void) { __asm__ volatile("cli" ::: "memory"); }
static inline void sti(void) { __asm__ volatile("sti" ::: "memory"); }
static inline void wrmsr(u32 msr, u64 v) {
    __asm__ volatile("wrmsr" ::"c"(msr), "a"((u32)v), "d"((u32)(v >> 32)));
}

/* Work: `ticks` worth of a calibrated instruction loop (CPU time, not
 * elapsed time: time in which the guest does not run -- preempted by a
 * more urgent job, or its VCPU out of budget -- does not count). Timing the
 * work by rdtsc (spin until start + cost) would count the time the guest
 * was not running as work done. */
static u64 cal_ticks; /* CAL_ITERS loop iterations take cal_ticks */
static void spin(u64 n) {
    for (u64 i = n; i; i--) __asm__ volatile("" ::: "memory");
}
static void calibrate(void) {
    cal_ticks = ~0UL;
    /* Short trials (CAL_ITERS, about 0.3 ms here), so that most fall
     * between two of the VCPU's budget gaps: 2048-iteration trials (2.2 ms)
     * outlasted a 2 ms budget, every one included a park, and the work
     * loop came out 2-5 times too slow (docs/vmm.md). */
    for (int k = 0; k < 16; k++) {
        u64 t = rdtsc();
        spin(CAL_ITERS);
        u64 d = rdtsc() - t;
        if (d < cal_ticks) cal_ticks = d; /* the fastest trial: not preempted */
    }
    if (!cal_ticks) cal_ticks = 1;
    SH[S_CAL_TICKS] = cal_ticks;
}
static void compute(u64 ticks) {
    spin(ticks * CAL_ITERS / cal_ticks); /* no overflow below 2^53 ticks */
}

static inline volatile u64 *desc(int d, u64 i) {
    return (volatile u64 *)(RING_ADDR + (u64)d * RING_BYTES + (i % RING_SLOTS) * DESC_BYTES);
}

/* ISR of device d: stamp every descriptor produced since the last ISR
 * (entry; the end on the last of them), publish how far it saw
 * (DV_SEEN), EOI, and leave the work to the DSR. */
static inline __attribute__((always_inline)) u64 isr(int d) {
    /* DV_PROD before the stamp: a descriptor published while this ISR was
     * held (its VCPU parked between the two) must not get a stamp older
     * than its arrival. */
    u64 prod = DEV(d, DV_PROD);
    __asm__ volatile("" ::: "memory");
    u64 t = rdtsc();
    u64 c = this_cpu();
    SH[S_CPU_ISR + c] += 1;
    for (u64 i = isr_seen[d]; i < prod; i++) desc(d, i)[D_ISR] = t;
    DEV(d, DV_ISR) += 1;
    dsr_pending[c][d] = 1;
    /* One store, not a loop: the ISR runs with interrupts disabled at
     * ~0.5 us per instruction here (docs/vmm.md). The VMM gives the end to
     * every descriptor with this ISR's entry stamp. */
    if (prod > isr_seen[d]) desc(d, prod - 1)[D_ISR_END] = rdtsc();
    isr_seen[d] = prod;
    DEV(d, DV_SEEN) = prod; /* the VMM: no ISR of d pending once this equals DV_PROD */
    lapic_write(0xb0, 0);
    return c;
}

/* DSR of device d: the device's work (DV_COST) per descriptor, then the
 * paravirtual EOI (PORT_DONE: the end of handling, VINT Def. 2). */
static void dsr(u64 c, int d) {
    dsr_pending[c][d] = 0;
    DEV(d, DV_DSR) += 1;
    u64 cons = DEV(d, DV_CONS);
    int done = 0;
    while (cons < isr_seen[d]) {
        volatile u64 *x = desc(d, cons);
        x[D_DSR_START] = rdtsc();
        compute(DEV(d, DV_COST));
        /* UDP echo: the reply is the payload in place (the VMM sends it). */
        x[D_DSR_END] = rdtsc();
        cons++;
        DEV(d, DV_CONS) = cons;
        done = 1;
    }
    if (done) outl(PORT_DONE, (u32)d);
}

/* One job of periodic task t (the oldest pending one). */
static void job(int t) {
    u64 k = TK(t, TK_DONE);
    u64 release = task_t0 + TK(t, TK_OFFSET) + k * TK(t, TK_PERIOD);
    u64 start = rdtsc();
    compute(TK(t, TK_WCET));
    u64 end = rdtsc();
    /* The log slot and the count with interrupts off: a more urgent job
     * nested here would take the same slot (a job lost from the log). */
    cli();
    u64 n = SH[S_JOBS];
    if (n < JOB_SLOTS) {
        volatile u64 *r = (volatile u64 *)(JOB_ADDR + n * JOB_WORDS * 8);
        r[0] = (u64)t;
        r[1] = release;
        r[2] = start;
        r[3] = end;
    }
    SH[S_JOBS] = n + 1;
    TK(t, TK_DONE) = k + 1;
    sti();
    __atomic_sub_fetch(&task_pending[t], 1, __ATOMIC_SEQ_CST);
}

static void dispatch(u64 c) {
    for (;;) {
        int best = -1;
        u64 bp = cur_prio[c];
        for (int d = 0; d < NDEV; d++)
            if (dsr_pending[c][d] && DEV(d, DV_PRIO) > bp) {
                best = d;
                bp = DEV(d, DV_PRIO);
            }
        /* Periodic tasks run on the BSP (its LAPIC timer releases them). */
        for (u64 t = 0; c == 0 && t < ntask; t++)
            if (task_pending[t] && TK(t, TK_PRIO) > bp) {
                best = NDEV + (int)t;
                bp = TK(t, TK_PRIO);
            }
        if (best < 0) return;
        u64 saved = cur_prio[c];
        cur_prio[c] = bp;
        sti();
        if (best < NDEV)
            dsr(c, best);
        else
            job(best - NDEV);
        cli();
        cur_prio[c] = saved;
    }
}

/* LAPIC timer (TSC-deadline mode): release every due job, arm the next
 * release, EOI. */
static void timer_isr(void) {
    u64 now = rdtsc();
    SH[S_TIMER_IRQS] += 1;
    u64 next = ~0UL;
    for (u64 t = 0; t < ntask; t++) {
        while (task_next[t] <= now) {
            task_pending[t] += 1;
            TK(t, TK_RELEASES) += 1;
            task_next[t] += TK(t, TK_PERIOD);
        }
        if (task_next[t] < next) next = task_next[t];
    }
    if (next != ~0UL) wrmsr(0x6e0, next);
    lapic_write(0xb0, 0);
}

__attribute__((interrupt)) static void irq0(struct frame *f) { (void)f; dispatch(isr(0)); }
__attribute__((interrupt)) static void irq1(struct frame *f) { (void)f; dispatch(isr(1)); }
/* The LAPIC timer is armed on the BSP only. */
__attribute__((interrupt)) static void irq_timer(struct frame *f) { (void)f; timer_isr(); dispatch(0); }
__attribute__((interrupt)) static void spurious(struct frame *f) { (void)f; }

static int has_tsc_deadline(void) {
    u32 a = 1, b, c = 0, d;
    __asm__ volatile("cpuid" : "+a"(a), "=b"(b), "+c"(c), "=d"(d));
    (void)b;
    (void)d;
    return (c >> 24) & 1;
}

/* Periodic tasks: the first releases from now (T0), the LAPIC timer in
 * TSC-deadline mode armed for the earliest. */
static void tasks_init(void) {
    ntask = SH[S_NTASK];
    if (ntask > NTASK_MAX) ntask = NTASK_MAX;
    if (!ntask) return;
    if (!has_tsc_deadline()) {
        puts("irqlab-guest: periodic tasks need the TSC-deadline timer (CPUID.1:ECX[24])\n");
        outl(PORT_EXIT, 3);
    }
    task_t0 = rdtsc();
    SH[S_TASK_T0] = task_t0;
    u64 next = ~0UL;
    for (u64 t = 0; t < ntask; t++) {
        task_next[t] = task_t0 + TK(t, TK_OFFSET);
        if (task_next[t] < next) next = task_next[t];
    }
    lapic_write(0x320, TIMER_VEC | (2u << 17)); /* LVT timer: TSC-deadline mode */
    __asm__ volatile("mfence" ::: "memory");
    wrmsr(0x6e0, next);
    SH[S_TIMER_MODE] = 1;
}

/* Local APIC: software-enable (SVR bit 8, spurious vector 0xff), TPR 0. */
static void lapic_enable(void) {
    lapic_write(0x80, 0);
    lapic_write(0xf0, 0x1ff);
}

/* ---- the second VCPU (AP) ------------------------------------------------------
 * Paravirtual start: the BSP writes ap_main's address to S_AP_ENTRY and
 * asks the VMM (PORT_START_AP); the VMM enters the AP in long mode there
 * with RSP just below AP_STACK_TOP. The AP shares the IDT, enables its own
 * LAPIC and then only takes the interrupts routed to it (their ISR and DSR
 * run on it); periodic tasks stay on the BSP. */
void ap_main(void) {
    lidt(idt, sizeof(idt) - 1);
    lapic_enable();
    SH[S_AP_LAPIC_ID] = (lapic_read(0x20) >> 24) + 1; /* + 1: 0 means not up */
    sti();
    outl(PORT_AP_READY, 1);
    for (;;) __asm__ volatile("hlt" ::: "memory");
}

/* ---- main ------------------------------------------------------------------ */
void kmain(void) {
    puts("irqlab-guest: boot\n");
    if (SH[S_MAGIC] != ABI_MAGIC) {
        puts("irqlab-guest: bad shared page magic\n");
        outl(PORT_EXIT, 2);
    }
    set_gate(0, exc0); set_gate(1, exc1); set_gate(2, exc2); set_gate(3, exc3);
    set_gate(4, exc4); set_gate(5, exc5); set_gate(6, exc6); set_gate(7, exc7);
    set_gate(8, exc8); set_gate(9, exc9); set_gate(10, exc10); set_gate(11, exc11);
    set_gate(12, exc12); set_gate(13, exc13); set_gate(14, exc14); set_gate(16, exc16);
    set_gate(17, exc17); set_gate(18, exc18); set_gate(19, exc19);
    set_gate(VEC_BASE, irq0);
    set_gate(VEC_BASE + 1, irq1);
    set_gate(TIMER_VEC, irq_timer);
    set_gate(0xff, spurious);
    lidt(idt, sizeof(idt) - 1);
    lapic_enable();
    puts("irqlab-guest: lapic id ");
    puthex(lapic_read(0x20) >> 24);
    puts(" version ");
    puthex(lapic_read(0x30) & 0xff);
    puts("\n");
    u64 flags = SH[S_FLAGS];
    calibrate();
    tasks_init();
    sti();
    outl(PORT_READY, 1);
    if (SH[S_NCPU] > 1) {
        SH[S_AP_ENTRY] = (u64)ap_main;
        outl(PORT_START_AP, 1);
    }

    if (flags & FLAG_FAULT) __asm__ volatile("ud2");
    if (flags & FLAG_HANG) for (;;) __asm__ volatile("cli; pause");
    if (flags & FLAG_TRIPLE) {
        /* A stack in unmapped memory: #BP cannot push its frame (#PF),
         * nor can #PF (#DF), nor #DF: a triple fault. */
        __asm__ volatile("mov $0x10000000000, %rsp; int3");
    }
    if (flags & FLAG_PING) {
        u64 t = rdtsc();
        for (int i = 0; i < PING_COUNT; i++) outl(PORT_PING, 0);
        u64 ping = rdtsc() - t;
        t = rdtsc();
        for (int i = 0; i < PING_COUNT; i++) (void)rdtsc();
        SH[S_RDTSC_TSC] = rdtsc() - t;
        SH[S_PING_TSC] = ping; /* last: the VMM waits for this word */
    }
    if (flags & FLAG_FLOOD) for (;;) puts("flood flood flood flood flood flood flood\n");

    /* The background loop (priority 0), always with interrupts enabled:
     * every job is run by the dispatch() at the end of the ISR that
     * released it, so nothing ready is ever left for this loop. It
     * computes (FLAG_BUSY) or halts until the next interrupt. (A pending
     * interrupt reaches a guest running with interrupts disabled only at
     * its next VM exit on this nested KVM -- docs/vmm.md -- so a loop that
     * disabled them would hold injections back.) */
    u64 gap_min = SH[S_GAP_MIN];
    u64 last = rdtsc();
    for (;;) {
        SH[S_HEARTBEAT] += 1;
        if (!(flags & FLAG_BUSY)) {
            __asm__ volatile("hlt" ::: "memory");
            continue;
        }
        /* A step of this loop much longer than its body is time the VCPU
         * (or this loop) did not run; an interrupt taken at the end of a
         * gap shows just after it. */
        u64 now = rdtsc();
        if (gap_min && now - last > gap_min) {
            u64 n = SH[S_GAP_COUNT];
            if (n < GAP_SLOTS) {
                SH[S_GAPS + 2 * n] = last;
                SH[S_GAPS + 2 * n + 1] = now;
                SH[S_GAP_COUNT] = n + 1;
            }
        }
        last = now;
    }
}
