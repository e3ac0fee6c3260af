// file_read.h — what the weight-file readers (safetensors.c, gguf.c) share
// to read an untrusted file: opening it as a regular file, pread until a
// whole range is in, and mapping it whole.
#ifndef MHSA_FILE_READ_H
#define MHSA_FILE_READ_H

#include <stddef.h>
#include <stdint.h>

#include "mhsa.h"

// Opens `path` read-only; *fd and its size in *size. A path that cannot be
// opened or stat'ed, a directory or anything but a regular file:
// MHSA_ERR_IO naming the path and what it is ("is a FIFO (named pipe)"),
// nothing left open. Never blocks: a FIFO without a writer is refused at
// once, not waited on.
mhsa_status mhsa__open_regular(const char *path, int *fd, uint64_t *size);

// The n bytes of s (a name or value read from an untrusted file) as they
// may appear in a message, into buf (cap bytes, NUL-terminated): printable
// ASCII and well-formed UTF-8 as they are, every other byte (control
// bytes such as ESC, malformed UTF-8, C1 controls, bidirectional
// overrides) as "\xNN", so that a message never carries the file's escape
// sequences to a terminal. What does not fit ends in "...". Returns buf.
const char *mhsa__esc(char *buf, size_t cap, const char *s, size_t n);

// A shape as "[3, 4]" into buf (truncated to cap), for messages.
const char *mhsa__fmt_shape(char *buf, size_t cap, int n, const size_t *d);

// MHSA_OK when tensor `name` has the shape want[0..want_n), else
// MHSA_ERR_FORMAT "tensor 'name': expected shape [..], found [..]".
mhsa_status mhsa__check_shape(const char *name, int want_n,
                              const size_t *want, int got_n,
                              const size_t *got);

// pread until n bytes or EOF; 0 = all read, 1 = hit EOF early, -1 = error
// (errno set).
int mhsa__pread_full(int fd, void *buf, size_t n, uint64_t off);

// mhsa__pread_full of bytes of tensor `name` from a file validated at
// open: an error is MHSA_ERR_IO "tensor 'name': read error: ...", a short
// read (the file shrank after it was opened) MHSA_ERR_FORMAT "tensor
// 'name': file truncated while reading".
mhsa_status mhsa__pread_tensor(int fd, void *buf, size_t n, uint64_t off,
                               const char *name);

// A read-only mapping of a whole regular file (the weights of a model
// that computes on a file's own bytes: src/models/llama). Pages are read
// from the file when first touched and count toward the process's memory
// only then; they are the page cache's, shared with any other process
// mapping or reading the file.
typedef struct mhsa_file_map {
    const void *base;   // NULL when nothing is mapped
    size_t size;
} mhsa_file_map;

// Maps the size bytes of the regular file open on fd (as
// mhsa__open_regular gave it) read-only and private into *m. The file's
// size is checked again first: a file that changed size since it was
// opened and validated is MHSA_ERR_FORMAT ("changed size"), a size the
// address space cannot hold or a failed mmap MHSA_ERR_IO, each naming
// path. The mapping outlives fd (close it when done). A file that is
// truncated later, while mapped, makes a read of the lost pages fault
// (SIGBUS), as for any mapped file: the file must stay as it is while
// the mapping lives.
mhsa_status mhsa__map_file(int fd, uint64_t size, const char *path,
                           mhsa_file_map *m);
// Unmaps it; a map that holds nothing (base NULL) is a no-op.
void mhsa__unmap_file(mhsa_file_map *m);
// Gives back the pages wholly inside [p, p + n) of the mapping (a copy of
// them now serves): they leave the process's memory, and a later read
// of them reads the file again. The bytes stay the same.
void mhsa__map_release(const mhsa_file_map *m, const void *p, size_t n);

#endif
