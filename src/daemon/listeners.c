// SPDX-License-Identifier: BSD-2-Clause
/*
 * Listen-queue health of the targets (listeners.h): reading one network
 * namespace (sock_diag, or /proc), joining its listeners with the targets'
 * fds, the refresh. The parsers are in listen_parse.c.
 */
#include "daemon/listeners.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "daemon/procfs.h"

#define NETSTAT_BYTES 65536
/* listeners come first in /proc/net/tcp; about 150 bytes a line */
#define TCP_TEXT_MAX (RT_LISTEN_NS_SOCKS_MAX * 160)
#define DIAG_BUF 32768
#define DIAG_ROUNDS 256
/* sockets a target may hold among its namespaces' listeners */
#define OWNED_MAX (RT_LISTEN_PER_TARGET_MAX * 4)

/* ---- reading one network namespace ---- */

struct ns_state {
	uint64_t ino; /* 0: a free slot */
	pid_t via; /* a process in it, to read its /proc/PID/net through */
	uint64_t tick; /* the refresh that last read it */
	bool have_base, counters, from_proc;
	uint64_t base_ovf, base_drops, ovf, drops;
	int n;
	uint32_t skipped;
	struct rt_listen_sock *socks; /* RT_LISTEN_NS_SOCKS_MAX, sorted by inode */
};

struct owned {
	uint64_t inode, netns;
	pid_t pid;
};

struct group_state {
	bool used;
	uint64_t sig; /* its namespaces' listeners and its pids at the last fd walk */
	int n_owned;
	uint32_t owned_skipped;
	struct owned owned[OWNED_MAX];
	struct rt_listen_group pub;
};

struct rt_listeners {
	struct rt_listeners_opts o;
	uint64_t tick;
	uint64_t self_ino; /* the loop thread's network namespace */
	struct ns_state ns[RT_LISTEN_NETNS_MAX];
	struct group_state groups[RT_TARGETS_MAX];
	uint64_t ports[65536 / 64]; /* reported through new_port */
	struct rt_listeners_stats st;
	char *text; /* TCP_TEXT_MAX, for /proc files */
	void *diag; /* DIAG_BUF */
};

