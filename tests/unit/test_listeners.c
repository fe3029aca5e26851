/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Listen-queue health: the /proc/net/tcp{,6}, sock_diag and netstat parsers
 * on real and hostile input, and one refresh against this process's own
 * listening sockets (accept queue, limit, the most seen, the overflow
 * counter of its network namespace).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <setjmp.h>
#include <cmocka.h>

#include "daemon/listeners.h"
#include "daemon/targets.h"

#define HDR                                                                                        \
	"  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  "      \
	"timeout inode\n"

static int parse(const char *text, bool v6, struct rt_listen_sock *out, int max, uint32_t *skipped,
		 uint32_t *bad)
{
	return rt_listen_parse_tcp(text, strlen(text), v6, out, max, skipped, bad, NULL);
}

static void test_tcp_v4(void **state)
{
	static const char text[] = HDR
		"   0: 0100007F:1F90 00000000:0000 0A 00000000:00000003 00:00000000 00000000     "
		"0        0 123456 1 0000000000000000 100 0 0 10 0\n"
		"   1: 00000000:07E8 00000000:0000 0A 00000000:00000000 00:00000000 00000000     "
		"0        0 640 1 00000000f0fa4232 100 0 0 10 0\n"
		"   2: 0100007F:C6E4 0100007F:9AA3 06 00000000:00000000 03:00000CDD 00000000     "
		"0        0 0 3 00000000ec23b84d\n"
		/* past the first non-listener: the reader stops there */
		"   3: 0100007F:1F91 00000000:0000 0A 00000000:00000001 00:00000000 00000000     "
		"0        0 777 1 0000000000000000 100 0 0 10 0\n";
	struct rt_listen_sock s[4];
	uint32_t skipped = 0, bad = 0;
	char buf[RT_LISTEN_ADDR_LEN];
	bool ended;

	(void)state;
	assert_int_equal(parse(text, false, s, 4, &skipped, &bad), 2);
	assert_int_equal(s[0].family, AF_INET);
	assert_int_equal(s[0].port, 8080);
	assert_int_equal(s[0].queue, 3);
	assert_int_equal(s[0].limit, 0); /* not in the file */
	assert_int_equal(s[0].inode, 123456);
	rt_listen_addr_str(&s[0], buf, sizeof(buf));
	assert_string_equal(buf, "127.0.0.1:8080");
	rt_listen_addr_str(&s[1], buf, sizeof(buf));
	assert_string_equal(buf, "0.0.0.0:2024");
	assert_int_equal(s[1].inode, 640);
	assert_int_equal(skipped, 0);
	assert_int_equal(bad, 0);
	assert_int_equal(rt_listen_parse_tcp(text, strlen(text), false, s, 4, NULL, NULL, &ended),
			 2);
	assert_true(ended); /* met the established socket */
	assert_int_equal(rt_listen_parse_tcp(text, 300, false, s, 4, NULL, NULL, &ended), 1);
	assert_false(ended);

	/* the bound: one kept, one counted */
	assert_int_equal(parse(text, false, s, 1, &skipped, &bad), 1);
	assert_int_equal(skipped, 1);
	assert_int_equal(parse(text, false, s, 0, &skipped, &bad), 0);
	assert_int_equal(skipped, 3);
}

static void test_tcp_v6(void **state)
{
	static const char text[] = HDR
		"   0: 00000000000000000000000001000000:1F90 00000000000000000000000000000000:0000 "
		"0A 00000000:0000000C 00:00000000 00000000     0        0 4242 1 0 100 0 0 10 0\n"
		"   1: 000080FE00000000FF005452FE123456:0050 00000000000000000000000000000000:0000 "
		"0A 00000000:00000000 00:00000000 00000000     0        0 4243 1 0 100 0 0 10 0\n";
	struct rt_listen_sock s[2];
	char buf[RT_LISTEN_ADDR_LEN];

	(void)state;
	assert_int_equal(parse(text, true, s, 2, NULL, NULL), 2);
	assert_int_equal(s[0].family, AF_INET6);
	assert_int_equal(s[0].queue, 12);
	rt_listen_addr_str(&s[0], buf, sizeof(buf));
	assert_string_equal(buf, "[::1]:8080");
	rt_listen_addr_str(&s[1], buf, sizeof(buf));
	assert_string_equal(buf, "[fe80::5254:ff:5634:12fe]:80");
	/* an IPv6 line read as IPv4 does not parse */
	assert_int_equal(parse(text, false, s, 2, NULL, NULL), 0);
}

