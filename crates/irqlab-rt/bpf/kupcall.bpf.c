// SPDX-License-Identifier: MIT OR Apache-2.0
//
// Kernel upcalls (UPCALL §3.2 on a stock kernel): a handler for the
// datagrams of ONE UDP socket that runs in the network bottom half (the
// NET_RX softirq) itself, at one of three hooks:
//   kupcall_tc    tc ingress (TCX link): the hook the runtime uses; it can
//                 consume a datagram or turn it into its reply (bpf_redirect);
//   kupcall_xdp   XDP (generic mode on lo), measured for the choice;
//   kupcall_sock  socket filter on the fd itself, measured for the choice
//                 (it cannot reply).
// The socket is identified by its local address and port; the tc and XDP
// hooks also check that a UDP socket is still bound there
// (bpf_sk_lookup_udp), so once the fd is closed they handle nothing.
//
// Budget (UPCALL's handler bound with VINT's budgeted server): per CPU and
// per period (fixed boundaries, k * period since boot) at most
// `cfg_budget_events` events and `cfg_budget_ns` of handler time, measured
// with bpf_ktime_get_ns around the handler. Past the budget the datagram is
// passed up unchanged: it reaches the socket, where the fd's normal path
// (its I/O class, a budgeted bottom half on an I/O VCPU) takes it. The time
// budget is checked before each event, so a period overruns by less than
// one handler. State is per CPU: NET_RX never nests on one CPU, so no lock
// is needed and every datagram lands in exactly one counter:
//   seen = handled + deferred + filtered + orphaned
//
// Configuration is read-only data set by the loader before the program is
// verified (aya's set_global), so a handler the configuration does not use
// is dead code the verifier removes.

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/pkt_cls.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#define HANDLER_COUNT 0 // count and consume
#define HANDLER_ECHO 1  // reply with the same payload (ports and addresses swapped)

volatile const __u32 cfg_addr = 0;       // local IPv4 address, network order (0: any)
volatile const __u32 cfg_port = 0;       // local UDP port, network order
volatile const __u32 cfg_handler = HANDLER_COUNT;
volatile const __u32 cfg_ifindex = 1;    // device replies leave on (tc echo)
volatile const __u32 cfg_min_len = 0;    // payloads outside [min, max] bytes are
volatile const __u32 cfg_max_len = 65535; // passed to the fd ("filter and forward")
volatile const __u64 cfg_cost_ns = 0;    // extra busy time per event (a costlier handler)
volatile const __u64 cfg_period_ns = 0;  // 0: no budget
volatile const __u64 cfg_budget_ns = 0;  // handler time per period (0: no time limit)
volatile const __u64 cfg_budget_events = 0; // events per period (0: no count limit)
volatile const __s32 cfg_tsend_off = -1; // payload offset of a u64 CLOCK_MONOTONIC send time
volatile const __s32 cfg_fwd_off = -1;   // payloads whose byte at this offset equals
volatile const __u32 cfg_fwd_val = 0;    // cfg_fwd_val are passed to the fd (a control message)

struct kup_stats {
	__u64 seen;
	__u64 handled;
	__u64 deferred; // over budget: passed to the fd's normal path
	__u64 filtered; // outside the length filter or matching the forward byte: passed to the fd
	__u64 orphaned; // no socket bound any more: passed, untouched
	__u64 errors;   // the echo could not be redirected (passed)
	__u64 busy_ns;  // handler time, budgeted events only
	__u64 periods;  // periods in which the budget ran out
	__u64 period_start;
	__u64 used_ns;
	__u64 used_events;
	__u64 exhausted; // the current period's budget ran out (counted once)
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct kup_stats);
} stats SEC(".maps");

// Per handled event, in a ring of the last SAMPLES: handler start and end
// and the sender's time stamp (0 without cfg_tsend_off), CLOCK_MONOTONIC
// ns; the kernel's receive time stamp (skb->tstamp, CLOCK_REALTIME, tc
// only, 0 when nobody asked for time stamps); the payload's first 8 bytes.
struct kup_sample {
	__u64 start;
	__u64 end;
	__u64 t_send;
	__u64 rx_tstamp;
	__u64 head;
	__u64 cpu;
};

#define SAMPLES 65536

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SAMPLES);
	__type(key, __u32);
	__type(value, struct kup_sample);
} samples SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} sample_next SEC(".maps");

static long spin_cb(__u64 i, void *ctx)
{
	__u64 end = *(__u64 *)ctx;
	return bpf_ktime_get_ns() >= end ? 1 : 0;
}

// The handler's extra cost: busy until `cfg_cost_ns` after `start`.
static __always_inline void busy(__u64 start)
{
	if (cfg_cost_ns == 0)
		return;
	__u64 end = start + cfg_cost_ns;
	bpf_loop(1 << 22, spin_cb, &end, 0);
}

