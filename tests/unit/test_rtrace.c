/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * .rtrace writer and reader: round trips, clock records, and the reader on
 * truncated, bit-flipped and hand-made bad files (exact offsets).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "common/event_check.h"
#include "export/rtrace_write.h"
#include "sources/rtrace_read.h"

#define T0 100000000000ULL /* header monotonic time of the fixtures: 100 s */
#define REAL0 1700000000000000000ULL
#define MS 1000000ULL
#define HDR_SIZE sizeof(struct rt_trace_header)

static char tmpdir[64];

static int setup(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/rt_test_rtrace.XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static const char *tmp_path(const char *name)
{
	static char p[128];

	snprintf(p, sizeof(p), "%s/%s", tmpdir, name);
	return p;
}

static struct rt_trace_writer_opts fixture_opts(void)
{
	struct rt_trace_writer_opts o = {
		.host = "testhost",
		.boot_id = "01234567-89ab-cdef-0123-456789abcdef",
		.realtime_ns = REAL0,
		.monotonic_ns = T0,
	};
	return o;
}

/* ---- records ------------------------------------------------------------------ */

static _Alignas(8) unsigned char recbuf[RT_EVENT_MAX];

static struct rt_event_hdr *rec_init(unsigned int kind, __u32 source, __u64 ts, size_t size)
{
	struct rt_event_hdr *ev = (void *)recbuf;

	memset(recbuf, 0, sizeof(recbuf));
	ev->kind = kind;
	ev->size = size ? size : rt_event_min_size(kind);
	ev->source = source;
	ev->ts_ns = ts;
	ev->pid = 4242;
	ev->tid = 4243;
	return ev;
}

static __u64 rng_state = 88172645463325252ULL;

static __u64 rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* The i-th event of the round-trip stream: several kinds, payloads of varied sizes. */
static struct rt_event_hdr *gen_event(unsigned int i, __u64 ts)
{
	struct rt_event_hdr *ev;
	struct rt_ev_sched_switch *sw;
	struct rt_ev_sock_io *io;
	struct rt_ev_gpu_kernel *k;
	struct rt_ev_mark *mk;
	struct rt_ev_source_info *si;
	unsigned int head, tail, j;

	switch (i % 8) {
	case 0:
		ev = rec_init(RT_EV_SCHED_SWITCH, 1, ts, 0);
		sw = (void *)ev;
		sw->prev_state = RT_TASK_BLOCKED;
		sw->next_tid = i;
		snprintf(sw->prev_comm, sizeof(sw->prev_comm), "worker-%u", i % 1000);
		snprintf(sw->next_comm, sizeof(sw->next_comm), "python3");
		return ev;
	case 1:
	case 5:
		/* a read: head only when it fits, else head + tail with a gap */
		head = rnd() % (RT_SOCK_HEAD_DEFAULT + 1);
		tail = i % 5 ? rnd() % (RT_SOCK_TAIL_DEFAULT + 1) : 0;
		ev = rec_init(i % 8 == 1 ? RT_EV_SOCK_RECV : RT_EV_SOCK_SEND, 1, ts,
			      RT_EVENT_SIZE_ALIGN(sizeof(*io) + head + tail));
		io = (void *)ev;
		io->enter_ns = ts - 1000;
		io->ret = head + tail + (tail ? 777 : 0);
		io->fd = 7;
		io->syscall = i % 8 == 1 ? RT_SYS_RECVFROM : RT_SYS_WRITEV;
		io->head_len = head;
		io->tail_len = tail;
		io->local.family = RT_AF_INET;
		io->local.port = 8000;
		io->peer.family = RT_AF_INET6;
		for (j = 0; j < head + tail; j++)
			io->data[j] = (unsigned char)rnd();
		return ev;
	case 2:
		/* the largest socket record: crosses small read buffers */
		ev = rec_init(RT_EV_SOCK_SEND, 1, ts,
			      sizeof(*io) + RT_SOCK_HEAD_MAX + RT_SOCK_TAIL_MAX);
		io = (void *)ev;
		io->ret = 1 << 20;
		io->syscall = RT_SYS_SENDMSG;
		io->head_len = RT_SOCK_HEAD_MAX;
		io->tail_len = RT_SOCK_TAIL_MAX;
		memset(io->data, 'd', RT_SOCK_HEAD_MAX + RT_SOCK_TAIL_MAX);
		return ev;
	case 3:
		ev = rec_init(RT_EV_GPU_KERNEL, 2, ts, 0);
		k = (void *)ev;
		k->end_ns = ts + 50000;
		k->corr_id = i;
		snprintf(k->name, sizeof(k->name), "ampere_sgemm_%u", i);
		return ev;
	case 4:
		ev = rec_init(RT_EV_MARK_BEGIN, 1, ts, 0);
		mk = (void *)ev;
		mk->phase = RT_PHASE_PREFILL;
		mk->id_len = snprintf(mk->request_id, sizeof(mk->request_id), "req-%u", i);
		return ev;
	case 6:
		return rec_init(RT_EV_WATERMARK, 2, ts - 5 * MS, 0);
	default:
		ev = rec_init(RT_EV_SOURCE_INFO, 0, ts, 0);
		si = (void *)ev;
		si->id = i;
		si->type = RT_SRC_SYNTHETIC;
		snprintf(si->name, sizeof(si->name), "src%u", i);
		return ev;
	}
}

/* ---- raw file building --------------------------------------------------------- */

struct raw {
	unsigned char *p;
	size_t len;
	__u64 records;
};

static void raw_put(struct raw *b, const void *d, size_t n)
{
	b->p = realloc(b->p, b->len + n);
	assert_non_null(b->p);
	memcpy(b->p + b->len, d, n);
	b->len += n;
}

static void raw_header(struct raw *b, __u64 mono)
{
	struct rt_trace_header h;

	memset(b, 0, sizeof(*b));
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, RT_TRACE_MAGIC, RT_TRACE_MAGIC_LEN);
	h.version = RT_TRACE_VERSION;
	h.header_size = sizeof(h);
	h.event_version = RT_EVENT_VERSION;
	h.realtime_ns = REAL0;
	h.monotonic_ns = mono;
	strcpy(h.host, "raw");
	raw_put(b, &h, sizeof(h));
}