static void test_tcp_hostile(void **state)
{
	static const char *const lines[] = {
		/* truncated before the inode */
		"   0: 0100007F:1F90 00000000:0000 0A 00000000:00000003 00:00000000 00000000     "
		"0\n",
		/* an inode past 64 bits */
		"   0: 0100007F:1F90 00000000:0000 0A 00000000:00000003 00:00000000 00000000     0 "
		"       0 99999999999999999999999 1 0\n",
		/* a port of five hex digits */
		"   0: 0100007F:1F900 00000000:0000 0A 00000000:00000003 00:00000000 00000000 0 0 "
		"5\n",
		/* a queue of nine */
		"   0: 0100007F:1F90 00000000:0000 0A 00000000:000000003 00:00000000 00000000 0 0 "
		"5\n",
		/* a short address, no colon, a missing column */
		"   0: 7F:1F90 00000000:0000 0A 00000000:00000003 00:00000000 00000000 0 0 5\n",
		"   0: 0100007F1F90 00000000:0000 0A 00000000:00000003 00:00000000 00000000 0 0 "
		"5\n",
		"   0: 0100007F:1F90 00000000:0000 0A 00000000:00000003 00000000 0 0 5\n",
		/* no sl, a non-hex state, a negative inode */
		"0100007F:1F90 00000000:0000 0A 00000000:00000003 00:00000000 00000000 0 0 5\n",
		"   0: 0100007F:1F90 00000000:0000 ZZ 00000000:00000003 00:00000000 00000000 0 0 "
		"5\n",
		"   0: 0100007F:1F90 00000000:0000 0A 00000000:00000003 00:00000000 00000000 0 0 "
		"-5\n",
		/* unterminated: a read may have cut the inode short */
		"   0: 0100007F:1F90 00000000:0000 0A 00000000:00000003 00:00000000 00000000 0 0 5",
		"\n",
		"",
	};
	struct rt_listen_sock s[2];
	char text[512];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		uint32_t bad = 0;

		snprintf(text, sizeof(text), "%s%s", HDR, lines[i]);
		assert_int_equal(parse(text, false, s, 2, NULL, &bad), 0);
		assert_int_equal(bad, lines[i][0] ? 1 : 0); /* the header is never counted */
	}
	/* the largest values that fit are kept as they are */
	snprintf(
		text, sizeof(text),
		"%s   0: FFFFFFFF:FFFF 00000000:0000 0A FFFFFFFF:FFFFFFFF 00:00000000 00000000 0 0 "
		"18446744073709551615\n",
		HDR);
	assert_int_equal(parse(text, false, s, 2, NULL, NULL), 1);
	assert_int_equal(s[0].port, 65535);
	assert_int_equal(s[0].queue, UINT32_MAX);
	assert_true(s[0].inode == UINT64_MAX);
	assert_int_equal(rt_listen_parse_tcp(NULL, 10, false, s, 2, NULL, NULL, NULL), 0);
}

/* Every prefix of a real text, and random bytes: nothing read past the end (ASan). */
static void test_tcp_prefixes_and_noise(void **state)
{
	static const char text[] = HDR
		"   0: 0100007F:1F90 00000000:0000 0A 00000000:00000003 00:00000000 00000000     "
		"0        0 123456 1 0000000000000000 100 0 0 10 0\n";
	struct rt_listen_sock s[2];
	size_t len = strlen(text), i;
	unsigned int seed = 17;

	(void)state;
	for (i = 0; i <= len; i++) {
		char *copy = malloc(i ? i : 1);

		memcpy(copy, text, i);
		assert_int_equal(rt_listen_parse_tcp(copy, i, false, s, 2, NULL, NULL, NULL),
				 i == len ? 1 : 0);
		free(copy);
	}
	for (i = 0; i < 2000; i++) {
		size_t n = (size_t)rand_r(&seed) % 400, k;
		char *noise = malloc(n ? n : 1);

		for (k = 0; k < n; k++) /* mostly the alphabet of the file, to get deep */
			noise[k] = "0123456789ABCDEF: \n\t\0xz"[rand_r(&seed) % 24];
		assert_true(rt_listen_parse_tcp(noise, n, i % 2, s, 2, NULL, NULL, NULL) <= 2);
		free(noise);
	}
}

