// SPDX-License-Identifier: GPL-2.0
/*
 * Socket syscalls of traced processes (docs/events.md, "Sockets").
 *
 * Entry programs (one per syscall) check that the fd is a stream socket and
 * stash the arguments per thread; one exit program, attached by the loader
 * to every sys_exit_* tracepoint of the list, emits the record. Data is read
 * at exit, when `ret` says how much was transferred (for a send the buffer is
 * still the caller's and unchanged).
 *
 * arrival.bpf.h adds the kernel's receive path for TCP connections on
 * watched ports: a SOCK_ARRIVAL record before each RECV record that returned
 * bytes (docs/events.md, "Arrival").
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>

#include <reqtrace/event.h>
#include "rt_bpf_shared.h"
#include "rt_common.bpf.h"

#define RT_EAGAIN 11
#define RT_EINPROGRESS 115
#define RT_ERESTARTSYS 512
#define RT_ERESTART_RESTARTBLOCK 516
#define RT_MSG_PEEK 0x2
#define RT_S_IFMT 0170000
#define RT_S_IFSOCK 0140000
#define RT_SOCK_STREAM 1
#define RT_AF_UNIX_K 1
#define RT_AF_INET_K 2
#define RT_AF_INET6_K 10

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Set by the loader: bytes of head and tail (at most RT_SOCK_{HEAD,TAIL}_MAX). */
const volatile __u32 rt_head_bytes = RT_SOCK_HEAD_DEFAULT;
const volatile __u32 rt_tail_bytes = RT_SOCK_TAIL_DEFAULT;

struct sock_args {
	__u64 enter_ns;
	__u64 sock; /* struct socket * behind fd at entry */
	__u64 buf; /* buffer, iovec array or user_msghdr, by syscall */
	__u64 count; /* bytes or iovecs */
	__s32 fd;
	__s32 how; /* shutdown */
	__u16 sys; /* enum rt_sock_syscall */
	__u16 vectored; /* buf is an iovec array (1) or a user_msghdr (2) */
	__u32 live; /* set at entry, cleared at exit */
};

/*
 * Per thread, in the task's own storage: no hashing, no element allocated
 * and freed per syscall (an LRU hash's update, lookup and delete were a
 * third of the per-syscall cost), and a thread killed inside a syscall
 * takes its slot with it. An untraced thread's exit finds no storage at
 * the cost of a pointer test.
 */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct sock_args);
} sock_args SEC(".maps");

/*
 * The record is built here and copied out with bpf_ringbuf_output(), since a
 * reservation needs a constant size. data[] is twice what a record can hold
 * so that every copy's (offset, length) pair, each bounded separately, stays
 * inside the buffer in the verifier's eyes.
 */
#define IO_DATA_BUF (2 * RT_BPF_IO_DATA_MAX)
#define IO_OFF_MASK (RT_BPF_IO_DATA_MAX - 1)
struct io_scratch {
	__u64 ev[sizeof(struct rt_ev_sock_io) / 8]; /* struct rt_ev_sock_io, data[] follows */
	__u8 data[IO_DATA_BUF];
};

#define IO_EV(s) ((struct rt_ev_sock_io *)(s)->ev)

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct io_scratch);
} io_scratch SEC(".maps");

#include "arrival.bpf.h"

/* The LP64 user ABI, the same on x86-64 and arm64 (not a kernel type: no CO-RE relocation). */
struct rt_iovec {
	__u64 base;
	__u64 len;
};

struct rt_user_msghdr {
	__u64 name;
	__s32 namelen;
	__s32 _pad;
	__u64 iov;
	__u64 iovlen;
};

/* 6.2+; weak, so that the object still loads where the kernel lacks it */
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym __weak;

/*
 * The struct socket behind fd in the current task, if it is a stream socket
 * we follow. Walked through BTF pointers: each step is a plain load the
 * verifier guards (a fault reads 0), where a bpf_probe_read_kernel() per
 * field cost a helper call each, a dozen per syscall (enter and exit
 * programs 1.4 us -> 0.7 us, bench_bpf_cost). Only the fd array's slot, a
 * pointer to pointers, is read with the helper. The loader picks these
 * programs where the kernel has bpf_rdonly_cast (6.2+), the _c ones
 * (probe reads) elsewhere.
 */
