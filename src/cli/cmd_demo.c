// SPDX-License-Identifier: BSD-2-Clause
/*
 * reqtrace demo SCENARIO [--duration DUR] [--requests N] [--concurrency C]
 *
 * The first command on a fresh machine: starts reqtrace-testbed (with
 * markers) on a free port, reqtraced tracing it on a private socket, and
 * reqtrace-load against it; shows `top` while the load runs, then the
 * client's view, the three slowest requests and the verdict. Every process
 * it started is stopped on the way out, Ctrl-C included.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <reqtrace/span.h>

#include "cli.h"
#include "client.h"
#include "term.h"
#include "common/dur.h"
#include "export/waterfall.h"
#include "verdict/findings.h"
#include "verdict/verdict.h"

#define START_TIMEOUT_MS 20000
#define SPANS_TIMEOUT_MS 10000
#define SLOWEST 3

/* Defaults that finish in about 30 s on a small machine. */
static const struct scenario_default {
	const char *name;
	long requests, concurrency;
	bool peer; /* needs a comm peer (a second testbed in --peer-mode) */
	const char *why;
} defaults[] = {
	/*
	 * One 680 ms tokenizer thread: at concurrency 2 it is saturated and
	 * each request waits less for it than it works, so tokenize dominates;
	 * from 3 on, the wait (queue) dominates instead.
	 */
	{ "preprocess-bound", 16, 2, false, "one hot tokenizer thread (680 ms a request)" },
	{ "healthy", 300, 8, false, "every stage small, the engine batches" },
	{ "batch1", 100, 8, false, "the engine runs one request at a time" },
	{ "batch8", 300, 8, false, "the engine batches up to 8 requests" },
	{ "queue-burst", 160, 16, false, "a slow engine with small batches: requests queue" },
	{ "comm-bound", 300, 8, true, "every engine step waits 15 ms for a peer" },
};

struct demo {
	char bindir[PATH_MAX];
	char testbed[PATH_MAX], load[PATH_MAX], daemon[PATH_MAX], scenario[PATH_MAX];
	char dir[64], sock[PATH_MAX];
	const char *name;
	long requests, concurrency;
	uint64_t duration_ns;
	bool peer, tty;
	pid_t peer_pid, testbed_pid, daemon_pid, load_pid;
	unsigned int port, peer_port;
};

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL); /* a signal cuts it short; callers check `interrupted` */
}

static bool executable(const char *p)
{
	struct stat st;

	return !stat(p, &st) && S_ISREG(st.st_mode) && !access(p, X_OK);
}

/*
 * Where the programs the demo runs lie, relative to the reqtrace binary:
 * in the build tree, and in the installed layout. src/cli/CMakeLists.txt
 * computes both from the build's output folders and its install rules, so
 * they cannot drift from where the files really are.
 */
struct layout {
	const char *name;
	const char *helpers; /* reqtrace-testbed, reqtrace-load */
	const char *daemon; /* reqtraced */
	const char *configs; /* scenarios/<name>.conf */
};

static const struct layout layouts[] = {
	{ "build tree", RT_DEMO_BUILD_HELPERS, RT_DEMO_BUILD_DAEMON, RT_DEMO_BUILD_CONFIGS },
	{ "installed", RT_DEMO_INST_HELPERS, RT_DEMO_INST_DAEMON, RT_DEMO_INST_CONFIGS },
};

static bool find(char *out, const char *bindir, const char *rel, const char *name)
{
	if (snprintf(out, PATH_MAX, "%s/%s/%s", bindir, rel, name) >= PATH_MAX)
		return false;
	return executable(out);
}

/* The first layout that holds all three programs. */
static const struct layout *find_programs(struct demo *d)
{
	size_t i;

	for (i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++) {
		const struct layout *l = &layouts[i];

		if (find(d->testbed, d->bindir, l->helpers, "reqtrace-testbed") &&
		    find(d->load, d->bindir, l->helpers, "reqtrace-load") &&
		    find(d->daemon, d->bindir, l->daemon, "reqtraced"))
			return l;
	}
	return NULL;
}