/* Appends the record in recbuf; returns its offset. */
static size_t raw_rec(struct raw *b)
{
	const struct rt_event_hdr *ev = (const void *)recbuf;
	size_t off = b->len;

	raw_put(b, ev, ev->size);
	b->records++;
	return off;
}

static size_t raw_end(struct raw *b, __u64 ts)
{
	struct rt_ev_trace_end *end = (void *)rec_init(RT_EV_TRACE_END, 0, ts, 0);

	end->records = b->records;
	return raw_rec(b);
}

/* ---- reading helpers ---------------------------------------------------------- */

/* Reads to the end; returns next()'s final value. */
static int read_all(struct rt_trace_reader *r, __u64 *n)
{
	const struct rt_event_hdr *ev;
	int ret;

	*n = 0;
	while ((ret = rt_trace_reader__next(r, &ev)) == 1) {
		assert_non_null(ev);
		assert_int_equal((uintptr_t)ev % 8, 0);
		(*n)++;
	}
	assert_null(ev);
	return ret;
}

/* Reads len bytes (an exact-size copy, so ASan sees any overread). */
static int read_mem(const void *data, size_t len, char *msg, size_t msg_len, __u64 *off)
{
	struct rt_trace_reader *r;
	void *copy = malloc(len ? len : 1);
	__u64 n;
	int ret;

	assert_non_null(copy);
	memcpy(copy, data, len);
	r = rt_trace_reader__open_mem(copy, len);
	assert_non_null(r);
	ret = read_all(r, &n);
	if (msg)
		snprintf(msg, msg_len, "%s", rt_trace_reader__error(r));
	if (off)
		*off = rt_trace_reader__offset(r);
	rt_trace_reader__free(r);
	free(copy);
	return ret;
}

static void expect_error(const void *data, size_t len, int err, __u64 off, const char *needle)
{
	char msg[256], prefix[64];
	__u64 got;

	assert_int_equal(read_mem(data, len, msg, sizeof(msg), &got), err);
	snprintf(prefix, sizeof(prefix), "offset %llu: ", (unsigned long long)off);
	if (strncmp(msg, prefix, strlen(prefix)) || !strstr(msg, needle))
		fail_msg("got \"%s\", want \"%s...%s\"", msg, prefix, needle);
	assert_int_equal(got, off);
}

static unsigned char *slurp(const char *path, size_t *len)
{
	struct stat sb;
	unsigned char *p;
	int fd = open(path, O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &sb), 0);
	p = malloc(sb.st_size);
	assert_non_null(p);
	assert_int_equal(read(fd, p, sb.st_size), sb.st_size);
	close(fd);
	*len = sb.st_size;
	return p;
}