static __always_inline struct socket *sock_from_fd_btf(long fd)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct fdtable *fdt = task->files->fdt;
	struct file *file = NULL;
	struct socket *sock;
	__u16 family;

	if (fd < 0 || !fdt || fd >= fdt->max_fds)
		return NULL;
	if (bpf_probe_read_kernel(&file, sizeof(file), &fdt->fd[fd]) || !file)
		return NULL;
	file = bpf_rdonly_cast(file, bpf_core_type_id_kernel(struct file));
	if ((file->f_inode->i_mode & RT_S_IFMT) != RT_S_IFSOCK)
		return NULL;
	sock = bpf_rdonly_cast(file->private_data, bpf_core_type_id_kernel(struct socket));
	if (!sock || sock->type != RT_SOCK_STREAM || !sock->sk)
		return NULL;
	family = sock->sk->__sk_common.skc_family;
	if (family != RT_AF_INET_K && family != RT_AF_INET6_K && family != RT_AF_UNIX_K)
		return NULL;
	return sock;
}

/* Through BTF pointers, like sock_from_fd_btf(). */
static __always_inline void read_addrs_btf(struct socket *sock_any, struct rt_sock_addr *local,
					   struct rt_sock_addr *peer)
{
	struct socket *sock = bpf_rdonly_cast(sock_any, bpf_core_type_id_kernel(struct socket));
	struct sock *sk = sock->sk;
	struct inet_sock *inet;
	__u16 family;

	if (!sk)
		return;
	family = sk->__sk_common.skc_family;
	local->family = family;
	peer->family = family;
	if (family == RT_AF_INET_K) {
		*(__u32 *)local->addr = sk->__sk_common.skc_rcv_saddr;
		*(__u32 *)peer->addr = sk->__sk_common.skc_daddr;
	} else if (family == RT_AF_INET6_K) {
		__builtin_memcpy(local->addr, &sk->__sk_common.skc_v6_rcv_saddr, 16);
		__builtin_memcpy(peer->addr, &sk->__sk_common.skc_v6_daddr, 16);
	} else {
		/*
		 * AF_UNIX has no addresses worth naming, but the two ends of a
		 * connection must be matched (a front end talking to its engine
		 * process): each end's socket inode, as `ss -x` shows them.
		 */
		struct unix_sock *u =
			bpf_rdonly_cast(sk, bpf_core_type_id_kernel(struct unix_sock));
		struct sock *peer_sk = u->peer;

		*(__u64 *)local->addr = sock->file->f_inode->i_ino;
		if (peer_sk)
			*(__u64 *)peer->addr = peer_sk->sk_socket->file->f_inode->i_ino;
		return;
	}
	/*
	 * skc_num is zeroed when the socket leaves its port (__inet_put_port,
	 * e.g. on a read that returns the peer's FIN after our shutdown);
	 * inet_sport keeps the port for the socket's lifetime.
	 */
	inet = bpf_rdonly_cast(sk, bpf_core_type_id_kernel(struct inet_sock));
	local->port = bpf_ntohs(inet->inet_sport);
	if (!local->port)
		local->port = sk->__sk_common.skc_num;
	peer->port = bpf_ntohs(sk->__sk_common.skc_dport);
}

/*
 * The struct socket behind fd in the current task, if it is a stream socket
 * we follow: a bpf_probe_read_kernel() per field, for kernels before 6.2.
 */
static __always_inline struct socket *sock_from_fd_read(long fd)
{
	struct task_struct *task = (void *)bpf_get_current_task();
	struct fdtable *fdt = BPF_CORE_READ(task, files, fdt);
	struct file **fds;
	struct file *file = NULL;
	struct socket *sock;
	struct sock *sk;
	__u16 family;

	if (fd < 0 || !fdt || fd >= BPF_CORE_READ(fdt, max_fds))
		return NULL;
	fds = BPF_CORE_READ(fdt, fd);
	if (bpf_probe_read_kernel(&file, sizeof(file), &fds[fd]) || !file)
		return NULL;
	if ((BPF_CORE_READ(file, f_inode, i_mode) & RT_S_IFMT) != RT_S_IFSOCK)
		return NULL;
	sock = BPF_CORE_READ(file, private_data);
	if (!sock || BPF_CORE_READ(sock, type) != RT_SOCK_STREAM)
		return NULL;
	sk = BPF_CORE_READ(sock, sk);
	family = BPF_CORE_READ(sk, __sk_common.skc_family);
	if (family != RT_AF_INET_K && family != RT_AF_INET6_K && family != RT_AF_UNIX_K)
		return NULL;
	return sock;
}

