/* step-count — user-space instructions a program retires between two
 * markers, counted by single-stepping it under ptrace (Linux x86-64).
 *
 *   step-count PROGRAM [ARGS...]
 *
 * Why: callgrind's counts are the project's repeatable speed measure on
 * this shared, noisy VM, but valgrind 3.19 has no AVX-512 and hides it
 * from CPUID, so under callgrind dispatch runs the AVX2 table even with
 * MHSA_ISA=avx512 (an unavailable MHSA_ISA falls back to the best table
 * without a word). Single-stepping counts whatever the CPU runs, AVX-512
 * included, and gives the same count on every run of the same binary; on
 * the AVX2 table it came within 0.3% of callgrind's count (a rep-prefixed
 * instruction is a step per iteration here).
 *
 * The program marks the region with raise(SIGUSR1) before and
 * raise(SIGUSR2) after (after signal(SIGUSRn, SIG_IGN), so that it runs
 * alone too); latency-row.c is such a program. Only the
 * traced thread is counted: run the library at one thread
 * (OMP_NUM_THREADS=1). About 10^5 steps a second, so keep the region to a
 * few calls. A rep-prefixed string instruction traps once per iteration,
 * so it counts as many steps as it has iterations: glibc's memset of
 * 36 KiB (rep stosb) alone counts 36.9k.
 *
 *   cc -O2 -o step-count tools/step-count/step-count.c
 *   cc -O2 -Iinclude -o row tools/step-count/latency-row.c \
 *       build/libmhsa.a -fopenmp -lm
 *   OMP_NUM_THREADS=1 MHSA_ISA=avx512 ./step-count ./row tiny 2 [bwd]
 *
 * Prints "instructions N" on stdout after the program's own output.
 *
 * Where the steps go: with STEP_COUNT_PCS=FILE in the environment, the
 * address of every counted step is appended to FILE (8 bytes each, native
 * order); tools/step-count/by-function.py turns that into steps per
 * function. Build the program with -no-pie so that the addresses are the
 * ones nm prints. */
#define _DEFAULT_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: step-count PROGRAM [ARGS...]\n");
        return 2;
    }
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return 1;
    }
    if (pid == 0) {
        ptrace(PTRACE_TRACEME, 0, 0, 0);
        execvp(argv[1], argv + 1);
        _exit(127);
    }
    const char *pcs_path = getenv("STEP_COUNT_PCS");
    FILE *pcs = pcs_path ? fopen(pcs_path, "ab") : NULL;
    if (pcs_path && !pcs) {
        perror(pcs_path);
        return 1;
    }
    int st, counting = 0, rc = 0;
    unsigned long long n = 0;
    waitpid(pid, &st, 0);   // stopped at the exec
    for (;;) {
        if (ptrace(counting ? PTRACE_SINGLESTEP : PTRACE_CONT, pid, 0, 0) < 0) {
            perror("ptrace");
            return 1;
        }
        waitpid(pid, &st, 0);
        if (WIFEXITED(st)) {
            rc = WEXITSTATUS(st);
            break;
        }
        if (WIFSIGNALED(st)) {
            fprintf(stderr, "step-count: killed by signal %d\n",
                    WTERMSIG(st));
            return 1;
        }
        int sig = WSTOPSIG(st);
        if (sig == SIGUSR1)
            counting = 1;
        else if (sig == SIGUSR2)
            counting = 0;
        else if (sig == SIGTRAP && counting) {
            n++;
            struct user_regs_struct regs;
            if (pcs && ptrace(PTRACE_GETREGS, pid, 0, &regs) == 0) {
                uint64_t pc = regs.rip;
                fwrite(&pc, sizeof pc, 1, pcs);
            }
        } else if (sig == SIGTRAP)
            ;   // a step outside the region (none: it runs free there)
        else
            fprintf(stderr, "step-count: signal %d (not passed on)\n", sig);
    }
    if (pcs && fclose(pcs) != 0) {
        perror(pcs_path);
        return 1;
    }
    printf("instructions %llu\n", n);
    return rc;
}