// The budget decision (before the handler): 1 if it may run now.
static __always_inline int budget_allows(struct kup_stats *s, __u64 now)
{
	if (cfg_period_ns == 0)
		return 1;
	if (now - s->period_start >= cfg_period_ns) {
		s->period_start = now - now % cfg_period_ns;
		s->used_ns = 0;
		s->used_events = 0;
		s->exhausted = 0;
	}
	if ((cfg_budget_events && s->used_events >= cfg_budget_events) ||
	    (cfg_budget_ns && s->used_ns >= cfg_budget_ns)) {
		if (!s->exhausted) {
			s->exhausted = 1;
			s->periods++;
		}
		return 0;
	}
	return 1;
}

struct meta {
	__u64 t_send;
	__u64 rx_tstamp;
	__u64 head;
};

static __always_inline void charge(struct kup_stats *s, __u64 start, __u64 end, struct meta *m)
{
	s->handled++;
	s->used_events++;
	s->used_ns += end - start;
	s->busy_ns += end - start;
	__u32 zero = 0;
	__u64 *next = bpf_map_lookup_elem(&sample_next, &zero);
	if (!next)
		return;
	__u32 k = __sync_fetch_and_add(next, 1) % SAMPLES;
	struct kup_sample *smp = bpf_map_lookup_elem(&samples, &k);
	if (smp) {
		smp->start = start;
		smp->end = end;
		smp->t_send = m->t_send;
		smp->rx_tstamp = m->rx_tstamp;
		smp->head = m->head;
		smp->cpu = bpf_get_smp_processor_id();
	}
}

#define PASS 0
#define CONSUMED 1
#define REPLIED 2

// Parse an IPv4/UDP datagram at `l3` (direct packet access): 1 and the
// payload if it is for the configured socket.
static __always_inline int for_us(void *l3, void *data_end, struct iphdr **ipp,
				  struct udphdr **udpp)
{
	struct iphdr *ip = l3;
	if ((void *)(ip + 1) > data_end || ip->version != 4 || ip->ihl != 5 ||
	    ip->protocol != IPPROTO_UDP)
		return 0;
	if (ip->frag_off & bpf_htons(0x3fff)) // fragments: the stack reassembles
		return 0;
	struct udphdr *udp = (void *)(ip + 1);
	if ((void *)(udp + 1) > data_end || udp->dest != (__u16)cfg_port)
		return 0;
	if (cfg_addr && ip->daddr != cfg_addr)
		return 0;
	*ipp = ip;
	*udpp = udp;
	return 1;
}

static __always_inline __u64 read_u64(struct udphdr *udp, void *data_end, __s32 off)
{
	if (off < 0 || off > 1400)
		return 0;
	__u8 *p = (__u8 *)(udp + 1) + off;
	if ((void *)(p + 8) > data_end)
		return 0;
	__u64 v;
	__builtin_memcpy(&v, p, 8);
	return v;
}

// A control message the fd must see (cfg_fwd_off/cfg_fwd_val).
static __always_inline int forwarded(struct udphdr *udp, void *data_end)
{
	if (cfg_fwd_off < 0 || cfg_fwd_off > 1400)
		return 0;
	__u8 *p = (__u8 *)(udp + 1) + cfg_fwd_off;
	if ((void *)(p + 1) > data_end)
		return 0;
	return *p == (__u8)cfg_fwd_val;
}

// The socket is still open (tc, XDP): one is bound to the address and port.
static __always_inline int socket_bound(void *ctx, struct iphdr *ip, struct udphdr *udp)
{
	struct bpf_sock_tuple t = {};
	t.ipv4.saddr = ip->saddr;
	t.ipv4.daddr = ip->daddr;
	t.ipv4.sport = udp->source;
	t.ipv4.dport = udp->dest;
	struct bpf_sock *sk = bpf_sk_lookup_udp(ctx, &t, sizeof(t.ipv4), BPF_F_CURRENT_NETNS, 0);
	if (!sk)
		return 0;
	bpf_sk_release(sk);
	return 1;
}

// Account one datagram; returns 1 if the handler may run (the budget
// allows it), with `s` the CPU's statistics.
static __always_inline int admit(struct kup_stats **sp, __u32 plen, int fwd, __u64 now)
{
	__u32 zero = 0;
	struct kup_stats *s = bpf_map_lookup_elem(&stats, &zero);
	if (!s)
		return 0;
	*sp = s;
	s->seen++;
	if (fwd || plen < cfg_min_len || plen > cfg_max_len) {
		s->filtered++;
		return 0;
	}
	if (!budget_allows(s, now)) {
		s->deferred++;
		return 0;
	}
	return 1;
}

static __always_inline void orphan(void)
{
	__u32 zero = 0;
	struct kup_stats *s = bpf_map_lookup_elem(&stats, &zero);
	if (s) {
		s->seen++;
		s->orphaned++;
	}
}