static __always_inline void read_addrs_read(struct socket *sock, struct rt_sock_addr *local,
					    struct rt_sock_addr *peer)
{
	struct sock *sk = BPF_CORE_READ(sock, sk);
	__u16 family;

	if (!sk)
		return;
	family = BPF_CORE_READ(sk, __sk_common.skc_family);
	local->family = family;
	peer->family = family;
	if (family == RT_AF_INET_K) {
		BPF_CORE_READ_INTO((__u32 *)local->addr, sk, __sk_common.skc_rcv_saddr);
		BPF_CORE_READ_INTO((__u32 *)peer->addr, sk, __sk_common.skc_daddr);
	} else if (family == RT_AF_INET6_K) {
		BPF_CORE_READ_INTO((struct in6_addr *)local->addr, sk,
				   __sk_common.skc_v6_rcv_saddr);
		BPF_CORE_READ_INTO((struct in6_addr *)peer->addr, sk, __sk_common.skc_v6_daddr);
	} else {
		/*
		 * AF_UNIX has no addresses worth naming, but the two ends of a
		 * connection must be matched (a front end talking to its engine
		 * process): each end's socket inode, as `ss -x` shows them.
		 */
		struct sock *peer_sk = BPF_CORE_READ((struct unix_sock *)sk, peer);

		*(__u64 *)local->addr = BPF_CORE_READ(sock, file, f_inode, i_ino);
		if (peer_sk)
			*(__u64 *)peer->addr =
				BPF_CORE_READ(peer_sk, sk_socket, file, f_inode, i_ino);
		return;
	}
	/*
	 * skc_num is zeroed when the socket leaves its port (__inet_put_port,
	 * e.g. on a read that returns the peer's FIN after our shutdown);
	 * inet_sport keeps the port for the socket's lifetime.
	 */
	local->port = bpf_ntohs(BPF_CORE_READ((struct inet_sock *)sk, inet_sport));
	if (!local->port)
		local->port = BPF_CORE_READ(sk, __sk_common.skc_num);
	peer->port = bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport));
}

/* btf is a constant in each program: the other branch is not compiled in. */
static __always_inline struct socket *sock_from_fd(long fd, const bool btf)
{
	return btf ? sock_from_fd_btf(fd) : sock_from_fd_read(fd);
}

static __always_inline void read_addrs(struct socket *sock, struct rt_sock_addr *local,
				       struct rt_sock_addr *peer, const bool btf)
{
	if (btf)
		read_addrs_btf(sock, local, peer);
	else
		read_addrs_read(sock, local, peer);
}

static __always_inline int enter(__u16 sys, long fd, __u64 buf, __u64 count, __u16 vectored,
				 __s32 how, const bool btf)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct sock_args *a;
	struct socket *sock;

	if (!rt_traced(id >> 32))
		return 0;
	sock = sock_from_fd(fd, btf);
	if (!sock)
		return 0;
	a = bpf_task_storage_get(&sock_args, bpf_get_current_task_btf(), NULL,
				 BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!a) {
		rt_count(RT_CNT_ARGS_FULL);
		return 0;
	}
	a->enter_ns = bpf_ktime_get_ns();
	a->sock = (__u64)sock;
	a->buf = buf;
	a->count = count;
	a->fd = fd;
	a->how = how;
	a->sys = sys;
	a->vectored = vectored;
	a->live = 1;
	return 0;
}

#define ARG(i) (ctx->args[i])

/*
 * Each entry program twice: NAME walks BTF pointers, NAME_c reads with
 * bpf_probe_read_kernel(); the loader loads one set (bpf_attach.c).
 */
