// SPDX-License-Identifier: BSD-2-Clause
/*
 * The parsers of listeners.h: /proc/net/tcp{,6} and netstat text, sock_diag
 * replies. Their input is untrusted: every field is bounded by the end
 * pointer (no strlen, no sscanf), numbers past their width are refused,
 * and a line without its newline is never taken (a read may have cut it).
 */
#include "daemon/listeners.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#define TCP_LISTEN 10

/* ---- parsers ---- */

/* Hex digits at *p into *v (at most max of them, at least one). */
static bool hex_field(const char **p, const char *end, unsigned int max, uint64_t *v)
{
	unsigned int n = 0;

	*v = 0;
	while (*p < end && n < max) {
		char c = **p;
		unsigned int d;

		if (c >= '0' && c <= '9')
			d = (unsigned int)(c - '0');
		else if (c >= 'A' && c <= 'F')
			d = (unsigned int)(c - 'A' + 10);
		else if (c >= 'a' && c <= 'f')
			d = (unsigned int)(c - 'a' + 10);
		else
			break;
		*v = *v << 4 | d;
		(*p)++;
		n++;
	}
	return n > 0 && (*p == end || !((**p >= '0' && **p <= '9') || (**p >= 'A' && **p <= 'F') ||
					(**p >= 'a' && **p <= 'f')));
}

/* Up to max hex digits at *p, whatever follows (addresses run into each other). */
static bool hex_prefix(const char **p, const char *end, unsigned int max, uint64_t *v)
{
	const char *start = *p;

	hex_field(p, end, max, v);
	return *p > start;
}

static bool skip_spaces(const char **p, const char *end)
{
	while (*p < end && (**p == ' ' || **p == '\t'))
		(*p)++;
	return *p < end;
}

static bool expect(const char **p, const char *end, char c)
{
	if (*p >= end || **p != c)
		return false;
	(*p)++;
	return true;
}

/* A decimal field of at most 20 digits that fits 64 bits. */
static bool dec_field(const char **p, const char *end, uint64_t *v)
{
	unsigned int n = 0;

	*v = 0;
	while (*p < end && **p >= '0' && **p <= '9') {
		uint64_t d = (uint64_t)(**p - '0');

		if (*v > (UINT64_MAX - d) / 10)
			return false;
		*v = *v * 10 + d;
		(*p)++;
		n++;
	}
	return n > 0 && (*p == end || **p == ' ' || **p == '\t');
}

/* Skip one whitespace-separated field. */
static bool skip_field(const char **p, const char *end)
{
	if (!skip_spaces(p, end))
		return false;
	while (*p < end && **p != ' ' && **p != '\t')
		(*p)++;
	return true;
}

/*
 * "  12: 0100007F:1F90 00000000:0000 0A 00000000:00000003 00:00000000 00000000
 * 0 0 123456 ..." (tcp4_seq_show / tcp6_seq_show). 1 a listener, 0 another
 * socket, -1 not a socket line.
 */
static int tcp_line(const char *p, const char *end, bool v6, struct rt_listen_sock *s)
{
	unsigned int words = v6 ? 4 : 1, i;
	uint64_t v, state;

	memset(s, 0, sizeof(*s));
	/* "sl:" */
	if (!skip_spaces(&p, end) || *p < '0' || *p > '9')
		return -1;
	while (p < end && *p >= '0' && *p <= '9')
		p++;
	if (!expect(&p, end, ':') || !skip_spaces(&p, end))
		return -1;
	for (i = 0; i < words; i++) {
		uint32_t w;
		const char *start = p;

		/* the kernel prints each 32-bit word of the address as loaded: host order */
		if (!hex_prefix(&p, end, 8, &v) || p - start != 8)
			return -1;
		w = (uint32_t)v;
		memcpy(s->addr + 4 * i, &w, 4);
	}
	if (!expect(&p, end, ':') || !hex_field(&p, end, 4, &v))
		return -1;
	s->port = (uint16_t)v;
	s->family = v6 ? AF_INET6 : AF_INET;
	if (!skip_field(&p, end) || !skip_spaces(&p, end) || !hex_field(&p, end, 2, &state))
		return -1;
	/* tx_queue:rx_queue; for a listener rx_queue is sk_ack_backlog */
	if (!skip_spaces(&p, end) || !hex_field(&p, end, 8, &v) || !expect(&p, end, ':') ||
	    !hex_field(&p, end, 8, &v))
		return -1;
	s->queue = (uint32_t)v;
	/* tr:when retrnsmt uid timeout, then the inode */
	for (i = 0; i < 4; i++)
		if (!skip_field(&p, end))
			return -1;
	if (!skip_spaces(&p, end) || !dec_field(&p, end, &v))
		return -1;
	s->inode = v;
	return state == TCP_LISTEN ? 1 : 0;
}

static int parse_tcp(const char *text, size_t len, bool v6, struct rt_listen_sock *out, int max,
		     uint32_t *skipped, uint32_t *bad, bool *ended)
{
	const char *p = text, *end = text + len;
	int n = 0;

	*ended = false;
	while (p < end && !*ended) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl;
		struct rt_listen_sock s;
		int r;

		if (!nl) {
			/* an unterminated line may be cut short (an inode missing digits) */
			if (bad)
				(*bad)++;
			break;
		}
		r = tcp_line(p, eol, v6, &s);
		if (r == 1) {
			if (n < max)
				out[n++] = s;
			else if (skipped)
				(*skipped)++;
		} else if (r == 0) {
			*ended = true;
		} else if (p != text && bad) {
			(*bad)++; /* the first line is the header */
		}
		p = nl + 1;
	}
	return n;
}

