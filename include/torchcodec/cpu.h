/* What the CPU running this code can execute, asked once per translation unit.
 *
 * tc_cpu_has_avx2(): CPUID says AVX and AVX2, and the operating system saves the YMM registers
 * (OSXSAVE, and XCR0's SSE and AVX bits). Written out rather than taken from
 * __builtin_cpu_supports, which needs the compiler runtime's __cpu_model: libgcc defines it, the
 * runtime of zig's clang (which builds the wheels, tools/wheels/toolchain.sh) does not.
 */
#ifndef TORCHCODEC_CPU_H
#define TORCHCODEC_CPU_H

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

static inline int tc_cpu_detect_avx2(void)
{
    unsigned a, b, c, d, xcr0_low, xcr0_high;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return 0;
    if (!(c & (1u << 27)) || !(c & (1u << 28)))          /* OSXSAVE, AVX */
        return 0;
    __asm__ volatile("xgetbv" : "=a"(xcr0_low), "=d"(xcr0_high) : "c"(0));
    if ((xcr0_low & 6u) != 6u)                            /* XMM and YMM state saved by the OS */
        return 0;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
        return 0;
    return (b & (1u << 5)) != 0;                          /* AVX2 */
}

static inline int tc_cpu_has_avx2(void)
{
    static int known = -1;                                /* -1: not asked yet */
    int has = __atomic_load_n(&known, __ATOMIC_RELAXED);
    if (has < 0) {
        has = tc_cpu_detect_avx2();
        __atomic_store_n(&known, has, __ATOMIC_RELAXED);
    }
    return has;
}
#else
static inline int tc_cpu_has_avx2(void) { return 0; }
#endif

#endif