/* A small valid recording (14 records, no large one) by the writer; *offs gets record offsets. */
static unsigned char *small_recording(size_t *len, size_t *offs, size_t *n_offs)
{
	struct rt_trace_writer_opts o = fixture_opts();
	const struct rt_event_hdr *ev;
	struct rt_trace_writer *w;
	struct rt_trace_reader *r;
	unsigned char *data;
	unsigned int i;

	w = rt_trace_writer__open(tmp_path("small.rtrace"), &o);
	assert_non_null(w);
	for (i = 0; i < 12; i++)
		assert_int_equal(rt_trace_writer__write(
					 w, gen_event(i % 8 == 2 ? i - 1 : i, T0 + i * 150 * MS)),
				 0);
	assert_int_equal(rt_trace_writer__close(w), 0);
	data = slurp(tmp_path("small.rtrace"), len);
	r = rt_trace_reader__open_mem(data, *len);
	*n_offs = 0;
	offs[(*n_offs)++] = rt_trace_reader__offset(r);
	while (rt_trace_reader__next(r, &ev) == 1)
		offs[(*n_offs)++] = rt_trace_reader__offset(r);
	assert_string_equal(rt_trace_reader__error(r), "");
	rt_trace_reader__free(r);
	/* 12 events, one clock pair at 1.05 s, the end record */
	assert_int_equal(*n_offs, 12 + 1 + 1 + 1);
	assert_int_equal(offs[*n_offs - 1], *len);
	return data;
}

/* ---- tests -------------------------------------------------------------------- */

static void round_trip(size_t read_buf)
{
	struct rt_trace_writer_opts o = fixture_opts();
	struct rt_trace_reader_opts ro = { .buf_size = read_buf };
	struct rt_trace_writer_stats st;
	const struct rt_trace_header *h;
	const struct rt_event_hdr *ev;
	struct rt_trace_writer *w;
	struct rt_trace_reader *r;
	unsigned char **want;
	unsigned int i, n = 400, got = 0, clocks = 0;
	__u64 ts;

	want = calloc(n, sizeof(*want));
	w = rt_trace_writer__open(tmp_path("rt.rtrace"), &o);
	assert_non_null(w);
	for (i = 0, ts = T0; i < n; i++) {
		ts += rnd() % (20 * MS);
		ev = gen_event(i, ts);
		want[i] = malloc(ev->size);
		memcpy(want[i], ev, ev->size);
		assert_int_equal(rt_trace_writer__write(w, ev), 0);
	}
	rt_trace_writer__stats(w, &st);
	assert_true(st.clock_records >= 3); /* ~4 s of event time */
	assert_int_equal(st.records, n + st.clock_records);
	assert_int_equal(rt_trace_writer__close(w), 0);

	r = rt_trace_reader__open(tmp_path("rt.rtrace"), &ro);
	assert_non_null(r);
	h = rt_trace_reader__header(r);
	assert_non_null(h);
	assert_memory_equal(h->magic, RT_TRACE_MAGIC, RT_TRACE_MAGIC_LEN);
	assert_int_equal(h->version, RT_TRACE_VERSION);
	assert_int_equal(h->header_size, HDR_SIZE);
	assert_int_equal(h->event_version, RT_EVENT_VERSION);
	assert_int_equal(h->realtime_ns, REAL0);
	assert_int_equal(h->monotonic_ns, T0);
	assert_string_equal(h->host, "testhost");
	assert_string_equal(h->boot_id, "01234567-89ab-cdef-0123-456789abcdef");
	while (rt_trace_reader__next(r, &ev) == 1) {
		assert_int_equal((uintptr_t)ev % 8, 0);
		if (ev->kind == RT_EV_CLOCK) {
			clocks++;
			/* no clock_fn with a given pair: the header's offset */
			assert_int_equal(((const struct rt_ev_clock *)ev)->realtime_ns,
					 ev->ts_ns + (REAL0 - T0));
			continue;
		}
		if (ev->kind == RT_EV_TRACE_END) {
			assert_int_equal(((const struct rt_ev_trace_end *)ev)->records, n + clocks);
			continue;
		}
		assert_true(got < n);
		assert_int_equal(ev->size, ((struct rt_event_hdr *)want[got])->size);
		assert_memory_equal(ev, want[got], ev->size);
		got++;
	}
	assert_string_equal(rt_trace_reader__error(r), "");
	assert_int_equal(rt_trace_reader__next(r, &ev), 0);
	assert_int_equal(got, n);
	assert_int_equal(clocks, st.clock_records);
	assert_int_equal(rt_trace_reader__records(r), n + clocks + 1);
	rt_trace_reader__free(r);
	for (i = 0; i < n; i++)
		free(want[i]);
	free(want);
}

static void test_round_trip(void **state)
{
	(void)state;
	round_trip(0);
	round_trip(2 * RT_EVENT_MAX); /* the smallest buffer: refills cut records */
}