static uint64_t mix(uint64_t x)
{
	/* splitmix64's finaliser: order-free sums of it make a set signature */
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static int by_inode(const void *a, const void *b)
{
	const struct rt_listen_sock *x = a, *y = b;

	return x->inode < y->inode ? -1 : x->inode > y->inode;
}

static const struct rt_listen_sock *ns_find(const struct ns_state *ns, uint64_t inode)
{
	struct rt_listen_sock key = { .inode = inode };

	return ns->n ? bsearch(&key, ns->socks, (size_t)ns->n, sizeof(key), by_inode) : NULL;
}

/*
 * A sock_diag socket answering for namespace ns. A socket answers for the
 * namespace it was made in, so the thread steps into ns for the socket()
 * call only (setns: root's privilege); -errno when it cannot.
 */
static int diag_socket(const struct rt_listeners *ls, const struct ns_state *ns)
{
	char path[64];
	int nsfd, self, sk, err;

	if (ns->ino == ls->self_ino)
		return socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (self < 0)
		return -errno;
	snprintf(path, sizeof(path), "/proc/%d/ns/net", ns->via);
	nsfd = open(path, O_RDONLY | O_CLOEXEC);
	if (nsfd < 0 || setns(nsfd, CLONE_NEWNET)) {
		err = -errno;
		if (nsfd >= 0)
			close(nsfd);
		close(self);
		return err;
	}
	close(nsfd);
	sk = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	err = sk < 0 ? -errno : sk;
	if (setns(self, CLONE_NEWNET))
		elog("cannot return to the daemon's network namespace: %s", strerror(errno));
	close(self);
	return err;
}

/* Every listener of ns from sock_diag: the count, or -errno (no sock_diag, no setns). */
static int diag_dump(struct rt_listeners *ls, struct ns_state *ns)
{
	static const int families[] = { AF_INET, AF_INET6 };
	int sk = diag_socket(ls, ns), n = 0, err = 0;
	size_t f;

	if (sk < 0)
		return sk;
	for (f = 0; f < 2 && !err; f++) {
		bool done = false;
		int rounds;

		/* every listener of the namespace (port 0) */
		err = rt_procfs_diag_listen_req(sk, families[f], (uint32_t)f + 1, 0);
		if (err)
			break;
		for (rounds = 0; rounds < DIAG_ROUNDS && !done; rounds++) {
			ssize_t got = recv(sk, ls->diag, DIAG_BUF, 0);
			int r;

			if (got < 0 && errno == EINTR)
				continue;
			if (got <= 0) {
				err = got < 0 ? -errno : -EIO;
				break;
			}
			r = rt_listen_parse_diag(ls->diag, (size_t)got, ns->socks + n,
						 RT_LISTEN_NS_SOCKS_MAX - n, &ns->skipped, &done);
			if (r < 0) {
				/* no IPv6 in this kernel: nothing listens there */
				if (families[f] == AF_INET)
					err = r;
				break;
			}
			n += r;
		}
	}
	close(sk);
	return err ? err : n;
}

/* The listening part of one /proc/PID/net/tcp{,6}, read in small steps. */
static int proc_tcp(struct rt_listeners *ls, struct ns_state *ns, const char *file, bool v6)
{
	char path[64], *buf = ls->text;
	size_t len = 0, parsed = 0;
	bool ended = false;
	int fd, n = 0;

	snprintf(path, sizeof(path), "/proc/%d/net/%s", ns->via, file);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/*
	 * seq_file makes only the lines a read asks for: reads of a few lines
	 * that stop at the first non-listener skip the established hash walk.
	 */
	while (!ended && len < TCP_TEXT_MAX - 1) {
		size_t want = TCP_TEXT_MAX - 1 - len;
		ssize_t got = read(fd, buf + len, want < 4096 ? want : 4096);
		char *last;

		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		len += (size_t)got;
		last = memrchr(buf + parsed, '\n', len - parsed);
		if (!last)
			continue;
		n += rt_listen_parse_tcp(buf + parsed, (size_t)(last + 1 - (buf + parsed)), v6,
					 ns->socks + ns->n + n, RT_LISTEN_NS_SOCKS_MAX - ns->n - n,
					 &ns->skipped, NULL, &ended);
		parsed = (size_t)(last + 1 - buf);
	}
	if (!ended && len >= TCP_TEXT_MAX - 1)
		ns->skipped++; /* at least one more listener past what we read */
	close(fd);
	return n;
}

static void read_counters(struct rt_listeners *ls, struct ns_state *ns)
{
	char path[64], *buf = ls->text;
	uint64_t ovf, drops;
	size_t len = 0;
	int fd;

	ns->counters = false;
	snprintf(path, sizeof(path), "/proc/%d/net/netstat", ns->via);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	while (len < NETSTAT_BYTES - 1) {
		ssize_t got = read(fd, buf + len, NETSTAT_BYTES - 1 - len);

		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		len += (size_t)got;
	}
	close(fd);
	if (rt_listen_parse_netstat(buf, len, &ovf, &drops))
		return;
	/* since the daemon started watching: a namespace made anew starts again */
	if (!ns->have_base || ovf < ns->base_ovf || drops < ns->base_drops) {
		ns->base_ovf = ovf;
		ns->base_drops = drops;
		ns->have_base = true;
	}
	ns->ovf = ovf - ns->base_ovf;
	ns->drops = drops - ns->base_drops;
	ns->counters = true;
}

static void ns_read(struct rt_listeners *ls, struct ns_state *ns)
{
	int r;

	ns->n = 0;
	ns->skipped = 0;
	ns->from_proc = false;
	r = ls->o.no_diag ? -EOPNOTSUPP : diag_dump(ls, ns);
	if (r >= 0) {
		ns->n = r;
	} else {
		/* the slower file, and no limits: a listener's tx_queue there is 0 */
		ns->from_proc = true;
		ns->n = 0;
		r = proc_tcp(ls, ns, "tcp", false);
		ns->n += r > 0 ? r : 0;
		r = proc_tcp(ls, ns, "tcp6", true);
		ns->n += r > 0 ? r : 0;
	}
	qsort(ns->socks, (size_t)ns->n, sizeof(*ns->socks), by_inode);
	read_counters(ls, ns);
	ns->tick = ls->tick;
}

/* Namespace ino, read once per refresh through via; NULL when the table is full. */
static struct ns_state *ns_get(struct rt_listeners *ls, uint64_t ino, pid_t via)
{
	struct ns_state *ns = NULL, *spare = NULL;
	size_t i;

	for (i = 0; i < RT_LISTEN_NETNS_MAX && !ns; i++) {
		if (ls->ns[i].ino == ino)
			ns = &ls->ns[i];
		else if (!spare && (!ls->ns[i].ino || ls->ns[i].tick + 1 < ls->tick))
			spare = &ls->ns[i]; /* free, or no target used it last time */
	}
	if (!ns) {
		if (!spare)
			return NULL;
		ns = spare;
		memset(ns, 0, offsetof(struct ns_state, socks));
		ns->ino = ino;
	}
	if (ns->tick != ls->tick) {
		ns->via = via;
		ns_read(ls, ns);
	}
	return ns;
}

/* ---- the join and the refresh ---- */

/* The socket inode an fd link names ("socket:[123]"), 0 for anything else. */
static uint64_t socket_link(const char *link)
{
	const char *p = link + 8;
	char *end;
	unsigned long long v;

	if (strncmp(link, "socket:[", 8) || *p < '0' || *p > '9')
		return 0;
	errno = 0;
	v = strtoull(p, &end, 10);
	if (errno || *end != ']' || end[1])
		return 0;
	return v;
}

/* Record which of ns's listeners pid holds. */
static void fd_walk(struct rt_listeners *ls, struct group_state *g, pid_t pid,
		    const struct ns_state *ns)
{
	char path[300], link[64];
	struct dirent *e;
	unsigned int seen = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/fd", pid);
	d = opendir(path);
	if (!d)
		return;
	ls->st.fd_walks++;
	while ((e = readdir(d)) && seen++ < RT_LISTEN_FDS_MAX) {
		uint64_t inode;
		ssize_t n;
		int k;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/fd/%s", pid, e->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = '\0';
		inode = socket_link(link);
		if (!inode || !ns_find(ns, inode))
			continue;
		for (k = 0; k < g->n_owned; k++)
			if (g->owned[k].inode == inode)
				break;
		if (k < g->n_owned)
			continue; /* shared with another of its processes (pre-fork servers) */
		if (g->n_owned == OWNED_MAX) {
			g->owned_skipped++;
			continue;
		}
		g->owned[g->n_owned++] = (struct owned){ inode, ns->ino, pid };
	}
	closedir(d);
}

static int by_port(const void *a, const void *b)
{
	const struct rt_listener *x = a, *y = b;

	if (x->s.port != y->s.port)
		return x->s.port < y->s.port ? -1 : 1;
	return x->s.family < y->s.family ? -1 : x->s.family > y->s.family;
}

static struct group_state *group_slot(struct rt_listeners *ls, uint32_t group_id)
{
	struct group_state *free_slot = NULL;
	size_t i;

	for (i = 0; i < RT_TARGETS_MAX; i++) {
		if (ls->groups[i].used && ls->groups[i].pub.group_id == group_id)
			return &ls->groups[i];
		if (!ls->groups[i].used && !free_slot)
			free_slot = &ls->groups[i];
	}
	if (free_slot) {
		memset(free_slot, 0, sizeof(*free_slot));
		free_slot->used = true;
		free_slot->pub.group_id = group_id;
	}
	return free_slot;
}

static void report_port(struct rt_listeners *ls, uint16_t port)
{
	uint64_t bit = 1ULL << (port % 64);

	if (!port || (ls->ports[port / 64] & bit))
		return;
	ls->ports[port / 64] |= bit;
	if (ls->o.new_port)
		ls->o.new_port(ls->o.ctx, port);
}

/* One target: its namespaces, which listeners it holds, their queues now. */
static void refresh_group(struct rt_listeners *ls, const struct rt_targets *ts,
			  struct group_state *g, int *total)
{
	struct ns_state *nss[RT_LISTEN_TARGET_NETNS_MAX];
	struct rt_listen_group prev = g->pub, *pub = &g->pub;
	pid_t pids[RT_LISTEN_PIDS_MAX];
	int pid_ns[RT_LISTEN_PIDS_MAX];
	int n_pids, n_ns = 0, i, k;
	uint64_t sig = 0;

	n_pids = rt_targets__pids(ts, pub->group_id, pids, RT_LISTEN_PIDS_MAX);
	for (i = 0; i < n_pids; i++) {
		uint64_t ino;
		struct ns_state *ns;

		pid_ns[i] = -1;
		if (rt_procfs_netns(pids[i], &ino))
			continue; /* gone since the scan */
		for (k = 0; k < n_ns && nss[k]->ino != ino; k++)
			;
		if (k == n_ns) {
			ns = n_ns < RT_LISTEN_TARGET_NETNS_MAX ? ns_get(ls, ino, pids[i]) : NULL;
			if (!ns) {
				ls->st.netns_skipped++;
				continue;
			}
			nss[n_ns++] = ns;
		}
		pid_ns[i] = k;
		sig += mix((uint64_t)pids[i] ^ ino << 20);
	}
	for (k = 0; k < n_ns; k++)
		for (i = 0; i < nss[k]->n; i++)
			sig += mix(nss[k]->socks[i].inode ^ nss[k]->ino << 1);
	/* the fds are read again only when a listener or a process came or went */
	if (sig != g->sig || !sig) {
		g->n_owned = 0;
		g->owned_skipped = 0;
		for (i = 0; i < n_pids; i++)
			if (pid_ns[i] >= 0)
				fd_walk(ls, g, pids[i], nss[pid_ns[i]]);
		g->sig = sig;
	}

	pub->n = 0;
	pub->skipped = g->owned_skipped;
	pub->from_proc = false;
	pub->n_netns = n_ns;
	for (k = 0; k < n_ns; k++) {
		pub->netns[k] = (struct rt_listen_netns){ .ino = nss[k]->ino,
							  .counters = nss[k]->counters,
							  .overflows = nss[k]->ovf,
							  .drops = nss[k]->drops };
		pub->from_proc |= nss[k]->from_proc;
		pub->skipped += nss[k]->skipped; /* some of them may be its own */
	}
	for (i = 0; i < g->n_owned; i++) {
		const struct owned *o = &g->owned[i];
		const struct rt_listen_sock *s = NULL;
		struct rt_listener *l;

		for (k = 0; k < n_ns && !s; k++)
			if (nss[k]->ino == o->netns)
				s = ns_find(nss[k], o->inode);
		if (!s)
			continue; /* closed since the walk */
		if (pub->n == RT_LISTEN_PER_TARGET_MAX || *total >= RT_LISTEN_TOTAL_MAX) {
			pub->skipped++;
			continue;
		}
		l = &pub->l[pub->n++];
		(*total)++;
		l->s = *s;
		l->netns = o->netns;
		l->pid = o->pid;
		l->queue_max = s->queue;
		for (k = 0; k < prev.n; k++)
			if (prev.l[k].s.inode == s->inode && prev.l[k].queue_max > l->queue_max)
				l->queue_max = prev.l[k].queue_max;
	}
	qsort(pub->l, (size_t)pub->n, sizeof(pub->l[0]), by_port);
	ls->st.skipped += pub->skipped;
	for (i = 0; i < pub->n; i++)
		report_port(ls, pub->l[i].s.port);
}

void rt_listeners__refresh(struct rt_listeners *ls, const struct rt_targets *ts)
{
	bool seen[RT_TARGETS_MAX] = { false };
	uint32_t i, n = rt_targets__count(ts);
	int total = 0;
	size_t k;

	ls->tick++;
	ls->st.refreshes++;
	ls->st.skipped = 0;
	ls->st.netns_skipped = 0;
	for (i = 0; i < n; i++) {
		const struct rt_target *t = rt_targets__get(ts, i);
		struct group_state *g;

		if (!t || !(g = group_slot(ls, t->group_id)))
			continue;
		seen[g - ls->groups] = true;
		refresh_group(ls, ts, g, &total);
	}
	for (k = 0; k < RT_TARGETS_MAX; k++)
		if (!seen[k])
			ls->groups[k].used = false;
}

const struct rt_listen_group *rt_listeners__group(const struct rt_listeners *ls, uint32_t group_id)
{
	size_t i;

	if (!ls)
		return NULL;
	for (i = 0; i < RT_TARGETS_MAX; i++)
		if (ls->groups[i].used && ls->groups[i].pub.group_id == group_id)
			return &ls->groups[i].pub;
	return NULL;
}

void rt_listeners__stats(const struct rt_listeners *ls, struct rt_listeners_stats *st)
{
	*st = ls ? ls->st : (struct rt_listeners_stats){ 0 };
}

struct rt_listeners *rt_listeners__new(const struct rt_listeners_opts *o)
{
	struct rt_listeners *ls = calloc(1, sizeof(*ls));
	struct stat st;
	size_t i;

	if (!ls)
		return NULL;
	if (o)
		ls->o = *o;
	/* the loop thread's namespace: sock_diag there needs no setns */
	if (!stat("/proc/thread-self/ns/net", &st))
		ls->self_ino = (uint64_t)st.st_ino;
	ls->text = malloc(TCP_TEXT_MAX > NETSTAT_BYTES ? TCP_TEXT_MAX : NETSTAT_BYTES);
	ls->diag = malloc(DIAG_BUF);
	if (!ls->text || !ls->diag)
		goto fail;
	for (i = 0; i < RT_LISTEN_NETNS_MAX; i++) {
		ls->ns[i].socks = calloc(RT_LISTEN_NS_SOCKS_MAX, sizeof(*ls->ns[i].socks));
		if (!ls->ns[i].socks)
			goto fail;
	}
	return ls;
fail:
	rt_listeners__free(ls);
	errno = ENOMEM;
	return NULL;
}

void rt_listeners__free(struct rt_listeners *ls)
{
	size_t i;

	if (!ls)
		return;
	for (i = 0; i < RT_LISTEN_NETNS_MAX; i++)
		free(ls->ns[i].socks);
	free(ls->text);
	free(ls->diag);
	free(ls);
}
