/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Arrival of a request's bytes on the kernel's receive path (docs/events.md,
 * "Arrival"), included by sock.bpf.c so that the recv exit program shares
 * the `arrivals` map.
 *
 * Two raw tracepoints (tracepoints, not kprobes: the only kind this project
 * may rely on) fill one map entry per accepted TCP connection on a watched
 * port, keyed by its struct sock:
 *   sock:inet_sock_set_state  SYN_RECV -> ESTABLISHED: the handshake is done
 *                             (insert); -> CLOSE: delete.
 *   tcp:tcp_probe             a segment in tcp_rcv_established(): when it
 *                             carries data, the time the oldest unread
 *                             byte was queued and the newest.
 * The raw_tp arguments are the TP_PROTO ones (6.18: btf_trace_* typedefs
 * in vmlinux.h): (const struct sock *sk, int oldstate, int newstate) and
 * (struct sock *sk, struct sk_buff *skb).
 *
 * The recv exit (arrival_recv) emits SOCK_ARRIVAL with the oldest unread
 * time and then looks at the socket after the read: drained (copied_seq has
 * caught up with rcv_nxt and with the newest data segment seen) restarts the
 * clock; bytes left behind make the next record's data_ns the newest
 * segment's time, flagged RT_ARR_LEFT_UNREAD (an upper bound).
 *
 * Races accepted (the softirq filling an entry and the reader's exit program
 * run on different CPUs without a lock):
 * - a segment whose tcp_probe runs while the exit program is between its
 *   "drained" verdict and the re-check of last_end_seq, on a weakly ordered
 *   store/load pair, can lose its time: the next data_ns is then 0 (unknown),
 *   never wrong;
 * - a segment processed from the socket backlog (it arrived while a reader
 *   held the socket lock) is seen when the backlog runs, up to one read later
 *   than it reached the host;
 * - an entry inserted by the exit program just as the connection closes on
 *   another CPU outlives it until the map slot's struct sock is reused (the
 *   next ESTABLISHED on that pointer overwrites it; arrivals_full counts the
 *   cost if it ever adds up).
 */
#ifndef RT_ARRIVAL_BPF_H
#define RT_ARRIVAL_BPF_H

#define RT_TCP_ESTABLISHED 1
#define RT_TCP_SYN_RECV 3
#define RT_TCP_CLOSE 7
#define RT_TCP_CLOSE_WAIT 8
#define RT_IPPROTO_TCP 6

struct arrival {
	__u64 established_ns; /* passive handshake done (0: before we looked) */
	__u64 first_unread_ns; /* oldest byte not yet returned by a read (0: none or unknown) */
	__u64 last_data_ns; /* newest data segment */
	__u32 last_end_seq; /* end of the newest data segment (starts at rcv_nxt) */
	__u32 flags; /* RT_ARR_* for the next record */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RT_BPF_ARRIVALS_MAX);
	__type(key, __u64); /* struct sock * */
	__type(value, struct arrival);
} arrivals SEC(".maps");

/*
 * Local TCP ports whose accepted connections are followed: set by the
 * loader (rt_bpf_source__watch_port, through the mmapped .bss) and learnt
 * here from every accept of a traced process. Never cleared: a port stays
 * watched for the daemon's lifetime.
 */
__u8 rt_watch_ports[65536];
/* Set by the loader once both tracepoints are attached; 0: no arrival records. */
__u32 rt_arrival_on;

static __always_inline bool port_watched(__u16 port)
{
	return port && rt_watch_ports[port];
}

/* a < b in sequence space */
static __always_inline bool seq_before(__u32 a, __u32 b)
{
	return (__s32)(a - b) < 0;
}

SEC("raw_tp/inet_sock_set_state")
int BPF_PROG(rt_arr_state, const struct sock *sk, int oldstate, int newstate)
{
	struct arrival v = {};
	__u64 key = (__u64)sk;

	if (newstate == RT_TCP_ESTABLISHED) {
		/* passive open only: an active one comes from SYN_SENT */
		if (oldstate != RT_TCP_SYN_RECV ||
		    !port_watched(BPF_CORE_READ(sk, __sk_common.skc_num)) ||
		    BPF_CORE_READ_BITFIELD_PROBED(sk, sk_protocol) != RT_IPPROTO_TCP)
			return 0;
		v.established_ns = bpf_ktime_get_ns();
		v.last_end_seq = BPF_CORE_READ((struct tcp_sock *)sk, rcv_nxt);
		if (bpf_map_update_elem(&arrivals, &key, &v, BPF_ANY))
			rt_count(RT_CNT_ARRIVALS_FULL);
	} else if (newstate == RT_TCP_CLOSE) {
		/*
		 * skc_num may be 0 already (tcp_set_state() puts the port before
		 * it stores the state); inet_sport stays.
		 */
		if (port_watched(bpf_ntohs(BPF_CORE_READ((struct inet_sock *)sk, inet_sport))))
			bpf_map_delete_elem(&arrivals, &key);
	}
	return 0;
}

