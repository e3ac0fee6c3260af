// tmpdir.h — one temporary folder per test for the files a test writes:
// tpath names a file in it, tpath_remove clears it away. The folder is made
// on first use under $TMPDIR (or /tmp), so forked and CK_FORK=no runs alike
// get a fresh one after each tpath_remove.
#ifndef MHSA_TEST_TMPDIR_H
#define MHSA_TEST_TMPDIR_H

// The path of `name` in the folder. The result lives until 64 more calls
// (a ring of buffers), so a test may hold many paths at once.
const char *tpath(const char *name);

// The folder itself.
const char *tpath_dir(void);

// Number of entries in the folder (0 before it exists): lets a test see
// that no temporary file was left behind.
int tpath_entries(void);

// Removes the folder with its files and empty subfolders; returns how many
// entries it held. The next tpath makes a new folder.
int tpath_remove(void);

#endif
