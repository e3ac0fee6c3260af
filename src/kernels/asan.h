// asan.h — MHSA_ASAN: 1 in an AddressSanitizer build (gcc's
// __SANITIZE_ADDRESS__, clang's __has_feature), else 0. The small
// attention kernels then compile one instance with their sizes at run
// time instead of several with constant sizes: the same operations per
// lane, a fraction of the compile time (CI's ASan and fuzz builds).
#ifndef MHSA_KERNELS_ASAN_H
#define MHSA_KERNELS_ASAN_H

#if defined(__SANITIZE_ADDRESS__)
#define MHSA_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MHSA_ASAN 1
#endif
#endif
#ifndef MHSA_ASAN
#define MHSA_ASAN 0
#endif

#endif