static size_t put_diag(unsigned char *buf, size_t off, uint8_t family, uint8_t state, uint16_t port,
		       uint32_t rq, uint32_t wq, uint32_t inode)
{
	struct nlmsghdr h = { .nlmsg_len = NLMSG_LENGTH(sizeof(struct inet_diag_msg)),
			      .nlmsg_type = SOCK_DIAG_BY_FAMILY };
	struct inet_diag_msg m = { .idiag_family = family, .idiag_state = state };

	m.id.idiag_sport = htons(port);
	if (family == AF_INET)
		m.id.idiag_src[0] = htonl(0x7f000001);
	else
		m.id.idiag_src[3] = htonl(1);
	m.idiag_rqueue = rq;
	m.idiag_wqueue = wq;
	m.idiag_inode = inode;
	memcpy(buf + off, &h, sizeof(h));
	memcpy(buf + off + NLMSG_HDRLEN, &m, sizeof(m));
	return off + NLMSG_ALIGN(h.nlmsg_len);
}

static size_t put_ctl(unsigned char *buf, size_t off, uint16_t type, int error)
{
	struct nlmsghdr h = { .nlmsg_type = type };
	struct nlmsgerr e = { .error = error };

	h.nlmsg_len = type == NLMSG_ERROR ? NLMSG_LENGTH(sizeof(e)) : NLMSG_LENGTH(sizeof(int));
	memset(buf + off, 0, h.nlmsg_len);
	memcpy(buf + off, &h, sizeof(h));
	if (type == NLMSG_ERROR)
		memcpy(buf + off + NLMSG_HDRLEN, &e, sizeof(e));
	return off + NLMSG_ALIGN(h.nlmsg_len);
}

static void test_diag(void **state)
{
	_Alignas(8) unsigned char buf[2048];
	struct rt_listen_sock s[4];
	uint32_t skipped = 0;
	char a[RT_LISTEN_ADDR_LEN];
	bool done;
	size_t len = 0;

	(void)state;
	len = put_diag(buf, len, AF_INET, 10, 8080, 3, 512, 111);
	len = put_diag(buf, len, AF_INET, 1, 8080, 0, 0, 112); /* established: not ours */
	len = put_diag(buf, len, AF_INET6, 10, 9090, 0, 4096, 113);
	len = put_ctl(buf, len, NLMSG_DONE, 0);
	assert_int_equal(rt_listen_parse_diag(buf, len, s, 4, &skipped, &done), 2);
	assert_true(done);
	assert_int_equal(s[0].queue, 3);
	assert_int_equal(s[0].limit, 512);
	assert_int_equal(s[0].inode, 111);
	rt_listen_addr_str(&s[0], a, sizeof(a));
	assert_string_equal(a, "127.0.0.1:8080");
	rt_listen_addr_str(&s[1], a, sizeof(a));
	assert_string_equal(a, "[::1]:9090");
	assert_int_equal(s[1].limit, 4096);

	/* the bound */
	assert_int_equal(rt_listen_parse_diag(buf, len, s, 1, &skipped, &done), 1);
	assert_int_equal(skipped, 1);

	/* an error reply, and one whose error is not an errno */
	assert_int_equal(
		rt_listen_parse_diag(buf, put_ctl(buf, 0, NLMSG_ERROR, -EPERM), s, 4, NULL, &done),
		-EPERM);
	assert_true(done);
	assert_int_equal(
		rt_listen_parse_diag(buf, put_ctl(buf, 0, NLMSG_ERROR, 5), s, 4, NULL, &done),
		-EINVAL);
}

