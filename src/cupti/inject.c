// SPDX-License-Identifier: BSD-2-Clause
/*
 * libreqtrace_cupti.so's entry point. libcuda calls InitializeInjection()
 * during cuInit when CUDA_INJECTION64_PATH names this library. Whatever
 * happens, the host keeps running: no CUPTI, another profiler holding it,
 * no daemon, a refusing or dying daemon all leave the library idle (and
 * say why under REQTRACE_CUPTI_DEBUG); it returns 1, the value the CUPTI
 * injection samples return for success.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "dbg.h"

#define CONNECT_BUDGET_MS 50 /* the most InitializeInjection waits for a daemon */

struct rt_cupti_agent rt_cupti_agent = {
	.ring_lock = PTHREAD_MUTEX_INITIALIZER,
	.sock = -1,
	.flush_ms = RT_INJECT_FLUSH_MS_DEFAULT,
	.horizon_ms = RT_INJECT_HORIZON_MS_DEFAULT,
};

static int initialized;

/* The process's name for HELLO (our thread renames itself, so not PR_GET_NAME there). */
static void read_comm(struct rt_cupti_agent *a)
{
	ssize_t n = 0;
	int fd;

	fd = open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, a->comm, sizeof(a->comm) - 1);
		close(fd);
	}
	if (n > 0 && a->comm[n - 1] == '\n')
		n--;
	a->comm[n > 0 ? n : 0] = '\0';
}

static void on_exit_flush(void)
{
	struct rt_cupti_agent *a = &rt_cupti_agent;

	if (__atomic_load_n(&a->forked_child, __ATOMIC_ACQUIRE))
		return;
	rt_cupti_collect_exit(a);
}

/* fork(): keep the locks consistent, and make the child idle for good (its
 * ring mapping is the parent's; CUDA does not survive fork anyway) */
static void fork_prepare(void)
{
	pthread_mutex_lock(&rt_cupti_agent.ring_lock);
	if (rt_cupti_agent.pool.free)
		pthread_mutex_lock(&rt_cupti_agent.pool.lock);
}

static void fork_parent(void)
{
	if (rt_cupti_agent.pool.free)
		pthread_mutex_unlock(&rt_cupti_agent.pool.lock);
	pthread_mutex_unlock(&rt_cupti_agent.ring_lock);
}

static void fork_child(void)
{
	struct rt_cupti_agent *a = &rt_cupti_agent;

	__atomic_store_n(&a->forked_child, 1, __ATOMIC_RELEASE);
	rt_cupti_ring_unmap(&a->ring);
	if (a->sock >= 0)
		close(a->sock);
	a->sock = -1;
	a->thread_started = 0;
	fork_parent();
}

__attribute__((visibility("default"))) int InitializeInjection(void)
{
	struct rt_cupti_agent *a = &rt_cupti_agent;
	const char *path;
	int err;

	if (__atomic_exchange_n(&initialized, 1, __ATOMIC_ACQ_REL))
		return 1;
	rt_cupti_dbg_init();
	path = getenv(RT_INJECT_SOCKET_ENV);
	if (!path || !*path)
		path = RT_INJECT_SOCKET_DEFAULT;
	if (strlen(path) >= sizeof(a->socket_path)) {
		rt_cupti_dbg("%s too long: staying idle", RT_INJECT_SOCKET_ENV);
		return 1;
	}
	strcpy(a->socket_path, path);
	rt_cupti_collect_init(a);
	pthread_atfork(fork_prepare, fork_parent, fork_child);
	atexit(on_exit_flush);
	read_comm(a);
	err = rt_cupti_conn_try(a, CONNECT_BUDGET_MS);
	if (err)
		rt_cupti_dbg("no session with %s yet (%s): retrying in the background",
			     a->socket_path, strerror(-err));
	if (rt_cupti_conn_start_thread(a))
		rt_cupti_dbg("cannot start the background thread: no retries, no watermarks");
	return 1;
}