static int locate(struct demo *d)
{
	const char *env = getenv("RT_CONFIG_DIR");
	const struct layout *l;
	char exe[PATH_MAX], *slash;
	ssize_t n;
	int w;

	/* /proc/self/exe, not argv[0]: found through $PATH or a symlink alike */
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0) {
		fprintf(stderr, "reqtrace: cannot find my own binary: %s\n", strerror(errno));
		return RT_EXIT_FAIL;
	}
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	*slash = '\0';
	snprintf(d->bindir, sizeof(d->bindir), "%s", exe[0] ? exe : "/");
	l = find_programs(d);
	if (!l) {
		fprintf(stderr,
			"reqtrace: demo needs reqtraced (%s/%s or %s/%s) and reqtrace-testbed, "
			"reqtrace-load (%s/%s or %s/%s): build all targets, or install\n",
			d->bindir, RT_DEMO_BUILD_DAEMON, d->bindir, RT_DEMO_INST_DAEMON, d->bindir,
			RT_DEMO_BUILD_HELPERS, d->bindir, RT_DEMO_INST_HELPERS);
		return RT_EXIT_FAIL;
	}
	/* SCENARIO may be a file of knobs itself */
	if (strchr(d->name, '/')) {
		snprintf(d->scenario, sizeof(d->scenario), "%s", d->name);
		if (!access(d->scenario, R_OK))
			return RT_EXIT_OK;
	} else {
		if (env) {
			w = snprintf(d->scenario, sizeof(d->scenario), "%s/scenarios/%s.conf", env,
				     d->name);
			if (w < (int)sizeof(d->scenario) && !access(d->scenario, R_OK))
				return RT_EXIT_OK;
		}
		w = snprintf(d->scenario, sizeof(d->scenario), "%s/%s/scenarios/%s.conf", d->bindir,
			     l->configs, d->name);
		if (w < (int)sizeof(d->scenario) && !access(d->scenario, R_OK))
			return RT_EXIT_OK;
	}
	fprintf(stderr,
		"reqtrace: no scenario '%s' (looked in $RT_CONFIG_DIR and %s/%s, %s layout); "
		"shipped: preprocess-bound, healthy, batch1, batch8, queue-burst, comm-bound\n",
		d->name, d->bindir, l->configs, l->name);
	return RT_EXIT_USAGE;
}

/* fork + exec with stdout and stderr to log, stdin from /dev/null. */
static pid_t spawn(char *const argv[], const char *log)
{
	pid_t parent = getpid(), pid;

	pid = fork();
	if (pid)
		return pid;
	/* own process group: the terminal's Ctrl-C reaches only the demo, which stops us in order */
	setpgid(0, 0);
	/* and if the demo dies without cleaning up, we go too */
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() != parent)
		_exit(127);
	{
		int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
		int out = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		sigset_t none;

		if (in < 0 || out < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0)
			_exit(127);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		execv(argv[0], argv);
		_exit(127);
	}
}

static bool alive(pid_t *pid)
{
	int st;

	if (*pid <= 0)
		return false;
	if (waitpid(*pid, &st, WNOHANG) == *pid) {
		*pid = 0;
		return false;
	}
	return true;
}

