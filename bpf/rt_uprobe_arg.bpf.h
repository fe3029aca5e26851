/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A uprobe's arguments, as the BPF programs on user functions read them
 * (gpu.bpf.c, pack.bpf.c): include after vmlinux.h, the libbpf headers and
 * <reqtrace/uprobe_args.h>.
 */
#ifndef RT_UPROBE_ARG_BPF_H
#define RT_UPROBE_ARG_BPF_H

/*
 * The uprobe argument ABI of the arch the object is built for
 * (<reqtrace/uprobe_args.h>): ABI(ARG1_REG) is RT_X86_64_ARG1_REG or
 * RT_AAPCS64_ARG1_REG. Registers are read by field name, a CO-RE access
 * like libbpf's PT_REGS_PARM*(), through the type libbpf reads them as:
 * arm64 hands BPF the uapi struct user_pt_regs that begins its pt_regs.
 * A macro, not a typedef: a CO-RE relocation names the type it was written
 * against, and the kernel's BTF has no rt_ typedef to match (the object
 * then fails to load with "no matching targets found").
 */
#if defined(__TARGET_ARCH_x86)
#define ABI(x) RT_X86_64_##x
#define RT_REGS struct pt_regs
#define RT_BIG_ARG_ABI RT_ABI_X86_64
#elif defined(__TARGET_ARCH_arm64)
#define ABI(x) RT_AAPCS64_##x
#define RT_REGS struct user_pt_regs
#define RT_BIG_ARG_ABI RT_ABI_AAPCS64
#else
#error "no uprobe argument ABI for this __TARGET_ARCH (include/reqtrace/uprobe_args.h)"
#endif

/* Keeps the compiler from folding the register loads below into one computed ctx offset. */
#define RT_OPAQUE(v) asm volatile("" : "+r"(v))
/* A register of the probed function: the verifier accepts only constant offsets into ctx. */
#define REG(ctx, r) (((const RT_REGS *)(ctx))->ABI(r##_REG))
/* the field names the table gives are at the offsets it gives (and the tests check) */
#define REG_AT(r) _Static_assert(__builtin_offsetof(RT_REGS, ABI(r##_REG)) == ABI(r##_OFF), #r)
REG_AT(ARG1);
REG_AT(ARG2);
REG_AT(ARG3);
REG_AT(ARG4);
REG_AT(ARG5);
REG_AT(ARG6);
#if ABI(REG_ARGS) > 6
REG_AT(ARG7);
REG_AT(ARG8);
#endif
REG_AT(SP);

/* Argument n (1-based) at function entry: ABI(REG_ARGS) in registers, then the stack. */
static __always_inline __u64 arg(struct pt_regs *ctx, __u32 n)
{
	__u64 a1 = REG(ctx, ARG1), a2 = REG(ctx, ARG2), a3 = REG(ctx, ARG3);
	__u64 a4 = REG(ctx, ARG4), a5 = REG(ctx, ARG5);
	__u64 a6 = REG(ctx, ARG6);
#if ABI(REG_ARGS) > 6
	__u64 a7 = REG(ctx, ARG7), a8 = REG(ctx, ARG8);
#endif
	__u64 v = 0;

	RT_OPAQUE(a1);
	RT_OPAQUE(a2);
	RT_OPAQUE(a3);
	RT_OPAQUE(a4);
	RT_OPAQUE(a5);
	RT_OPAQUE(a6);
#if ABI(REG_ARGS) > 6
	RT_OPAQUE(a7);
	RT_OPAQUE(a8);
#endif
	switch (n) {
	case 1:
		return a1;
	case 2:
		return a2;
	case 3:
		return a3;
	case 4:
		return a4;
	case 5:
		return a5;
	case 6:
		return a6;
#if ABI(REG_ARGS) > 6
	case 7:
		return a7;
	case 8:
		return a8;
#endif
	default:
		break;
	}
	if (n > ABI(REG_ARGS) && n <= RT_ABI_ARG_MAX)
		bpf_probe_read_user(&v, sizeof(v), (void *)(REG(ctx, SP) + ABI(STACK_OFF(n))));
	return v;
}

#endif /* RT_UPROBE_ARG_BPF_H */
