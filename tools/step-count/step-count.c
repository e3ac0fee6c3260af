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
 * Prints "instructions N" on stdout after the program's own output. */
#define _DEFAULT_SOURCE
#include <signal.h>
#include <stdio.h>
#include <sys/ptrace.h>
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
        else if (sig == SIGTRAP)
            n += (unsigned long long)counting;
        else
            fprintf(stderr, "step-count: signal %d (not passed on)\n", sig);
    }
    printf("instructions %llu\n", n);
    return rc;
}