/* SIGTERM, then SIGKILL after 5 s. Returns the exit status (-1: killed or gone). */
static int stop(pid_t *pid)
{
	uint64_t until = now_ms() + 5000;
	int st = 0;

	if (*pid <= 0)
		return -1;
	kill(*pid, SIGTERM);
	while (waitpid(*pid, &st, WNOHANG) == 0) {
		if (now_ms() > until) {
			kill(*pid, SIGKILL);
			waitpid(*pid, &st, 0);
			break;
		}
		sleep_ms(20);
	}
	*pid = 0;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void log_path(char *out, const struct demo *d, const char *name)
{
	snprintf(out, PATH_MAX, "%s/%s", d->dir, name);
}

static void show_log(const struct demo *d, const char *name)
{
	char p[PATH_MAX], line[512];
	FILE *f;

	log_path(p, d, name);
	f = fopen(p, "r");
	if (!f)
		return;
	fprintf(stderr, "---- %s ----\n", p);
	while (fgets(line, sizeof(line), f))
		fputs(line, stderr);
	fclose(f);
}

/* The testbed prints "listening on 127.0.0.1:PORT" once it accepts. */
static int wait_listening(struct demo *d, pid_t *pid, const char *log, unsigned int *port)
{
	uint64_t until = now_ms() + START_TIMEOUT_MS;
	char p[PATH_MAX], line[256];

	log_path(p, d, log);
	while (!interrupted && now_ms() < until) {
		FILE *f = fopen(p, "r");

		while (f && fgets(line, sizeof(line), f))
			if (sscanf(line, "listening on 127.0.0.1:%u", port) == 1 && *port) {
				fclose(f);
				return 0;
			}
		if (f)
			fclose(f);
		if (!alive(pid)) {
			fprintf(stderr, "reqtrace: reqtrace-testbed exited at start\n");
			show_log(d, log);
			return RT_EXIT_FAIL;
		}
		sleep_ms(50);
	}
	if (!interrupted)
		fprintf(stderr, "reqtrace: reqtrace-testbed did not start listening\n");
	return RT_EXIT_FAIL;
}

static bool socket_answers(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, ok;

	if (strlen(path) >= sizeof(sa.sun_path))
		return false;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	ok = !connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	close(fd);
	return ok;
}

static int active_line(const char *line, size_t len, void *ctx)
{
	cJSON *j = cJSON_Parse(line);
	const cJSON *t;

	(void)len;
	cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(j, "targets"))
	{
		if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(t, "active")) &&
		    cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(t, "pids")) > 0)
			*(bool *)ctx = true;
	}
	cJSON_Delete(j);
	return 0;
}

/* Up when the control socket answers and the testbed is traced. */
static int wait_daemon(struct demo *d)
{
	uint64_t until = now_ms() + START_TIMEOUT_MS;

	while (!interrupted && now_ms() < until) {
		bool active = false;

		if (!alive(&d->daemon_pid)) {
			fprintf(stderr, "reqtrace: reqtraced exited at start\n");
			show_log(d, "reqtraced.log");
			return RT_EXIT_FAIL;
		}
		if (socket_answers(d->sock) &&
		    !rt_client_call(d->sock, "{\"v\":1,\"cmd\":\"status\"}", active_line, &active,
				    NULL, 0) &&
		    active)
			return 0;
		sleep_ms(100);
	}
	if (!interrupted) {
		fprintf(stderr, "reqtrace: reqtraced did not start tracing the testbed\n");
		show_log(d, "reqtraced.log");
	}
	return RT_EXIT_FAIL;
}

static int start_all(struct demo *d)
{
	char log[PATH_MAX], port[16], peer[64], url[96], n[24], c[24], limit[32], out[PATH_MAX],
		sum[PATH_MAX];

	if (d->peer) {
		char *argv[] = { d->testbed,   "--peer-mode", "--port", "0",
				 "--scenario", d->scenario,   NULL };

		log_path(log, d, "peer.log");
		d->peer_pid = spawn(argv, log);
		if (d->peer_pid < 0 || wait_listening(d, &d->peer_pid, "peer.log", &d->peer_port))
			return RT_EXIT_FAIL;
	}
	snprintf(peer, sizeof(peer), "127.0.0.1:%u", d->peer_port);
	{
		/* markers on: the spans get exact phases (queue, tokenize, prefill, decode) */
		char *argv[] = { d->testbed,
				 "--scenario",
				 d->scenario,
				 "--port",
				 "0",
				 "--markers",
				 d->peer ? "--peer" : NULL,
				 peer,
				 NULL };

		log_path(log, d, "testbed.log");
		d->testbed_pid = spawn(argv, log);
		if (d->testbed_pid < 0 ||
		    wait_listening(d, &d->testbed_pid, "testbed.log", &d->port))
			return RT_EXIT_FAIL;
	}
	snprintf(port, sizeof(port), "%u", d->port);
	{
		char *argv[] = { d->daemon, "--port", port, "--socket", d->sock, NULL };

		log_path(log, d, "reqtraced.log");
		d->daemon_pid = spawn(argv, log);
		if (d->daemon_pid < 0 || wait_daemon(d))
			return RT_EXIT_FAIL;
	}
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/v1/completions", d->port);
	snprintf(n, sizeof(n), "%ld", d->requests);
	snprintf(c, sizeof(c), "%ld", d->concurrency);
	snprintf(limit, sizeof(limit), "%.3f", d->duration_ns ? d->duration_ns / 1e9 : 60.0);
	log_path(out, d, "load.jsonl");
	log_path(sum, d, "summary.json");
	{
		char *argv[] = { d->load,
				 "--url",
				 url,
				 "--concurrency",
				 c,
				 "--requests",
				 n,
				 "--stream",
				 "--id-prefix",
				 "demo-",
				 "--duration-limit",
				 limit,
				 "--out",
				 out,
				 "--summary",
				 sum,
				 NULL };

		log_path(log, d, "load.log");
		d->load_pid = spawn(argv, log);
		if (d->load_pid < 0)
			return RT_EXIT_FAIL;
	}
	return 0;
}