#define RT_ENTER(name, tp, body)                                                                   \
	static __always_inline int name##_body(struct trace_event_raw_sys_enter *ctx,              \
					       const bool btf) body SEC("tp/syscalls/" tp) int     \
	name(struct trace_event_raw_sys_enter *ctx)                                                \
	{                                                                                          \
		return name##_body(ctx, true);                                                     \
	}                                                                                          \
	SEC("tp/syscalls/" tp) int name##_c(struct trace_event_raw_sys_enter *ctx)                 \
	{                                                                                          \
		return name##_body(ctx, false);                                                    \
	}

RT_ENTER(rt_enter_read, "sys_enter_read",
	 { return enter(RT_SYS_READ, ARG(0), ARG(1), ARG(2), 0, 0, btf); })

RT_ENTER(rt_enter_readv, "sys_enter_readv",
	 { return enter(RT_SYS_READV, ARG(0), ARG(1), ARG(2), 1, 0, btf); })

/* A peek is read again later: recording it would count its bytes twice. */
RT_ENTER(rt_enter_recvfrom, "sys_enter_recvfrom", {
	if (ARG(3) & RT_MSG_PEEK)
		return 0;
	return enter(RT_SYS_RECVFROM, ARG(0), ARG(1), ARG(2), 0, 0, btf);
})

RT_ENTER(rt_enter_recvmsg, "sys_enter_recvmsg", {
	if (ARG(2) & RT_MSG_PEEK)
		return 0;
	return enter(RT_SYS_RECVMSG, ARG(0), ARG(1), 0, 2, 0, btf);
})

RT_ENTER(rt_enter_write, "sys_enter_write",
	 { return enter(RT_SYS_WRITE, ARG(0), ARG(1), ARG(2), 0, 0, btf); })

RT_ENTER(rt_enter_writev, "sys_enter_writev",
	 { return enter(RT_SYS_WRITEV, ARG(0), ARG(1), ARG(2), 1, 0, btf); })

RT_ENTER(rt_enter_sendto, "sys_enter_sendto",
	 { return enter(RT_SYS_SENDTO, ARG(0), ARG(1), ARG(2), 0, 0, btf); })

RT_ENTER(rt_enter_sendmsg, "sys_enter_sendmsg",
	 { return enter(RT_SYS_SENDMSG, ARG(0), ARG(1), 0, 2, 0, btf); })

RT_ENTER(rt_enter_accept, "sys_enter_accept",
	 { return enter(RT_SYS_ACCEPT, ARG(0), 0, 0, 0, 0, btf); })

RT_ENTER(rt_enter_accept4, "sys_enter_accept4",
	 { return enter(RT_SYS_ACCEPT4, ARG(0), 0, 0, 0, 0, btf); })

RT_ENTER(rt_enter_connect, "sys_enter_connect",
	 { return enter(RT_SYS_CONNECT, ARG(0), 0, 0, 0, 0, btf); })

RT_ENTER(rt_enter_close, "sys_enter_close",
	 { return enter(RT_SYS_CLOSE, ARG(0), 0, 0, 0, 0, btf); })

RT_ENTER(rt_enter_shutdown, "sys_enter_shutdown",
	 { return enter(RT_SYS_SHUTDOWN, ARG(0), 0, 0, 0, ARG(1), btf); })

static __always_inline int emit_conn(struct sock_args *a, long ret, __u64 ts, __u64 id,
				     const bool btf)
{
	__u16 kind = a->sys == RT_SYS_CONNECT ? RT_EV_SOCK_CONNECT : RT_EV_SOCK_ACCEPT;
	struct socket *sock = (void *)a->sock;
	struct rt_ev_sock_conn *e;

	if (kind == RT_EV_SOCK_CONNECT) {
		if (ret != 0 && ret != -RT_EINPROGRESS)
			return 0;
	} else {
		if (ret < 0)
			return 0;
		/* the new connection was installed in the fd table before exit */
		sock = sock_from_fd(ret, btf);
		arrival_accepted(sock);
	}
	e = RT_RESERVE(struct rt_ev_sock_conn, kind);
	if (!e)
		return 0;
	rt_hdr(&e->hdr, kind, sizeof(*e), ts, id >> 32, (__u32)id);
	e->enter_ns = a->enter_ns;
	e->ret = ret;
	e->fd = kind == RT_EV_SOCK_CONNECT ? a->fd : ret;
	e->listen_fd = kind == RT_EV_SOCK_CONNECT ? -1 : a->fd;
	if (sock)
		read_addrs(sock, &e->local, &e->peer, btf);
	RT_SUBMIT(e);
	return 0;
}