int rt_listen_parse_tcp(const char *text, size_t len, bool v6, struct rt_listen_sock *out, int max,
			uint32_t *skipped, uint32_t *bad, bool *ended)
{
	bool dummy;

	if (!ended)
		ended = &dummy;
	*ended = false;
	if (!text || max < 0)
		return 0;
	return parse_tcp(text, len, v6, out, max, skipped, bad, ended);
}

int rt_listen_parse_diag(const void *buf, size_t len, struct rt_listen_sock *out, int max,
			 uint32_t *skipped, bool *done)
{
	const unsigned char *b = buf;
	size_t off = 0;
	int n = 0;

	*done = false;
	while (len - off >= sizeof(struct nlmsghdr)) {
		struct nlmsghdr h;
		struct inet_diag_msg m;
		struct rt_listen_sock s = { 0 };
		size_t step;

		memcpy(&h, b + off, sizeof(h));
		if (h.nlmsg_len < sizeof(h) || h.nlmsg_len > len - off)
			return n ? n : -EINVAL; /* a message claiming more than arrived */
		if (h.nlmsg_type == NLMSG_DONE) {
			*done = true;
			return n;
		}
		if (h.nlmsg_type == NLMSG_ERROR) {
			struct nlmsgerr e;

			*done = true;
			if (h.nlmsg_len < NLMSG_LENGTH(sizeof(e)))
				return -EINVAL;
			memcpy(&e, b + off + NLMSG_HDRLEN, sizeof(e));
			/* error is a negative errno; keep it one whatever the peer sent */
			return e.error < 0 && e.error > -4096 ? e.error : -EINVAL;
		}
		if (h.nlmsg_type == SOCK_DIAG_BY_FAMILY && h.nlmsg_len >= NLMSG_LENGTH(sizeof(m))) {
			memcpy(&m, b + off + NLMSG_HDRLEN, sizeof(m));
			if (m.idiag_state == TCP_LISTEN &&
			    (m.idiag_family == AF_INET || m.idiag_family == AF_INET6)) {
				s.family = m.idiag_family;
				s.port = ntohs(m.id.idiag_sport);
				memcpy(s.addr, m.id.idiag_src, m.idiag_family == AF_INET ? 4 : 16);
				/* for a listener: sk_ack_backlog and sk_max_ack_backlog */
				s.queue = m.idiag_rqueue;
				s.limit = m.idiag_wqueue;
				s.inode = m.idiag_inode;
				if (n < max)
					out[n++] = s;
				else if (skipped)
					(*skipped)++;
			}
		}
		step = NLMSG_ALIGN((size_t)h.nlmsg_len);
		if (step > len - off)
			break;
		off += step;
	}
	return n;
}

/* The value under name in a header line and its value line, both of n fields. */
static int netstat_value(const char *hdr, const char *hdr_end, const char *val, const char *val_end,
			 const char *name, uint64_t *out)
{
	size_t nlen = strlen(name);
	const char *h = hdr, *v = val;

	for (;;) {
		const char *hs, *vs;

		if (!skip_spaces(&h, hdr_end) || !skip_spaces(&v, val_end))
			return -EINVAL;
		hs = h;
		vs = v;
		while (h < hdr_end && *h != ' ' && *h != '\t')
			h++;
		while (v < val_end && *v != ' ' && *v != '\t')
			v++;
		if ((size_t)(h - hs) == nlen && !memcmp(hs, name, nlen)) {
			const char *p = vs;

			if (!dec_field(&p, v, out) || p != v)
				return -EINVAL;
			return 0;
		}
	}
}

int rt_listen_parse_netstat(const char *text, size_t len, uint64_t *overflows, uint64_t *drops)
{
	static const char tag[] = "TcpExt:";
	const char *p = text, *end = text + len;

	if (!text)
		return -EINVAL;
	/* "TcpExt: names...\nTcpExt: values...\n", then IpExt: and others */
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *vl, *vnl;

		if (!nl)
			return -EINVAL;
		if ((size_t)(nl - p) < sizeof(tag) - 1 || memcmp(p, tag, sizeof(tag) - 1)) {
			p = nl + 1;
			continue;
		}
		vl = nl + 1;
		if ((size_t)(end - vl) < sizeof(tag) - 1 || memcmp(vl, tag, sizeof(tag) - 1))
			return -EINVAL;
		vnl = memchr(vl, '\n', (size_t)(end - vl));
		if (!vnl)
			vnl = end; /* the value line may end the text without a newline */
		p += sizeof(tag) - 1;
		vl += sizeof(tag) - 1;
		if (netstat_value(p, nl, vl, vnl, "ListenOverflows", overflows) ||
		    netstat_value(p, nl, vl, vnl, "ListenDrops", drops))
			return -EINVAL;
		return 0;
	}
	return -EINVAL;
}

void rt_listen_addr_str(const struct rt_listen_sock *s, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN] = "?";

	if (!len)
		return;
	if (s->family == AF_INET6) {
		inet_ntop(AF_INET6, s->addr, a, sizeof(a));
		snprintf(buf, len, "[%s]:%u", a, s->port);
	} else {
		inet_ntop(AF_INET, s->addr, a, sizeof(a));
		snprintf(buf, len, "%s:%u", a, s->port);
	}
}