static void test_diag_hostile(void **state)
{
	_Alignas(8) unsigned char buf[1024];
	struct rt_listen_sock s[4];
	struct nlmsghdr h;
	unsigned int seed = 3;
	size_t len, i;
	bool done;

	(void)state;
	len = put_diag(buf, 0, AF_INET, 10, 8080, 3, 512, 111);
	/* every truncation: never a record from a message that did not all arrive */
	for (i = 0; i < len; i++)
		assert_true(rt_listen_parse_diag(buf, i, s, 4, NULL, &done) <= 0);
	assert_int_equal(rt_listen_parse_diag(buf, len, s, 4, NULL, &done), 1);
	assert_false(done);

	/* a length past the buffer, a length below the header, a short body */
	memcpy(&h, buf, sizeof(h));
	h.nlmsg_len = 0xffffffffu;
	memcpy(buf, &h, sizeof(h));
	assert_int_equal(rt_listen_parse_diag(buf, len, s, 4, NULL, &done), -EINVAL);
	h.nlmsg_len = 4;
	memcpy(buf, &h, sizeof(h));
	assert_int_equal(rt_listen_parse_diag(buf, len, s, 4, NULL, &done), -EINVAL);
	h.nlmsg_len = NLMSG_LENGTH(8);
	memcpy(buf, &h, sizeof(h));
	assert_int_equal(rt_listen_parse_diag(buf, NLMSG_LENGTH(8), s, 4, NULL, &done), 0);
	/* an unknown family */
	len = put_diag(buf, 0, 77, 10, 8080, 3, 512, 111);
	assert_int_equal(rt_listen_parse_diag(buf, len, s, 4, NULL, &done), 0);
	/* a truncated error reply */
	len = put_ctl(buf, 0, NLMSG_ERROR, -EPERM);
	memcpy(&h, buf, sizeof(h));
	h.nlmsg_len = NLMSG_HDRLEN + 2;
	memcpy(buf, &h, sizeof(h));
	assert_int_equal(rt_listen_parse_diag(buf, len, s, 4, NULL, &done), -EINVAL);

	for (i = 0; i < 5000; i++) {
		size_t n = (size_t)rand_r(&seed) % sizeof(buf), k;

		for (k = 0; k < n; k++)
			buf[k] = (unsigned char)rand_r(&seed);
		if (n >= 4 && i % 2) { /* plausible lengths, to get past the first header */
			uint32_t l = (uint32_t)(rand_r(&seed) % (n + 8));

			memcpy(buf, &l, 4);
		}
		assert_true(rt_listen_parse_diag(buf, n, s, 4, NULL, &done) <= 4);
	}
}

static void test_netstat(void **state)
{
	static const char real[] =
		"TcpExt: SyncookiesSent SyncookiesRecv ListenOverflows ListenDrops TCPHPHits\n"
		"TcpExt: 0 0 7 9 934474\n"
		"IpExt: InNoRoutes InTruncatedPkts\n"
		"IpExt: 0 0\n";
	static const char *const bad[] = {
		"TcpExt: ListenOverflows ListenDrops\n",
		"TcpExt: ListenOverflows ListenDrops\nIpExt: 1 2\n",
		"TcpExt: ListenOverflows ListenDrops\nTcpExt: 1\n",
		"TcpExt: ListenOverflows\nTcpExt: 1\n",
		"TcpExt: ListenOverflows ListenDrops\nTcpExt: 1 x2\n",
		"TcpExt: ListenOverflows ListenDrops\nTcpExt: 1 -2\n",
		"TcpExt: ListenOverflows ListenDrops\nTcpExt: 1 18446744073709551616\n",
		"TcpExt: ListenOverflowsX ListenDrops\nTcpExt: 1 2\n",
		"IpExt: ListenOverflows ListenDrops\nIpExt: 1 2\n",
		"TcpExt: ListenOverflows ListenDrops",
		"",
	};
	static const char last[] = "TcpExt: ListenDrops ListenOverflows\n"
				   "TcpExt: 18446744073709551615 3";
	uint64_t o = 0, d = 0;
	size_t i;

	(void)state;
	assert_int_equal(rt_listen_parse_netstat(real, strlen(real), &o, &d), 0);
	assert_int_equal(o, 7);
	assert_int_equal(d, 9);
	/* the last line need not end in a newline; the largest value fits */
	assert_int_equal(rt_listen_parse_netstat(last, strlen(last), &o, &d), 0);
	assert_true(d == UINT64_MAX);
	assert_int_equal(o, 3);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(rt_listen_parse_netstat(bad[i], strlen(bad[i]), &o, &d), -EINVAL);
	/* every prefix of the real text parses or is refused, never read past */
	for (i = 0; i < sizeof(real); i++) {
		char *copy = malloc(i ? i : 1);
		int r;

		memcpy(copy, real, i);
		r = rt_listen_parse_netstat(copy, i, &o, &d);
		assert_true(r == 0 || r == -EINVAL);
		free(copy);
	}
}