static __always_inline int emit_close(struct sock_args *a, long ret, __u64 ts, __u64 id)
{
	__u16 kind = a->sys == RT_SYS_CLOSE ? RT_EV_SOCK_CLOSE : RT_EV_SOCK_SHUTDOWN;
	struct rt_ev_sock_close *e;

	e = RT_RESERVE(struct rt_ev_sock_close, kind);
	if (!e)
		return 0;
	rt_hdr(&e->hdr, kind, sizeof(*e), ts, id >> 32, (__u32)id);
	e->enter_ns = a->enter_ns;
	e->ret = ret;
	e->fd = a->fd;
	e->how = a->sys == RT_SYS_CLOSE ? -1 : a->how;
	RT_SUBMIT(e);
	return 0;
}

/* Copy n user bytes to data[off]; both bounded so the verifier can see it. */
static __always_inline void copy_user(struct io_scratch *s, __u64 off, __u64 n, __u64 src,
				      __u16 *flags)
{
	off &= IO_OFF_MASK;
	if (n > RT_BPF_IO_DATA_MAX)
		n = RT_BPF_IO_DATA_MAX;
	barrier_var(n);
	if (n && bpf_probe_read_user(&s->data[off], n, (void *)src))
		*flags |= RT_IO_PARTIAL_COPY;
}

struct capture_ctx {
	__u64 buf; /* the buffer, or the iovec array */
	__u64 nseg;
	__u64 ret;
	__u64 head, tail, tstart;
	__u64 pos; /* transfer offset of the next segment */
	__u16 vectored;
	__u16 flags;
};

/*
 * One segment (a buffer or one iovec) of a transfer, as a bpf_loop callback:
 * an open-coded loop over 16 iovecs with two variable copies each exceeds
 * the verifier's 1M-instruction budget (state explosion). Segments are
 * filled in order, so transfer offset pos lies in the first segment whose
 * end passes it.
 */
static long capture_seg(__u32 i, struct capture_ctx *c)
{
	struct io_scratch *s;
	struct rt_iovec seg;
	__u64 len, from, n;
	__u32 zero = 0;

	s = bpf_map_lookup_elem(&io_scratch, &zero);
	if (!s || i >= c->nseg || c->pos >= c->ret)
		return 1;
	if (c->vectored) {
		if (bpf_probe_read_user(&seg, sizeof(seg), (void *)(c->buf + i * sizeof(seg)))) {
			c->flags |= RT_IO_PARTIAL_COPY;
			return 1;
		}
	} else {
		seg.base = c->buf;
		seg.len = c->ret;
	}
	len = seg.len;
	if (len > c->ret - c->pos)
		len = c->ret - c->pos;
	if (c->pos < c->head) {
		n = c->head - c->pos;
		copy_user(s, c->pos, n < len ? n : len, seg.base, &c->flags);
	}
	if (c->tail && c->pos + len > c->tstart) {
		from = c->pos > c->tstart ? c->pos : c->tstart;
		copy_user(s, c->head + (from - c->tstart), c->pos + len - from,
			  seg.base + (from - c->pos), &c->flags);
	}
	c->pos += len;
	return 0;
}

