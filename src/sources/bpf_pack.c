// SPDX-License-Identifier: BSD-2-Clause
/*
 * Engine-pack uprobes (bpf/pack.bpf.c, docs/packs.md): for a traced
 * process, every ELF file it maps executable is examined once (by device
 * and inode, under any path), matched against the packs (pack_match.c),
 * and the chosen pack's functions get a uprobe (and a uretprobe where the
 * pack asks) each, with a slot of `pack_specs` as the cookie. The object is
 * loaded at the first file that needs it, reusing the source's ring, target
 * map and counters like the GPU object.
 *
 * A uprobe belongs to the file: one attachment covers every process that
 * maps it, which is why a file is attached once, not once per process.
 * Files are few per pack (one libllama per install) and a pack has at most
 * RT_PACK_PROBES_MAX functions, so per-function perf-event uprobes are
 * enough here (the GPU loader needs uprobe.multi for its hundreds).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "common/log.h"
#include "bpf_internal.h"
#include "sources/pack.h"

#include "rt_bpf_shared.h"

#include "pack.skel.h"

#define FILES_MAX 4096 /* distinct files examined; past it, new ones are not */

struct pack_file {
	dev_t dev;
	ino_t ino;
	int pack; /* attached pack, -1: none */
	uint32_t n_links;
	struct bpf_link **links;
};

struct rt_bpf_pack {
	struct pack_bpf *skel;
	int load_err; /* a failed load is not retried */
	const struct rt_packs *packs; /* the daemon's; one set for the source's life */
	struct pack_file *files;
	uint32_t n_files, cap;
	uint32_t next_slot;
	bool full_warned;
	struct rt_pack_stats st;
};

static int load(struct rt_bpf_source *s, struct rt_bpf_pack *p)
{
	struct pack_bpf *k = pack_bpf__open();
	int err;

	if (!k)
		return -errno;
	if ((err = rt_bpf_configure(s, k->maps.traced_tgids, k->maps.rt_ring, k->maps.rt_counters,
				    &k->rodata->rt_source_id, &k->rodata->rt_wake_bytes)) ||
	    (err = pack_bpf__load(k))) {
		pack_bpf__destroy(k);
		rt_bpf_env_explain("loading pack.bpf.o", err);
		return err;
	}
	p->skel = k;
	return 0;
}

static void spec_of(const struct rt_pack_probe *pr, uint32_t pack, struct rt_bpf_pack_spec *sp)
{
	uint32_t k;

	memset(sp, 0, sizeof(*sp));
	sp->pack = pack;
	sp->role = pr->role;
	sp->n_args = pr->n_args;
	sp->reader = pr->reader;
	for (k = 0; k < pr->n_args && k < RT_PACK_ARGS_MAX; k++) {
		sp->args[k] = pr->args[k];
		sp->arg_type[k] = pr->arg_type[k];
	}
	sp->ret_type = pr->ret_type;
}

static void fail_note(struct rt_pack_stat *ps, const char *path, const char *why)
{
	struct rt_pack_failure *fl;

	ps->failed++;
	fl = &ps->failures[ps->n_failures < RT_PACK_FAILURES_MAX ? ps->n_failures++ :
								   RT_PACK_FAILURES_MAX - 1];
	snprintf(fl->file, sizeof(fl->file), "%s", path);
	snprintf(fl->reason, sizeof(fl->reason), "%s", why);
}