// Swap addresses and ports in place: the reply of an echo. Both checksums
// are sums over the swapped fields, so they stay valid.
static __always_inline void swap_for_reply(struct ethhdr *eth, struct iphdr *ip, struct udphdr *udp)
{
	if (eth) {
		unsigned char m[ETH_ALEN];
		__builtin_memcpy(m, eth->h_source, ETH_ALEN);
		__builtin_memcpy(eth->h_source, eth->h_dest, ETH_ALEN);
		__builtin_memcpy(eth->h_dest, m, ETH_ALEN);
	}
	__u32 a = ip->saddr;
	ip->saddr = ip->daddr;
	ip->daddr = a;
	__u16 p = udp->source;
	udp->source = udp->dest;
	udp->dest = p;
}

SEC("classifier")
int kupcall_tc(struct __sk_buff *skb)
{
	__u64 start = bpf_ktime_get_ns();
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	if ((void *)(eth + 1) > data_end || eth->h_proto != bpf_htons(ETH_P_IP))
		return TC_ACT_OK;
	struct iphdr *ip;
	struct udphdr *udp;
	if (!for_us(eth + 1, data_end, &ip, &udp))
		return TC_ACT_OK;
	if (!socket_bound(skb, ip, udp)) {
		orphan();
		return TC_ACT_OK;
	}
	// the lookup invalidated packet pointers: parse again
	data = (void *)(long)skb->data;
	data_end = (void *)(long)skb->data_end;
	eth = data;
	if ((void *)(eth + 1) > data_end || !for_us(eth + 1, data_end, &ip, &udp))
		return TC_ACT_OK;
	__u32 plen = bpf_ntohs(udp->len) - sizeof(*udp);
	struct kup_stats *s;
	if (!admit(&s, plen, forwarded(udp, data_end), start))
		return TC_ACT_OK;
	struct meta m = {read_u64(udp, data_end, cfg_tsend_off), skb->tstamp,
			 read_u64(udp, data_end, 0)};
	busy(start);
	int ret = TC_ACT_SHOT; // count: consumed here
	if (cfg_handler == HANDLER_ECHO) {
		swap_for_reply(eth, ip, udp);
		ret = bpf_redirect(cfg_ifindex, 0);
		if (ret != TC_ACT_REDIRECT) {
			s->errors++;
			swap_for_reply(eth, ip, udp);
			ret = TC_ACT_OK;
		}
	}
	charge(s, start, bpf_ktime_get_ns(), &m);
	return ret;
}

SEC("xdp")
int kupcall_xdp(struct xdp_md *ctx)
{
	__u64 start = bpf_ktime_get_ns();
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	if ((void *)(eth + 1) > data_end || eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	struct iphdr *ip;
	struct udphdr *udp;
	if (!for_us(eth + 1, data_end, &ip, &udp))
		return XDP_PASS;
	if (!socket_bound(ctx, ip, udp)) {
		orphan();
		return XDP_PASS;
	}
	data = (void *)(long)ctx->data;
	data_end = (void *)(long)ctx->data_end;
	eth = data;
	if ((void *)(eth + 1) > data_end || !for_us(eth + 1, data_end, &ip, &udp))
		return XDP_PASS;
	__u32 plen = bpf_ntohs(udp->len) - sizeof(*udp);
	struct kup_stats *s;
	if (!admit(&s, plen, forwarded(udp, data_end), start))
		return XDP_PASS;
	struct meta m = {read_u64(udp, data_end, cfg_tsend_off), 0, read_u64(udp, data_end, 0)};
	busy(start);
	int ret = XDP_DROP;
	if (cfg_handler == HANDLER_ECHO) {
		swap_for_reply(eth, ip, udp);
		ret = XDP_TX;
	}
	charge(s, start, bpf_ktime_get_ns(), &m);
	return ret;
}

// Socket filter: runs on the fd's own receive path (sk_filter, still in
// the softirq), after the IP and UDP layers; skb data starts at the UDP
// header. Returns 0 to consume, the length to pass.
SEC("socket")
int kupcall_sock(struct __sk_buff *skb)
{
	__u64 start = bpf_ktime_get_ns();
	__u32 plen = skb->len > sizeof(struct udphdr) ? skb->len - sizeof(struct udphdr) : 0;
	int fwd = 0;
	if (cfg_fwd_off >= 0 && cfg_fwd_off <= 1400) {
		__u8 b = 0;
		if (!bpf_skb_load_bytes(skb, sizeof(struct udphdr) + cfg_fwd_off, &b, 1))
			fwd = b == (__u8)cfg_fwd_val;
	}
	struct kup_stats *s;
	if (!admit(&s, plen, fwd, start))
		return skb->len;
	struct meta m = {0, 0, 0}; // skb->tstamp is not readable here
	if (cfg_tsend_off >= 0 && cfg_tsend_off <= 1400)
		bpf_skb_load_bytes(skb, sizeof(struct udphdr) + cfg_tsend_off, &m.t_send, 8);
	bpf_skb_load_bytes(skb, sizeof(struct udphdr), &m.head, 8);
	busy(start);
	charge(s, start, bpf_ktime_get_ns(), &m);
	return 0; // count only: a socket filter cannot reply
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