/* ---- one refresh against this process's own sockets ---- */

static int cb_add(void *ctx, const struct rt_target *t, pid_t pid)
{
	(void)ctx;
	(void)t;
	(void)pid;
	return 0;
}

static void cb_remove(void *ctx, const struct rt_target *t, pid_t pid, bool left)
{
	(void)ctx;
	(void)t;
	(void)pid;
	(void)left;
}

struct ports {
	int n;
	uint16_t port[8];
};

static void new_port(void *ctx, uint16_t port)
{
	struct ports *p = ctx;

	if (p->n < 8)
		p->port[p->n] = port;
	p->n++;
}

static int listener(int backlog, uint16_t *port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fd, backlog), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	*port = ntohs(sa.sin_port);
	return fd;
}

static int client(uint16_t port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
				  .sin_port = htons(port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	assert_true(fd >= 0);
	/* non-blocking: a SYN the full queue drops leaves it waiting, not us */
	assert_true(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 || errno == EINPROGRESS);
	return fd;
}

static const struct rt_listener *find(const struct rt_listen_group *g, uint16_t port)
{
	for (int i = 0; g && i < g->n; i++)
		if (g->l[i].s.port == port)
			return &g->l[i];
	return NULL;
}

static void test_refresh_own(void **state)
{
	struct rt_targets_cb cb = { cb_add, cb_remove, NULL };
	struct rt_targets *ts = rt_targets__new(&cb);
	struct ports ports = { 0 };
	struct rt_listeners_opts o = { .new_port = new_port, .ctx = &ports };
	struct rt_listeners *ls = rt_listeners__new(&o);
	const struct rt_listen_group *g;
	const struct rt_listener *l;
	struct rt_listeners_stats st;
	uint16_t port, small;
	int lfd, sfd, c[3], f[4], i, tries;
	uint64_t before;

	(void)state;
	assert_non_null(ts);
	assert_non_null(ls);
	lfd = listener(7, &port);
	sfd = listener(1, &small);
	assert_int_equal(rt_targets__add_port(ts, port), 0);
	rt_targets__scan(ts);
	assert_true(rt_targets__get(ts, 0)->active);

	rt_listeners__refresh(ls, ts);
	g = rt_listeners__group(ls, rt_targets__get(ts, 0)->group_id);
	assert_non_null(g);
	l = find(g, port);
	assert_non_null(l);
	assert_int_equal(l->s.queue, 0);
	assert_int_equal(l->pid, getpid());
	assert_non_null(find(g, small)); /* the process's other listener */
	assert_true(g->n_netns == 1 && g->netns[0].ino == rt_targets__get(ts, 0)->netns);
	/* sock_diag answers in our own namespace without privileges: the limit is known */
	assert_false(g->from_proc);
	assert_int_equal(l->s.limit, 7);
	assert_int_equal(ports.n, 2);
	assert_true((ports.port[0] == port && ports.port[1] == small) ||
		    (ports.port[0] == small && ports.port[1] == port));
	assert_true(g->netns[0].counters);
	before = g->netns[0].overflows;

	/* three handshakes the server has not accepted: they wait in its queue */
	for (i = 0; i < 3; i++)
		c[i] = client(port);
	for (tries = 0; tries < 200; tries++) {
		rt_listeners__refresh(ls, ts);
		g = rt_listeners__group(ls, rt_targets__get(ts, 0)->group_id);
		if (find(g, port) && find(g, port)->s.queue == 3)
			break;
		usleep(10000);
	}
	l = find(g, port);
	assert_int_equal(l->s.queue, 3);
	assert_int_equal(l->queue_max, 3);
	for (i = 0; i < 3; i++)
		close(accept(lfd, NULL, NULL));
	rt_listeners__refresh(ls, ts);
	g = rt_listeners__group(ls, rt_targets__get(ts, 0)->group_id);
	l = find(g, port);
	assert_int_equal(l->s.queue, 0);
	assert_int_equal(l->queue_max, 3); /* the most seen stays */
	assert_int_equal(ports.n, 2); /* each port reported once */

	/* a full queue: the kernel drops SYNs and counts them for the whole namespace */
	for (i = 0; i < 4; i++)
		f[i] = client(small);
	for (tries = 0; tries < 200; tries++) {
		rt_listeners__refresh(ls, ts);
		g = rt_listeners__group(ls, rt_targets__get(ts, 0)->group_id);
		if (g->netns[0].overflows > before)
			break;
		usleep(10000);
	}
	assert_true(g->netns[0].overflows > before);
	l = find(g, small);
	assert_int_equal(l->s.limit, 1);
	assert_int_equal(l->s.queue, 2); /* backlog 1 holds two: the kernel tests queue > max */

	/*
	 * unchanged listeners and pids: the fds are not read again (other tests
	 * may open listeners in this namespace meanwhile: one quiet pair will do)
	 */
	for (tries = 0; tries < 50; tries++) {
		rt_listeners__stats(ls, &st);
		before = st.fd_walks;
		rt_listeners__refresh(ls, ts);
		rt_listeners__stats(ls, &st);
		if (st.fd_walks == before)
			break;
	}
	assert_int_equal(st.fd_walks, before);
	/* a listener closed: gone at the next refresh, the fds read again */
	close(sfd);
	rt_listeners__refresh(ls, ts);
	g = rt_listeners__group(ls, rt_targets__get(ts, 0)->group_id);
	assert_null(find(g, small));
	assert_non_null(find(g, port));
	rt_listeners__stats(ls, &st);
	assert_true(st.fd_walks > before);

	for (i = 0; i < 3; i++)
		close(c[i]);
	for (i = 0; i < 4; i++)
		close(f[i]);
	close(lfd);
	rt_listeners__free(ls);
	rt_targets__free(ts);
}

/* Without sock_diag: the same listeners from /proc/PID/net/tcp, no limit. */
static void test_refresh_proc(void **state)
{
	struct rt_targets_cb cb = { cb_add, cb_remove, NULL };
	struct rt_targets *ts = rt_targets__new(&cb);
	struct rt_listeners_opts o = { .no_diag = true };
	struct rt_listeners *ls = rt_listeners__new(&o);
	const struct rt_listen_group *g = NULL;
	const struct rt_listener *l = NULL;
	uint16_t port;
	int lfd, c[2], i, tries;

	(void)state;
	lfd = listener(9, &port);
	assert_int_equal(rt_targets__add_port(ts, port), 0);
	rt_targets__scan(ts);
	for (i = 0; i < 2; i++)
		c[i] = client(port);
	for (tries = 0; tries < 200; tries++) {
		rt_listeners__refresh(ls, ts);
		g = rt_listeners__group(ls, rt_targets__get(ts, 0)->group_id);
		l = find(g, port);
		if (l && l->s.queue == 2)
			break;
		usleep(10000);
	}
	assert_non_null(l);
	assert_true(g->from_proc);
	assert_int_equal(l->s.queue, 2);
	assert_int_equal(l->s.limit, 0);
	assert_int_equal(l->pid, getpid());
	assert_true(g->netns[0].counters);
	for (i = 0; i < 2; i++)
		close(c[i]);
	close(lfd);
	rt_listeners__free(ls);
	rt_targets__free(ts);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tcp_v4),	     cmocka_unit_test(test_tcp_v6),
		cmocka_unit_test(test_tcp_hostile),  cmocka_unit_test(test_tcp_prefixes_and_noise),
		cmocka_unit_test(test_diag),	     cmocka_unit_test(test_diag_hostile),
		cmocka_unit_test(test_netstat),	     cmocka_unit_test(test_refresh_own),
		cmocka_unit_test(test_refresh_proc),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