/* The pack's uprobes on one file; what attached stays attached. */
static int attach_sites(struct rt_bpf_pack *p, struct pack_file *pf, const char *path,
			const struct rt_pack_pick *pick)
{
	const struct rt_pack *pack = &p->packs->packs[pick->pack];
	struct rt_pack_stat *ps = &p->st.packs[pick->pack];
	int fd = bpf_map__fd(p->skel->maps.pack_specs), first_err = 0;
	uint32_t i, failed = 0;

	pf->links = calloc(2 * pick->n_sites, sizeof(*pf->links));
	if (!pf->links)
		return -ENOMEM;
	for (i = 0; i < pick->n_sites; i++) {
		const struct rt_pack_probe *pr = &pack->probes[pick->sites[i].probe];
		struct rt_bpf_pack_spec sp;
		uint32_t slot = p->next_slot;
		int w, err = 0;

		if (slot >= RT_BPF_PACK_SLOTS) {
			err = -ENOSPC;
			goto next;
		}
		spec_of(pr, (uint32_t)pick->pack, &sp);
		if (bpf_map_update_elem(fd, &slot, &sp, BPF_ANY)) {
			err = -errno;
			goto next;
		}
		p->next_slot++;
		for (w = 0; w < (pr->ret ? 2 : 1) && !err; w++) {
			LIBBPF_OPTS(bpf_uprobe_opts, uo, .bpf_cookie = slot, .retprobe = w == 1);
			struct bpf_link *l = bpf_program__attach_uprobe_opts(
				w ? p->skel->progs.rt_pack_ret : p->skel->progs.rt_pack_enter, -1,
				path, pick->sites[i].offset, &uo);

			if (!l)
				err = -errno;
			else
				pf->links[pf->n_links++] = l;
		}
	next:
		if (err) {
			failed++;
			if (!first_err) {
				char why[160];

				first_err = err;
				snprintf(why, sizeof(why), "uprobe on %s: %s", pr->sym,
					 strerror(-err));
				fail_note(ps, path, why);
				elog("pack %s: %s in %s", pack->name, why, path);
			}
		}
	}
	ps->probes += pf->n_links;
	p->st.probes += pf->n_links;
	ilog("pack %s %s: %u uprobes on %s (%u functions, %u failed)", pack->name, pack->version,
	     pf->n_links, path, pick->n_sites, failed);
	return pf->n_links ? 0 : first_err;
}

/* One file, first seen: match and attach, and count the outcome. */
static int examine(struct rt_bpf_source *s, struct rt_bpf_pack *p, struct pack_file *pf,
		   const char *path)
{
	struct rt_pack_pick *pick = calloc(1, sizeof(*pick));
	struct rt_pack_stat *ps;
	int err;

	if (!pick)
		return -ENOMEM;
	p->st.files_examined++;
	err = rt_pack_match_file(p->packs, path, pick);
	if (err) {
		/* a data file mapped executable, or gone already: not an engine */
		err = 0;
		goto cleanup;
	}
	if (pick->pack < 0 && pick->named < 0)
		goto cleanup;
	if (pick->pack < 0) {
		char why[RT_PACK_SYM_LEN + 64];

		ps = &p->st.packs[pick->named];
		ps->matched++;
		snprintf(why, sizeof(why), "%s%s",
			 pick->stripped ? "stripped: no symbol tables" : "no symbol ",
			 pick->stripped ? "" : pick->missing);
		fail_note(ps, path, why);
		wlog("pack %s matches %s by name but cannot attach: %s",
		     p->packs->packs[pick->named].name, path, why);
		goto cleanup;
	}
	ps = &p->st.packs[pick->pack];
	ps->matched++;
	if (!p->skel && !p->load_err)
		p->load_err = load(s, p);
	if (p->load_err) {
		fail_note(ps, path, "pack.bpf.o did not load");
		err = p->load_err;
		goto cleanup;
	}
	err = attach_sites(p, pf, path, pick);
	/* what attached stays attached: pinned like the tracepoints (bpf_pin.c) */
	for (uint32_t i = 0; i < pf->n_links; i++)
		rt_bpf_pin_fd(s, bpf_link__fd(pf->links[i]));
	if (!err) {
		pf->pack = pick->pack;
		ps->attached++;
	}
cleanup:
	free(pick);
	return err;
}

struct scan {
	struct rt_bpf_source *s;
	struct rt_bpf_pack *p;
	int err;
};

