// capture.h — running a command's main function in-process with its
// output captured, for the tests of mhsa-train and mhsa-generate.
#ifndef MHSA_TEST_CAPTURE_H
#define MHSA_TEST_CAPTURE_H

#include <stddef.h>

// A whole file as a malloc'd, NUL-terminated string (len: its size, may
// be NULL); a file that cannot be read fails the test.
char *slurp(const char *path, size_t *len);

// Runs cmd(argc, argv) with stdout and stderr going to temporary files
// (in $TMPDIR, else /tmp), then returns its status and the two outputs as
// malloc'd strings.
typedef int (*capture_cmd)(int argc, char **argv);
int run_captured(capture_cmd cmd, char **out, char **err, int argc,
                 const char **argv);

// Newlines in s.
int count_lines(const char *s);

#endif