/* top frames until the load ends; its exit status, or -1 when interrupted. */
static int watch_load(struct demo *d)
{
	int every = d->tty ? 1000 : 2000, st;
	uint64_t t0 = now_ms(), next = t0 + (uint64_t)every, limit;

	limit = t0 + (d->duration_ns ? d->duration_ns / 1000000 : 60000) + 60000;
	for (;;) {
		pid_t r = waitpid(d->load_pid, &st, WNOHANG);

		if (r == d->load_pid) {
			d->load_pid = 0;
			return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
		}
		if (interrupted)
			return -1;
		if (now_ms() > limit) {
			fprintf(stderr, "reqtrace: the load ran past its limit; stopping it\n");
			stop(&d->load_pid);
			return 1;
		}
		if (now_ms() >= next) {
			if (!d->tty)
				printf("---- top, %.0f s into the load ----\n",
				       (now_ms() - t0) / 1e3);
			if (rt_cli_top_frame(d->sock, d->tty))
				return 1;
			if (!d->tty)
				printf("\n");
			fflush(stdout);
			next += (uint64_t)every;
		}
		sleep_ms(100);
	}
}

static double num(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

/* The load generator's summary: what the clients saw. Returns its ok count. */
static long client_view(const struct demo *d)
{
	char p[PATH_MAX], buf[4096];
	size_t len;
	cJSON *j;
	FILE *f;
	long ok;

	log_path(p, d, "summary.json");
	f = fopen(p, "r");
	if (!f) {
		fprintf(stderr, "reqtrace: reqtrace-load wrote no summary\n");
		return -1;
	}
	len = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[len] = '\0';
	j = cJSON_Parse(buf);
	if (!j) {
		fprintf(stderr, "reqtrace: unreadable load summary\n");
		return -1;
	}
	printf("\n== the client's view (reqtrace-load) ==\n");
	printf("requests %.0f: ok %.0f, errors %.0f, aborted %.0f, not sent %.0f in %.1f s\n",
	       num(j, "requests"), num(j, "ok"), num(j, "errors"), num(j, "aborted"),
	       num(j, "not_sent"), num(j, "duration_s"));
	printf("throughput %.2f req/s, %.1f tokens/s\n", num(j, "throughput_rps"),
	       num(j, "tokens_per_s"));
	printf("TTFT     p50 %9.1f ms   p99 %9.1f ms\n", num(j, "ttft_p50_ms"),
	       num(j, "ttft_p99_ms"));
	printf("latency  p50 %9.1f ms   p99 %9.1f ms\n", num(j, "latency_p50_ms"),
	       num(j, "latency_p99_ms"));
	ok = (long)num(j, "ok");
	cJSON_Delete(j);
	return ok;
}

static int cmp_dur_desc(const void *a, const void *b)
{
	const struct rt_span *x = a, *y = b;
	uint64_t dx = x->end_ns - x->start_ns, dy = y->end_ns - y->start_ns;

	return (dx < dy) - (dx > dy);
}

/* Spans once the daemon has finished every request the clients saw end. */
static int collect(struct demo *d, long want, struct rt_span **spans, size_t *n)
{
	uint64_t until = now_ms() + SPANS_TIMEOUT_MS;
	int rc;

	for (;;) {
		rc = rt_client_spans(d->sock, 0, spans, n);
		if (rc || (long)*n >= want || now_ms() > until || interrupted)
			return rc;
		free(*spans);
		*spans = NULL;
		sleep_ms(200);
	}
}

static int report(struct demo *d, long ok)
{
	struct rt_waterfall_opts wo = {
		.width = rt_term_width(STDOUT_FILENO),
		.color = rt_term_color(STDOUT_FILENO),
	};
	struct rt_span *spans = NULL;
	struct rt_verdict *v = NULL;
	struct rt_findings *fs = NULL;
	size_t n = 0, i;
	int rc;

	rc = collect(d, ok, &spans, &n);
	if (rc)
		return rc;
	printf("\n== reqtrace's view: %zu span(s) ==\n", n);
	if ((long)n < ok)
		printf("(%ld requests ended at the client, %zu spans so far)\n", ok, n);
	qsort(spans, n, sizeof(*spans), cmp_dur_desc);
	for (i = 0; i < n && i < SLOWEST; i++) {
		printf("\n-- slowest #%zu: reqtrace show %s --\n", i + 1, spans[i].request_id);
		rt_waterfall_print(stdout, &spans[i], &wo);
	}
	v = malloc(sizeof(*v));
	fs = calloc(1, sizeof(*fs));
	if (!v || !fs || rt_verdict_compute(spans, n, v) ||
	    rt_findings_compute(spans, n, v, NULL, fs)) {
		fprintf(stderr, "reqtrace: out of memory\n");
		rc = RT_EXIT_FAIL;
	} else {
		/* what `reqtrace why` prints */
		printf("\n== reqtrace why ==\n");
		rt_findings_print(stdout, fs);
		fputc('\n', stdout);
		rt_verdict_print(stdout, v);
	}
	rt_findings_free(fs);
	free(fs);
	free(v);
	free(spans);
	return rc;
}

static void cleanup(struct demo *d, bool keep_logs)
{
	static const char *const files[] = { "peer.log", "testbed.log", "reqtraced.log",
					     "load.log", "load.jsonl",	"summary.json" };
	char p[PATH_MAX];
	size_t i;

	/* clients first, then the tracer, then what it traced */
	stop(&d->load_pid);
	stop(&d->daemon_pid);
	stop(&d->testbed_pid);
	stop(&d->peer_pid);
	if (!d->dir[0])
		return;
	if (keep_logs) {
		fprintf(stderr, "reqtrace: logs kept in %s\n", d->dir);
		return;
	}
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		log_path(p, d, files[i]);
		unlink(p);
	}
	unlink(d->sock);
	rmdir(d->dir);
}