static void test_round_trip_pipe_and_mem(void **state)
{
	size_t len, offs[32], n_offs;
	unsigned char *data = small_recording(&len, offs, &n_offs);
	unsigned char *odd = malloc(len + 1);
	struct rt_trace_reader *r;
	int p[2];
	__u64 n;

	(void)state;
	assert_true(len < 65536); /* fits a pipe */
	assert_int_equal(pipe(p), 0);
	assert_int_equal(write(p[1], data, len), (ssize_t)len);
	close(p[1]);
	r = rt_trace_reader__fd_open(p[0], NULL);
	assert_non_null(r);
	assert_int_equal(read_all(r, &n), 0);
	assert_int_equal(n, n_offs - 1);
	rt_trace_reader__free(r);
	close(p[0]);

	/* memory at an odd address: records come back aligned all the same */
	memcpy(odd + 1, data, len);
	r = rt_trace_reader__open_mem(odd + 1, len);
	assert_int_equal(read_all(r, &n), 0);
	assert_int_equal(n, n_offs - 1);
	rt_trace_reader__free(r);
	free(odd);
	free(data);
}

static void test_file_mode_and_live_header(void **state)
{
	const struct rt_trace_header *h;
	struct rt_trace_writer *w;
	struct rt_trace_reader *r;
	char host[64] = "", boot[64] = "";
	struct stat sb;
	struct timespec ts;
	__u64 now;
	FILE *f;
	int fd;

	(void)state;
	/* an existing world-readable file becomes private */
	fd = open(tmp_path("mode.rtrace"), O_CREAT | O_WRONLY, 0644);
	assert_true(fd >= 0);
	fchmod(fd, 0644);
	close(fd);
	w = rt_trace_writer__open(tmp_path("mode.rtrace"), NULL);
	assert_non_null(w);
	assert_int_equal(stat(tmp_path("mode.rtrace"), &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0600);
	assert_int_equal(rt_trace_writer__close(w), 0);

	w = rt_trace_writer__open(tmp_path("new.rtrace"), NULL);
	assert_non_null(w);
	assert_int_equal(stat(tmp_path("new.rtrace"), &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0600);
	assert_int_equal(rt_trace_writer__close(w), 0);

	/* live header: the clocks, this host, this boot */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = ts.tv_sec * 1000000000ULL + ts.tv_nsec;
	r = rt_trace_reader__open(tmp_path("new.rtrace"), NULL);
	h = rt_trace_reader__header(r);
	assert_non_null(h);
	assert_true(h->monotonic_ns <= now && h->monotonic_ns > now - 10000 * MS);
	clock_gettime(CLOCK_REALTIME, &ts);
	assert_true(h->realtime_ns <= ts.tv_sec * 1000000000ULL + ts.tv_nsec);
	gethostname(host, sizeof(host) - 1);
	assert_string_equal(h->host, host);
	f = fopen("/proc/sys/kernel/random/boot_id", "r");
	if (f) {
		assert_non_null(fgets(boot, sizeof(boot), f));
		boot[strcspn(boot, "\n")] = '\0';
		fclose(f);
	}
	assert_string_equal(h->boot_id, boot);
	assert_int_equal(read_all(r, &now), 0);
	assert_int_equal(now, 1); /* the end record alone */
	rt_trace_reader__free(r);

	assert_null(rt_trace_writer__open(tmp_path("no/such/dir"), NULL));
	assert_int_equal(errno, ENOENT);
	assert_null(rt_trace_reader__open(tmp_path("missing"), NULL));
	assert_int_equal(errno, ENOENT);
}

static void test_header_checks(void **state)
{
	size_t len, offs[32], n_offs;
	unsigned char *data = small_recording(&len, offs, &n_offs);
	unsigned char *bad = malloc(len + 8);
	struct rt_trace_header *h = (void *)bad;
	const char *text = "GET / HTTP/1.1\r\n\r\n";

	(void)state;
#define RESET() memcpy(bad, data, len)
	RESET();
	bad[3] = 'X';
	expect_error(bad, len, -EBADMSG, 3, "bad magic");
	expect_error(text, strlen(text), -EBADMSG, 0, "bad magic");
	expect_error(data, 0, -ENODATA, 0, "truncated: file ends inside the header");
	RESET();
	h->version = 2;
	expect_error(bad, len, -EBADMSG, 8, "format version 2");
	RESET();
	h->header_size = 100;
	expect_error(bad, len, -EBADMSG, 12, "header size 100 invalid");
	h->header_size = HDR_SIZE + 4;
	expect_error(bad, len, -EBADMSG, 12, "invalid");
	h->header_size = 1 << 20;
	expect_error(bad, len, -EBADMSG, 12, "invalid");
	RESET();
	h->event_version = 0;
	expect_error(bad, len, -EBADMSG, 16, "event version 0");
	RESET();
	memset(h->host, 'h', sizeof(h->host));
	expect_error(bad, len, -EBADMSG, offsetof(struct rt_trace_header, host), "host");
	RESET();
	memset(h->boot_id, 'b', sizeof(h->boot_id));
	expect_error(bad, len, -EBADMSG, offsetof(struct rt_trace_header, boot_id), "boot id");

	/* a longer header from a newer writer is skipped */
	memcpy(bad, data, HDR_SIZE);
	memset(bad + HDR_SIZE, 0xee, 8);
	memcpy(bad + HDR_SIZE + 8, data + HDR_SIZE, len - HDR_SIZE);
	h->header_size = HDR_SIZE + 8;
	assert_int_equal(read_mem(bad, len + 8, NULL, 0, NULL), 0);
	expect_error(bad, HDR_SIZE + 4, -ENODATA, 0, "truncated: file ends inside the header");
#undef RESET
	free(bad);
	free(data);
}

/* Cut a valid recording at every length: the error names the cut record. */
static void test_truncated_every_length(void **state)
{
	size_t len, offs[32], n_offs, L, k;
	unsigned char *data = small_recording(&len, offs, &n_offs);
	struct rt_trace_reader_opts ro = { .buf_size = 2 * RT_EVENT_MAX };
	struct rt_trace_reader *r;
	__u64 n;
	int fd;

	(void)state;
	for (L = 0; L < len; L++) {
		if (L < HDR_SIZE) {
			expect_error(data, L, -ENODATA, 0,
				     "truncated: file ends inside the header");
			continue;
		}
		for (k = 0; k + 1 < n_offs && offs[k + 1] <= L; k++)
			;
		if (offs[k] == L)
			expect_error(data, L, -ENODATA, L, "truncated: no end record");
		else
			expect_error(data, L, -ENODATA, offs[k],
				     "truncated: file ends inside a record");
	}
	assert_int_equal(read_mem(data, len, NULL, 0, NULL), 0);

	/* the same through the file path, at a few lengths */
	fd = open(tmp_path("cut.rtrace"), O_CREAT | O_RDWR | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	for (k = n_offs - 1; k > 0; k--) {
		assert_int_equal(ftruncate(fd, offs[k] - 3), 0);
		r = rt_trace_reader__open(tmp_path("cut.rtrace"), &ro);
		assert_int_equal(read_all(r, &n), -ENODATA);
		assert_int_equal(n, k - 1);
		assert_int_equal(rt_trace_reader__offset(r), offs[k - 1]);
		rt_trace_reader__free(r);
	}
	close(fd);
	free(data);
}

/*
 * Flip bits at every byte: valid or a clean error at or after the damaged
 * record. Damage to the header's checked fields and to any record's size
 * (which frames everything after it) is always caught.
 */
static void test_bit_flips(void **state)
{
	static const unsigned char masks[] = { 0x01, 0x10, 0x80, 0xff };
	size_t len, offs[32], n_offs, i, k, m, detected = 0, total = 0;
	unsigned char *data = small_recording(&len, offs, &n_offs);
	unsigned char *bad = malloc(len);
	char msg[256], prefix[64];
	bool must;
	size_t unit;
	__u64 off;
	int ret;

	(void)state;
	for (i = 0; i < len; i++) {
		unit = 0;
		for (k = 0; k + 1 < n_offs && offs[k] <= i; k++)
			unit = offs[k];
		must = i < offsetof(struct rt_trace_header, flags) ||
		       (unit && (i - unit == 2 || i - unit == 3));
		for (m = 0; m < sizeof(masks); m++) {
			memcpy(bad, data, len);
			bad[i] ^= masks[m];
			ret = read_mem(bad, len, msg, sizeof(msg), &off);
			total++;
			if (ret == 0) {
				if (must)
					fail_msg("flip 0x%02x at %zu went unnoticed", masks[m], i);
				continue;
			}
			detected++;
			assert_true(ret == -EBADMSG || ret == -ENODATA);
			snprintf(prefix, sizeof(prefix), "offset %llu: ", (unsigned long long)off);
			assert_memory_equal(msg, prefix, strlen(prefix));
			assert_true(off <= len);
			if (off < unit)
				fail_msg("flip at %zu (record at %zu) reported at %llu: %s", i,
					 unit, (unsigned long long)off, msg);
		}
	}
	print_message("%zu of %zu flips detected in %zu bytes (payload is not checkable)\n",
		      detected, total, len);
	free(bad);
	free(data);
}

static void test_missing_end(void **state)
{
	struct rt_trace_writer_opts o = fixture_opts();
	size_t len, offs[32], n_offs, wlen;
	unsigned char *data = small_recording(&len, offs, &n_offs);
	struct rt_trace_writer *w;
	struct rt_trace_reader *r;
	unsigned char *part;
	__u64 n;
	int i;

	(void)state;
	expect_error(data, offs[n_offs - 2], -ENODATA, offs[n_offs - 2],
		     "truncated: no end record");

	/* a writer that has flushed but not closed (a crash) leaves a readable prefix */
	w = rt_trace_writer__open(tmp_path("open.rtrace"), &o);
	for (i = 0; i < 5; i++)
		assert_int_equal(rt_trace_writer__write(w, gen_event(0, T0 + i * MS)), 0);
	assert_int_equal(rt_trace_writer__flush(w), 0);
	part = slurp(tmp_path("open.rtrace"), &wlen);
	assert_int_equal(wlen, HDR_SIZE + 5 * sizeof(struct rt_ev_sched_switch));
	expect_error(part, wlen, -ENODATA, wlen, "truncated: no end record");
	r = rt_trace_reader__open(tmp_path("open.rtrace"), NULL);
	assert_int_equal(read_all(r, &n), -ENODATA);
	assert_int_equal(n, 5);
	rt_trace_reader__free(r);
	assert_int_equal(rt_trace_writer__close(w), 0);
	free(part);
	free(data);
}

static void test_bad_records(void **state)
{
	struct rt_ev_clock *c;
	struct rt_ev_trace_end *end;
	struct raw b;
	size_t off, off2;
	__u64 lo = T0 - RT_TRACE_SLACK_NS, hi = T0 + RT_TRACE_SLACK_NS;
	char want[128];

	(void)state;
	/* timestamps below and above the bounds */
	raw_header(&b, T0);
	rec_init(RT_EV_WATERMARK, 1, T0, 0);
	raw_rec(&b);
	rec_init(RT_EV_WATERMARK, 1, lo - 1, 0);
	off = raw_rec(&b);
	raw_end(&b, T0);
	snprintf(want, sizeof(want), "timestamp %llu outside recording bounds [%llu, %llu]", lo - 1,
		 lo, hi);
	expect_error(b.p, b.len, -EBADMSG, off + 8, want);
	free(b.p);

	raw_header(&b, T0);
	rec_init(RT_EV_WATERMARK, 1, hi, 0); /* the bound itself is inside */
	raw_rec(&b);
	rec_init(RT_EV_WATERMARK, 1, hi + 1, 0);
	off = raw_rec(&b);
	raw_end(&b, T0);
	expect_error(b.p, b.len, -EBADMSG, off + 8, "outside recording bounds");
	free(b.p);

	/* a clock record moves the upper bound; clocks never go back */
	raw_header(&b, T0);
	c = (void *)rec_init(RT_EV_CLOCK, 0, T0 + 100 * RT_TRACE_SLACK_NS, 0);
	c->realtime_ns = 1;
	raw_rec(&b);
	rec_init(RT_EV_WATERMARK, 1, T0 + 100 * RT_TRACE_SLACK_NS + 5, 0);
	raw_rec(&b);
	raw_end(&b, T0 + 100 * RT_TRACE_SLACK_NS);
	assert_int_equal(read_mem(b.p, b.len, NULL, 0, NULL), 0);
	rec_init(RT_EV_CLOCK, 0, T0 + 5, 0);
	off = b.len - sizeof(*end);
	b.len = off;
	b.records--;
	off = raw_rec(&b);
	raw_end(&b, T0 + 100 * RT_TRACE_SLACK_NS);
	expect_error(b.p, b.len, -EBADMSG, off + 8, "clock record");
	free(b.p);

	/* unknown kind, bad size, body fault, end count, data after end */
	raw_header(&b, T0);
	rec_init(RT_EV_WATERMARK, 1, T0, 0);
	off = raw_rec(&b);
	raw_end(&b, T0);
	((struct rt_event_hdr *)(b.p + off))->kind = 77;
	expect_error(b.p, b.len, -EBADMSG, off, "unknown kind 77");
	((struct rt_event_hdr *)(b.p + off))->kind = RT_EV_WATERMARK;
	((struct rt_event_hdr *)(b.p + off))->size = 3;
	expect_error(b.p, b.len, -EBADMSG, off + 2, "record size 3 below header size 24");
	((struct rt_event_hdr *)(b.p + off))->size = 24;
	assert_int_equal(read_mem(b.p, b.len, NULL, 0, NULL), 0);
	end = (void *)(b.p + b.len - sizeof(*end));
	end->records = 7;
	expect_error(b.p, b.len, -EBADMSG, b.len - 8, "end record counts 7 records, 1 precede it");
	end->records = 1;
	off2 = b.len;
	rec_init(RT_EV_WATERMARK, 1, T0, 0);
	raw_rec(&b);
	expect_error(b.p, b.len, -EBADMSG, off2, "data after end record");
	free(b.p);

	raw_header(&b, T0);
	rec_init(RT_EV_SCHED_SWITCH, 1, T0, 0);
	memset(((struct rt_ev_sched_switch *)recbuf)->prev_comm, 'c', RT_COMM_LEN);
	off = raw_rec(&b);
	raw_end(&b, T0);
	expect_error(b.p, b.len, -EBADMSG, off + offsetof(struct rt_ev_sched_switch, prev_comm),
		     "SCHED_SWITCH prev_comm not NUL-terminated");
	free(b.p);

	/* a size running past the end of the file is a truncation at that record */
	raw_header(&b, T0);
	rec_init(RT_EV_WATERMARK, 1, T0, 0);
	off = raw_rec(&b);
	raw_end(&b, T0);
	((struct rt_event_hdr *)(b.p + off))->size = 4096;
	expect_error(b.p, b.len, -ENODATA, off, "file ends inside a record (56 of 4096 bytes)");
	free(b.p);
}

static void test_writer_clock_records(void **state)
{
	struct rt_trace_writer_opts o = fixture_opts();
	const struct rt_event_hdr *ev, *prev = NULL;
	struct rt_trace_writer_stats st;
	struct rt_trace_writer *w;
	struct rt_trace_reader *r;
	__u64 clock_ts[8], prev_ts = 0;
	unsigned int i, n_clock = 0;

	(void)state;
	o.clock_fn = NULL;
	w = rt_trace_writer__open(tmp_path("clk.rtrace"), &o);
	/* every 100 ms for 3 s; one event arrives 50 ms out of order */
	for (i = 0; i <= 30; i++) {
		rec_init(RT_EV_WATERMARK, 1, T0 + i * 100 * MS - (i == 21 ? 150 * MS : 0), 0);
		assert_int_equal(rt_trace_writer__write(w, (void *)recbuf), 0);
	}
	rt_trace_writer__stats(w, &st);
	assert_int_equal(st.clock_records, 3);
	assert_int_equal(rt_trace_writer__close(w), 0);

	r = rt_trace_reader__open(tmp_path("clk.rtrace"), NULL);
	while (rt_trace_reader__next(r, &ev) == 1) {
		if (ev->kind == RT_EV_CLOCK) {
			assert_true(n_clock < 8);
			clock_ts[n_clock++] = ev->ts_ns;
			assert_int_equal(((const struct rt_ev_clock *)ev)->realtime_ns,
					 ev->ts_ns - T0 + REAL0);
		} else if (prev && prev->kind == RT_EV_CLOCK) {
			/* stamped with the record that crossed the period, right before it */
			assert_int_equal(ev->ts_ns, prev_ts);
		}
		prev = ev;
		prev_ts = ev->ts_ns;
	}
	assert_string_equal(rt_trace_reader__error(r), "");
	rt_trace_reader__free(r);
	assert_int_equal(n_clock, 3);
	assert_int_equal(clock_ts[0], T0 + 1000 * MS);
	assert_int_equal(clock_ts[1], T0 + 2000 * MS);
	assert_int_equal(clock_ts[2], T0 + 3000 * MS);
}

static __u64 fake_clock(__u64 mono, void *ctx)
{
	(*(int *)ctx)++;
	return mono * 2;
}

static void test_writer_clock_fn(void **state)
{
	struct rt_trace_writer_opts o = fixture_opts();
	const struct rt_event_hdr *ev;
	struct rt_trace_writer *w;
	struct rt_trace_reader *r;
	int calls = 0, seen = 0;

	(void)state;
	o.clock_fn = fake_clock;
	o.clock_ctx = &calls;
	o.source = 9;
	w = rt_trace_writer__open(tmp_path("fn.rtrace"), &o);
	rec_init(RT_EV_WATERMARK, 1, T0 + 5000 * MS, 0);
	assert_int_equal(rt_trace_writer__write(w, (void *)recbuf), 0);
	assert_int_equal(rt_trace_writer__close(w), 0);
	assert_int_equal(calls, 1);
	r = rt_trace_reader__open(tmp_path("fn.rtrace"), NULL);
	while (rt_trace_reader__next(r, &ev) == 1) {
		if (ev->kind == RT_EV_CLOCK) {
			seen++;
			assert_int_equal(ev->source, 9);
			assert_int_equal(((const struct rt_ev_clock *)ev)->realtime_ns,
					 2 * (T0 + 5000 * MS));
		}
		if (ev->kind == RT_EV_TRACE_END) {
			assert_int_equal(ev->source, 9);
			assert_int_equal(ev->ts_ns, T0 + 5000 * MS);
		}
	}
	assert_string_equal(rt_trace_reader__error(r), "");
	rt_trace_reader__free(r);
	assert_int_equal(seen, 1);
}

static void test_writer_rejects(void **state)
{
	struct rt_trace_writer_opts o = fixture_opts();
	struct rt_trace_writer_stats st;
	struct rt_trace_writer *w;
	_Alignas(8) unsigned char shifted[64];
	__u64 n;

	(void)state;
	o.buf_size = 100; /* below the minimum */
	assert_null(rt_trace_writer__open(tmp_path("rej.rtrace"), &o));
	assert_int_equal(errno, EINVAL);
	o.buf_size = 0;
	w = rt_trace_writer__open(tmp_path("rej.rtrace"), &o);
	assert_non_null(w);
	rec_init(RT_EV_WATERMARK, 1, T0, 30);
	assert_int_equal(rt_trace_writer__write(w, (void *)recbuf), -EINVAL);
	rec_init(77, 1, T0, 32);
	assert_int_equal(rt_trace_writer__write(w, (void *)recbuf), -EINVAL);
	rec_init(RT_EV_TRACE_END, 1, T0, 0);
	assert_int_equal(rt_trace_writer__write(w, (void *)recbuf), -EINVAL);
	rec_init(RT_EV_WATERMARK, 1, T0 - RT_TRACE_SLACK_NS - 1, 0);
	assert_int_equal(rt_trace_writer__write(w, (void *)recbuf), -ERANGE);
	rec_init(RT_EV_CLOCK, 1, T0 + 10, 0);
	assert_int_equal(rt_trace_writer__write(w, (void *)recbuf), 0);
	rec_init(RT_EV_CLOCK, 1, T0 + 9, 0);
	assert_int_equal(rt_trace_writer__write(w, (void *)recbuf), -EINVAL);
	rec_init(RT_EV_WATERMARK, 1, T0, 0);
	memcpy(shifted + 4, recbuf, 24);
	assert_int_equal(rt_trace_writer__write(w, (void *)(shifted + 4)), -EINVAL);
	rt_trace_writer__stats(w, &st);
	assert_int_equal(st.rejected, 6);
	assert_int_equal(st.records, 1);
	assert_int_equal(rt_trace_writer__close(w), 0);
	{
		struct rt_trace_reader *r = rt_trace_reader__open(tmp_path("rej.rtrace"), NULL);

		assert_int_equal(read_all(r, &n), 0);
		assert_int_equal(n, 2);
		rt_trace_reader__free(r);
	}
	assert_int_equal(rt_trace_writer__close(NULL), 0);
	rt_trace_reader__free(NULL);
}

/* A full disk: errors come back as -errno, stick, and the prefix reads as truncated. */
static void test_writer_disk_full(void **state)
{
	struct rt_trace_writer_opts o = fixture_opts();
	struct rlimit rl, save;
	struct rt_trace_writer *w;
	struct rt_trace_reader *r;
	int fd, err = 0, i;
	__u64 n;

	(void)state;
	fd = open("/dev/full", O_WRONLY);
	assert_true(fd >= 0);
	assert_null(rt_trace_writer__fd_open(fd, &o));
	assert_int_equal(errno, ENOSPC);
	close(fd);

	/* a file size limit stands in for a partition filling up mid-recording */
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &save), 0);
	signal(SIGXFSZ, SIG_IGN);
	rl = save;
	rl.rlim_cur = 100000;
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &rl), 0);
	o.buf_size = 2 * RT_EVENT_MAX;
	w = rt_trace_writer__open(tmp_path("full.rtrace"), &o);
	assert_non_null(w);
	for (i = 0; i < 1000 && !err; i++)
		err = rt_trace_writer__write(w, gen_event(2, T0 + i * MS));
	assert_int_equal(err, -EFBIG);
	assert_int_equal(rt_trace_writer__write(w, gen_event(0, T0)), -EFBIG);
	assert_int_equal(rt_trace_writer__flush(w), -EFBIG);
	assert_int_equal(rt_trace_writer__close(w), -EFBIG);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &save), 0);
	signal(SIGXFSZ, SIG_DFL);

	r = rt_trace_reader__open(tmp_path("full.rtrace"), NULL);
	assert_int_equal(read_all(r, &n), -ENODATA);
	assert_true(n > 0);
	assert_non_null(strstr(rt_trace_reader__error(r), "truncated"));
	rt_trace_reader__free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_round_trip_pipe_and_mem),
		cmocka_unit_test(test_file_mode_and_live_header),
		cmocka_unit_test(test_header_checks),
		cmocka_unit_test(test_truncated_every_length),
		cmocka_unit_test(test_bit_flips),
		cmocka_unit_test(test_missing_end),
		cmocka_unit_test(test_bad_records),
		cmocka_unit_test(test_writer_clock_records),
		cmocka_unit_test(test_writer_clock_fn),
		cmocka_unit_test(test_writer_rejects),
		cmocka_unit_test(test_writer_disk_full),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