SEC("raw_tp/tcp_probe")
int BPF_PROG(rt_arr_probe, struct sock *sk, struct sk_buff *skb)
{
	struct tcp_skb_cb *cb;
	struct arrival *a;
	__u64 key = (__u64)sk, now;
	unsigned char *th;
	__u32 len, end_seq;
	__u8 doff = 0;

	/* every segment of every established socket passes here: the port first */
	if (!port_watched(BPF_CORE_READ(sk, __sk_common.skc_num)))
		return 0;
	a = bpf_map_lookup_elem(&arrivals, &key);
	if (!a)
		return 0;
	/* tcp_rcv_established(): skb->data is the TCP header; doff is byte 12's high nibble */
	len = BPF_CORE_READ(skb, len);
	th = BPF_CORE_READ(skb, data);
	if (bpf_probe_read_kernel(&doff, 1, th + 12) || len <= (__u32)(doff >> 4) * 4)
		return 0;
	cb = (void *)skb + bpf_core_field_offset(skb->cb);
	end_seq = BPF_CORE_READ(cb, end_seq);
	now = bpf_ktime_get_ns();
	/* the newest segment first: arrival_recv() re-reads last_end_seq after it zeroes */
	a->last_data_ns = now;
	if (seq_before(a->last_end_seq, end_seq))
		a->last_end_seq = end_seq;
	if (!a->first_unread_ns)
		a->first_unread_ns = now;
	return 0;
}

/*
 * A new entry for a connection established before its port was watched (or
 * before the daemon started): handshake and earlier bytes unknown.
 */
static __always_inline struct arrival *arrival_late_entry(struct sock *sk, __u64 key, __u16 port)
{
	struct arrival v = {};
	int state;

	if (!port_watched(port) || BPF_CORE_READ_BITFIELD_PROBED(sk, sk_protocol) != RT_IPPROTO_TCP)
		return NULL;
	/* a closed socket gets no TCP_CLOSE again to delete the entry */
	state = BPF_CORE_READ(sk, __sk_common.skc_state);
	if (state != RT_TCP_ESTABLISHED && state != RT_TCP_CLOSE_WAIT)
		return NULL;
	v.last_end_seq = BPF_CORE_READ((struct tcp_sock *)sk, rcv_nxt);
	if (bpf_map_update_elem(&arrivals, &key, &v, BPF_NOEXIST)) {
		rt_count(RT_CNT_ARRIVALS_FULL);
		return NULL;
	}
	return bpf_map_lookup_elem(&arrivals, &key);
}

static __always_inline struct sock *arrival_sk(struct socket *sock)
{
	struct sock *sk = BPF_CORE_READ(sock, sk);
	__u16 family;

	if (!sk)
		return NULL;
	family = BPF_CORE_READ(sk, __sk_common.skc_family);
	return family == RT_AF_INET_K || family == RT_AF_INET6_K ? sk : NULL;
}

/* At an accept's exit: learn the listener's port and follow this connection. */
static __always_inline void arrival_accepted(struct socket *sock)
{
	struct sock *sk;
	__u64 key;
	__u16 port;

	if (!rt_arrival_on || !sock)
		return;
	sk = arrival_sk(sock);
	if (!sk)
		return;
	port = BPF_CORE_READ(sk, __sk_common.skc_num);
	if (!port)
		return;
	rt_watch_ports[port] = 1;
	key = (__u64)sk;
	if (!bpf_map_lookup_elem(&arrivals, &key))
		arrival_late_entry(sk, key, port);
}

/*
 * At the exit of a read that returned bytes: the SOCK_ARRIVAL record (before
 * the RECV record, same ts), then whether the read drained the socket.
 */
static __always_inline void arrival_recv(struct sock_args *args, __u64 ts, __u64 id)
{
	struct rt_ev_sock_arrival *e;
	struct arrival *a;
	struct sock *sk;
	__u32 copied, rcv_nxt, end_seq;
	__u64 key;

	if (!rt_arrival_on)
		return;
	sk = arrival_sk((void *)args->sock);
	if (!sk)
		return;
	key = (__u64)sk;
	a = bpf_map_lookup_elem(&arrivals, &key);
	if (!a) {
		/* what this read returned arrived unseen: from the next read on */
		a = arrival_late_entry(sk, key, BPF_CORE_READ(sk, __sk_common.skc_num));
		if (!a)
			return;
	} else {
		e = RT_RESERVE(struct rt_ev_sock_arrival, RT_EV_SOCK_ARRIVAL);
		if (e) {
			rt_hdr(&e->hdr, RT_EV_SOCK_ARRIVAL, sizeof(*e), ts, id >> 32, (__u32)id);
			e->data_ns = a->first_unread_ns;
			e->established_ns = a->established_ns;
			e->fd = args->fd;
			e->flags = a->flags;
			RT_SUBMIT(e);
		}
	}

	end_seq = a->last_end_seq;
	copied = BPF_CORE_READ((struct tcp_sock *)sk, copied_seq);
	rcv_nxt = BPF_CORE_READ((struct tcp_sock *)sk, rcv_nxt);
	if (copied == rcv_nxt && !seq_before(copied, end_seq)) {
		a->first_unread_ns = 0;
		a->flags &= ~RT_ARR_LEFT_UNREAD;
		/* a segment seen by tcp_probe since end_seq was read: it is unread */
		if (a->last_end_seq == end_seq)
			return;
	}
	/*
	 * Bytes stay queued: which segment the oldest came in is not kept, the
	 * newest is an upper bound for it.
	 */
	a->first_unread_ns = a->last_data_ns;
	a->flags |= RT_ARR_LEFT_UNREAD;
}

#endif /* RT_ARRIVAL_BPF_H */