static void usage(FILE *f)
{
	size_t i;

	fprintf(f,
		"usage: reqtrace demo SCENARIO [--requests N] [--concurrency C] [--duration DUR]\n"
		"Runs reqtrace-testbed (with markers), reqtraced and reqtrace-load; needs root.\n"
		"scenarios (configs/scenarios, or $RT_CONFIG_DIR/scenarios):\n");
	for (i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++)
		fprintf(f, "  %-17s %s (default %ld requests at concurrency %ld)\n",
			defaults[i].name, defaults[i].why, defaults[i].requests,
			defaults[i].concurrency);
	fprintf(f, "  --duration DUR  send requests for DUR instead of a fixed number\n");
}

static int parse(struct demo *d, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "requests", required_argument, NULL, 'n' },
		{ "concurrency", required_argument, NULL, 'c' },
		{ "duration", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	long req = 0, conc = 0;
	char *end;
	size_t i;
	int c;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'n':
		case 'c':
			errno = 0;
			*(c == 'n' ? &req : &conc) = strtol(optarg, &end, 10);
			if (errno || *end || (c == 'n' ? req : conc) < 1 ||
			    (c == 'n' ? req > 100000 : conc > 256)) {
				fprintf(stderr, "reqtrace: --%s: %s\n",
					c == 'n' ? "requests" : "concurrency",
					c == 'n' ? "1..100000" : "1..256");
				return RT_EXIT_USAGE;
			}
			break;
		case 'd':
			if (rt_dur_parse(optarg, &d->duration_ns) ||
			    d->duration_ns < 1000000000ull || d->duration_ns > 3600000000000ull) {
				fprintf(stderr, "reqtrace: --duration: from 1s to 1h\n");
				return RT_EXIT_USAGE;
			}
			break;
		case 'h':
			usage(stdout);
			return -1;
		default:
			usage(stderr);
			return RT_EXIT_USAGE;
		}
	}
	if (optind != argc - 1) {
		usage(stderr);
		return RT_EXIT_USAGE;
	}
	d->name = argv[optind];
	d->requests = 40;
	d->concurrency = 4;
	for (i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++) {
		if (!strcmp(d->name, defaults[i].name)) {
			d->requests = defaults[i].requests;
			d->concurrency = defaults[i].concurrency;
			d->peer = defaults[i].peer;
		}
	}
	/* a duration alone: as many requests as fit (the load stops sending at the limit) */
	if (d->duration_ns && !req)
		d->requests = 100000;
	if (req)
		d->requests = req;
	if (conc)
		d->concurrency = conc;
	return 0;
}