static int on_file(const char *path, void *ctx)
{
	struct scan *sc = ctx;
	struct rt_bpf_pack *p = sc->p;
	struct pack_file *pf;
	struct stat st;
	uint32_t i;
	int err;

	if (stat(path, &st) || !S_ISREG(st.st_mode))
		return 0;
	for (i = 0; i < p->n_files; i++)
		if (p->files[i].dev == st.st_dev && p->files[i].ino == st.st_ino)
			return 0;
	if (p->n_files >= FILES_MAX) {
		if (!p->full_warned)
			wlog("engine packs: %d files examined; %s and later ones are not",
			     FILES_MAX, path);
		p->full_warned = true;
		return 0;
	}
	if (p->n_files == p->cap) {
		uint32_t cap = p->cap ? 2 * p->cap : 64;
		struct pack_file *v = realloc(p->files, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		p->files = v;
		p->cap = cap;
	}
	pf = &p->files[p->n_files++];
	memset(pf, 0, sizeof(*pf));
	pf->dev = st.st_dev;
	pf->ino = st.st_ino;
	pf->pack = -1;
	err = examine(sc->s, p, pf, path);
	if (err && !sc->err)
		sc->err = err;
	return 0;
}

int rt_bpf_source__attach_packs(struct rt_bpf_source *s, const struct rt_packs *packs, __u32 pid)
{
	struct scan sc = { .s = s };
	struct rt_bpf_pack *p;
	uint32_t i;
	int err;

	if (!s || !packs || !pid)
		return -EINVAL;
	if (!s->pack) {
		s->pack = calloc(1, sizeof(*s->pack));
		if (!s->pack)
			return -ENOMEM;
		s->pack->packs = packs;
		s->pack->st.n = packs->n;
		for (i = 0; i < packs->n; i++) {
			snprintf(s->pack->st.packs[i].name, RT_PACK_NAME_LEN, "%s",
				 packs->packs[i].name);
			snprintf(s->pack->st.packs[i].version, RT_PACK_NAME_LEN, "%s",
				 packs->packs[i].version);
		}
	}
	p = s->pack;
	if (p->packs != packs)
		return -EBUSY; /* one pack set per source: the wire ids are its indexes */
	if (!packs->n)
		return 0;
	sc.p = p;
	err = rt_pack_mapped_files((pid_t)pid, on_file, &sc);
	return err ? err : sc.err;
}

void rt_bpf_source__pack_stats(const struct rt_bpf_source *s, struct rt_pack_stats *st)
{
	const struct rt_bpf_pack *p = s ? s->pack : NULL;
	uint32_t slot;
	int fd, i;

	memset(st, 0, sizeof(*st));
	if (!p)
		return;
	*st = p->st;
	if (!p->skel)
		return;
	fd = bpf_map__fd(p->skel->maps.pack_counters);
	for (slot = 0; slot < RT_PACK_CNT__MAX; slot++) {
		__u64 sum = 0;

		if (bpf_map_lookup_elem(fd, &slot, s->percpu))
			continue;
		for (i = 0; i < s->n_cpus; i++)
			sum += s->percpu[i];
		if (slot == RT_PACK_CNT_BAD_COOKIE)
			st->bad_cookie = sum;
		else if (slot == RT_PACK_CNT_BATCH_UNREADABLE)
			st->batch_unreadable = sum;
	}
}

void rt_bpf_pack_free(struct rt_bpf_source *s)
{
	struct rt_bpf_pack *p = s->pack;
	uint32_t i, j;

	if (!p)
		return;
	for (i = 0; i < p->n_files; i++) {
		for (j = 0; j < p->files[i].n_links; j++)
			bpf_link__destroy(p->files[i].links[j]);
		free(p->files[i].links);
	}
	free(p->files);
	pack_bpf__destroy(p->skel);
	free(p);
	s->pack = NULL;
}
