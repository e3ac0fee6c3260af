#!/usr/bin/env bash
# .ci/sanitizers.sh [valgrind] [tsan] — memory and thread checkers beyond the
# ASan+UBSan step of .ci/run (default: both).
#
#   valgrind  memcheck over the hardening, reference, weight-file,
#             model-file (GGUF reader, tokenizer, Llama loader and
#             mhsa-generate's error paths), dispatch and data-parallel
#             tests (build-vg; test cases tagged
#             slow left out): any error or definite leak fails
#             (--errors-for-leak-kinds=definite: libgomp's live pool is only
#             "possibly lost"). check runs in CK_FORK=no mode, one process.
#             The kernel/GEMM tests are left out: they are pure arithmetic
#             already covered by ASan and far too slow under valgrind;
#             but bf16_tiles and bf16_emul run (the bf16 tiles' test-only
#             emulation: its tile file, the packers' masked loads).
#   tsan      ThreadSanitizer build (build-tsan) of test_concurrency (8 host
#             threads sharing a block), test_faults and test_dp (ranks as
#             threads exchanging buffers), with
#             OMP_NUM_THREADS=1: TSan does not understand libgomp's barriers.
set -euo pipefail
cd "$(dirname "$0")/.."

steps=("$@")
[[ ${#steps[@]} -eq 0 ]] && steps=(valgrind tsan)

for s in "${steps[@]}"; do
    case $s in
    valgrind)
        if [[ ! -f build-vg/build.ninja ]]; then
            rm -rf build-vg
            # No AVX-512 tables on any CPU: valgrind (3.19) hides AVX-512
            # from CPUID, so dispatch never picks them under it (mhsa-info
            # under valgrind on Zen 4: "active isa: avx2"); building them
            # only cost compile time. The bf16 tests' emulated table is
            # still built (tests/meson.build) and run.
            meson setup build-vg -Dbuildtype=debugoptimized -Dbench=disabled \
                -Davx512_kernels=disabled
        fi
        # block_api is left out: its FP-state test reads MXCSR back after
        # setting FTZ/DAZ, which valgrind does not emulate.
        # Cases tagged slow are left out (a minute or more each under
        # valgrind; ASan, qemu and the native run take them).
        # bf16_tiles and bf16_emul run the bf16 tiles' test-only emulation
        # (they use the emulated table directly, MHSA_TEST_EMULATION=0 or
        # not): their packers' masked loads and the modelled tile file.
        vg_tests=(adversarial adversarial_variants overflow faults concurrency refs
                  safetensors dispatch dp bf16_tiles bf16_emul gguf tokenizer
                  llama generate_cli)
        ninja -C build-vg "${vg_tests[@]/#/tests/test_}"
        vg="valgrind --tool=memcheck --error-exitcode=99 --leak-check=full"
        vg+=" --errors-for-leak-kinds=definite --show-leak-kinds=definite"
        vg+=" --track-origins=yes --quiet"
        # Two OpenMP threads: the parallel regions still run, but valgrind
        # serialises threads, so more only costs time. The tests' emulated
        # AVX-512 table stays out (MHSA_TEST_EMULATION=0): SIMDe under
        # valgrind would lengthen this step, and ASan checks that code.
        # MHSA_TEST_QUICK: fewer random problems (tests/util.h).
        MHSA_TEST_EMULATION=0 MHSA_TEST_QUICK=1 \
        CK_FORK=no OMP_NUM_THREADS=2 CK_TIMEOUT_MULTIPLIER=20 \
        CK_EXCLUDE_TAGS=slow \
            meson test -C build-vg --no-rebuild --print-errorlogs \
            --timeout-multiplier 20 --wrapper "$vg" "${vg_tests[@]}"
        python3 .ci/testlog-check.py "$(ls -t build-vg/meson-logs/testlog*.json |
                                        head -n 1)" valgrind
        ;;
    tsan)
        if [[ ! -f build-tsan/build.ninja ]]; then
            rm -rf build-tsan
            # No SIMDe-emulated AVX-512 table (a third of this build's
            # compile time): none of the three tests selects an ISA, so
            # they run dispatch's choice, a real table, either way; and
            # no real one where this CPU lacks AVX-512
            # (.ci/avx512-build-args.sh).
            # shellcheck disable=SC2046
            meson setup build-tsan -Db_sanitize=thread -Db_lundef=false \
                -Dbuildtype=debugoptimized -Dbench=disabled \
                -Davx512_emulation=disabled $(bash .ci/avx512-build-args.sh)
        fi
        ninja -C build-tsan tests/test_concurrency tests/test_faults tests/test_dp
        TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
        OMP_NUM_THREADS=1 CK_TIMEOUT_MULTIPLIER=10 \
            meson test -C build-tsan --no-rebuild --print-errorlogs \
            --timeout-multiplier 10 concurrency faults dp
        python3 .ci/testlog-check.py build-tsan/meson-logs/testlog.json tsan
        ;;
    *)
        echo "unknown step '$s' (valgrind, tsan)" >&2
        exit 2
        ;;
    esac
done