int rt_cmd_demo(struct rt_cli *cli, int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal }, old_int, old_term;
	struct demo d = { 0 };
	int rc, load_rc;
	long ok;

	(void)cli;
	rc = parse(&d, argc, argv);
	if (rc)
		return rc < 0 ? RT_EXIT_OK : rc;
	if (geteuid() != 0) {
		fprintf(stderr,
			"reqtrace: demo needs root: reqtraced loads eBPF programs "
			"(run: sudo reqtrace demo %s)\n",
			d.name);
		return RT_EXIT_FAIL;
	}
	rc = locate(&d);
	if (rc)
		return rc;
	snprintf(d.dir, sizeof(d.dir), "/tmp/reqtrace-demo-XXXXXX");
	if (!mkdtemp(d.dir)) {
		fprintf(stderr, "reqtrace: %s: %s\n", d.dir, strerror(errno));
		return RT_EXIT_FAIL;
	}
	snprintf(d.sock, sizeof(d.sock), "%s/ctl.sock", d.dir);
	d.tty = isatty(STDOUT_FILENO) == 1;
	/* no SA_RESTART: sleeps return early so Ctrl-C is handled at once */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);

	printf("reqtrace demo: scenario %s (%s)\n", d.name, d.scenario);
	printf("markers are on: the testbed calls rt_mark_* so spans carry exact phases "
	       "(queue, tokenize, prefill, decode); a server without markers gives "
	       "pre_first_token instead\n");
	if (d.duration_ns)
		printf("load: concurrency %ld for %.0f s (at most %ld requests), streamed\n",
		       d.concurrency, d.duration_ns / 1e9, d.requests);
	else
		printf("load: %ld requests at concurrency %ld, streamed\n", d.requests,
		       d.concurrency);
	fflush(stdout);
	rc = start_all(&d);
	if (rc)
		goto out;
	printf("testbed on 127.0.0.1:%u, reqtraced on %s; logs in %s\n\n", d.port, d.sock, d.dir);
	fflush(stdout);
	load_rc = watch_load(&d);
	if (load_rc < 0) {
		rc = RT_EXIT_FAIL;
		goto out;
	}
	if (d.tty)
		fputs(RT_ANSI_CLEAR_HOME, stdout);
	ok = client_view(&d);
	if (ok < 0 || (load_rc && !d.duration_ns)) {
		fprintf(stderr, "reqtrace: reqtrace-load failed (exit %d)\n", load_rc);
		show_log(&d, "load.log");
		rc = RT_EXIT_FAIL;
		goto out;
	}
	rc = report(&d, ok);
out:
	if (interrupted) {
		fprintf(stderr, "\nreqtrace: interrupted; stopping the demo's processes\n");
		rc = RT_EXIT_FAIL;
	}
	fflush(stdout);
	cleanup(&d, rc != RT_EXIT_OK && !interrupted);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	return rc;
}
