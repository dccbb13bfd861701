// SPDX-License-Identifier: GPL-2.0-only
/*
 * cpu_flags: does the CPU the guest runs on keep EFLAGS right across
 * cmpxchg16b?
 *
 * QEMU 7.2's TCG (Debian 12's QEMU) runs cmpxchg16b in a helper that
 * computes the flags it leaves behind from env->cc_op without the
 * translator writing the current cc_op there first. When the last
 * translation block ended with the flags held as a whole (cc_op EFLAGS:
 * after an iret, popf or another cmpxchg16b) and an instruction before
 * cmpxchg16b in the same block set them from an operation (a cmp), the
 * helper takes that operation's operand for the flags word: EFLAGS then
 * holds the low half of a register, TF, DF, AC and NT included, and the
 * next pushf/popf pair (local_irq_save/restore) makes them real. In a
 * guest kernel that is SLUB's lockless fast path (cmpxchg16b after a
 * compare of freelist pointers): a single-step trap out of nowhere, a
 * double fault, or string copies running backwards through memory.
 * Upstream QEMU 8.0 replaced the helper ("target/i386: Inline
 * cmpxchg16b"): the translator now computes the flags.
 *
 * This program plays that sequence in user space: the jmp ends the block
 * with cc_op EFLAGS, the cmp sets the flags from an operand whose bit 22
 * (reserved, always 0) and bit 10 (DF) are set, then cmpxchg16b succeeds.
 * On a correct CPU the flags are the cmp's with ZF set. Without
 * cmpxchg16b (CPUID.1:ECX.CX16 clear, as the rig's guests have it) there
 * is nothing to check and the program says so.
 *
 * Exit 0: flags right (or no cmpxchg16b); 1: flags wrong.
 */
#include <cpuid.h>
#include <stdalign.h>
#include <stdio.h>

#define FLAGS_ZF	0x40UL

struct pair {
	alignas(16) unsigned long lo;
	unsigned long hi;
};

/*
 * Returns EFLAGS right after the second cmpxchg16b; *cmp_flags gets the
 * flags the cmp alone leaves, which cmpxchg16b keeps but for ZF.
 */
static unsigned long probe(unsigned long operand, unsigned long *cmp_flags)
{
	struct pair m = { 1, 2 };
	unsigned long rax = 1, rdx = 2;
	unsigned long after, before;

	asm volatile("cmpq %[op], %[x]\n\t"
		     "pushfq\n\t"
		     "popq %[before]\n\t"
		     /* {1, 2} becomes {3, 4}: the flags are whole now */
		     "cmpxchg16b %[m]\n\t"
		     /* the block ends, writing cc_op EFLAGS back */
		     "jmp 1f\n"
		     "1:\n\t"
		     "movq $3, %%rax\n\t"
		     "movq $4, %%rdx\n\t"
		     /* flags from a subtraction, operand in cc_src */
		     "cmpq %[op], %[x]\n\t"
		     /* succeeds again: ZF set, the rest the cmp's */
		     "cmpxchg16b %[m]\n\t"
		     "pushfq\n\t"
		     "popq %[after]\n\t"
		     : [m] "+m" (m), "+a" (rax), "+d" (rdx),
		       [before] "=&r" (before), [after] "=&r" (after)
		     : "b" (3UL), "c" (4UL), [op] "r" (operand), [x] "r" (0UL)
		     : "cc", "memory");
	*cmp_flags = before;
	return after;
}

int main(void)
{
	/* bit 22 (reserved), bit 10 (DF), bit 8 (TF) and bit 0 (CF) */
	const unsigned long operand = (1UL << 22) | (1UL << 10) | (1UL << 8) | 1;
	unsigned int a, b, c, d;
	unsigned long after, before, want;
	int i;

	if (!__get_cpuid(1, &a, &b, &c, &d)) {
		printf("cpu_flags: no CPUID leaf 1\n");
		return 1;
	}
	if (!(c & bit_CMPXCHG16B)) {
		printf("%s\n",
		       "cpu_flags: no cmpxchg16b (CPUID.1:ECX.CX16 clear): the kernel's SLUB takes its locked path");
		return 0;
	}
	for (i = 0; i < 1000; i++) {
		after = probe(operand, &before);
		want = before | FLAGS_ZF;
		if (after != want) {
			printf("cpu_flags: EFLAGS %#lx after cmpxchg16b, want %#lx (cmp: %#lx): ",
			       after, want, before);
			printf("%s\n",
			       "this CPU model corrupts EFLAGS (QEMU 7.2 TCG); boot guests with -cpu ...,-cx16");
			return 1;
		}
	}
	printf("cpu_flags: EFLAGS %#lx after the cmp, %#lx after cmpxchg16b: right, %d rounds\n",
	       before, after, i);
	return 0;
}