/* Head and tail of a transfer of `ret` bytes into data[], per docs/events.md. */
static __always_inline void capture(struct io_scratch *s, struct sock_args *a, __u64 ret)
{
	struct capture_ctx c = {
		.buf = a->buf,
		.nseg = a->vectored ? a->count : 1,
		.ret = ret,
		.head = rt_head_bytes,
		.tail = rt_tail_bytes,
		.vectored = a->vectored != 0,
	};
	struct rt_user_msghdr msg;

	if (ret <= c.head + c.tail) {
		c.head = ret;
		c.tail = 0;
	}
	c.tstart = ret - c.tail;
	if (a->vectored == 2) {
		if (bpf_probe_read_user(&msg, sizeof(msg), (void *)a->buf)) {
			IO_EV(s)->flags = RT_IO_PARTIAL_COPY;
			return;
		}
		c.buf = msg.iov;
		c.nseg = msg.iovlen;
	}
	bpf_loop(RT_IOV_MAX, capture_seg, &c, 0);
	if (c.pos < ret) {
		/* more iovecs than we walk (or a bad one): head may be short, tail unknown */
		if (!(c.flags & RT_IO_PARTIAL_COPY))
			c.flags |= RT_IO_IOV_TRUNC;
		if (c.pos < c.head)
			c.head = c.pos;
		c.tail = 0;
	}
	IO_EV(s)->head_len = c.head;
	IO_EV(s)->tail_len = c.tail;
	IO_EV(s)->flags = c.flags;
}

static __always_inline int emit_io(struct sock_args *a, long ret, __u64 ts, __u64 id,
				   const bool btf)
{
	__u16 kind = a->sys <= RT_SYS_RECVMSG ? RT_EV_SOCK_RECV : RT_EV_SOCK_SEND;
	struct rt_ev_sock_io *e;
	struct io_scratch *s;
	__u32 zero = 0;
	__u64 len, size;

	s = bpf_map_lookup_elem(&io_scratch, &zero);
	if (!s)
		return 0;
	e = IO_EV(s);
	__builtin_memset(e, 0, sizeof(*e));
	e->enter_ns = a->enter_ns;
	e->ret = ret;
	e->fd = a->fd;
	e->syscall = a->sys;
	if (ret > 0)
		capture(s, a, ret);
	read_addrs((void *)a->sock, &e->local, &e->peer, btf);

	len = (__u64)e->head_len + e->tail_len;
	if (len > RT_BPF_IO_DATA_MAX)
		len = RT_BPF_IO_DATA_MAX;
	barrier_var(len);
	/* zero the alignment padding instead of shipping stale bytes */
	*(__u64 *)&s->data[len] = 0;
	size = RT_EVENT_SIZE_ALIGN(sizeof(*e) + len);
	rt_hdr(&e->hdr, kind, size, ts, id >> 32, (__u32)id);
	if (size > sizeof(*s))
		return 0;
	barrier_var(size);
	if (bpf_ringbuf_output(&rt_ring, s, size, rt_wake_flags(size, false)))
		rt_lost(kind);
	return 0;
}

static __always_inline int sys_exit(struct trace_event_raw_sys_exit *ctx, const bool btf)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct sock_args *p, a;
	long ret = ctx->ret;
	__u64 ts;

	p = bpf_task_storage_get(&sock_args, bpf_get_current_task_btf(), NULL, 0);
	if (!p || !p->live)
		return 0;
	ts = bpf_ktime_get_ns();
	a = *p;
	p->live = 0;
	/*
	 * EAGAIN moved nothing (docs/events.md). ERESTARTSYS..ERESTART_RESTARTBLOCK
	 * never reach the caller: the syscall is restarted (a new entry follows)
	 * or the caller sees EINTR.
	 */
	if (ret == -RT_EAGAIN || (ret <= -RT_ERESTARTSYS && ret >= -RT_ERESTART_RESTARTBLOCK))
		return 0;
	switch (a.sys) {
	case RT_SYS_ACCEPT:
	case RT_SYS_ACCEPT4:
	case RT_SYS_CONNECT:
		return emit_conn(&a, ret, ts, id, btf);
	case RT_SYS_CLOSE:
	case RT_SYS_SHUTDOWN:
		return emit_close(&a, ret, ts, id);
	default:
		if (ret > 0 && a.sys <= RT_SYS_RECVMSG)
			arrival_recv(&a, ts, id);
		return emit_io(&a, ret, ts, id, btf);
	}
}

/* Attached by the loader to sys_exit_* of every syscall above (this SEC is one of them). */
SEC("tp/syscalls/sys_exit_read")
int rt_sys_exit(struct trace_event_raw_sys_exit *ctx)
{
	return sys_exit(ctx, true);
}

SEC("tp/syscalls/sys_exit_read")
int rt_sys_exit_c(struct trace_event_raw_sys_exit *ctx)
{
	return sys_exit(ctx, false);
}
