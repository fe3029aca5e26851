// SPDX-License-Identifier: BSD-2-Clause
/*
 * Which pack a file carries (docs/packs.md "Matching"): its function
 * symbols against every pack's symbols= and without=, its name against
 * files=. Only the names some pack mentions are kept, so a program with a
 * hundred thousand symbols (node) costs one pass over its tables.
 */
#include "sources/pack.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sources/gpu_elf.h"

#define NAMES_MAX (RT_PACKS_MAX * (3 * RT_PACK_MATCH_MAX + 2 * RT_PACK_PROBES_MAX))

struct found {
	const char *name; /* into the packs */
	uint64_t offset; /* 0: not present */
};

struct names {
	struct found *v;
	uint32_t n;
	uint32_t n_syms;
};

static struct found *lookup(struct names *ns, const char *name)
{
	uint32_t i;

	for (i = 0; i < ns->n; i++)
		if (!strcmp(ns->v[i].name, name))
			return &ns->v[i];
	return NULL;
}

static void want(struct names *ns, const char *name)
{
	if (name[0] && !lookup(ns, name) && ns->n < NAMES_MAX)
		ns->v[ns->n++].name = name;
}

static int on_sym(const struct rt_elf_sym *sym, void *ctx)
{
	struct names *ns = ctx;
	struct found *f;

	ns->n_syms++;
	f = lookup(ns, sym->name);
	/* .dynsym first: a name .symtab repeats is the same function */
	if (f && !f->offset && sym->offset)
		f->offset = sym->offset;
	return 0;
}

static bool present(struct names *ns, const char *name)
{
	struct found *f = lookup(ns, name);

	return f && f->offset;
}

static bool sym_match(struct names *ns, const struct rt_pack *p, const char **missing)
{
	uint32_t i;

	*missing = NULL;
	for (i = 0; i < p->n_symbols; i++)
		if (!present(ns, p->symbols[i])) {
			*missing = p->symbols[i];
			return false;
		}
	for (i = 0; i < p->n_without; i++)
		if (present(ns, p->without[i]))
			return false;
	return true;
}

static bool name_match(const struct rt_pack *p, const char *path)
{
	const char *base = strrchr(path, '/');
	uint32_t i;

	base = base ? base + 1 : path;
	for (i = 0; i < p->n_files; i++)
		if (!fnmatch(p->files[i], base, 0))
			return true;
	return false;
}

static void sites_of(struct names *ns, const struct rt_pack *p, struct rt_pack_pick *pick)
{
	uint32_t i, j;

	for (i = 0; i < p->n_probes; i++) {
		const struct rt_pack_probe *pr = &p->probes[i];
		struct found *f = lookup(ns, pr->sym);
		bool dup = false;

		if (!f || !f->offset || (pr->unless[0] && present(ns, pr->unless)))
			continue;
		/* an alias: two uprobes at one address would report every call twice */
		for (j = 0; j < pick->n_sites; j++)
			dup |= pick->sites[j].offset == f->offset;
		if (dup)
			continue;
		pick->sites[pick->n_sites].offset = f->offset;
		pick->sites[pick->n_sites].probe = (uint16_t)i;
		pick->n_sites++;
	}
}

int rt_pack_match_file(const struct rt_packs *ps, const char *path, struct rt_pack_pick *pick)
{
	struct names ns = { 0 };
	uint32_t i, j, best_n = 0;
	int err;

	memset(pick, 0, sizeof(*pick));
	pick->pack = pick->named = -1;
	if (!ps || !path)
		return -EINVAL;
	ns.v = calloc(NAMES_MAX, sizeof(*ns.v));
	if (!ns.v)
		return -ENOMEM;
	for (i = 0; i < ps->n; i++) {
		const struct rt_pack *p = &ps->packs[i];

		for (j = 0; j < p->n_symbols; j++)
			want(&ns, p->symbols[j]);
		for (j = 0; j < p->n_without; j++)
			want(&ns, p->without[j]);
		for (j = 0; j < p->n_probes; j++) {
			want(&ns, p->probes[j].sym);
			want(&ns, p->probes[j].unless);
		}
	}
	err = rt_elf_funcs(path, RT_ELF_DYNSYM | RT_ELF_SYMTAB, on_sym, &ns);
	if (err == -ENODATA) {
		/* an ELF file without symbol tables is what stripping a static binary leaves */
		pick->stripped = true;
		err = 0;
	}
	if (err)
		goto cleanup;
	pick->n_syms = ns.n_syms;
	pick->stripped |= !ns.n_syms;
	for (i = 0; i < ps->n; i++) {
		const char *missing;

		if (sym_match(&ns, &ps->packs[i], &missing)) {
			if (pick->pack < 0 || ps->packs[i].n_symbols > best_n) {
				pick->pack = (int)i;
				best_n = ps->packs[i].n_symbols;
			}
		} else if (pick->named < 0 && name_match(&ps->packs[i], path)) {
			pick->named = (int)i;
			snprintf(pick->missing, sizeof(pick->missing), "%s",
				 missing ? missing : "");
		}
	}
	if (pick->pack >= 0) {
		pick->named = -1;
		pick->missing[0] = '\0';
		sites_of(&ns, &ps->packs[pick->pack], pick);
	}
cleanup:
	free(ns.v);
	return err;
}

int rt_pack_mapped_files(pid_t pid, int (*fn)(const char *path, void *ctx), void *ctx)
{
	char maps[64], line[4096], prev[4096] = "";
	FILE *f;
	int rc = 0;

	snprintf(maps, sizeof(maps), "/proc/%d/maps", (int)pid);
	f = fopen(maps, "re");
	if (!f)
		return -errno;
	while (!rc && fgets(line, sizeof(line), f)) {
		char perms[8] = "", *file, *nl, path[4200];

		/* "start-end perms offset dev inode path" */
		if (sscanf(line, "%*s %7s", perms) != 1 || perms[2] != 'x')
			continue;
		file = strchr(line, '/');
		if (!file)
			continue;
		nl = strchr(file, '\n');
		if (nl)
			*nl = '\0';
		/* replaced on disk: the path names another file now */
		if (strstr(file, " (deleted)"))
			continue;
		/* a file's mappings are adjacent: report it once in a row */
		if (!strcmp(file, prev))
			continue;
		snprintf(prev, sizeof(prev), "%s", file);
		snprintf(path, sizeof(path), "/proc/%d/root%s", (int)pid, file);
		rc = fn(path, ctx);
	}
	fclose(f);
	return rc;
}
